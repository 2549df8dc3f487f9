//! A fuzzing harness for veredicto's parsers that runs on stable Rust.
//!
//! Each [`targets::Target`] takes bytes, places them where its parser reads them (a file, a
//! folder unpacked from a [`bundle`], or a gzipped tar) and calls the public reading
//! function. An input passes when the parser returns `Ok`, or an error whose message names
//! the file or folder it read. It fails when the parser panics, when the error does not name
//! the file, or when it takes more than the slow limit of CPU time (1 s for inputs up to
//! 1 MB; CPU time, so that a loaded machine does not make a parser look slow).
//!
//! Inputs come from a seeded [`mutate`] over valid seed files: the same seed and execution
//! count give the same inputs. Without coverage instrumentation (which needs a nightly
//! compiler), the harness keeps a mutant as a new starting point when it produces an error
//! message of a kind not seen before: a cheap proxy for "reached a new check".

pub mod bundle;
pub mod mutate;
pub mod rng;
pub mod targets;

use rng::Rng;
use std::collections::{BTreeMap, HashSet};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};
use targets::{Layout, Target};

/// What one input did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Ok,
    /// A clean error; the message (with the work folder's path replaced by `<work>`).
    Error(String),
    /// The parser panicked: message and location.
    Panic(String),
    /// The error message does not name the file or folder.
    Unnamed(String),
}

impl Verdict {
    pub fn is_failure(&self) -> bool {
        matches!(self, Verdict::Panic(_) | Verdict::Unnamed(_))
    }
}

/// One input's verdict and time.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub verdict: Verdict,
    /// CPU time the process spent on the parser call (every thread, so rayon's work
    /// counts): unlike wall time, it does not grow when other programs load the machine.
    pub elapsed: Duration,
    /// Wall time of the parser call.
    pub wall: Duration,
    /// Length of the error message in bytes (0 when `Ok`).
    pub error_len: usize,
}

/// Limits an input must stay within.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// An input up to 1 MB that takes longer than this is a failure ("slow").
    pub slow: Duration,
    /// An input still running after this is a hang: the watchdog saves it and ends the
    /// process (a thread cannot be stopped from outside).
    pub hang: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            slow: Duration::from_secs(1),
            hang: Duration::from_secs(30),
        }
    }
}

/// How long a campaign runs.
#[derive(Debug, Clone, Copy)]
pub enum Budget {
    /// A fixed number of mutated inputs (deterministic).
    Executions(u64),
    /// As many as fit in this time.
    Time(Duration),
}

/// A failing input kept by a campaign.
#[derive(Debug, Clone)]
pub struct Finding {
    pub kind: &'static str,
    pub detail: String,
    pub input: Vec<u8>,
    pub elapsed: Duration,
}

/// A campaign's figures for one target.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub target: String,
    pub executions: u64,
    pub ok: u64,
    pub errors: u64,
    pub panics: u64,
    pub unnamed: u64,
    pub slow: u64,
    /// Inputs stopped by the watchdog (or a crash that ended the campaign's process).
    pub hangs: u64,
    /// The slowest input: time, length in bytes, SHA-256 prefix.
    pub slowest: (Duration, usize, String),
    /// The largest input.
    pub largest: usize,
    /// The longest error message, in bytes.
    pub longest_error: usize,
    /// Distinct kinds of error message seen.
    pub error_kinds: usize,
    pub elapsed: Duration,
    /// Failing inputs (at most one per distinct panic location or message kind).
    pub findings: Vec<Finding>,
}

impl Stats {
    pub fn failures(&self) -> u64 {
        self.panics + self.unnamed + self.slow + self.hangs
    }
}

static HOOK: Once = Once::new();
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);
thread_local! {
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}
static ANY_QUIET: AtomicBool = AtomicBool::new(false);

/// Installs (once) a panic hook that records the panic's location instead of printing it
/// while the harness runs an input; other panics print as usual.
fn install_hook() {
    HOOK.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if ANY_QUIET.load(Ordering::Relaxed) || QUIET.with(|q| q.get()) {
                let loc = info
                    .location()
                    .map(|l| format!("{}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                let payload = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some(format!("{} at {loc}", short(&payload, 300)));
            } else {
                default(info);
            }
        }));
    });
}

fn short(s: &str, max: usize) -> String {
    veredicto_core::redact::excerpt(s, max)
}

/// Runs one input through `target` in the private folder `work`.
pub fn check(target: &Target, input: &[u8], work: &Path) -> Outcome {
    install_hook();
    let start = Instant::now();
    let placed = targets::place(target, input, work);
    let path = match placed {
        Ok(p) => p,
        Err(e) => {
            return Outcome {
                verdict: Verdict::Error(format!("(harness could not write the input: {e})")),
                elapsed: Duration::ZERO,
                wall: start.elapsed(),
                error_len: 0,
            }
        }
    };
    QUIET.with(|q| q.set(true));
    ANY_QUIET.store(true, Ordering::Relaxed);
    let start = Instant::now();
    let cpu = process_cpu();
    let result = panic::catch_unwind(AssertUnwindSafe(|| (target.run)(&path)));
    let elapsed = process_cpu().saturating_sub(cpu);
    let wall = start.elapsed();
    QUIET.with(|q| q.set(false));
    let (verdict, error_len) = match result {
        Ok(Ok(())) => (Verdict::Ok, 0),
        Ok(Err(message)) => {
            let named = path.display().to_string();
            let work_s = work.display().to_string();
            let len = message.len();
            let clean = message.replace(&work_s, "<work>");
            if message.contains(&named) {
                (Verdict::Error(clean), len)
            } else {
                (Verdict::Unnamed(short(&clean, 300)), len)
            }
        }
        Err(payload) => {
            let recorded = LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()).take();
            let text = recorded.unwrap_or_else(|| {
                payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "(non-text panic)".into())
            });
            (
                Verdict::Panic(text.replace(&work.display().to_string(), "<work>")),
                0,
            )
        }
    };
    Outcome {
        verdict,
        elapsed,
        wall,
        error_len,
    }
}

/// CPU time used by this process so far (all threads).
fn process_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into a valid timespec; on failure it stays zero.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        ts.tv_sec.max(0) as u64,
        ts.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

/// The kind of an error message: digits and quoted or back-ticked values blanked, cut
/// short, so that messages differing only in a line number or a value count once.
pub fn error_kind(message: &str) -> String {
    let mut out = String::new();
    let mut quote: Option<char> = None;
    for c in message.chars() {
        match quote {
            Some(q) if c == q => {
                quote = None;
                out.push(c);
            }
            Some(_) => {}
            None if matches!(c, '`' | '"' | '\'') => {
                quote = Some(c);
                out.push(c);
            }
            None if c.is_ascii_digit() => {
                if !out.ends_with('#') {
                    out.push('#');
                }
            }
            None => out.push(c),
        }
        if out.len() >= 120 {
            break;
        }
    }
    out
}

/// Shared between the campaign and its watchdog: when the current input started, and
/// the input itself.
type Current = Arc<Mutex<Option<(Instant, Arc<Vec<u8>>)>>>;

/// Starts a watchdog that saves the running input and ends the process when one input has
/// run longer than `limit`. Returns the flag that stops it.
fn watchdog(
    target: &'static str,
    current: Current,
    limit: Duration,
    findings_dir: Option<PathBuf>,
) -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = Arc::clone(&stop);
    std::thread::spawn(move || {
        while !stop2.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
            let guard = current.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((started, input)) = guard.as_ref() {
                if started.elapsed() > limit {
                    let dir = findings_dir
                        .clone()
                        .unwrap_or_else(std::env::temp_dir)
                        .join(target);
                    let _ = std::fs::create_dir_all(&dir);
                    let file = dir.join(format!("hang-{}", &sha_hex(input)[..16]));
                    let _ = std::fs::write(&file, input.as_slice());
                    // A hung input cannot be interrupted from this thread: the watchdog says
                    // why and ends the fuzzing process (exit 3) itself.
                    #[allow(clippy::print_stderr, clippy::exit)]
                    {
                        eprintln!(
                        "fuzz: target {target}: an input of {} bytes has run for more than {:?}; \
                         saved to {}; stopping",
                        input.len(),
                        limit,
                        file.display()
                    );
                        std::process::exit(3);
                    }
                }
            }
        }
    });
    stop
}

pub fn sha_hex(b: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// Settings of one campaign.
#[derive(Debug, Clone)]
pub struct Campaign {
    pub seed: u64,
    pub budget: Budget,
    pub limits: Limits,
    /// Where failing inputs are written (`<dir>/<target>/<kind>-<hash>`), if anywhere.
    pub findings_dir: Option<PathBuf>,
}

/// Mutates `target`'s seeds under `campaign` and returns the figures.
pub fn run_campaign(target: &'static Target, campaign: &Campaign) -> Stats {
    let work = std::env::temp_dir().join(format!(
        "veredicto-fuzz-{}-{}-{}",
        target.name,
        std::process::id(),
        campaign.seed
    ));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("work folder");
    let current: Current = Arc::default();
    let stop = watchdog(
        target.name,
        Arc::clone(&current),
        campaign.limits.hang,
        campaign.findings_dir.clone(),
    );
    let stats = campaign_loop(target, campaign, &work, &current);
    stop.store(true, Ordering::Relaxed);
    let _ = std::fs::remove_dir_all(&work);
    stats
}

fn campaign_loop(target: &'static Target, c: &Campaign, work: &Path, current: &Current) -> Stats {
    let grammar = mutate::Grammar {
        dictionary: target.dictionary,
        jsonl: target.jsonl,
    };
    let seeds = targets::seeds(target);
    let mut pool: Vec<Vec<u8>> = seeds.clone();
    let mut kinds: HashSet<String> = HashSet::new();
    let mut seen_failures: HashSet<String> = HashSet::new();
    let mut rng = Rng::new(c.seed ^ fnv(target.name));
    let mut stats = Stats {
        target: target.name.to_string(),
        ..Stats::default()
    };
    let started = Instant::now();
    // Seeds first (they must pass), then mutants.
    let mut queue: Vec<Vec<u8>> = seeds.clone();
    queue.reverse();
    loop {
        let done = match c.budget {
            Budget::Executions(n) => stats.executions >= n + seeds.len() as u64,
            Budget::Time(d) => started.elapsed() >= d,
        };
        if done {
            break;
        }
        let input = match queue.pop() {
            Some(s) => s,
            None => {
                // A third of the mutants start from a seed, the rest from anywhere in the pool.
                let base = if rng.one_in(3) {
                    rng.below(seeds.len())
                } else {
                    rng.below(pool.len())
                };
                let others: Vec<&[u8]> = pool.iter().map(|p| p.as_slice()).collect();
                let mut x = pool[base].clone();
                if target.layout == Layout::Folder {
                    mutate_bundle(&mut rng, &mut x, &others, &grammar);
                } else {
                    mutate::mutate(&mut rng, &mut x, &others, &grammar);
                }
                x
            }
        };
        let input = Arc::new(input);
        *current.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((Instant::now(), Arc::clone(&input)));
        let out = check(target, &input, work);
        *current.lock().unwrap_or_else(|e| e.into_inner()) = None;
        stats.executions += 1;
        stats.largest = stats.largest.max(input.len());
        stats.longest_error = stats.longest_error.max(out.error_len);
        if out.elapsed > stats.slowest.0 {
            stats.slowest = (out.elapsed, input.len(), sha_hex(&input)[..12].to_string());
        }
        let slow = out.elapsed > c.limits.slow && input.len() <= mutate::MAX_LEN;
        let (kind, detail) = match &out.verdict {
            Verdict::Ok => {
                stats.ok += 1;
                ("ok", String::new())
            }
            Verdict::Error(m) => {
                stats.errors += 1;
                let k = error_kind(m);
                if kinds.insert(k) && pool.len() < 2_000 {
                    pool.push(input.to_vec());
                }
                ("error", String::new())
            }
            Verdict::Panic(m) => {
                stats.panics += 1;
                ("panic", m.clone())
            }
            Verdict::Unnamed(m) => {
                stats.unnamed += 1;
                ("unnamed", m.clone())
            }
        };
        let (kind, detail) = if slow && !out.verdict.is_failure() {
            stats.slow += 1;
            (
                "slow",
                format!("{:?} for {} bytes", out.elapsed, input.len()),
            )
        } else {
            (kind, detail)
        };
        if matches!(kind, "panic" | "unnamed" | "slow") {
            let key = format!("{kind}:{}", error_kind(&detail));
            if seen_failures.insert(key) || kind == "slow" && stats.findings.len() < 50 {
                let finding = Finding {
                    kind,
                    detail,
                    input: input.to_vec(),
                    elapsed: out.elapsed,
                };
                if let Some(dir) = &c.findings_dir {
                    save_finding(dir, target, &finding);
                }
                stats.findings.push(finding);
            }
        }
    }
    stats.error_kinds = kinds.len();
    stats.elapsed = started.elapsed();
    stats
}

/// Mutates one file of a bundle (so the other files stay valid), or, rarely, the bundle
/// as a whole (dropping or duplicating files).
fn mutate_bundle(rng: &mut Rng, input: &mut Vec<u8>, others: &[&[u8]], g: &mutate::Grammar<'_>) {
    let mut files = bundle::decode(input);
    if files.is_empty() || rng.one_in(20) {
        mutate::mutate(rng, input, others, g);
        return;
    }
    if rng.one_in(15) {
        let i = rng.below(files.len());
        files.remove(i);
    } else {
        let i = rng.below(files.len());
        // Splices come from the files of one other bundle (decoding them all is too slow).
        let other_files: Vec<Vec<u8>> = if others.is_empty() {
            Vec::new()
        } else {
            bundle::decode(others[rng.below(others.len())])
                .into_iter()
                .map(|(_, b)| b)
                .collect()
        };
        let refs: Vec<&[u8]> = other_files.iter().map(|b| b.as_slice()).collect();
        let jsonl = files[i].0.ends_with(".jsonl");
        let g2 = mutate::Grammar {
            dictionary: g.dictionary,
            jsonl: g.jsonl || jsonl,
        };
        mutate::mutate(rng, &mut files[i].1, &refs, &g2);
    }
    *input = bundle::encode(&files);
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The file extension a target's inputs are saved with.
pub fn extension(target: &Target) -> &'static str {
    match target.layout {
        Layout::File(name) => {
            if name.ends_with(".tar.gz") {
                "tar.gz"
            } else {
                name.rsplit('.').next().unwrap_or("bin")
            }
        }
        Layout::Folder => "bundle",
        Layout::Gzipped(_) => "tar",
    }
}

fn save_finding(dir: &Path, target: &Target, f: &Finding) {
    let d = dir.join(target.name);
    let _ = std::fs::create_dir_all(&d);
    let name = format!(
        "{}-{}.{}",
        f.kind,
        &sha_hex(&f.input)[..16],
        extension(target)
    );
    let _ = std::fs::write(d.join(&name), &f.input);
    let _ = std::fs::write(
        d.join(format!("{name}.txt")),
        format!("{} ({:?})\n", f.detail, f.elapsed),
    );
}

/// Replays every file of `corpus/<target>/` (the regression corpus); returns, per file,
/// the outcome. Files whose name ends in `.txt` or `.md` are notes and are skipped.
pub fn replay(dir: &Path, target: &Target, work: &Path) -> BTreeMap<PathBuf, Outcome> {
    let mut out = BTreeMap::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut paths: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !p.is_file() || name.ends_with(".txt") || name.ends_with(".md") {
            continue;
        }
        let Ok(bytes) = std::fs::read(&p) else {
            continue;
        };
        out.insert(p, check(target, &bytes, work));
    }
    out
}

/// Shrinks a failing input while `still_fails` holds (greedy chunk deletion, then line
/// deletion); for saving small regression files.
pub fn minimize(input: &[u8], mut still_fails: impl FnMut(&[u8]) -> bool) -> Vec<u8> {
    let mut best = input.to_vec();
    let mut chunk = best.len().div_ceil(2).max(1);
    while chunk >= 1 {
        let mut i = 0;
        let mut progressed = false;
        while i < best.len() {
            let end = (i + chunk).min(best.len());
            let mut cand = best[..i].to_vec();
            cand.extend_from_slice(&best[end..]);
            if still_fails(&cand) {
                best = cand;
                progressed = true;
            } else {
                i += chunk;
            }
        }
        if chunk == 1 && !progressed {
            break;
        }
        if !progressed {
            chunk /= 2;
        }
    }
    best
}

/// Markdown table of campaign figures (for `docs/reliability.md`).
pub fn markdown_table(stats: &[Stats]) -> String {
    let mut s = String::from(
        "| target | executions | exec/s | panics | errors without the file | slow (> 1 s CPU) | hangs (> 30 s) | slowest input (CPU) | largest input | longest error |\n\
         |---|---:|---:|---:|---:|---:|---:|---|---:|---:|\n",
    );
    for st in stats {
        let rate = st.executions as f64 / st.elapsed.as_secs_f64().max(1e-9);
        s.push_str(&format!(
            "| {} | {} | {:.0} | {} | {} | {} | {} | {:.1} ms ({} bytes) | {} bytes | {} bytes |\n",
            st.target,
            st.executions,
            rate,
            st.panics,
            st.unnamed,
            st.slow,
            st.hangs,
            st.slowest.0.as_secs_f64() * 1e3,
            st.slowest.1,
            st.largest,
            st.longest_error
        ));
    }
    s
}

impl Stats {
    /// The figures (not the findings) as one JSON object, for a parent process.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "target": self.target,
            "executions": self.executions,
            "ok": self.ok,
            "errors": self.errors,
            "panics": self.panics,
            "unnamed": self.unnamed,
            "slow": self.slow,
            "hangs": self.hangs,
            "slowest_ns": self.slowest.0.as_nanos() as u64,
            "slowest_bytes": self.slowest.1,
            "slowest_sha256": self.slowest.2,
            "largest": self.largest,
            "longest_error": self.longest_error,
            "error_kinds": self.error_kinds,
            "elapsed_ns": self.elapsed.as_nanos() as u64,
        })
    }

    /// Reads back [`Stats::to_json`] (findings are not carried).
    pub fn from_json(v: &serde_json::Value) -> Option<Stats> {
        let n = |k: &str| v.get(k).and_then(serde_json::Value::as_u64);
        Some(Stats {
            target: v.get("target")?.as_str()?.to_string(),
            executions: n("executions")?,
            ok: n("ok")?,
            errors: n("errors")?,
            panics: n("panics")?,
            unnamed: n("unnamed")?,
            slow: n("slow")?,
            hangs: n("hangs")?,
            slowest: (
                Duration::from_nanos(n("slowest_ns")?),
                n("slowest_bytes")? as usize,
                v.get("slowest_sha256")?.as_str()?.to_string(),
            ),
            largest: n("largest")? as usize,
            longest_error: n("longest_error")? as usize,
            error_kinds: n("error_kinds")? as usize,
            elapsed: Duration::from_nanos(n("elapsed_ns")?),
            findings: Vec::new(),
        })
    }
}
