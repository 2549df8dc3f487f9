//! `bench-trec`: times `veredicto trec` against trec_eval, pytrec_eval and ranx on synthetic
//! TREC data, end to end (spawn to exit), interleaved, and checks that their numbers agree.
//!
//! See docs/benchmarks.md for what is measured and how to read the output.
// A benchmark program, not part of the veredicto command line: it prints its own figures
// (and exits with its own codes).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use anyhow::{bail, Context, Result};
use clap::Parser;
use serde::Serialize;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;
use veredicto_bench::gen::{self, DataSet, Shape};
use veredicto_bench::measure::{self, Measured};
use veredicto_bench::output::{self, Agreement, MEASURE_ARGS};

/// Values must agree to this (trec_eval prints 4 decimals, so its rounding error is 5e-5).
const TOLERANCE: f64 = 1e-4;

#[derive(Debug, Parser)]
#[command(
    name = "bench-trec",
    about = "Times `veredicto trec` against trec_eval, pytrec_eval and ranx on synthetic TREC data."
)]
struct Args {
    /// Data shape(s): msmarco (6,980 queries x 1,000), wide (100,000 x 100) or both.
    #[arg(long, value_name = "msmarco|wide|both", default_value = "both")]
    shape: Vec<String>,
    /// Timed runs per peer and shape (interleaved: A B C A B C ...).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// The veredicto binary [default: `veredicto` beside this binary].
    #[arg(long, value_name = "PATH")]
    veredicto: Option<PathBuf>,
    /// trec_eval (C) binary [default: `trec_eval` on PATH, skipped if absent].
    #[arg(long, value_name = "PATH")]
    trec_eval: Option<PathBuf>,
    /// Python interpreter with pytrec-eval-terrier and ranx installed
    /// [default: .venv-bench/bin/python at the workspace root, else python3 on PATH].
    #[arg(long, value_name = "PATH")]
    python: Option<PathBuf>,
    /// Peers to run, comma-separated [default: every one found].
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "veredicto,trec_eval,pytrec_eval,ranx"
    )]
    peers: Vec<String>,
    /// Where generated data is cached (default: `<target dir>/bench-data`).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Where bench-pytrec_eval.py and bench-ranx.py are (default: `<workspace>/scripts`).
    #[arg(long, value_name = "DIR")]
    scripts_dir: Option<PathBuf>,
    /// In-process ranx evaluations for the cold/warm probe (0: no probe).
    #[arg(long, default_value_t = 3, value_name = "N")]
    ranx_evals: u32,
    /// Only generate (or check) the data sets and print their paths.
    #[arg(long)]
    generate_only: bool,
    /// Print the results as JSON on stdout (progress still goes to stderr).
    #[arg(long)]
    json: bool,
    /// Also write the JSON results to this file (whatever goes to stdout).
    #[arg(long, value_name = "FILE")]
    save: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
enum PeerKind {
    Veredicto,
    TrecEval,
    PytrecEval,
    Ranx,
}

impl PeerKind {
    const ALL: [PeerKind; 4] = [
        PeerKind::Veredicto,
        PeerKind::TrecEval,
        PeerKind::PytrecEval,
        PeerKind::Ranx,
    ];

    fn name(self) -> &'static str {
        match self {
            PeerKind::Veredicto => "veredicto",
            PeerKind::TrecEval => "trec_eval",
            PeerKind::PytrecEval => "pytrec_eval",
            PeerKind::Ranx => "ranx",
        }
    }
}

/// Peers that were asked for but cannot run, and why.
type Skipped = Vec<(PeerKind, String)>;

#[derive(Debug, Clone)]
struct Peer {
    kind: PeerKind,
    program: PathBuf,
    /// Arguments before QRELS RUN.
    args: Vec<OsString>,
    env: Vec<(String, OsString)>,
    version: String,
}

impl Peer {
    fn command(&self, data: &DataSet) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args).arg(&data.qrels).arg(&data.run);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null());
        cmd
    }

    fn display_command(&self) -> String {
        let mut parts = vec![self.program.display().to_string()];
        parts.extend(self.args.iter().map(|a| a.to_string_lossy().into_owned()));
        parts.push("QRELS".into());
        parts.push("RUN".into());
        parts.join(" ")
    }
}

#[derive(Debug, Clone, Serialize)]
struct RunRecord {
    wall_s: f64,
    cpu_s: f64,
    user_s: f64,
    sys_s: f64,
    max_rss_mib: f64,
}

impl From<&Measured> for RunRecord {
    fn from(m: &Measured) -> Self {
        RunRecord {
            wall_s: m.wall.as_secs_f64(),
            cpu_s: m.cpu().as_secs_f64(),
            user_s: m.user.as_secs_f64(),
            sys_s: m.sys.as_secs_f64(),
            max_rss_mib: m.max_rss_mib(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
struct PeerResult {
    peer: PeerKind,
    command: String,
    version: String,
    runs: Vec<RunRecord>,
    median_s: Option<f64>,
    min_s: Option<f64>,
    median_cpu_s: Option<f64>,
    peak_rss_mib: Option<f64>,
    /// This peer's median / veredicto's median (>1: veredicto is faster).
    ratio_vs_veredicto: Option<f64>,
    /// peak RSS / veredicto's peak RSS.
    rss_ratio_vs_veredicto: Option<f64>,
    /// Median CPU time (user + sys) / veredicto's: less sensitive to a busy machine.
    cpu_ratio_vs_veredicto: Option<f64>,
    means: BTreeMap<String, f64>,
    /// Every run printed the same stdout.
    output_stable: bool,
    /// Internal timings reported by the Python scripts (last run).
    internal_timing: Option<serde_json::Value>,
    error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
struct AgreementRecord {
    peer: PeerKind,
    reference: PeerKind,
    tolerance: f64,
    ok: bool,
    detail: Agreement,
}

#[derive(Debug, Clone, Serialize)]
struct RanxProbe {
    wall_s: f64,
    max_rss_mib: f64,
    timing: Option<serde_json::Value>,
    error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
struct ShapeResult {
    shape: Shape,
    qrels: PathBuf,
    run: PathBuf,
    data: gen::Meta,
    peers: Vec<PeerResult>,
    agreement: Vec<AgreementRecord>,
    ranx_probe: Option<RanxProbe>,
}

#[derive(Debug, Clone, Serialize)]
struct Machine {
    cpu_model: String,
    logical_cpus: usize,
    mem_total_gib: f64,
    kernel: String,
}

#[derive(Debug, Clone, Serialize)]
struct Report {
    seed: u64,
    generator_version: u32,
    runs_per_peer: u32,
    measures: Vec<&'static str>,
    machine: Machine,
    skipped_peers: Skipped,
    shapes: Vec<ShapeResult>,
}

fn main() -> std::process::ExitCode {
    match real_main() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-trec: error: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}

fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .unwrap_or(manifest)
        .to_path_buf()
}

fn exe_dir() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()?
        .parent()
        .map(Path::to_path_buf)
}

fn parse_shapes(raw: &[String]) -> Result<Vec<Shape>> {
    let mut shapes = Vec::new();
    for item in raw.iter().flat_map(|s| s.split(',')) {
        match item.trim() {
            "both" | "all" => shapes.extend(Shape::ALL),
            other => match Shape::parse(other) {
                Some(s) => shapes.push(s),
                None => bail!("unknown shape {other:?} (expected msmarco, wide or both)"),
            },
        }
    }
    shapes.sort();
    shapes.dedup();
    Ok(shapes)
}

fn parse_peers(raw: &[String]) -> Result<Vec<PeerKind>> {
    if raw.is_empty() {
        return Ok(PeerKind::ALL.to_vec());
    }
    let mut peers = Vec::new();
    for item in raw {
        match PeerKind::ALL.into_iter().find(|p| p.name() == item.trim()) {
            Some(p) => peers.push(p),
            None => {
                bail!("unknown peer {item:?} (expected veredicto, trec_eval, pytrec_eval or ranx)")
            }
        }
    }
    peers.sort();
    peers.dedup();
    Ok(peers)
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Runs a short command and returns its trimmed stdout+stderr, or None if it failed.
fn probe(program: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    out.status.success().then(|| text.trim().to_string())
}

fn discover_peers(
    args: &Args,
    wanted: &[PeerKind],
    numba_cache: &Path,
) -> Result<(Vec<Peer>, Skipped)> {
    let root = workspace_root();
    let mut peers = Vec::new();
    let mut skipped = Vec::new();
    let measure_args: Vec<OsString> = MEASURE_ARGS
        .iter()
        .flat_map(|m| [OsString::from("-m"), OsString::from(*m)])
        .collect();

    if wanted.contains(&PeerKind::Veredicto) {
        let path = match &args.veredicto {
            Some(p) => p.clone(),
            None => exe_dir()
                .map(|d| d.join("veredicto"))
                .unwrap_or_else(|| PathBuf::from("veredicto")),
        };
        if path.is_file() {
            let version = probe(&path, &["--version"]).unwrap_or_default();
            let mut a = vec![OsString::from("trec")];
            a.extend(measure_args.iter().cloned());
            peers.push(Peer {
                kind: PeerKind::Veredicto,
                program: path,
                args: a,
                env: vec![],
                version,
            });
        } else if args.veredicto.is_some() {
            bail!("--veredicto {}: no such file", path.display());
        } else {
            skipped.push((
                PeerKind::Veredicto,
                format!(
                    "{} not found: build it with `cargo build --release -p veredicto`",
                    path.display()
                ),
            ));
        }
    }

    if wanted.contains(&PeerKind::TrecEval) {
        let path = match &args.trec_eval {
            Some(p) if p.is_file() => Some(p.clone()),
            Some(p) => bail!("--trec-eval {}: no such file", p.display()),
            None => find_on_path("trec_eval"),
        };
        match path {
            Some(path) => {
                let version = probe(&path, &["-v"]).unwrap_or_default();
                peers.push(Peer {
                    kind: PeerKind::TrecEval,
                    program: path,
                    args: measure_args.clone(),
                    env: vec![],
                    version,
                });
            }
            None => skipped.push((
                PeerKind::TrecEval,
                "no trec_eval on PATH and no --trec-eval".into(),
            )),
        }
    }

    let wants_python = wanted.contains(&PeerKind::PytrecEval) || wanted.contains(&PeerKind::Ranx);
    if wants_python {
        let python = match &args.python {
            Some(p) => Some(p.clone()),
            None => {
                let venv = root.join(".venv-bench/bin/python");
                if venv.is_file() {
                    Some(venv)
                } else {
                    find_on_path("python3")
                }
            }
        };
        let scripts = args
            .scripts_dir
            .clone()
            .unwrap_or_else(|| root.join("scripts"));
        let specs = [
            (
                PeerKind::PytrecEval,
                "pytrec_eval",
                "pytrec-eval-terrier",
                "bench-pytrec_eval.py",
            ),
            (PeerKind::Ranx, "ranx", "ranx", "bench-ranx.py"),
        ];
        for (kind, module, dist, script) in specs {
            if !wanted.contains(&kind) {
                continue;
            }
            let Some(python) = &python else {
                skipped.push((
                    kind,
                    "no Python (run scripts/bench-peers-setup.sh or pass --python)".into(),
                ));
                continue;
            };
            let script = scripts.join(script);
            if !script.is_file() {
                skipped.push((
                    kind,
                    format!("{} not found (--scripts-dir)", script.display()),
                ));
                continue;
            }
            let check =
                format!("import {module}, importlib.metadata as m; print(m.version('{dist}'))");
            let Some(version) = probe(python, &["-c", &check]) else {
                skipped.push((
                    kind,
                    format!(
                        "{} cannot import {module} (run scripts/bench-peers-setup.sh)",
                        python.display()
                    ),
                ));
                continue;
            };
            let env = if kind == PeerKind::Ranx {
                vec![(
                    "NUMBA_CACHE_DIR".to_string(),
                    numba_cache.as_os_str().to_owned(),
                )]
            } else {
                vec![]
            };
            peers.push(Peer {
                kind,
                program: python.clone(),
                args: vec![script.into_os_string()],
                env,
                version: format!("{dist} {version}"),
            });
        }
    }
    Ok((peers, skipped))
}

fn read_to_string_lossy(path: &Path) -> String {
    fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The `# timing {json}` line the Python scripts print on stderr.
fn internal_timing(stderr: &str) -> Option<serde_json::Value> {
    stderr.lines().rev().find_map(|l| {
        l.strip_prefix("# timing ")
            .and_then(|j| serde_json::from_str(j).ok())
    })
}

/// Reads both files once so that every peer starts with them in the page cache.
fn warm_page_cache(data: &DataSet) -> Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    for path in [&data.qrels, &data.run] {
        let mut f = fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
        while f.read(&mut buf)? > 0 {}
    }
    Ok(())
}

fn run_peer_once(
    peer: &Peer,
    data: &DataSet,
    out_dir: &Path,
) -> Result<(Measured, String, String)> {
    let stdout_path = out_dir.join(format!("{}-{}.stdout", data.shape, peer.kind.name()));
    let stderr_path = out_dir.join(format!("{}-{}.stderr", data.shape, peer.kind.name()));
    let mut cmd = peer.command(data);
    cmd.stdout(fs::File::create(&stdout_path)?)
        .stderr(fs::File::create(&stderr_path)?);
    let m = measure::run(&mut cmd).with_context(|| format!("spawn {}", peer.program.display()))?;
    Ok((
        m,
        read_to_string_lossy(&stdout_path),
        read_to_string_lossy(&stderr_path),
    ))
}

fn ranx_probe(peer: &Peer, data: &DataSet, numba_cache: &Path, evals: u32) -> RanxProbe {
    // A fresh cache: the first evaluation then includes numba's JIT compilation, and the cache
    // is left populated for the timed runs.
    let _ = fs::remove_dir_all(numba_cache);
    let err_path = numba_cache.with_extension("probe.stderr");
    let stderr_file = match fs::File::create(&err_path) {
        Ok(f) => f,
        Err(e) => {
            return RanxProbe {
                wall_s: 0.0,
                max_rss_mib: 0.0,
                timing: None,
                error: Some(e.to_string()),
            }
        }
    };
    let mut cmd = Command::new(&peer.program);
    cmd.args(&peer.args)
        .arg("--evals")
        .arg(evals.to_string())
        .arg(&data.qrels)
        .arg(&data.run);
    cmd.envs(peer.env.iter().map(|(k, v)| (k, v)));
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr_file);
    match measure::run(&mut cmd) {
        Ok(m) => {
            let stderr = read_to_string_lossy(&err_path);
            RanxProbe {
                wall_s: m.wall.as_secs_f64(),
                max_rss_mib: m.max_rss_mib(),
                timing: internal_timing(&stderr),
                error: (!m.success()).then(|| tail_lines(&stderr, 5)),
            }
        }
        Err(e) => RanxProbe {
            wall_s: 0.0,
            max_rss_mib: 0.0,
            timing: None,
            error: Some(e.to_string()),
        },
    }
}

fn bench_shape(
    data: &DataSet,
    peers: &[Peer],
    args: &Args,
    out_dir: &Path,
    numba_cache: &Path,
) -> Result<ShapeResult> {
    warm_page_cache(data)?;

    let probe = match peers.iter().find(|p| p.kind == PeerKind::Ranx) {
        Some(ranx) if args.ranx_evals > 0 => {
            eprintln!(
                "[{}] ranx cold/warm probe ({} evaluations in one process, fresh numba cache)",
                data.shape, args.ranx_evals
            );
            Some(ranx_probe(ranx, data, numba_cache, args.ranx_evals))
        }
        _ => None,
    };

    let mut results: Vec<PeerResult> = peers
        .iter()
        .map(|p| PeerResult {
            peer: p.kind,
            command: p.display_command(),
            version: p.version.clone(),
            runs: vec![],
            median_s: None,
            min_s: None,
            median_cpu_s: None,
            peak_rss_mib: None,
            ratio_vs_veredicto: None,
            rss_ratio_vs_veredicto: None,
            cpu_ratio_vs_veredicto: None,
            means: BTreeMap::new(),
            output_stable: true,
            internal_timing: None,
            error: None,
        })
        .collect();
    let mut first_stdout: Vec<Option<String>> = vec![None; peers.len()];

    for round in 1..=args.runs {
        for (i, peer) in peers.iter().enumerate() {
            if results[i].error.is_some() {
                continue;
            }
            let (m, stdout, stderr) = run_peer_once(peer, data, out_dir)?;
            let rec = RunRecord::from(&m);
            eprintln!(
                "[{}] run {round}/{} {:<12} {:>8.3} s  cpu {:>8.3} s  rss {:>8.1} MiB{}",
                data.shape,
                args.runs,
                peer.kind.name(),
                rec.wall_s,
                rec.cpu_s,
                rec.max_rss_mib,
                if m.success() { "" } else { "  FAILED" }
            );
            let r = &mut results[i];
            if !m.success() {
                let how = match (m.code, m.signal) {
                    (Some(c), _) => format!("exit code {c}"),
                    (None, Some(s)) => format!("killed by signal {s}"),
                    _ => "abnormal exit".into(),
                };
                r.error = Some(format!("{how}: {}", tail_lines(&stderr, 5)));
                continue;
            }
            r.runs.push(rec);
            r.internal_timing = internal_timing(&stderr);
            match &first_stdout[i] {
                None => {
                    r.means = output::all_means(&stdout);
                    first_stdout[i] = Some(stdout);
                }
                Some(first) => r.output_stable &= *first == stdout,
            }
        }
    }

    for r in &mut results {
        if r.runs.is_empty() {
            continue;
        }
        let walls: Vec<f64> = r.runs.iter().map(|x| x.wall_s).collect();
        let cpus: Vec<f64> = r.runs.iter().map(|x| x.cpu_s).collect();
        r.median_s = Some(measure::median(&walls));
        r.min_s = walls.iter().copied().reduce(f64::min);
        r.median_cpu_s = Some(measure::median(&cpus));
        r.peak_rss_mib = r.runs.iter().map(|x| x.max_rss_mib).reduce(f64::max);
    }
    let base = results
        .iter()
        .find(|r| r.peer == PeerKind::Veredicto)
        .map(|r| (r.median_s, r.peak_rss_mib, r.median_cpu_s));
    if let Some((Some(base_t), Some(base_rss), Some(base_cpu))) = base {
        for r in &mut results {
            r.ratio_vs_veredicto = r.median_s.map(|t| t / base_t);
            r.rss_ratio_vs_veredicto = r.peak_rss_mib.map(|m| m / base_rss);
            r.cpu_ratio_vs_veredicto = r.median_cpu_s.map(|c| c / base_cpu);
        }
    }

    // Agreement: veredicto against each of trec_eval and pytrec_eval; trec_eval against
    // pytrec_eval as a check of the data; ranx against the best reference, for information.
    let ok_means = |k: PeerKind| {
        results
            .iter()
            .find(|r| r.peer == k && r.error.is_none() && !r.means.is_empty())
            .map(|r| &r.means)
    };
    let mut agreement = Vec::new();
    let pairs = [
        (PeerKind::Veredicto, PeerKind::TrecEval),
        (PeerKind::Veredicto, PeerKind::PytrecEval),
        (PeerKind::PytrecEval, PeerKind::TrecEval),
        (PeerKind::Ranx, PeerKind::TrecEval),
    ];
    for (peer, reference) in pairs {
        let reference = if reference == PeerKind::TrecEval
            && ok_means(PeerKind::TrecEval).is_none()
            && peer == PeerKind::Ranx
        {
            PeerKind::PytrecEval
        } else {
            reference
        };
        if let (Some(p), Some(r)) = (ok_means(peer), ok_means(reference)) {
            let detail = output::compare(r, p, TOLERANCE);
            agreement.push(AgreementRecord {
                peer,
                reference,
                tolerance: TOLERANCE,
                ok: detail.ok(),
                detail,
            });
        }
    }

    Ok(ShapeResult {
        shape: data.shape,
        qrels: data.qrels.clone(),
        run: data.run.clone(),
        data: data.meta.clone(),
        peers: results,
        agreement,
        ranx_probe: probe,
    })
}

fn machine() -> Machine {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let meminfo = fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kib: f64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    Machine {
        cpu_model,
        logical_cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        mem_total_gib: mem_kib / (1024.0 * 1024.0),
        kernel: fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_string(),
    }
}

fn fmt_opt(v: Option<f64>, prec: usize) -> String {
    v.map_or_else(|| "-".to_string(), |x| format!("{x:.prec$}"))
}

fn print_table(report: &Report, out: &mut impl Write) -> std::io::Result<()> {
    let m = &report.machine;
    writeln!(
        out,
        "\nmachine: {} ({} logical CPUs, {:.0} GiB), Linux {}; {} run(s) per peer, interleaved; wall clock spawn->exit",
        m.cpu_model, m.logical_cpus, m.mem_total_gib, m.kernel, report.runs_per_peer
    )?;
    writeln!(out, "measures: {}", report.measures.join(" "))?;
    for (kind, why) in &report.skipped_peers {
        writeln!(out, "skipped {}: {why}", kind.name())?;
    }
    for s in &report.shapes {
        let st = &s.data.stats;
        writeln!(
            out,
            "\n{}: {} queries x {} results ({} run lines, {:.1} MB); {} qrels lines, {:.2} relevant/query",
            s.shape,
            s.data.queries,
            s.data.depth,
            st.run_lines,
            s.data.run_bytes as f64 / 1e6,
            st.qrels_lines,
            st.relevant_per_query()
        )?;
        writeln!(
            out,
            "{:<8} {:<12} {:>10} {:>10} {:>10} {:>14} {:>8} {:>8} {:>8}",
            "shape",
            "peer",
            "median s",
            "min s",
            "cpu s",
            "peak RSS MiB",
            "time x",
            "cpu x",
            "RSS x"
        )?;
        for r in &s.peers {
            writeln!(
                out,
                "{:<8} {:<12} {:>10} {:>10} {:>10} {:>14} {:>8} {:>8} {:>8}",
                s.shape.name(),
                r.peer.name(),
                fmt_opt(r.median_s, 3),
                fmt_opt(r.min_s, 3),
                fmt_opt(r.median_cpu_s, 3),
                fmt_opt(r.peak_rss_mib, 1),
                fmt_opt(r.ratio_vs_veredicto, 2),
                fmt_opt(r.cpu_ratio_vs_veredicto, 2),
                fmt_opt(r.rss_ratio_vs_veredicto, 2),
            )?;
        }
        writeln!(out, "(time x, cpu x, RSS x: the peer's median wall time / median CPU time (user+sys) / peak RSS divided by veredicto's; > 1 means veredicto is faster / smaller)")?;
        for r in &s.peers {
            if let Some(e) = &r.error {
                writeln!(
                    out,
                    "{} FAILED: {}",
                    r.peer.name(),
                    e.replace('\n', "\n    ")
                )?;
            }
            if !r.output_stable {
                writeln!(out, "{}: output differed between runs!", r.peer.name())?;
            }
        }
        if let Some(p) = &s.ranx_probe {
            match (&p.error, &p.timing) {
                (Some(e), _) => writeln!(out, "ranx probe FAILED: {e}")?,
                (None, Some(t)) => writeln!(
                    out,
                    "ranx in one process, fresh numba cache: import {:.2} s, parse {:.2} s, evaluate calls {} s (1st = JIT compile + run; later = warm); process {:.2} s, {:.0} MiB",
                    t["import_s"].as_f64().unwrap_or(f64::NAN),
                    t["parse_s"].as_f64().unwrap_or(f64::NAN),
                    t["evaluate_s"]
                        .as_array()
                        .map(|a| a.iter().map(|v| format!("{:.2}", v.as_f64().unwrap_or(f64::NAN))).collect::<Vec<_>>().join(" / "))
                        .unwrap_or_default(),
                    p.wall_s,
                    p.max_rss_mib
                )?,
                (None, None) => {}
            }
        }
        for a in &s.agreement {
            if a.ok {
                writeln!(
                    out,
                    "values: {} agrees with {} on all {} measures (max |diff| {:.1e} <= {:.0e})",
                    a.peer.name(),
                    a.reference.name(),
                    a.detail.agreeing.len(),
                    a.detail.max_abs_diff,
                    a.tolerance
                )?;
            } else {
                let diffs: Vec<String> = a
                    .detail
                    .differing
                    .iter()
                    .map(|(m, r, p)| format!("{m}: {r:.6} vs {p:.6}"))
                    .collect();
                writeln!(
                    out,
                    "values: {} DISAGREES with {}: {}{}",
                    a.peer.name(),
                    a.reference.name(),
                    diffs.join(", "),
                    if a.detail.missing.is_empty() {
                        String::new()
                    } else {
                        format!(" missing: {}", a.detail.missing.join(" "))
                    }
                )?;
                if a.peer == PeerKind::Ranx {
                    writeln!(out, "  (expected on this data: ranx keeps tied scores in file order, trec_eval orders them by docid descending; see docs/benchmarks.md)")?;
                }
            }
        }
        if !s.agreement.iter().any(|a| a.peer == PeerKind::Veredicto) {
            writeln!(out, "values: veredicto not checked (it did not run successfully, or no reference peer ran)")?;
        }
    }
    Ok(())
}

fn real_main() -> Result<()> {
    let args = Args::parse();
    let shapes = parse_shapes(&args.shape)?;
    let wanted = parse_peers(&args.peers)?;
    let data_root = match &args.data_dir {
        Some(d) => d.clone(),
        None => exe_dir()
            .and_then(|d| d.parent().map(|t| t.join("bench-data")))
            .unwrap_or_else(|| workspace_root().join("target/bench-data")),
    };
    fs::create_dir_all(&data_root).with_context(|| format!("create {}", data_root.display()))?;

    let mut datasets = Vec::new();
    for &shape in &shapes {
        let t = Instant::now();
        let data = gen::ensure(&data_root, shape)
            .with_context(|| format!("generate {shape} under {}", data_root.display()))?;
        eprintln!(
            "[{shape}] {} data in {:.1} s: {} ({:.1} MB), {} ({:.1} MB); {:.2} relevant/query",
            if data.generated {
                "generated"
            } else {
                "reused cached"
            },
            t.elapsed().as_secs_f64(),
            data.qrels.display(),
            data.meta.qrels_bytes as f64 / 1e6,
            data.run.display(),
            data.meta.run_bytes as f64 / 1e6,
            data.meta.stats.relevant_per_query()
        );
        datasets.push(data);
    }
    if args.generate_only {
        for d in &datasets {
            println!("{}\t{}\t{}", d.shape, d.qrels.display(), d.run.display());
        }
        return Ok(());
    }

    let out_dir = data_root.join("out");
    fs::create_dir_all(&out_dir)?;
    let numba_cache = data_root.join("numba-cache");
    let (peers, skipped) = discover_peers(&args, &wanted, &numba_cache)?;
    for (kind, why) in &skipped {
        eprintln!("skipping {}: {why}", kind.name());
    }
    if peers.is_empty() {
        bail!("no peer to run");
    }
    for p in &peers {
        eprintln!(
            "peer {:<12} {}  [{}]",
            p.kind.name(),
            p.display_command(),
            p.version.lines().next().unwrap_or("")
        );
    }

    let mut shape_results = Vec::new();
    for data in &datasets {
        shape_results.push(bench_shape(data, &peers, &args, &out_dir, &numba_cache)?);
    }
    let report = Report {
        seed: gen::SEED,
        generator_version: gen::GENERATOR_VERSION,
        runs_per_peer: args.runs,
        measures: MEASURE_ARGS.to_vec(),
        machine: machine(),
        skipped_peers: skipped,
        shapes: shape_results,
    };
    if let Some(path) = &args.save {
        let json = serde_json::to_vec_pretty(&report)?;
        fs::write(path, json).with_context(|| format!("write {}", path.display()))?;
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        print_table(&report, &mut out)?;
    }
    Ok(())
}
