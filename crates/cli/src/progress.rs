//! Progress of long work on stderr: a bar on a terminal; elsewhere (CI logs) one line every
//! 5 seconds with done/total, rate and time left, whether or not an item ended in that time
//! (a ticker thread prints it, so a slow item cannot hold the line back). Nothing under `-q`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a plain progress line is printed when stderr is not a terminal.
pub const LINE_EVERY: Duration = Duration::from_secs(5);

/// A hidden knob for tests: the interval of the plain lines in milliseconds (1 to 60000)
/// instead of [`LINE_EVERY`].
const EVERY_ENV: &str = "VEREDICTO_PROGRESS_EVERY_MS";

/// The interval of the plain lines: [`LINE_EVERY`], or the test knob when set and valid.
pub fn line_every() -> Duration {
    std::env::var(EVERY_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|ms| (1..=60_000).contains(ms))
        .map_or(LINE_EVERY, Duration::from_millis)
}

/// Where the plain lines go (the printer's progress line in the process; a buffer in tests).
type Sink = Box<dyn Fn(&str) + Send>;

pub struct Progress {
    total: u64,
    done: Arc<AtomicU64>,
    mode: Mode,
}

enum Mode {
    Hidden,
    Bar(indicatif::ProgressBar),
    Lines {
        stop: Arc<AtomicBool>,
        ticker: Option<std::thread::JoinHandle<()>>,
    },
}

impl Progress {
    /// Progress over `total` items called `what` (e.g. "chunks embedded").
    pub fn new(what: &'static str, total: u64) -> Progress {
        let done = Arc::new(AtomicU64::new(0));
        let mode = if !crate::printer::get().progress() || total == 0 {
            Mode::Hidden
        } else if std::io::stderr().is_terminal() {
            let b = indicatif::ProgressBar::new(total);
            b.set_style(
                indicatif::ProgressStyle::with_template(&format!(
                    "{{bar:40}} {{pos}}/{{len}} {what} · {{per_sec}} · eta {{eta}}"
                ))
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            Mode::Bar(b)
        } else {
            return Progress::lines(
                what,
                total,
                line_every(),
                Box::new(crate::printer::progress_line),
            );
        };
        Progress { total, done, mode }
    }

    /// Plain lines to `sink`, one every `every` while the work is not done.
    fn lines(what: &'static str, total: u64, every: Duration, sink: Sink) -> Progress {
        let done = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let ticker = {
            let (stop, done) = (Arc::clone(&stop), Arc::clone(&done));
            std::thread::Builder::new()
                .name("progress".into())
                .spawn(move || tick(what, total, every, &done, &stop, &sink))
                .ok()
        };
        Progress {
            total,
            done,
            mode: Mode::Lines { stop, ticker },
        }
    }

    /// `done` items done in all.
    pub fn set(&self, done: u64) {
        let done = done.min(self.total);
        self.done.store(done, Ordering::Relaxed);
        if let Mode::Bar(b) = &self.mode {
            b.set_position(done);
        }
    }

    /// Clears the bar, stops the ticker.
    pub fn finish(self) {
        match self.mode {
            Mode::Hidden => {}
            Mode::Bar(b) => b.finish_and_clear(),
            Mode::Lines { stop, ticker } => {
                stop.store(true, Ordering::Relaxed);
                if let Some(t) = ticker {
                    t.thread().unpark();
                    let _ = t.join();
                }
            }
        }
    }
}

/// The ticker: a line every `every` until stopped; none while the work is done.
fn tick(what: &str, total: u64, every: Duration, done: &AtomicU64, stop: &AtomicBool, sink: &Sink) {
    let started = Instant::now();
    let mut next = started + every;
    loop {
        let now = Instant::now();
        if now < next {
            std::thread::park_timeout(next - now);
        }
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let now = Instant::now();
        if now < next {
            continue;
        }
        next = now + every;
        let d = done.load(Ordering::Relaxed);
        if d >= total {
            continue;
        }
        sink(&line(what, d, total, now.duration_since(started)));
    }
}

/// One plain progress line.
pub fn line(what: &str, done: u64, total: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 { done as f64 / secs } else { 0.0 };
    let pct = (100 * done).checked_div(total).unwrap_or(100);
    let eta = if rate > 0.0 {
        format!(
            "about {:.0} s left",
            (total - done.min(total)) as f64 / rate
        )
    } else {
        "time left unknown".to_owned()
    };
    format!("{done}/{total} {what} ({pct}%) · {rate:.1}/s · {eta}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn collecting(
        what: &'static str,
        total: u64,
        every: Duration,
    ) -> (Progress, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = {
            let seen = Arc::clone(&seen);
            Box::new(move |l: &str| seen.lock().unwrap().push(l.to_owned())) as Sink
        };
        (Progress::lines(what, total, every, sink), seen)
    }

    #[test]
    fn off_a_terminal_a_line_comes_every_interval_while_no_item_ends() {
        let (p, seen) = collecting("cases examined", 10, Duration::from_millis(20));
        p.set(3);
        // Nothing else happens: the lines come from the clock, not from the work.
        std::thread::sleep(Duration::from_millis(300));
        p.finish();
        let lines = seen.lock().unwrap().clone();
        assert!(lines.len() >= 3, "{lines:?}");
        assert!(
            lines
                .iter()
                .all(|l| l.starts_with("3/10 cases examined (30%)")),
            "{lines:?}"
        );
        // Finished: the ticker has stopped.
        let after = lines.len();
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(seen.lock().unwrap().len(), after);
    }

    #[test]
    fn no_line_before_the_first_interval_nor_once_everything_is_done() {
        let (p, seen) = collecting("chunks embedded", 4, Duration::from_secs(3600));
        p.set(2);
        p.finish();
        assert!(seen.lock().unwrap().is_empty());
        let (p, seen) = collecting("chunks embedded", 4, Duration::from_millis(10));
        p.set(4);
        std::thread::sleep(Duration::from_millis(80));
        p.finish();
        assert!(
            seen.lock().unwrap().is_empty(),
            "{:?}",
            seen.lock().unwrap()
        );
    }

    #[test]
    fn plain_line_has_done_total_rate_and_eta() {
        assert_eq!(
            super::line(
                "chunks embedded",
                1000,
                5000,
                std::time::Duration::from_secs(10)
            ),
            "1000/5000 chunks embedded (20%) · 100.0/s · about 40 s left"
        );
    }
}
