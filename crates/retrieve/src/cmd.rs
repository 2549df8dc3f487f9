//! A subprocess as retriever (`cmd:PROGRAM ARGS…`): veredicto starts it once, writes one
//! JSON request per line on its standard input and reads one JSON response per line from
//! its standard output, with the bodies of the HTTP contract ([`crate::http`]). The
//! command line is split on whitespace (no shell). Requests are sent one at a time; the
//! program's standard error goes to veredicto's.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::time::Instant;

use veredicto_core::redact;

use crate::http::{request_body, Shape};
use crate::{Options, Ranking, Request, RetrieveError, Retriever, Vectors};

/// A running program answering one JSON line per request.
pub struct CommandRetriever {
    shown: String,
    program: String,
    args: Vec<String>,
    options: Options,
    shape: Shape,
    start: Instant,
    process: Mutex<Option<Running>>,
}

struct Running {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<std::io::Result<String>>,
}

impl Drop for CommandRetriever {
    fn drop(&mut self) {
        if let Ok(mut guard) = self.process.lock() {
            if let Some(mut p) = guard.take() {
                drop(p.stdin);
                // Closing its input asks the program to end; do not wait for long.
                let deadline = Instant::now() + std::time::Duration::from_secs(2);
                while Instant::now() < deadline {
                    if let Ok(Some(_)) = p.child.try_wait() {
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                let _ = p.child.kill();
                let _ = p.child.wait();
            }
        }
    }
}

impl CommandRetriever {
    /// A retriever for `command` (the URI without `cmd:`).
    pub fn new(command: &str, options: &Options) -> Result<CommandRetriever, RetrieveError> {
        let shown = format!("cmd:{command}");
        let mut words = command.split_whitespace().map(str::to_owned);
        let program = words.next().ok_or_else(|| RetrieveError::Uri {
            uri: shown.clone(),
            reason: "expected `cmd:PROGRAM ARGS…`".into(),
        })?;
        let shape = Shape::new(options).map_err(|reason| RetrieveError::Uri {
            uri: shown.clone(),
            reason,
        })?;
        Ok(CommandRetriever {
            shown,
            program,
            args: words.collect(),
            options: options.clone(),
            shape,
            start: Instant::now(),
            process: Mutex::new(None),
        })
    }

    fn setup(&self, reason: String) -> RetrieveError {
        RetrieveError::Setup {
            uri: self.shown.clone(),
            reason,
        }
    }

    fn spawn(&self) -> Result<Running, RetrieveError> {
        let mut child = Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| self.setup(format!("cannot start `{}`: {e}", self.program)))?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = String::new();
                match reader.read_line(&mut line) {
                    Ok(0) => break,
                    Ok(_) => {
                        if tx.send(Ok(line)).is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        break;
                    }
                }
            }
        });
        Ok(Running {
            child,
            stdin,
            lines: rx,
        })
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
        let mut guard = self
            .process
            .lock()
            .map_err(|_| self.setup("an earlier request panicked".into()))?;
        if guard.is_none() {
            *guard = Some(self.spawn()?);
        }
        let running = guard.as_mut().expect("spawned");
        let mut line = serde_json::to_string(&request_body(request)).unwrap_or_default();
        line.push('\n');
        if let Err(e) = running
            .stdin
            .write_all(line.as_bytes())
            .and_then(|()| running.stdin.flush())
        {
            *guard = None;
            return Err(self.setup(format!("the program stopped reading its input ({e})")));
        }
        let left = self.options.deadline.saturating_sub(self.start.elapsed());
        let wait = self.options.timeout.min(left);
        let answer = match running.lines.recv_timeout(wait) {
            Ok(Ok(text)) => text,
            Ok(Err(e)) => return Err(self.setup(format!("reading the program's output: {e}"))),
            Err(RecvTimeoutError::Timeout) => {
                // The conversation is out of step now: stop the program.
                if let Some(mut p) = guard.take() {
                    let _ = p.child.kill();
                    let _ = p.child.wait();
                }
                return Err(self.setup(format!(
                    "no answer line within {:.1} s for case `{}`",
                    wait.as_secs_f64(),
                    request.case_id
                )));
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = guard
                    .take()
                    .and_then(|mut p| p.child.wait().ok())
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "unknown status".into());
                return Err(self.setup(format!(
                    "the program ended ({status}) before answering case `{}`",
                    request.case_id
                )));
            }
        };
        let value: serde_json::Value = serde_json::from_str(answer.trim()).map_err(|e| {
            self.setup(format!(
                "case `{}`: the answer line is not JSON ({e}): {}",
                request.case_id,
                redact::short(answer.trim())
            ))
        })?;
        let mut hits = self
            .shape
            .read(&value)
            .map_err(|reason| self.setup(format!("case `{}`: {reason}", request.case_id)))?;
        hits.truncate(request.depth);
        Ok(Ranking {
            hits,
            known: Default::default(),
        })
    }
}
