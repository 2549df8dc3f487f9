//! Progress of long work on stderr: a bar on a terminal; elsewhere (CI logs) one line every
//! few seconds with done/total, rate and time left, whether or not an item ended in that
//! time (a ticker thread prints it). Nothing under `-q`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a plain progress line is printed when stderr is not a terminal.
pub const LINE_EVERY: Duration = Duration::from_secs(5);

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
            let stop = Arc::new(AtomicBool::new(false));
            let ticker = {
                let (stop, done) = (Arc::clone(&stop), Arc::clone(&done));
                std::thread::Builder::new()
                    .name("progress".into())
                    .spawn(move || tick(what, total, &done, &stop))
                    .ok()
            };
            Mode::Lines { stop, ticker }
        };
        Progress { total, done, mode }
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

/// The ticker: a line every [`LINE_EVERY`] until stopped or done.
fn tick(what: &str, total: u64, done: &AtomicU64, stop: &AtomicBool) {
    let started = Instant::now();
    let mut next = started + LINE_EVERY;
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
        next = now + LINE_EVERY;
        let d = done.load(Ordering::Relaxed);
        if d >= total {
            continue;
        }
        crate::printer::progress_line(&line(what, d, total, now.duration_since(started)));
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
