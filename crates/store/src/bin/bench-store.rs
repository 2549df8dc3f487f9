//! Benchmark of the run history (issue [3/4], "Speed"):
//! 1. what recording a 200-case run adds to an exam: open the history, record, find the
//!    previous compatible run and read it back for the comparison (budget < 50 ms);
//! 2. a history of 10,000 runs x 200 cases must still list and fetch two runs for a
//!    comparison in < 1 s.
//!
//! With `--history postgres://user@host:port/db`, every part also runs against that
//! PostgreSQL server (in databases `veredicto_bench_*` it creates beside `db`), side by side
//! with the file, and a history of 1,000 runs is migrated from a file into it.
//!
//! ```text
//! cargo run --release -p veredicto-store --bin bench-store [-- --runs N --cases N --dir DIR]
//!     [--history postgres://…]
//! ```
//!
//! The large history is built once into `target/bench-data/store/` (a few minutes) and reused
//! by later runs. Figures are wall-clock times with the OS file cache warm, as on a CI machine
//! that has just written or read the file.
// A benchmark program, not part of the veredicto command line: it prints its own figures
// (and exits with its own codes).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use veredicto_core::exam::{ExamReport, Verdict};
use veredicto_store::synthetic::{meta, Synthetic};
use veredicto_store::{History, Metric, RunFilter, StoreError, TrendQuery};

struct Args {
    runs: usize,
    cases: usize,
    dir: PathBuf,
    /// A PostgreSQL server to measure beside the file.
    history: Option<String>,
    /// Cases of the large history's runs other than the newest 100 (default: `cases`), to
    /// fit a disk that cannot hold 10,000 full runs per backend.
    bulk_cases: Option<usize>,
    /// Measure the large history on PostgreSQL only.
    skip_file_large: bool,
}

/// Where a benchmark history lives: a file, or a database on a PostgreSQL server.
enum Target {
    File(PathBuf),
    Pg { server: String, name: String },
}

impl Target {
    fn spec(&self) -> String {
        match self {
            Target::File(p) => p.display().to_string(),
            Target::Pg { server, name } => {
                let cut = server.rfind('/').unwrap_or(server.len());
                format!("{}/{name}", &server[..cut])
            }
        }
    }

    fn backend(&self) -> &'static str {
        match self {
            Target::File(_) => "SQLite",
            Target::Pg { .. } => "PostgreSQL",
        }
    }

    /// Runs `;`-separated statements one by one (CREATE DATABASE cannot share a
    /// transaction with other statements).
    fn admin(server: &str, sql: &str) -> Result<(), Box<dyn Error>> {
        let mut c = postgres::Client::connect(server, postgres::NoTls)?;
        for statement in sql.split(';').filter(|s| !s.trim().is_empty()) {
            c.batch_execute(statement).map_err(|e| {
                format!(
                    "{statement}: {}",
                    e.as_db_error()
                        .map_or(e.to_string(), |d| d.message().to_owned())
                )
            })?;
        }
        Ok(())
    }

    /// Empties it (a new history is created when opened).
    fn reset(&self) -> Result<(), Box<dyn Error>> {
        match self {
            Target::File(p) => {
                remove_db(p);
                Ok(())
            }
            Target::Pg { server, name } => Target::admin(
                server,
                &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE); CREATE DATABASE {name}"),
            ),
        }
    }

    fn exists(&self) -> Result<bool, Box<dyn Error>> {
        match self {
            Target::File(p) => Ok(p.is_file()),
            Target::Pg { server, name } => {
                let mut c = postgres::Client::connect(server, postgres::NoTls)?;
                Ok(
                    c.query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[name])?
                        .is_some(),
                )
            }
        }
    }

    fn size(&self) -> u64 {
        match self {
            Target::File(p) => file_size(p),
            Target::Pg { server, name } => postgres::Client::connect(server, postgres::NoTls)
                .and_then(|mut c| c.query_one("SELECT pg_database_size($1)", &[name]))
                .map_or(0, |r| u64::try_from(r.get::<_, i64>(0)).unwrap_or(0)),
        }
    }

    /// The same kind of target under another name (for building under a temporary name).
    fn sibling(&self, suffix: &str) -> Target {
        match self {
            Target::File(p) => Target::File(p.with_extension(format!("db.{suffix}"))),
            Target::Pg { server, name } => Target::Pg {
                server: server.clone(),
                name: format!("{name}_{suffix}"),
            },
        }
    }

    /// Renames `self` to `to` (same kind), replacing it.
    fn rename(&self, to: &Target) -> Result<(), Box<dyn Error>> {
        match (self, to) {
            (Target::File(a), Target::File(b)) => {
                std::fs::rename(a, b).map_err(|e| format!("{}: {e}", b.display()))?;
                Ok(())
            }
            (Target::Pg { server, name }, Target::Pg { name: to, .. }) => Target::admin(
                server,
                &format!("DROP DATABASE IF EXISTS {to} WITH (FORCE); ALTER DATABASE {name} RENAME TO {to}"),
            ),
            _ => Err("cannot rename across backends".into()),
        }
    }
}

fn parse_args() -> Result<Args, String> {
    let mut out = Args {
        runs: 10_000,
        cases: 200,
        dir: PathBuf::from("target/bench-data/store"),
        history: None,
        bulk_cases: None,
        skip_file_large: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--runs" => out.runs = value("--runs")?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--cases" => {
                out.cases = value("--cases")?
                    .parse()
                    .map_err(|e| format!("--cases: {e}"))?
            }
            "--dir" => out.dir = PathBuf::from(value("--dir")?),
            "--history" => out.history = Some(value("--history")?),
            "--bulk-cases" => {
                out.bulk_cases = Some(
                    value("--bulk-cases")?
                        .parse()
                        .map_err(|e| format!("--bulk-cases: {e}"))?,
                )
            }
            "--skip-file-large" => out.skip_file_large = true,
            other => {
                return Err(format!(
                    "unexpected argument `{other}`; usage: bench-store [--runs N] [--cases N] [--dir DIR] [--history postgres://…]"
                ))
            }
        }
    }
    Ok(out)
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-store: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    std::fs::create_dir_all(&args.dir).map_err(|e| format!("{}: {e}", args.dir.display()))?;

    println!("# veredicto-store benchmark ({} cases per run)", args.cases);
    let t = Instant::now();
    let report = Synthetic::new(args.cases, 1).report();
    let json = serde_json::to_vec(&report).map_err(|e| e.to_string())?;
    println!(
        "report: {} bytes of JSON (synthetic exam evaluated in {})",
        json.len(),
        ms(t.elapsed())
    );

    let large = args
        .dir
        .join(format!("history-{}x{}.db", args.runs, args.cases));
    let mut targets = vec![(
        Target::File(args.dir.join("record.db")),
        Target::File(large),
    )];
    if let Some(server) = &args.history {
        let pg = |name: &str| Target::Pg {
            server: server.clone(),
            name: name.to_owned(),
        };
        targets.push((
            pg("veredicto_bench_record"),
            pg(&format!("veredicto_bench_{}x{}", args.runs, args.cases)),
        ));
    }
    for (record, _) in &targets {
        record_cost(&args, &report, record).map_err(|e| e.to_string())?;
    }
    for (_, large) in &targets {
        if args.skip_file_large && matches!(large, Target::File(_)) {
            continue;
        }
        large_history(&args, large).map_err(|e| e.to_string())?;
    }
    if let Some(server) = &args.history {
        migrate_cost(&args, server).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Part 3: migrating a 1,000-run history from a file into PostgreSQL.
fn migrate_cost(args: &Args, server: &str) -> Result<(), Box<dyn Error>> {
    const RUNS: usize = 1000;
    let file = Target::File(args.dir.join(format!("migrate-{RUNS}x{}.db", args.cases)));
    if !file.exists()? || History::open_spec_existing(&file.spec())?.count()? < RUNS {
        let small = Args {
            runs: RUNS,
            cases: args.cases,
            dir: args.dir.clone(),
            history: None,
            bulk_cases: None,
            skip_file_large: false,
        };
        build(&small, &file)?;
    }
    let to = Target::Pg {
        server: server.to_owned(),
        name: "veredicto_bench_migrate".into(),
    };
    to.reset()?;
    let from = History::open_spec_existing(&file.spec())?;
    let dst = History::open_spec(&to.spec())?;
    let t = Instant::now();
    let report = veredicto_store::migrate(&from, &dst, |_, _| {})?;
    let first = t.elapsed();
    let t = Instant::now();
    let again = veredicto_store::migrate(&from, &dst, |_, _| {})?;
    let second = t.elapsed();
    println!();
    println!(
        "## Migrating a {RUNS}-run history ({} cases per run), file to PostgreSQL",
        args.cases
    );
    println!("| step | time | result |");
    println!("|---|---|---|");
    println!(
        "| migrate (copy, then verify every run) | {:.2} s | {} copied, digest equal |",
        first.as_secs_f64(),
        report.copied
    );
    println!(
        "| migrate again (nothing to copy; verify) | {:.2} s | {} copied, {} already there |",
        second.as_secs_f64(),
        again.copied,
        again.skipped
    );
    drop(dst);
    Ok(())
}

/// Part 1: the cost an exam pays to record its run and fetch its baseline.
fn record_cost(args: &Args, report: &ExamReport, db: &Target) -> Result<(), Box<dyn Error>> {
    const ITERATIONS: usize = 100;
    db.reset()?;
    let reports: Vec<ExamReport> = (0..8)
        .map(|seed| Synthetic::new(args.cases, seed).report())
        .collect();
    let (mut open, mut record, mut baseline, mut total) = (vec![], vec![], vec![], vec![]);
    for i in 0..ITERATIONS + 5 {
        let report = &reports[i % reports.len()];
        let m = meta(report, &created_at(i as i64), Some("bench"));
        let t0 = Instant::now();
        let history = History::open_spec(&db.spec())?;
        let t1 = Instant::now();
        let id = history.record(&m, report)?;
        let t2 = Instant::now();
        let new_meta = history.meta(&id)?;
        if let Some(prev) = history.previous_compatible(&new_meta)? {
            let base = history.get(&prev.id)?;
            if base.report.cases.len() != report.cases.len() {
                return Err("the baseline read back with another case count".into());
            }
        }
        let t3 = Instant::now();
        drop(history);
        let t4 = Instant::now();
        if i >= 5 {
            open.push(t1 - t0);
            record.push(t2 - t1);
            baseline.push(t3 - t2);
            total.push(t4 - t0);
        }
    }
    let size = db.size();
    println!();
    println!(
        "## {}: recording one {}-case run ({ITERATIONS} runs into a new history)",
        db.backend(),
        args.cases
    );
    println!("| step | p50 | p95 | max |");
    println!("|---|---|---|---|");
    for (name, xs) in [
        ("open (connect or WAL, schema check)", &mut open),
        ("record (one transaction, durable commit)", &mut record),
        ("previous compatible + read its report", &mut baseline),
        ("total, open to close", &mut total),
    ] {
        let (p50, p95, max) = percentiles(xs);
        println!("| {name} | {} | {} | {} |", ms(p50), ms(p95), ms(max));
    }
    // Where `record`'s time goes outside the transaction.
    let t = Instant::now();
    let json = serde_json::to_vec(report)?;
    let ser = t.elapsed();
    let t = Instant::now();
    let _: Result<ExamReport, _> = serde_json::from_slice(&json);
    let de = t.elapsed();
    println!(
        "of which, per run: serialise the report {}, parse it back (round-trip check) {}; \
         history size {:.1} MB ({:.0} kB per run)",
        ms(ser),
        ms(de),
        size as f64 / 1e6,
        size as f64 / 1e3 / (ITERATIONS + 5) as f64
    );
    if let Target::File(p) = db {
        remove_db(p);
    }
    Ok(())
}

/// Part 2: listing and comparing in a large history.
fn large_history(args: &Args, db: &Target) -> Result<(), Box<dyn Error>> {
    let existing = if db.exists()? {
        History::open_spec_existing(&db.spec())?.count()?
    } else {
        0
    };
    if existing < args.runs {
        build(args, db)?;
    } else {
        println!();
        println!(
            "(reusing {} with {existing} runs)",
            veredicto_core::redact::url(&db.spec())
        );
    }
    let size = db.size();

    let t = Instant::now();
    let h = History::open_spec_existing(&db.spec())?;
    let open = t.elapsed();
    let runs = h.count()?;
    let newest = h
        .latest(&RunFilter::default())?
        .ok_or("the large history is empty")?;
    let golden_short = veredicto_store::short_fingerprint(&newest.golden_fingerprint).to_owned();

    println!();
    println!(
        "## {}: a history of {runs} runs x {} cases ({:.0} MB)",
        db.backend(),
        args.cases,
        size as f64 / 1e6
    );
    println!("| operation | time | result |");
    println!("|---|---|---|");
    println!("| open | {} | |", ms(open));
    let row = |name: &str, f: &mut dyn FnMut() -> Result<String, StoreError>| {
        // Best of 3: the first run also warms SQLite's page cache for this connection.
        let mut best = Duration::MAX;
        let mut result = String::new();
        for _ in 0..3 {
            let t = Instant::now();
            result = f()?;
            best = best.min(t.elapsed());
        }
        println!("| {name} | {} | {result} |", ms(best));
        Ok::<(), StoreError>(())
    };
    row("count runs", &mut || Ok(format!("{} runs", h.count()?)))?;
    row("list, newest 20", &mut || {
        let l = h.list(&RunFilter {
            limit: Some(20),
            ..RunFilter::default()
        })?;
        Ok(format!("{} runs", l.len()))
    })?;
    row("list, all", &mut || {
        Ok(format!("{} runs", h.list(&RunFilter::default())?.len()))
    })?;
    row("list, golden set (short prefix)", &mut || {
        let l = h.list(&RunFilter {
            golden_fingerprint: Some(golden_short.clone()),
            ..RunFilter::default()
        })?;
        Ok(format!("{} runs", l.len()))
    })?;
    row("list, label", &mut || {
        let l = h.list(&RunFilter {
            label: Some("idx-0420".into()),
            ..RunFilter::default()
        })?;
        Ok(format!("{} runs", l.len()))
    })?;
    row("list, one week (since/until dates)", &mut || {
        let l = h.list(&RunFilter {
            since: Some("2023-06-01".into()),
            until: Some("2023-06-07".into()),
            ..RunFilter::default()
        })?;
        Ok(format!("{} runs", l.len()))
    })?;
    row("list, accepted, golden set, newest 20", &mut || {
        let l = h.list(&RunFilter {
            golden_fingerprint: Some(golden_short.clone()),
            verdict: Some(Verdict::Accept),
            limit: Some(20),
            ..RunFilter::default()
        })?;
        Ok(format!("{} runs", l.len()))
    })?;
    row(
        "compare: get latest + previous compatible + get it",
        &mut || {
            let new = h.get("latest")?;
            let base = h
                .previous_compatible(&new.meta)?
                .map(|s| h.get(&s.id))
                .transpose()?;
            Ok(format!(
                "{} + {} cases",
                new.report.cases.len(),
                base.map_or(0, |b| b.report.cases.len())
            ))
        },
    )?;
    row("last accepted before latest", &mut || {
        let s = h.last_accepted(Some("latest"), Some(&golden_short))?;
        Ok(s.map_or("none".into(), |s| s.id))
    })?;
    row("get by a 12-character prefix", &mut || {
        Ok(format!(
            "{} cases",
            h.get(&newest.id[..12])?.report.cases.len()
        ))
    })?;
    for (metric, domain, n) in [
        ("recall", None, 50),
        ("quality", Some("fiscal"), 50),
        ("nDCG@5", Some("laboral"), 200),
    ] {
        let name = format!(
            "trend {metric}{}, last {n} runs",
            domain.map_or(String::new(), |d| format!(" in {d}"))
        );
        let metric: Metric = metric.parse()?;
        row(&name, &mut || {
            let points = h.trend(&TrendQuery {
                metric: metric.clone(),
                runs: RunFilter {
                    golden_fingerprint: Some(golden_short.clone()),
                    limit: Some(n),
                    ..RunFilter::default()
                },
                domain: domain.map(str::to_owned),
                case_id: None,
            })?;
            Ok(format!("{} points", points.len()))
        })?;
    }
    drop(h);

    // The whole `runs list` + `compare` path from a cold connection, as one CLI call.
    let t = Instant::now();
    let h = History::open_spec_existing(&db.spec())?;
    let listed = h.list(&RunFilter {
        limit: Some(20),
        ..RunFilter::default()
    })?;
    let new = h.get("latest")?;
    let base = h.previous_compatible(&new.meta)?;
    let fetched = base.map(|b| h.get(&b.id)).transpose()?;
    drop(h);
    println!(
        "| **open + list 20 + fetch two runs, new connection** | **{}** | {} listed, {} fetched |",
        ms(t.elapsed()),
        listed.len(),
        1 + usize::from(fetched.is_some())
    );

    // One more exam recorded into the large history (it grows by one run per benchmark).
    let report = Synthetic::new(args.cases, 99).report();
    let m = meta(&report, &created_at(args.runs as i64 + 1), Some("bench"));
    let t = Instant::now();
    let h = History::open_spec(&db.spec())?;
    h.record(&m, &report)?;
    drop(h);
    println!("| open + record one run into it | {} | |", ms(t.elapsed()));
    Ok(())
}

/// Builds the large history: four golden-set versions in sequence, mixed verdicts, runs
/// written 250 per transaction. Written under a temporary name and renamed when complete,
/// so an interrupted build is never reused.
fn build(args: &Args, db: &Target) -> Result<(), Box<dyn Error>> {
    const VERSIONS: u32 = 4;
    const POOL: usize = 25;
    const BATCH: usize = 250;
    let partial = db.sibling("partial");
    partial.reset()?;
    println!();
    println!(
        "(building {} with {} runs; once)",
        veredicto_core::redact::url(&db.spec()),
        args.runs
    );
    let t = Instant::now();
    // Distinct reports per golden version, skills 0.85..1.0: about a third accepted.
    const FULL: usize = 100;
    let pool_of = |cases: usize| -> Vec<Vec<ExamReport>> {
        (1..=VERSIONS)
            .map(|v| {
                (0..POOL)
                    .map(|k| {
                        Synthetic {
                            cases,
                            seed: u64::from(v) * 1000 + k as u64,
                            skill: if k % 3 == 0 {
                                1.0
                            } else {
                                0.85 + 0.005 * k as f64
                            },
                            golden_version: v,
                        }
                        .report()
                    })
                    .collect()
            })
            .collect()
    };
    let pool = pool_of(args.cases);
    let bulk = match args.bulk_cases {
        Some(n) if n != args.cases => {
            println!(
                "(runs other than the newest {FULL} have {n} cases instead of {})",
                args.cases
            );
            pool_of(n)
        }
        _ => pool.clone(),
    };
    let generated = t.elapsed();
    let h = History::open_spec(&partial.spec())?;
    let per_version = args.runs.div_ceil(VERSIONS as usize).max(1);
    let mut i = 0;
    while i < args.runs {
        let end = (i + BATCH).min(args.runs);
        let metas: Vec<_> = (i..end)
            .map(|j| {
                let from = if j + FULL >= args.runs { &pool } else { &bulk };
                let report = &from[(j / per_version).min(VERSIONS as usize - 1)][j % POOL];
                let label = format!("idx-{:04}", j / 10);
                (meta(report, &created_at(j as i64), Some(&label)), report)
            })
            .collect();
        h.record_many(metas.iter().map(|(m, r)| (m, *r)))?;
        i = end;
        eprint!("\r  {i}/{} runs", args.runs);
    }
    eprintln!();
    drop(h);
    partial.rename(db)?;
    println!(
        "(built in {:.1} s: {} to evaluate {} synthetic exams, the rest recording)",
        t.elapsed().as_secs_f64(),
        ms(generated),
        VERSIONS as usize * POOL
    );
    Ok(())
}

/// Run `i`'s time: hourly from 2023-01-01T00:00:00Z.
fn created_at(i: i64) -> String {
    let secs = 1_672_531_200 + i * 3600;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn percentiles(xs: &mut [Duration]) -> (Duration, Duration, Duration) {
    xs.sort();
    let at = |q: f64| xs[((xs.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.95), at(1.0))
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn file_size(db: &Path) -> u64 {
    ["", "-wal"]
        .iter()
        .filter_map(|s| std::fs::metadata(format!("{}{s}", db.display())).ok())
        .map(|m| m.len())
        .sum()
}

fn remove_db(db: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
}
