//! Progress of long work on stderr: a bar on a terminal; elsewhere (CI logs) one line at
//! most every few seconds with done/total, rate and time left. Nothing under `-q`.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How often a plain progress line is printed when stderr is not a terminal.
pub const LINE_EVERY: Duration = Duration::from_secs(5);

pub struct Progress {
    what: &'static str,
    total: u64,
    done: u64,
    started: Instant,
    last_line: Instant,
    mode: Mode,
}

enum Mode {
    Hidden,
    Bar(indicatif::ProgressBar),
    Lines,
}

impl Progress {
    /// Progress over `total` items called `what` (e.g. "chunks embedded").
    pub fn new(what: &'static str, total: u64) -> Progress {
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
            Mode::Lines
        };
        let now = Instant::now();
        Progress {
            what,
            total,
            done: 0,
            started: now,
            last_line: now,
            mode,
        }
    }

    /// `n` more items done.
    pub fn inc(&mut self, n: u64) {
        self.done = (self.done + n).min(self.total);
        match &self.mode {
            Mode::Hidden => {}
            Mode::Bar(b) => b.inc(n),
            Mode::Lines => {
                let now = Instant::now();
                if now.duration_since(self.last_line) >= LINE_EVERY && self.done < self.total {
                    self.last_line = now;
                    eprintln!("veredicto: {}", self.line(now));
                }
            }
        }
    }

    /// `1024/5000 chunks embedded (20%) · 310.2/s · about 13 s left`.
    fn line(&self, now: Instant) -> String {
        line(
            self.what,
            self.done,
            self.total,
            now.duration_since(self.started),
        )
    }

    /// Clears the bar.
    pub fn finish(self) {
        if let Mode::Bar(b) = self.mode {
            b.finish_and_clear();
        }
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
