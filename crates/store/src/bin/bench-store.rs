//! Benchmark of the run history (issue [3/4], "Speed"):
//! 1. what recording a 200-case run adds to an exam: open the history, record, find the
//!    previous compatible run and read it back for the comparison (budget < 50 ms);
//! 2. a history of 10,000 runs x 200 cases must still list and fetch two runs for a
//!    comparison in < 1 s.
//!
//! ```text
//! cargo run --release -p veredicto-store --bin bench-store [-- --runs N --cases N --dir DIR]
//! ```
//!
//! The large history is built once into `target/bench-data/store/` (a few minutes) and reused
//! by later runs. Figures are wall-clock times with the OS file cache warm, as on a CI machine
//! that has just written or read the file.

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
}

fn parse_args() -> Result<Args, String> {
    let mut out = Args {
        runs: 10_000,
        cases: 200,
        dir: PathBuf::from("target/bench-data/store"),
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
            other => {
                return Err(format!(
                    "unexpected argument `{other}`; usage: bench-store [--runs N] [--cases N] [--dir DIR]"
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

    record_cost(&args, &report).map_err(|e| e.to_string())?;
    large_history(&args).map_err(|e| e.to_string())?;
    Ok(())
}

/// Part 1: the cost an exam pays to record its run and fetch its baseline.
fn record_cost(args: &Args, report: &ExamReport) -> Result<(), Box<dyn Error>> {
    const ITERATIONS: usize = 100;
    let db = args.dir.join("record.db");
    remove_db(&db);
    let reports: Vec<ExamReport> = (0..8)
        .map(|seed| Synthetic::new(args.cases, seed).report())
        .collect();
    let (mut open, mut record, mut baseline, mut total) = (vec![], vec![], vec![], vec![]);
    for i in 0..ITERATIONS + 5 {
        let report = &reports[i % reports.len()];
        let m = meta(report, &created_at(i as i64), Some("bench"));
        let t0 = Instant::now();
        let history = History::open(&db)?;
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
    let size = file_size(&db);
    println!();
    println!(
        "## Recording one {}-case run ({ITERATIONS} runs into a new history)",
        args.cases
    );
    println!("| step | p50 | p95 | max |");
    println!("|---|---|---|---|");
    for (name, xs) in [
        ("open (WAL, schema check)", &mut open),
        ("record (one transaction, synchronous=FULL)", &mut record),
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
    remove_db(&db);
    Ok(())
}

/// Part 2: listing and comparing in a large history.
fn large_history(args: &Args) -> Result<(), Box<dyn Error>> {
    let db = args
        .dir
        .join(format!("history-{}x{}.db", args.runs, args.cases));
    let existing = if db.is_file() {
        History::open_existing(&db)?.count()?
    } else {
        0
    };
    if existing < args.runs {
        build(args, &db)?;
    } else {
        println!();
        println!("(reusing {} with {existing} runs)", db.display());
    }
    let size = file_size(&db);

    let t = Instant::now();
    let h = History::open_existing(&db)?;
    let open = t.elapsed();
    let runs = h.count()?;
    let newest = h
        .latest(&RunFilter::default())?
        .ok_or("the large history is empty")?;
    let golden_short = veredicto_store::short_fingerprint(&newest.golden_fingerprint).to_owned();

    println!();
    println!(
        "## A history of {runs} runs x {} cases ({:.0} MB)",
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
    let h = History::open_existing(&db)?;
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
    let h = History::open(&db)?;
    h.record(&m, &report)?;
    drop(h);
    println!("| open + record one run into it | {} | |", ms(t.elapsed()));
    Ok(())
}

/// Builds the large history: four golden-set versions in sequence, mixed verdicts, runs
/// written 250 per transaction. Written under a temporary name and renamed when complete,
/// so an interrupted build is never reused.
fn build(args: &Args, db: &Path) -> Result<(), Box<dyn Error>> {
    const VERSIONS: u32 = 4;
    const POOL: usize = 25;
    const BATCH: usize = 250;
    let partial = db.with_extension("db.partial");
    remove_db(&partial);
    remove_db(db);
    println!();
    println!("(building {} with {} runs; once)", db.display(), args.runs);
    let t = Instant::now();
    // Distinct reports per golden version, skills 0.85..1.0: about a third accepted.
    let pool: Vec<Vec<ExamReport>> = (1..=VERSIONS)
        .map(|v| {
            (0..POOL)
                .map(|k| {
                    Synthetic {
                        cases: args.cases,
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
        .collect();
    let generated = t.elapsed();
    let h = History::open(&partial)?;
    let per_version = args.runs.div_ceil(VERSIONS as usize).max(1);
    let mut i = 0;
    while i < args.runs {
        let end = (i + BATCH).min(args.runs);
        let metas: Vec<_> = (i..end)
            .map(|j| {
                let report = &pool[(j / per_version).min(VERSIONS as usize - 1)][j % POOL];
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
    std::fs::rename(&partial, db).map_err(|e| format!("{}: {e}", db.display()))?;
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
