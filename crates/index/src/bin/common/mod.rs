//! What the index's benchmark tools share: the seeded random vectors, medians, and the numpy
//! peer process they talk to over a pipe (`scripts/bench-search-numpy.py`).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// The seed of the random corpora (`bench-search` and `bench-exam` build the same vectors).
pub const SEED: u64 = 0x5eed_1dea;

/// splitmix64.
pub fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A random unit vector (normal components), from its own seed.
pub fn random_unit(seed: u64, dim: usize) -> Vec<f32> {
    let mut s = seed;
    let mut v = Vec::with_capacity(dim);
    while v.len() < dim {
        let u1 = ((next(&mut s) >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        let u2 = (next(&mut s) >> 11) as f64 / (1u64 << 53) as f64;
        let r = (-2.0 * u1.ln()).sqrt();
        let t = std::f64::consts::TAU * u2;
        v.push((r * t.cos()) as f32);
        if v.len() < dim {
            v.push((r * t.sin()) as f32);
        }
    }
    veredicto_index::normalize(&v).unwrap_or(v)
}

/// `sha256:` and the hex digest of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let digest = <sha2::Sha256 as sha2::Digest>::digest(bytes);
    let mut s = String::from("sha256:");
    for b in digest {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The median (the mean of the two middle values for an even count).
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// The numpy peer: one long-lived process answering one JSON line per command.
pub struct Numpy {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Numpy {
    /// Starts the script on the vectors and queries files; `shape` = `[rows, dim, queries, k]`.
    pub fn start(
        python: &str,
        script: &Path,
        files: [&Path; 2],
        shape: [usize; 4],
    ) -> Result<(Numpy, serde_json::Value), String> {
        let mut child = Command::new(python)
            .arg(script)
            .args(files)
            .args(shape.map(|x| x.to_string()))
            // These make OpenBLAS pick a slower kernel here; numpy gets its best.
            .env_remove("OPENBLAS_CORETYPE")
            .env_remove("OPENBLAS_L2_SIZE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{python}: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut np = Numpy {
            child,
            stdin,
            stdout,
        };
        let info = np.read()?;
        Ok((np, info))
    }

    fn read(&mut self) -> Result<serde_json::Value, String> {
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        serde_json::from_str(&line).map_err(|e| format!("numpy said {line:?}: {e}"))
    }

    pub fn ask(&mut self, command: &str) -> Result<serde_json::Value, String> {
        writeln!(self.stdin, "{command}").map_err(|e| e.to_string())?;
        self.stdin.flush().map_err(|e| e.to_string())?;
        self.read()
    }
}

impl Drop for Numpy {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.child.wait();
    }
}
