//! How a pipeline talks to its caller while it works: [`Message`] values handed to a
//! callback (the command line prints them on standard error, the workbench streams them,
//! the Python package logs them), and a cancellation flag the caller may set from another
//! thread. Nothing in the application prints or reads the terminal.

use std::sync::atomic::{AtomicBool, Ordering};

/// Something the user should be told while a pipeline runs (never the result itself).
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A note about the work (the command line shows `veredicto: …`, hidden by `-q`).
    Note(String),
    /// A line saying what was done (`appended … to …`), shown as it is (hidden by `-q`).
    Status(String),
    /// A detail shown only when asked for (`-v`).
    Detail(String),
    /// Something that changes what the result means (shown even with `-q`).
    Warning(String),
    /// Progress of long work.
    Progress(Progress),
}

/// Where long work stands: `done` of `total` items called `what` ("chunks embedded").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// What is counted (plural: "cases examined", "chunks embedded").
    pub what: &'static str,
    /// Items done so far.
    pub done: u64,
    /// Items in all.
    pub total: u64,
    /// The work is over (done, failed or cancelled): a bar can go.
    pub finished: bool,
}

/// The caller's side of a pipeline: where messages go and whether to stop.
#[derive(Clone, Copy, Default)]
pub struct Events<'a> {
    sink: Option<&'a (dyn Fn(Message) + Sync)>,
    cancel: Option<&'a AtomicBool>,
}

impl std::fmt::Debug for Events<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("sink", &self.sink.is_some())
            .field("cancel", &self.cancel)
            .finish()
    }
}

impl<'a> Events<'a> {
    /// Messages go to `sink` (called from the pipeline's threads).
    pub fn new(sink: &'a (dyn Fn(Message) + Sync)) -> Events<'a> {
        Events {
            sink: Some(sink),
            cancel: None,
        }
    }

    /// No message goes anywhere; nothing cancels.
    pub fn silent() -> Events<'static> {
        Events::default()
    }

    /// The pipeline stops (with [`crate::Error::Cancelled`]) soon after `flag` is set.
    pub fn with_cancel(self, flag: &'a AtomicBool) -> Events<'a> {
        Events {
            cancel: Some(flag),
            ..self
        }
    }

    /// The cancellation flag, for the libraries that check it themselves.
    pub fn cancel_flag(&self) -> Option<&'a AtomicBool> {
        self.cancel
    }

    /// Whether the caller asked to stop.
    pub fn cancelled(&self) -> bool {
        self.cancel.is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// [`crate::Error::Cancelled`] when the caller asked to stop.
    pub fn check(&self) -> crate::Result<()> {
        if self.cancelled() {
            return Err(crate::Error::Cancelled);
        }
        Ok(())
    }

    /// Hands `message` to the caller.
    pub fn send(&self, message: Message) {
        if let Some(sink) = self.sink {
            sink(message);
        }
    }

    /// A [`Message::Note`].
    pub fn note(&self, text: impl Into<String>) {
        self.send(Message::Note(text.into()));
    }

    /// A [`Message::Status`].
    pub fn status(&self, text: impl Into<String>) {
        self.send(Message::Status(text.into()));
    }

    /// A [`Message::Detail`].
    pub fn detail(&self, text: impl Into<String>) {
        self.send(Message::Detail(text.into()));
    }

    /// A [`Message::Warning`].
    pub fn warn(&self, text: impl Into<String>) {
        self.send(Message::Warning(text.into()));
    }

    /// A [`Message::Progress`].
    pub fn progress(&self, what: &'static str, done: u64, total: u64, finished: bool) {
        self.send(Message::Progress(Progress {
            what,
            done,
            total,
            finished,
        }));
    }
}

/// Counts items done from any thread and reports each step as [`Message::Progress`]; says
/// the work is over when dropped.
pub(crate) struct Counter<'a> {
    events: Events<'a>,
    what: &'static str,
    total: u64,
    done: std::sync::atomic::AtomicU64,
}

impl<'a> Counter<'a> {
    /// Starts counting (a first message with nothing done).
    pub(crate) fn start(events: Events<'a>, what: &'static str, total: u64) -> Counter<'a> {
        events.progress(what, 0, total, false);
        Counter {
            events,
            what,
            total,
            done: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// `n` more items done.
    pub(crate) fn add(&self, n: u64) {
        let done = (self.done.fetch_add(n, Ordering::Relaxed) + n).min(self.total);
        self.events.progress(self.what, done, self.total, false);
    }
}

impl Drop for Counter<'_> {
    fn drop(&mut self) {
        let done = self.done.load(Ordering::Relaxed).min(self.total);
        self.events.progress(self.what, done, self.total, true);
    }
}
