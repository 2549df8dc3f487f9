//! `fuzz`: runs the parser fuzz targets and prints (or writes) their figures.
//!
//! ```text
//! cargo run --release -p veredicto-fuzz --bin fuzz -- [--target T]... [--seconds S]
//!     [--executions N] [--seed N] [--findings DIR] [--write-docs FILE] [--memory-mb M]
//! cargo run --release -p veredicto-fuzz --bin fuzz -- --replay
//! cargo run --release -p veredicto-fuzz --bin fuzz -- --minimize FILE --target T
//! cargo run --release -p veredicto-fuzz --bin fuzz -- --dump-seeds DIR [--target T]
//! cargo run --release -p veredicto-fuzz --bin fuzz -- --list
//! ```
//!
//! Exit status: 0 when no input failed, 1 when one did (panic, error that does not name the
//! file, or slower than 1 s), 2 on a usage error, 3 when the watchdog stopped a hang.
// A stand-alone tool outside the veredicto command line: it prints its own findings and
// exits with its own codes.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::exit)]

use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::time::Duration;
use veredicto_core::redact::short;
use veredicto_fuzz::{targets, Budget, Campaign, Limits, Stats, Verdict};

struct Args {
    targets: Vec<String>,
    budget: Budget,
    seed: u64,
    findings: Option<PathBuf>,
    write_docs: Option<PathBuf>,
    memory_mb: u64,
    replay: bool,
    minimize: Option<PathBuf>,
    dump_seeds: Option<PathBuf>,
    list: bool,
    child: bool,
}

fn parse_args() -> Result<Args> {
    let mut a = Args {
        targets: Vec::new(),
        budget: Budget::Time(Duration::from_secs(10)),
        seed: 1,
        findings: Some(PathBuf::from("target/fuzz-findings")),
        write_docs: None,
        memory_mb: 4096,
        replay: false,
        minimize: None,
        dump_seeds: None,
        list: false,
        child: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().with_context(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--target" => a.targets.push(value("--target")?),
            "--seconds" => {
                let s: f64 = value("--seconds")?.parse().context("--seconds: a number")?;
                if !(s.is_finite() && s > 0.0) {
                    bail!("--seconds must be positive");
                }
                a.budget = Budget::Time(Duration::from_secs_f64(s));
            }
            "--executions" => {
                a.budget = Budget::Executions(
                    value("--executions")?
                        .parse()
                        .context("--executions: an integer")?,
                )
            }
            "--seed" => a.seed = value("--seed")?.parse().context("--seed: an integer")?,
            "--findings" => a.findings = Some(PathBuf::from(value("--findings")?)),
            "--write-docs" => a.write_docs = Some(PathBuf::from(value("--write-docs")?)),
            "--memory-mb" => {
                a.memory_mb = value("--memory-mb")?
                    .parse()
                    .context("--memory-mb: an integer")?
            }
            "--replay" => a.replay = true,
            "--minimize" => a.minimize = Some(PathBuf::from(value("--minimize")?)),
            "--dump-seeds" => a.dump_seeds = Some(PathBuf::from(value("--dump-seeds")?)),
            "--list" => a.list = true,
            "--child" => a.child = true,
            "-h" | "--help" => {
                println!(
                    "usage: fuzz [--target T]... [--seconds S | --executions N] [--seed N] \
                     [--findings DIR] [--write-docs FILE] [--memory-mb M] | --replay | \
                     --minimize FILE --target T | --dump-seeds DIR | --list"
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument `{other}` (see --help)"),
        }
    }
    for t in &a.targets {
        if targets::target(t).is_none() {
            bail!("unknown target `{t}` (see --list)");
        }
    }
    Ok(a)
}

/// Caps the address space so that an input that makes a parser allocate without bound
/// ends this process (allocation failure) instead of pushing a shared machine into swap.
fn cap_memory(mb: u64) {
    let bytes = mb.saturating_mul(1 << 20);
    let lim = libc::rlimit {
        rlim_cur: bytes as libc::rlim_t,
        rlim_max: bytes as libc::rlim_t,
    };
    // SAFETY: setrlimit reads a valid, initialised struct; failure only leaves the limit as is.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_AS, &lim) };
    if rc != 0 {
        eprintln!("fuzz: could not cap memory at {mb} MB; continuing without a cap");
    }
}

fn main() {
    match run() {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("fuzz: {e:#}");
            std::process::exit(2);
        }
    }
}

fn selected(names: &[String]) -> Vec<&'static targets::Target> {
    if names.is_empty() {
        targets::TARGETS.iter().collect()
    } else {
        names.iter().filter_map(|n| targets::target(n)).collect()
    }
}

fn run() -> Result<i32> {
    let args = parse_args()?;
    if args.list {
        for t in targets::TARGETS {
            println!("{}", t.name);
        }
        return Ok(0);
    }
    if let Some(dir) = &args.dump_seeds {
        // The valid starting inputs, as files, to craft regression files from.
        for t in selected(&args.targets) {
            let d = dir.join(t.name);
            std::fs::create_dir_all(&d).with_context(|| format!("{}", d.display()))?;
            for (i, s) in targets::seeds(t).iter().enumerate() {
                let f = d.join(format!("seed-{i}.{}", veredicto_fuzz::extension(t)));
                std::fs::write(&f, s).with_context(|| format!("{}", f.display()))?;
            }
        }
        return Ok(0);
    }
    cap_memory(args.memory_mb);
    let work = std::env::temp_dir().join(format!("veredicto-fuzz-cli-{}", std::process::id()));
    std::fs::create_dir_all(&work).with_context(|| format!("{}", work.display()))?;

    if let Some(file) = &args.minimize {
        let [name] = args.targets.as_slice() else {
            bail!("--minimize needs exactly one --target");
        };
        let target = targets::target(name).expect("checked");
        let input = std::fs::read(file).with_context(|| format!("{}", file.display()))?;
        let first = veredicto_fuzz::check(target, &input, &work);
        let failing = |v: &Verdict| v.is_failure();
        if !failing(&first.verdict) {
            bail!("{}: does not fail ({:?})", file.display(), first.verdict);
        }
        let want = std::mem::discriminant(&first.verdict);
        let small = veredicto_fuzz::minimize(&input, |cand| {
            let v = veredicto_fuzz::check(target, cand, &work).verdict;
            std::mem::discriminant(&v) == want
        });
        let out = file.with_extension(format!("min.{}", veredicto_fuzz::extension(target)));
        std::fs::write(&out, &small).with_context(|| format!("{}", out.display()))?;
        println!(
            "{} bytes -> {} bytes: {}",
            input.len(),
            small.len(),
            out.display()
        );
        let _ = std::fs::remove_dir_all(&work);
        return Ok(0);
    }

    if args.replay {
        let mut failed = 0;
        for t in selected(&args.targets) {
            let dir = targets::repo_root().join("crates/fuzz/corpus").join(t.name);
            for (path, out) in veredicto_fuzz::replay(&dir, t, &work) {
                let bad = out.verdict.is_failure() || out.elapsed > Limits::default().slow;
                failed += usize::from(bad);
                let what = match &out.verdict {
                    Verdict::Ok => "accepted".to_string(),
                    Verdict::Error(m) => format!("error: {}", short(m)),
                    Verdict::Panic(m) => format!("PANIC: {}", short(m)),
                    Verdict::Unnamed(m) => format!("ERROR WITHOUT THE FILE: {}", short(m)),
                };
                println!(
                    "{} {:>9.1} ms  {}  {}",
                    if bad { "FAIL" } else { "ok  " },
                    out.elapsed.as_secs_f64() * 1e3,
                    path.strip_prefix(&dir).unwrap_or(&path).display(),
                    what
                );
            }
        }
        let _ = std::fs::remove_dir_all(&work);
        return Ok(i32::from(failed > 0));
    }
    let _ = std::fs::remove_dir_all(&work);

    let campaign = Campaign {
        seed: args.seed,
        budget: args.budget,
        limits: Limits::default(),
        findings_dir: args.findings.clone(),
    };
    let mut all: Vec<Stats> = Vec::new();
    if !args.child {
        // One child process per target: a hang (the watchdog ends the process) or an
        // allocation failure stops that target only, and the others still run.
        for t in selected(&args.targets) {
            all.push(run_child(t.name)?);
        }
    }
    for t in selected(&args.targets).into_iter().filter(|_| args.child) {
        let st = veredicto_fuzz::run_campaign(t, &campaign);
        println!(
            "{:<17} {:>9} execs  {:>3} panics  {:>3} unnamed  {:>3} slow  slowest {:>8.1} ms ({} bytes, {})  longest error {} bytes",
            st.target,
            st.executions,
            st.panics,
            st.unnamed,
            st.slow,
            st.slowest.0.as_secs_f64() * 1e3,
            st.slowest.1,
            st.slowest.2,
            st.longest_error,
        );
        for f in &st.findings {
            println!("    {}: {} ({:?})", f.kind, f.detail, f.elapsed);
        }
        println!("{STATS}{}", st.to_json());
    }
    if args.child {
        return Ok(0);
    }
    if let Some(doc) = &args.write_docs {
        write_docs(doc, &all, &campaign)?;
        eprintln!("fuzz: figures written to {}", doc.display());
    }
    Ok(i32::from(all.iter().any(|s| s.failures() > 0)))
}

const STATS: &str = "STATS ";

/// Runs one target in a child process (this program with the same options and `--child`),
/// relays its output and reads its figures; a child that ends without them counts one hang.
fn run_child(target: &str) -> Result<Stats> {
    let exe = std::env::current_exe().context("the path of this program")?;
    let mut argv: Vec<String> = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--target" | "--write-docs" => {
                it.next();
            }
            _ => argv.push(a),
        }
    }
    let out = std::process::Command::new(exe)
        .args(&argv)
        .args(["--child", "--target", target])
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("starting a child process")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut stats = None;
    for line in text.lines() {
        match line.strip_prefix(STATS) {
            Some(json) => {
                stats = serde_json::from_str(json)
                    .ok()
                    .and_then(|v| Stats::from_json(&v))
            }
            None => println!("{line}"),
        }
    }
    Ok(stats.unwrap_or_else(|| {
        println!("{target:<17} stopped before the end ({})", out.status);
        Stats {
            target: target.to_string(),
            hangs: 1,
            ..Stats::default()
        }
    }))
}

const BEGIN: &str = "<!-- fuzz-figures:begin -->";
const END: &str = "<!-- fuzz-figures:end -->";

/// Replaces the text between the two markers of `doc` with the figures (appends the
/// markers when absent); written to a temporary file and renamed.
fn write_docs(doc: &std::path::Path, stats: &[Stats], c: &Campaign) -> Result<()> {
    let old = std::fs::read_to_string(doc).unwrap_or_default();
    let budget = match c.budget {
        Budget::Time(d) => format!("{} s per target", d.as_secs_f64()),
        Budget::Executions(n) => format!("{n} mutated inputs per target"),
    };
    let total: u64 = stats.iter().map(|s| s.executions).sum();
    let section = format!(
        "{BEGIN}\nRelease build, seed {}, {budget}, {} threads available; {total} inputs in all.\n\n{}{END}",
        c.seed,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        veredicto_fuzz::markdown_table(stats)
    );
    let new = match (old.find(BEGIN), old.find(END)) {
        (Some(a), Some(b)) if a < b => format!("{}{section}{}", &old[..a], &old[b + END.len()..]),
        _ => format!("{old}\n{section}\n"),
    };
    let tmp = doc.with_extension("md.tmp");
    std::fs::write(&tmp, new).with_context(|| format!("{}", tmp.display()))?;
    std::fs::rename(&tmp, doc).with_context(|| format!("{}", doc.display()))?;
    Ok(())
}
