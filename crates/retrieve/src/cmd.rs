//! A subprocess as retriever (`cmd:PROGRAM ARGS…`): veredicto starts it once, writes one
//! JSON request per line on its standard input and reads one JSON answer per line from its
//! standard output, with the bodies of the HTTP contract ([`crate::http`]) plus an `id`:
//!
//! - each request carries `"id": N`, the request's number (1, 2, 3, … in the order sent);
//! - each answer must carry the same `"id": N` beside its result list.
//!
//! An answer without its request's `id` means the program is out of step (it printed a line
//! it was not asked for, or skipped one): veredicto stops it and the exam with an error
//! naming the request, the case and what came back, rather than scoring answers against
//! the wrong cases. Requests are sent one at a time. The command line is split on
//! whitespace (no shell).
//!
//! The program gets only the environment the caller gives ([`crate::Options::command_env`];
//! the command line passes [`passed_by_default`] and `--cmd-env NAME`). On Unix it runs in
//! its own process group, killed when the retriever is dropped (after the program has had
//! 2 s to end once its input is closed), on a timeout and on any error, so that processes
//! it started do not outlive the exam. Each answer line is read as it arrives, at most
//! [`crate::Options::max_answer_bytes`], keeping only `depth` results. The program's
//! standard error goes to veredicto's.

use std::io::{BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use veredicto_core::redact;

use crate::answer::{Answer, Failure, Line, Shape};
use crate::http::request_body;
use crate::net::bytes;
use crate::{Options, Ranking, Request, RetrieveError, Retriever, Vectors};

/// The environment variables a command gets by default, besides every `LC_*`: what a
/// program needs to start and to behave as in the user's shell (where to find programs,
/// the home folder, the language and time zone, the temporary folder), and no credential.
pub const DEFAULT_ENV: &[&str] = &["PATH", "HOME", "LANG", "LANGUAGE", "TMPDIR", "TZ"];

/// Whether the environment variable `name` is passed to a command by default
/// ([`DEFAULT_ENV`] and `LC_*`).
pub fn passed_by_default(name: &str) -> bool {
    DEFAULT_ENV.contains(&name) || name.starts_with("LC_")
}

/// How long a program may take to end once its input is closed, before it is killed.
const GRACE: Duration = Duration::from_secs(2);

/// A running program answering one JSON line per request.
pub struct CommandRetriever {
    shown: String,
    program: String,
    args: Vec<String>,
    options: Options,
    shape: Shape,
    start: Instant,
    process: Mutex<Conversation>,
}

/// The program, when started, and the number of the last request sent.
struct Conversation {
    running: Option<Running>,
    sent: u64,
}

struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Asks the reader thread for one answer: (depth, the `id` it must echo).
    jobs: Sender<(usize, Value)>,
    answers: Receiver<Heard>,
}

/// One answer line as the reader thread saw it.
struct Heard {
    outcome: Result<Answer, Failure>,
    /// Its start, for messages.
    quote: String,
    /// The program's output ended before the line's first byte.
    ended: bool,
    /// The line was longer than the limit.
    too_long: bool,
}

impl Running {
    /// Kills the program and everything it started (its process group), then reaps it.
    fn kill(mut self) -> Option<ExitStatus> {
        kill_group(&mut self.child);
        self.child.wait().ok()
    }

    /// Closes the program's input, gives it [`GRACE`] to end, then kills what is left of
    /// its process group (processes it started and left behind) and reaps it.
    fn finish(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + GRACE;
        while Instant::now() < deadline && !ended(&mut self.child) {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill();
    }
}

/// Whether the program has ended. On Linux it is not reaped yet, so that its process group
/// ID cannot be reused before the group is killed.
#[cfg(target_os = "linux")]
fn ended(child: &mut Child) -> bool {
    // SAFETY: a zeroed siginfo_t is a valid out-parameter; WNOWAIT leaves the child
    // waitable, so std's `wait` reaps it later.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(
            libc::P_PID,
            child.id() as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        r != 0 || info.si_pid() != 0
    }
}

#[cfg(not(target_os = "linux"))]
fn ended(child: &mut Child) -> bool {
    !matches!(child.try_wait(), Ok(None))
}

#[cfg(unix)]
fn kill_group(child: &mut Child) {
    // The program leads its own group (`process_group(0)`): the group's ID is its PID,
    // which stays taken until the program is reaped.
    let pgid = child.id() as libc::pid_t;
    // SAFETY: kill(2) with a negative PID signals that process group; no memory involved.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    let _ = child.kill();
}

#[cfg(not(unix))]
fn kill_group(child: &mut Child) {
    let _ = child.kill();
}

impl Drop for CommandRetriever {
    fn drop(&mut self) {
        if let Ok(mut conversation) = self.process.lock() {
            if let Some(running) = conversation.running.take() {
                running.finish();
            }
        }
    }
}

impl CommandRetriever {
    /// A retriever for `command` (the URI without `cmd:`).
    pub fn new(command: &str, options: &Options) -> Result<CommandRetriever, RetrieveError> {
        let shown = format!("cmd:{command}");
        let bad = |reason: String| RetrieveError::Uri {
            uri: shown.clone(),
            reason,
        };
        let mut words = command.split_whitespace().map(str::to_owned);
        let program = words
            .next()
            .ok_or_else(|| bad("expected `cmd:PROGRAM ARGS…`".into()))?;
        let shape = Shape::new(options).and_then(Shape::echoing).map_err(bad)?;
        Ok(CommandRetriever {
            shown: shown.clone(),
            program,
            args: words.collect(),
            options: options.clone(),
            shape,
            start: Instant::now(),
            process: Mutex::new(Conversation {
                running: None,
                sent: 0,
            }),
        })
    }

    fn setup(&self, reason: String) -> RetrieveError {
        RetrieveError::Setup {
            uri: self.shown.clone(),
            reason,
        }
    }

    fn spawn(&self) -> Result<Running, RetrieveError> {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .env_clear()
            .envs(self.options.command_env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            command.process_group(0);
        }
        let mut child = command
            .spawn()
            .map_err(|e| self.setup(format!("cannot start `{}`: {e}", self.program)))?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (jobs, job_rx) = mpsc::channel::<(usize, Value)>();
        // At most one answer waits in the channel: a program cannot fill memory with lines
        // nobody asked for (they stay in its pipe, and the next request reads them).
        let (answer_tx, answers) = mpsc::sync_channel(1);
        let shape = self.shape.clone();
        let limit = self.options.max_answer_bytes;
        std::thread::spawn(move || {
            let mut output = BufReader::with_capacity(64 << 10, stdout);
            for (depth, id) in job_rx {
                let mut line = Line::new(&mut output, limit);
                let outcome = shape.read(
                    BufReader::with_capacity(64 << 10, &mut line),
                    depth,
                    Some(&id),
                );
                let failed = outcome.is_err();
                let read = Heard {
                    outcome,
                    quote: line.tally.quote(),
                    ended: line.nothing(),
                    too_long: line.tally.over,
                };
                if answer_tx.send(read).is_err() || failed {
                    break;
                }
            }
        });
        Ok(Running {
            child,
            stdin: Some(stdin),
            jobs,
            answers,
        })
    }

    /// The error for request `n` (case `case`) after stopping the program.
    fn stopped(&self, running: Running, n: u64, case: &str, reason: String) -> RetrieveError {
        running.kill();
        self.setup(format!("request {n} (case `{case}`): {reason}"))
    }
}

impl Retriever for CommandRetriever {
    fn describe(&self) -> String {
        self.shown.clone()
    }

    fn kind(&self) -> &'static str {
        "cmd"
    }

    fn vectors(&self) -> Vectors {
        Vectors::Optional
    }

    fn search(&self, request: &Request<'_>) -> Result<Ranking, RetrieveError> {
        let mut conversation = self
            .process
            .lock()
            .map_err(|_| self.setup("an earlier request panicked".into()))?;
        if conversation.running.is_none() {
            conversation.running = Some(self.spawn()?);
        }
        conversation.sent += 1;
        let n = conversation.sent;
        let case = request.case_id;
        let mut running = conversation.running.take().expect("spawned");
        let id = json!(n);
        let mut body = json!({ "id": n });
        if let (Value::Object(line), Value::Object(rest)) = (&mut body, request_body(request)) {
            line.extend(rest);
        }
        let mut line = body.to_string();
        line.push('\n');
        let written = running
            .stdin
            .as_mut()
            .expect("open while running")
            .write_all(line.as_bytes())
            .and_then(|()| running.stdin.as_mut().expect("open").flush());
        if let Err(e) = written {
            let status = running
                .kill()
                .map_or_else(|| "unknown status".to_owned(), |s| s.to_string());
            return Err(self.setup(format!(
                "request {n} (case `{case}`): the program stopped reading its input ({e}; it ended with {status})"
            )));
        }
        if running.jobs.send((request.depth, id.clone())).is_err() {
            return Err(self.stopped(running, n, case, "the program's output is closed".into()));
        }
        let left = self.options.deadline.saturating_sub(self.start.elapsed());
        let wait = self.options.timeout.min(left);
        let read = match running.answers.recv_timeout(wait) {
            Ok(read) => read,
            Err(RecvTimeoutError::Timeout) => {
                return Err(self.stopped(
                    running,
                    n,
                    case,
                    format!(
                        "no answer line within {:.1} s; veredicto stopped the program",
                        wait.as_secs_f64()
                    ),
                ));
            }
            Err(RecvTimeoutError::Disconnected) => Heard {
                outcome: Err(Failure::Io(std::io::ErrorKind::BrokenPipe.into())),
                quote: String::new(),
                ended: true,
                too_long: false,
            },
        };
        if read.ended {
            let status = running
                .kill()
                .map_or_else(|| "unknown status".to_owned(), |s| s.to_string());
            return Err(self.setup(format!(
                "request {n} (case `{case}`): the program ended ({status}) before answering"
            )));
        }
        if read.too_long {
            return Err(self.stopped(
                running,
                n,
                case,
                format!(
                    "the answer line is longer than {} (raise --max-answer-bytes): {}",
                    bytes(self.options.max_answer_bytes),
                    read.quote
                ),
            ));
        }
        let answer = match read.outcome {
            Ok(answer) => answer,
            Err(failure) => {
                let reason = match failure {
                    Failure::OutOfStep(None) => format!(
                        "the answer has no `id`: each answer line must carry the `id` of its request (here {n}), so that no answer is scored against another case; veredicto stopped the program: {}",
                        read.quote
                    ),
                    Failure::OutOfStep(Some(got)) => format!(
                        "answered with `id` {}: the program is out of step with its requests (it printed a line it was not asked for, or skipped one); veredicto stopped it: {}",
                        redact::short(&got.to_string()),
                        read.quote
                    ),
                    Failure::Json(_) if read.quote.is_empty() => {
                        "the answer line is empty".to_owned()
                    }
                    Failure::Json(e) => format!(
                        "the answer line is not JSON ({}): {}",
                        redact::message(&e.to_string()),
                        read.quote
                    ),
                    Failure::Io(e) => format!("reading the program's output: {e}"),
                    Failure::Contract(reason) => reason,
                    Failure::NoList(reason) => format!("{reason}: {}", read.quote),
                };
                return Err(self.stopped(running, n, case, reason));
            }
        };
        conversation.running = Some(running);
        Ok(Ranking {
            hits: answer.hits,
            known: Default::default(),
        })
    }
}
