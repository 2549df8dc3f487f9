//! Test helper: records synthetic runs into a history as fast as it can, so that the tests
//! can kill it (SIGKILL) at random moments or start two at once.
//!
//! ```text
//! store-stress DB|URL [--cases N] [--runs N] [--seed S] [--created-at RFC3339]
//! ```
//!
//! Prints `recording N` before and `recorded ID` after each run (stdout, one line each);
//! `--runs 0` (the default) records until killed.
// A benchmark program, not part of the veredicto command line: it prints its own figures
// (and exits with its own codes).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;
use std::process::ExitCode;
use veredicto_store::synthetic::{meta, Synthetic};
use veredicto_store::History;

struct Args {
    /// A file path or a postgres:// URL.
    db: String,
    cases: usize,
    runs: usize,
    seed: u64,
    created_at: String,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let mut out = Args {
        db: String::new(),
        cases: 200,
        runs: 0,
        seed: 1,
        created_at: "2025-11-14T09:30:00.000Z".to_owned(),
    };
    let mut db = None;
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--cases" => {
                out.cases = value("--cases")?
                    .parse()
                    .map_err(|e| format!("--cases: {e}"))?
            }
            "--runs" => {
                out.runs = value("--runs")?
                    .parse()
                    .map_err(|e| format!("--runs: {e}"))?
            }
            "--seed" => {
                out.seed = value("--seed")?
                    .parse()
                    .map_err(|e| format!("--seed: {e}"))?
            }
            "--created-at" => out.created_at = value("--created-at")?,
            other if db.is_none() && !other.starts_with("--") => db = Some(other.to_owned()),
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    out.db = db.ok_or("usage: store-stress DB [--cases N] [--runs N] [--seed S]")?;
    Ok(out)
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("store-stress: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    // Two reports (one that stops, one that passes), made before the loop so that the
    // process spends its time recording.
    let reports = [
        Synthetic {
            skill: 0.9,
            ..Synthetic::new(args.cases, args.seed)
        }
        .report(),
        Synthetic {
            skill: 1.0,
            ..Synthetic::new(args.cases, args.seed + 1)
        }
        .report(),
    ];
    let history = History::open_spec(&args.db).map_err(|e| e.to_string())?;
    let mut stdout = std::io::stdout();
    let mut i = 0usize;
    while args.runs == 0 || i < args.runs {
        let report = &reports[i % 2];
        let label = format!("stress-{}-{i}", std::process::id());
        let m = meta(report, &args.created_at, Some(&label));
        writeln!(stdout, "recording {i}").map_err(|e| e.to_string())?;
        let id = history.record(&m, report).map_err(|e| e.to_string())?;
        writeln!(stdout, "recorded {id}").map_err(|e| e.to_string())?;
        i += 1;
    }
    Ok(())
}
