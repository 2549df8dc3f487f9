//! Numeric kernels of the encoder: a GEMM wrapper over the `gemm` crate, layer norm, GELU,
//! softmax. All of them compute each output element the same way whatever the number of
//! rows in the call or the number of threads, so results do not depend on batching.

use rayon::prelude::*;

/// A strided matrix operand: element `(i, j)` is at `data[i * rs + j * cs]`.
#[derive(Clone, Copy)]
pub(crate) struct Mat<'a> {
    pub data: &'a [f32],
    pub rs: usize,
    pub cs: usize,
}

impl<'a> Mat<'a> {
    /// A row-major matrix with leading dimension `ld`.
    pub fn rows(data: &'a [f32], ld: usize) -> Self {
        Mat {
            data,
            rs: ld,
            cs: 1,
        }
    }

    /// Largest index touched for a `r x c` view (or 0 when empty).
    fn extent(&self, r: usize, c: usize) -> usize {
        if r == 0 || c == 0 {
            0
        } else {
            (r - 1) * self.rs + (c - 1) * self.cs + 1
        }
    }
}

/// How many threads the GEMM may use.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Threads {
    /// The current rayon pool.
    Pool,
    /// The calling thread only.
    One,
}

/// `dst[m x n] (row-major, leading dimension ldd) = (accumulate ? dst : 0) + scale * a · b`,
/// with `a` of `m x k` and `b` of `k x n`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm(
    m: usize,
    n: usize,
    k: usize,
    a: Mat<'_>,
    b: Mat<'_>,
    dst: &mut [f32],
    ldd: usize,
    accumulate: bool,
    scale: f32,
    threads: Threads,
) {
    if m == 0 || n == 0 {
        return;
    }
    // These bounds make the raw-pointer call below sound; they are internal invariants.
    assert!(a.extent(m, k) <= a.data.len(), "gemm: lhs out of bounds");
    assert!(b.extent(k, n) <= b.data.len(), "gemm: rhs out of bounds");
    assert!(
        ldd >= n && (m - 1) * ldd + n <= dst.len(),
        "gemm: dst out of bounds"
    );
    let parallelism = match threads {
        Threads::Pool if rayon::current_num_threads() > 1 => gemm::Parallelism::Rayon(0),
        _ => gemm::Parallelism::None,
    };
    // SAFETY: the asserts above keep every accessed element inside the slices; `dst` is
    // borrowed mutably and does not alias `a` or `b` (distinct borrows).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            ldd as isize,
            accumulate,
            a.data.as_ptr(),
            a.cs as isize,
            a.rs as isize,
            b.data.as_ptr(),
            b.cs as isize,
            b.rs as isize,
            1.0,
            scale,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// Rows per parallel task for row-wise kernels.
const ROWS_PER_TASK: usize = 16;

/// Whether this CPU runs the AVX2 + FMA builds of the row-wise kernels (checked once).
///
/// Those builds are the same Rust code compiled with wider vectors: they perform the same
/// IEEE operations in the same order (Rust never fuses a multiply and an add on its own), so
/// they give the same bits as the portable build, only faster.
#[inline]
fn wide() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static WIDE: OnceLock<bool> = OnceLock::new();
        *WIDE.get_or_init(|| {
            std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Defines `$name` calling `$body` through its AVX2 + FMA build when the CPU has them (see
/// [`wide`]), the portable build otherwise.
macro_rules! dispatch {
    ($(#[$m:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)? => $body:ident) => {
        $(#[$m])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2,fma")]
                fn wide_build($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                if wide() {
                    // SAFETY: `wide()` checked that the CPU has AVX2 and FMA.
                    return unsafe { wide_build($($arg),*) };
                }
            }
            $body($($arg),*)
        }
    };
}

/// In-place layer norm over each row of width `w.len()`.
pub(crate) fn layer_norm(x: &mut [f32], w: &[f32], b: &[f32], eps: f32) {
    let h = w.len();
    x.par_chunks_mut(h * ROWS_PER_TASK).for_each(|rows| {
        layer_norm_rows(rows, w, b, eps);
    });
}

dispatch!(
    /// [`layer_norm`] on the calling thread only (the same bits).
    pub(crate) fn layer_norm_rows(rows: &mut [f32], w: &[f32], b: &[f32], eps: f32) => layer_norm_rows_body
);

#[inline(always)]
fn layer_norm_rows_body(rows: &mut [f32], w: &[f32], b: &[f32], eps: f32) {
    for row in rows.chunks_exact_mut(w.len()) {
        layer_norm_row(row, w, b, eps);
    }
}

#[inline(always)]
fn sum8(x: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let chunks = x.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..8 {
            acc[i] += c[i];
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for v in rest {
        s += v;
    }
    s
}

#[inline(always)]
fn layer_norm_row(row: &mut [f32], w: &[f32], b: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = sum8(row) / n;
    for v in row.iter_mut() {
        *v -= mean;
    }
    let mut acc = [0f32; 8];
    let chunks = row.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..8 {
            acc[i] += c[i] * c[i];
        }
    }
    let mut ss = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for v in rest {
        ss += v * v;
    }
    let inv = 1.0 / (ss / n + eps).sqrt();
    for ((v, &wi), &bi) in row.iter_mut().zip(w).zip(b) {
        *v = *v * inv * wi + bi;
    }
}

/// `erf(x)` for f32: a rational approximation on [-4, 4] (the one Eigen and XNNPACK use),
/// max error 4e-7 (3 ulp near ±1); saturates to ±1 outside.
#[inline(always)]
pub(crate) fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.726_142_3e-10_f32;
    p = p * x2 + 2.770_681_4e-8;
    p = p * x2 + -2.101_024e-6;
    p = p * x2 + -5.692_506_4e-5;
    p = p * x2 + -7.349_906_3e-4;
    p = p * x2 + -2.954_6e-3;
    p = p * x2 + -1.609_603_3e-2;
    p *= x;
    let mut q = -1.456_607_2e-5_f32;
    q = q * x2 + -2.133_740_6e-4;
    q = q * x2 + -1.682_827e-3;
    q = q * x2 + -7.373_329_2e-3;
    q = q * x2 + -1.426_474e-2;
    p / q
}

/// Exact GELU, `0.5 x (1 + erf(x / √2))`, in place.
pub(crate) fn gelu_erf(x: &mut [f32]) {
    x.par_chunks_mut(1 << 14).for_each(gelu_erf_chunk);
}

dispatch!(
    /// [`gelu_erf`] on the calling thread only (the same bits).
    pub(crate) fn gelu_erf_chunk(c: &mut [f32]) => gelu_erf_body
);

#[inline(always)]
fn gelu_erf_body(c: &mut [f32]) {
    for v in c.iter_mut() {
        let t = *v;
        *v = 0.5 * t * (1.0 + erf(t * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// The tanh approximation of GELU, in place.
pub(crate) fn gelu_tanh(x: &mut [f32]) {
    x.par_chunks_mut(1 << 14).for_each(gelu_tanh_chunk);
}

/// [`gelu_tanh`] on the calling thread only.
pub(crate) fn gelu_tanh_chunk(c: &mut [f32]) {
    const C: f32 = 0.797_884_6; // sqrt(2/pi)
    for v in c.iter_mut() {
        let t = *v;
        *v = 0.5 * t * (1.0 + (C * (t + 0.044_715 * t * t * t)).tanh());
    }
}

/// ReLU in place.
pub(crate) fn relu(x: &mut [f32]) {
    for v in x.iter_mut() {
        *v = v.max(0.0);
    }
}

/// `exp(x)` for `x <= 0` (softmax after subtracting the row maximum): Cephes' `expf`
/// (range reduction by ln 2 in two parts, degree-5 polynomial, scaling by a power of two
/// built in the exponent bits), max relative error 2e-7; 0 below -87. Branch-free, so a
/// loop of it compiles to vector code.
#[inline(always)]
pub(crate) fn exp_nonpositive(x: f32) -> f32 {
    // 1.5 * 2^23: adding it rounds to an integer held in the low mantissa bits.
    const MAGIC: f32 = 12_582_912.0;
    let xc = x.clamp(-87.0, 0.0);
    let t = xc * std::f32::consts::LOG2_E + MAGIC;
    let n = t - MAGIC;
    let r = xc - n * 0.693_359_4 - n * -2.121_944_4e-4;
    let mut p = 1.987_569_1e-4_f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let y = p * (r * r) + r + 1.0;
    // n is in [-126, 0]: 2^n is a normal float with biased exponent n + 127.
    let scale = f32::from_bits(t.to_bits().wrapping_sub(0x4B40_0000 - 127) << 23);
    if x < -87.0 {
        0.0
    } else {
        y * scale
    }
}

dispatch!(
    /// In-place softmax of one row.
    pub(crate) fn softmax_row(row: &mut [f32]) => softmax_row_body
);

#[inline(always)]
fn softmax_row_body(row: &mut [f32]) {
    let mut lanes = [f32::NEG_INFINITY; 8];
    let chunks = row.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..8 {
            lanes[i] = if c[i] > lanes[i] { c[i] } else { lanes[i] };
        }
    }
    let mut max = f32::NEG_INFINITY;
    for &v in lanes.iter().chain(rest) {
        max = if v > max { v } else { max };
    }
    // A plain loop over the row (the vectoriser turns it into 8-wide code), then the sum
    // over 8 lanes.
    for v in row.iter_mut() {
        *v = exp_nonpositive(*v - max);
    }
    let sum = sum8(row);
    let inv = 1.0 / sum;
    for v in row.iter_mut() {
        *v *= inv;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf in f64 by its Taylor series (exact enough on [-4, 4]).
    fn erf64(x: f64) -> f64 {
        let mut term = x;
        let mut sum = x;
        let x2 = x * x;
        for n in 1..200 {
            term *= -x2 / n as f64;
            sum += term / (2 * n + 1) as f64;
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn erf_approximation_is_accurate() {
        let mut worst = 0f64;
        for i in -5000..=5000 {
            let x = i as f32 / 1000.0;
            let exact = if x.abs() >= 4.0 {
                (x as f64).signum() * (1.0 - 1.5e-8)
            } else {
                erf64(x as f64)
            };
            worst = worst.max((erf(x) as f64 - exact).abs());
        }
        assert!(worst < 5e-7, "max |erf error| = {worst}");
    }

    #[test]
    fn gemm_matches_naive_product() {
        let (m, n, k) = (7, 5, 3);
        let a: Vec<f32> = (0..m * k).map(|i| i as f32 * 0.5 - 3.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| 1.0 - i as f32 * 0.25).collect();
        let mut c = vec![1f32; m * n];
        gemm(
            m,
            n,
            k,
            Mat::rows(&a, k),
            Mat::rows(&b, n),
            &mut c,
            n,
            true,
            2.0,
            Threads::Pool,
        );
        for i in 0..m {
            for j in 0..n {
                let want: f32 =
                    1.0 + 2.0 * (0..k).map(|t| a[i * k + t] * b[t * n + j]).sum::<f32>();
                assert!((c[i * n + j] - want).abs() < 1e-4);
            }
        }
    }

    #[test]
    fn layer_norm_normalises() {
        let mut x = vec![1.0, 2.0, 3.0, 4.0, 10.0, 10.0, 10.0, 10.0];
        layer_norm(&mut x, &[1.0; 4], &[0.5; 4], 1e-12);
        let mean: f32 = x[..4].iter().sum::<f32>() / 4.0;
        assert!((mean - 0.5).abs() < 1e-6);
        assert_eq!(&x[4..], &[0.5; 4]);
    }

    #[test]
    fn exp_approximation_is_accurate() {
        let mut worst = 0f64;
        for i in 0..=870_000 {
            let x = -(i as f32) / 10_000.0;
            let exact = (x as f64).exp();
            let rel = (exp_nonpositive(x) as f64 - exact).abs() / exact;
            worst = worst.max(rel);
        }
        assert!(worst < 3e-7, "max relative exp error = {worst}");
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert_eq!(exp_nonpositive(-87.5), 0.0);
        assert_eq!(exp_nonpositive(f32::NEG_INFINITY), 0.0);
    }

    /// The AVX2 build of a kernel and its portable build give the same bits.
    #[test]
    fn wide_and_portable_builds_agree() {
        let mut state = 7u32;
        let mut next = || {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 8) as f32 / (1u32 << 24) as f32 * 16.0 - 8.0
        };
        let data: Vec<f32> = (0..3 * 389).map(|_| next()).collect();
        let w: Vec<f32> = (0..389).map(|_| next()).collect();
        let b: Vec<f32> = (0..389).map(|_| next()).collect();

        let (mut a, mut p) = (data.clone(), data.clone());
        softmax_row(&mut a[..389]);
        softmax_row_body(&mut p[..389]);
        gelu_erf_chunk(&mut a[389..]);
        gelu_erf_body(&mut p[389..]);
        assert_eq!(a, p);
        let (mut a, mut p) = (data.clone(), data);
        layer_norm_rows(&mut a, &w, &b, 1e-12);
        layer_norm_rows_body(&mut p, &w, &b, 1e-12);
        assert_eq!(a, p);
    }

    #[test]
    fn softmax_sums_to_one() {
        let mut r = vec![1.0, 2.0, 3.0, -1e30];
        softmax_row(&mut r);
        assert!((r.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert_eq!(r[3], 0.0);
    }
}
