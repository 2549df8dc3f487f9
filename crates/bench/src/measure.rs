//! Runs a child process and measures it: wall clock from spawn to exit, and the child's own
//! resource usage (peak RSS, user and system CPU) from `wait4`.

use std::io;
use std::process::Command;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// Spawn to exit, as seen by the parent.
    pub wall: Duration,
    /// `ru_maxrss` of the child: peak resident set size, in KiB on Linux.
    pub max_rss_kib: u64,
    pub user: Duration,
    pub sys: Duration,
    /// Exit code, or `None` if the child was killed by a signal (see `signal`).
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl Measured {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    pub fn cpu(&self) -> Duration {
        self.user + self.sys
    }

    pub fn max_rss_mib(&self) -> f64 {
        self.max_rss_kib as f64 / 1024.0
    }
}

fn timeval(tv: libc::timeval) -> Duration {
    Duration::from_secs(tv.tv_sec.max(0) as u64) + Duration::from_micros(tv.tv_usec.max(0) as u64)
}

/// Spawns `cmd`, waits for it with `wait4` and returns its measurements. The caller sets up
/// stdin/stdout/stderr on `cmd` (they must not be pipes that need draining while it runs).
pub fn run(cmd: &mut Command) -> io::Result<Measured> {
    let start = Instant::now();
    let child = cmd.spawn()?;
    let pid = libc::pid_t::try_from(child.id()).map_err(io::Error::other)?;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is a plain C struct for which all-zero bytes are a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own child, not yet reaped (std's `Child` only reaps in `wait`,
        // which is never called on it); `status` and `usage` are valid for writes.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
    let wall = start.elapsed();
    drop(child);
    let (code, signal) = if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else if libc::WIFSIGNALED(status) {
        (None, Some(libc::WTERMSIG(status)))
    } else {
        (None, None)
    };
    Ok(Measured {
        wall,
        max_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
        user: timeval(usage.ru_utime),
        sys: timeval(usage.ru_stime),
        code,
        signal,
    })
}

/// Median of a non-empty sample (mean of the middle two for an even count).
pub fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;

    #[test]
    fn measures_a_child_that_allocates() {
        // python3 may be absent; sh + dd is everywhere on Linux. Allocate ~64 MiB in the child.
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "exec dd if=/dev/zero of=/dev/null bs=64M count=1 2>/dev/null",
        ]);
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        let m = run(&mut cmd).expect("run sh");
        assert!(m.success(), "{m:?}");
        assert!(m.max_rss_kib >= 60 * 1024, "max rss {} KiB", m.max_rss_kib);
        assert!(m.wall > Duration::ZERO);
    }

    #[test]
    fn reports_exit_codes() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "exit 3"]);
        let m = run(&mut cmd).expect("run sh");
        assert_eq!(m.code, Some(3));
        assert!(!m.success());
    }

    #[test]
    fn median_of_odd_and_even_samples() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }
}
