//! The score kernel: a register-blocked tile of `MR` documents × `W` queries, computed with
//! fused multiply-adds, and a threshold test fused into its epilogue so that scores that
//! cannot enter any top-k never leave the registers.
//!
//! **Every score is one sequential FMA chain**: `acc = 0; for k in 0..dim { acc = fma(d[k],
//! q[k], acc) }`. The AVX2 kernel, the portable kernel and [`dot`] all compute exactly this,
//! so a chunk's score does not depend on which kernel, tile, thread or batch computed it
//! (IEEE 754 `fma` is correctly rounded, so the bits are the same on every machine).

/// Documents per micro-tile.
pub(crate) const MR: usize = 6;
/// Widest query panel.
pub(crate) const WMAX: usize = 16;

/// Score of one document vector against one (normalised) query: the sequential FMA chain
/// that the search kernels compute, bit for bit. `a` and `b` must have the same length
/// (extra components of the longer one are ignored).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU supports FMA (checked just above).
            return unsafe { dot_fma(a, b) };
        }
    }
    dot_portable(a, b)
}

fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = 0.0f32;
    for (x, y) in a.iter().zip(b) {
        acc = x.mul_add(*y, acc);
    }
    acc
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn dot_fma(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = 0.0f32;
    for (x, y) in a.iter().zip(b) {
        acc = x.mul_add(*y, acc);
    }
    acc
}

/// L2-normalises `v` (norm computed in f64, each component divided in f64 then rounded).
/// `None` for a vector with a NaN or infinite component or a zero norm.
pub fn normalize(v: &[f32]) -> Option<Vec<f32>> {
    let mut out = vec![0.0f32; v.len()];
    normalize_into(v, &mut out).then_some(out)
}

pub(crate) fn normalize_into(v: &[f32], out: &mut [f32]) -> bool {
    let mut sum = 0.0f64;
    for &x in v {
        if !x.is_finite() {
            return false;
        }
        sum += f64::from(x) * f64::from(x);
    }
    let norm = sum.sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return false;
    }
    for (o, &x) in out.iter_mut().zip(v) {
        *o = (f64::from(x) / norm) as f32;
    }
    true
}

/// Storage aligned to 64 bytes.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Block([f32; 16]);

/// A panel of queries: `width` queries starting at `first`, stored `[k][width]`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Panel {
    pub first: usize,
    pub width: usize,
    offset: usize,
}

/// Queries packed into panels of 16 (and a last one of 8) for the kernel; padding queries
/// are zero vectors.
pub(crate) struct PackedQueries {
    data: Vec<Block>,
    pub dim: usize,
    pub panels: Vec<Panel>,
}

impl PackedQueries {
    pub(crate) fn new(queries: &[Vec<f32>], dim: usize) -> PackedQueries {
        let n = queries.len();
        let padded = n.div_ceil(8) * 8;
        let mut panels = Vec::new();
        let mut first = 0;
        let mut offset = 0;
        while first < padded {
            let width = if padded - first >= 16 { 16 } else { 8 };
            panels.push(Panel {
                first,
                width,
                offset,
            });
            offset += width * dim;
            first += width;
        }
        let mut data = vec![Block([0.0; 16]); offset.div_ceil(16)];
        {
            let flat = flat_mut(&mut data);
            for p in &panels {
                for l in 0..p.width {
                    if let Some(q) = queries.get(p.first + l) {
                        for (k, &x) in q.iter().enumerate().take(dim) {
                            flat[p.offset + k * p.width + l] = x;
                        }
                    }
                }
            }
        }
        PackedQueries { data, dim, panels }
    }

    fn panel_ptr(&self, p: &Panel) -> *const f32 {
        // In bounds: `offset + width * dim <= data.len() * 16` by construction.
        flat(&self.data)[p.offset..].as_ptr()
    }
}

fn flat(data: &[Block]) -> &[f32] {
    // SAFETY: `Block` is `repr(C)` over `[f32; 16]` with no padding (64 bytes = 16 × 4).
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<f32>(), data.len() * 16) }
}

fn flat_mut(data: &mut [Block]) -> &mut [f32] {
    // SAFETY: as in `flat`.
    unsafe { std::slice::from_raw_parts_mut(data.as_mut_ptr().cast::<f32>(), data.len() * 16) }
}

/// Which implementation computes tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// AVX2 + FMA, 6 × 16 register tile.
    #[cfg(target_arch = "x86_64")]
    Avx2Fma,
    /// Plain Rust with `f32::mul_add` (same results, slower where FMA is not native).
    Portable,
}

impl Kernel {
    pub(crate) fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                return Kernel::Avx2Fma;
            }
        }
        Kernel::Portable
    }

    /// Name for reports (`avx2+fma` or `portable`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2Fma => "avx2+fma",
            Kernel::Portable => "portable",
        }
    }

    /// Computes the scores of the `MR` documents `rows` (each `dim` floats) against the
    /// queries of `panel`, and returns a bit mask with bit `t * 16 + l` set when the score of
    /// document `t` for query `panel.first + l` is `>= gates[l]`; when the mask is not zero
    /// or `store_all` is set, `out[t * 16 + l]` holds every score of the tile.
    ///
    /// # Safety
    /// Each pointer in `rows` must be valid for reading `dim` floats, and `gates` must hold at
    /// least `panel.width` values.
    pub(crate) unsafe fn tile(
        self,
        rows: &[*const f32; MR],
        queries: &PackedQueries,
        panel: &Panel,
        gates: &[f32],
        store_all: bool,
        out: &mut [f32; MR * WMAX],
    ) -> u128 {
        let q = queries.panel_ptr(panel);
        let dim = queries.dim;
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2Fma => {
                if panel.width == 16 {
                    avx2::tile16(rows, q, dim, gates.as_ptr(), store_all, out)
                } else {
                    avx2::tile8(rows, q, dim, gates.as_ptr(), store_all, out)
                }
            }
            Kernel::Portable => {
                if panel.width == 16 {
                    portable_tile::<16>(rows, q, dim, gates, out)
                } else {
                    portable_tile::<8>(rows, q, dim, gates, out)
                }
            }
        }
    }
}

impl Kernel {
    /// Counts, for each target slot `s` and lane `l`, the first `valid` documents of a tile
    /// whose score is strictly above `scores[s][l]` (adds them to `counts[s][l]`); returns
    /// whether some score *equals* a target score (the caller settles those ties by row).
    pub(crate) fn count_above(
        self,
        out: &[f32; MR * WMAX],
        valid: usize,
        scores: &[[f32; WMAX]],
        counts: &mut [[u32; WMAX]],
    ) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: this variant is only chosen when the CPU has AVX2.
            Kernel::Avx2Fma => unsafe { avx2::count_above(out, valid, scores, counts) },
            Kernel::Portable => count_above_portable(out, valid, scores, counts),
        }
    }
}

fn count_above_portable(
    out: &[f32; MR * WMAX],
    valid: usize,
    scores: &[[f32; WMAX]],
    counts: &mut [[u32; WMAX]],
) -> bool {
    let mut equal = false;
    for (s, c) in scores.iter().zip(counts.iter_mut()) {
        for row in out.chunks_exact(WMAX).take(valid) {
            for l in 0..WMAX {
                c[l] += u32::from(row[l] > s[l]);
                equal |= row[l] == s[l];
            }
        }
    }
    equal
}

/// # Safety
/// As [`Kernel::tile`], with `q` valid for `dim * W` floats.
unsafe fn portable_tile<const W: usize>(
    rows: &[*const f32; MR],
    q: *const f32,
    dim: usize,
    gates: &[f32],
    out: &mut [f32; MR * WMAX],
) -> u128 {
    let mut acc = [[0.0f32; W]; MR];
    let q = std::slice::from_raw_parts(q, dim * W);
    let rows: [&[f32]; MR] = std::array::from_fn(|t| std::slice::from_raw_parts(rows[t], dim));
    for k in 0..dim {
        let qk = &q[k * W..k * W + W];
        for t in 0..MR {
            let d = rows[t][k];
            for l in 0..W {
                acc[t][l] = d.mul_add(qk[l], acc[t][l]);
            }
        }
    }
    let mut mask = 0u128;
    for (t, row) in acc.iter().enumerate() {
        for (l, &s) in row.iter().enumerate() {
            out[t * WMAX + l] = s;
            if s >= gates[l] {
                mask |= 1u128 << (t * WMAX + l);
            }
        }
    }
    mask
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{MR, WMAX};
    use std::arch::x86_64::*;

    /// 6 documents × 16 queries: 12 accumulators, 2 loads and 6 broadcasts per step.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tile16(
        rows: &[*const f32; MR],
        q: *const f32,
        dim: usize,
        gates: *const f32,
        store_all: bool,
        out: &mut [f32; MR * WMAX],
    ) -> u128 {
        let [r0, r1, r2, r3, r4, r5] = *rows;
        let mut c00 = _mm256_setzero_ps();
        let mut c01 = _mm256_setzero_ps();
        let mut c10 = _mm256_setzero_ps();
        let mut c11 = _mm256_setzero_ps();
        let mut c20 = _mm256_setzero_ps();
        let mut c21 = _mm256_setzero_ps();
        let mut c30 = _mm256_setzero_ps();
        let mut c31 = _mm256_setzero_ps();
        let mut c40 = _mm256_setzero_ps();
        let mut c41 = _mm256_setzero_ps();
        let mut c50 = _mm256_setzero_ps();
        let mut c51 = _mm256_setzero_ps();
        let mut qp = q;
        for k in 0..dim {
            let b0 = _mm256_load_ps(qp);
            let b1 = _mm256_load_ps(qp.add(8));
            qp = qp.add(16);
            let a = _mm256_broadcast_ss(&*r0.add(k));
            c00 = _mm256_fmadd_ps(a, b0, c00);
            c01 = _mm256_fmadd_ps(a, b1, c01);
            let a = _mm256_broadcast_ss(&*r1.add(k));
            c10 = _mm256_fmadd_ps(a, b0, c10);
            c11 = _mm256_fmadd_ps(a, b1, c11);
            let a = _mm256_broadcast_ss(&*r2.add(k));
            c20 = _mm256_fmadd_ps(a, b0, c20);
            c21 = _mm256_fmadd_ps(a, b1, c21);
            let a = _mm256_broadcast_ss(&*r3.add(k));
            c30 = _mm256_fmadd_ps(a, b0, c30);
            c31 = _mm256_fmadd_ps(a, b1, c31);
            let a = _mm256_broadcast_ss(&*r4.add(k));
            c40 = _mm256_fmadd_ps(a, b0, c40);
            c41 = _mm256_fmadd_ps(a, b1, c41);
            let a = _mm256_broadcast_ss(&*r5.add(k));
            c50 = _mm256_fmadd_ps(a, b0, c50);
            c51 = _mm256_fmadd_ps(a, b1, c51);
        }
        let g0 = _mm256_loadu_ps(gates);
        let g1 = _mm256_loadu_ps(gates.add(8));
        let m = |c0: __m256, c1: __m256| -> u128 {
            let lo = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_GE_OQ>(c0, g0)) as u32;
            let hi = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_GE_OQ>(c1, g1)) as u32;
            u128::from(lo | (hi << 8))
        };
        let mask = m(c00, c01)
            | (m(c10, c11) << 16)
            | (m(c20, c21) << 32)
            | (m(c30, c31) << 48)
            | (m(c40, c41) << 64)
            | (m(c50, c51) << 80);
        if mask != 0 || store_all {
            let o = out.as_mut_ptr();
            _mm256_storeu_ps(o, c00);
            _mm256_storeu_ps(o.add(8), c01);
            _mm256_storeu_ps(o.add(16), c10);
            _mm256_storeu_ps(o.add(24), c11);
            _mm256_storeu_ps(o.add(32), c20);
            _mm256_storeu_ps(o.add(40), c21);
            _mm256_storeu_ps(o.add(48), c30);
            _mm256_storeu_ps(o.add(56), c31);
            _mm256_storeu_ps(o.add(64), c40);
            _mm256_storeu_ps(o.add(72), c41);
            _mm256_storeu_ps(o.add(80), c50);
            _mm256_storeu_ps(o.add(88), c51);
        }
        mask
    }

    /// See [`super::Kernel::count_above`].
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn count_above(
        out: &[f32; MR * WMAX],
        valid: usize,
        scores: &[[f32; WMAX]],
        counts: &mut [[u32; WMAX]],
    ) -> bool {
        let mut equal = 0i32;
        let o = out.as_ptr();
        for (s, c) in scores.iter().zip(counts.iter_mut()) {
            let s0 = _mm256_loadu_ps(s.as_ptr());
            let s1 = _mm256_loadu_ps(s.as_ptr().add(8));
            let cp = c.as_mut_ptr().cast::<__m256i>();
            let mut c0 = _mm256_loadu_si256(cp);
            let mut c1 = _mm256_loadu_si256(cp.add(1));
            for j in 0..valid.min(MR) {
                let a0 = _mm256_loadu_ps(o.add(j * WMAX));
                let a1 = _mm256_loadu_ps(o.add(j * WMAX + 8));
                // A true comparison is all ones (-1): subtracting it adds 1.
                c0 = _mm256_sub_epi32(c0, _mm256_castps_si256(_mm256_cmp_ps::<_CMP_GT_OQ>(a0, s0)));
                c1 = _mm256_sub_epi32(c1, _mm256_castps_si256(_mm256_cmp_ps::<_CMP_GT_OQ>(a1, s1)));
                equal |= _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_EQ_OQ>(a0, s0))
                    | _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_EQ_OQ>(a1, s1));
            }
            _mm256_storeu_si256(cp, c0);
            _mm256_storeu_si256(cp.add(1), c1);
        }
        equal != 0
    }

    /// 6 documents × 8 queries (the last panel when the query count is not a multiple of 16).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tile8(
        rows: &[*const f32; MR],
        q: *const f32,
        dim: usize,
        gates: *const f32,
        store_all: bool,
        out: &mut [f32; MR * WMAX],
    ) -> u128 {
        let [r0, r1, r2, r3, r4, r5] = *rows;
        let mut c0 = _mm256_setzero_ps();
        let mut c1 = _mm256_setzero_ps();
        let mut c2 = _mm256_setzero_ps();
        let mut c3 = _mm256_setzero_ps();
        let mut c4 = _mm256_setzero_ps();
        let mut c5 = _mm256_setzero_ps();
        let mut qp = q;
        for k in 0..dim {
            let b = _mm256_load_ps(qp);
            qp = qp.add(8);
            c0 = _mm256_fmadd_ps(_mm256_broadcast_ss(&*r0.add(k)), b, c0);
            c1 = _mm256_fmadd_ps(_mm256_broadcast_ss(&*r1.add(k)), b, c1);
            c2 = _mm256_fmadd_ps(_mm256_broadcast_ss(&*r2.add(k)), b, c2);
            c3 = _mm256_fmadd_ps(_mm256_broadcast_ss(&*r3.add(k)), b, c3);
            c4 = _mm256_fmadd_ps(_mm256_broadcast_ss(&*r4.add(k)), b, c4);
            c5 = _mm256_fmadd_ps(_mm256_broadcast_ss(&*r5.add(k)), b, c5);
        }
        let g = _mm256_loadu_ps(gates);
        let m = |c: __m256| -> u128 {
            u128::from(_mm256_movemask_ps(_mm256_cmp_ps::<_CMP_GE_OQ>(c, g)) as u32)
        };
        let mask =
            m(c0) | (m(c1) << 16) | (m(c2) << 32) | (m(c3) << 48) | (m(c4) << 64) | (m(c5) << 80);
        if mask != 0 || store_all {
            let o = out.as_mut_ptr();
            _mm256_storeu_ps(o, c0);
            _mm256_storeu_ps(o.add(16), c1);
            _mm256_storeu_ps(o.add(32), c2);
            _mm256_storeu_ps(o.add(48), c3);
            _mm256_storeu_ps(o.add(64), c4);
            _mm256_storeu_ps(o.add(80), c5);
        }
        mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> f32 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    }

    /// Every kernel gives the bits of `dot`, for both panel widths and odd dimensions.
    #[test]
    fn kernels_match_dot_bit_for_bit() {
        let mut seed = 7;
        for dim in [1usize, 3, 17, 64, 385] {
            let queries: Vec<Vec<f32>> = (0..24)
                .map(|_| (0..dim).map(|_| lcg(&mut seed)).collect())
                .collect();
            let docs: Vec<Vec<f32>> = (0..MR)
                .map(|_| (0..dim).map(|_| lcg(&mut seed)).collect())
                .collect();
            let packed = PackedQueries::new(&queries, dim);
            assert_eq!(packed.panels.len(), 2);
            let rows: [*const f32; MR] = std::array::from_fn(|t| docs[t].as_ptr());
            let mut kernels = vec![Kernel::Portable];
            if Kernel::detect() != Kernel::Portable {
                kernels.push(Kernel::detect());
            }
            for kernel in kernels {
                for panel in &packed.panels {
                    let gates = [f32::NEG_INFINITY; WMAX];
                    let mut out = [0.0; MR * WMAX];
                    // SAFETY: rows hold `dim` floats each; gates hold 16 values.
                    let mask =
                        unsafe { kernel.tile(&rows, &packed, panel, &gates, false, &mut out) };
                    for t in 0..MR {
                        for l in 0..panel.width {
                            assert!(mask & (1u128 << (t * WMAX + l)) != 0);
                            let want = dot(&docs[t], &queries[panel.first + l]);
                            let got = out[t * WMAX + l];
                            assert_eq!(got.to_bits(), want.to_bits(), "{kernel:?} dim {dim}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn counting_kernels_agree() {
        let mut seed = 11;
        let mut out = [0.0f32; MR * WMAX];
        for x in out.iter_mut() {
            *x = (lcg(&mut seed) * 8.0).round() / 8.0;
        }
        let scores: Vec<[f32; WMAX]> = (0..3)
            .map(|_| std::array::from_fn(|_| (lcg(&mut seed) * 8.0).round() / 8.0))
            .collect();
        for valid in [1, 4, MR] {
            let mut a = vec![[0u32; WMAX]; 3];
            let mut b = vec![[7u32; WMAX]; 3];
            let ea = count_above_portable(&out, valid, &scores, &mut a);
            let eb = Kernel::detect().count_above(&out, valid, &scores, &mut b);
            assert_eq!(ea, eb);
            for (x, y) in a.iter().zip(&b) {
                for (p, q) in x.iter().zip(y) {
                    assert_eq!(p + 7, *q);
                }
            }
            let mut naive = 0;
            for row in out.chunks(WMAX).take(valid) {
                naive += row.iter().zip(&scores[0]).filter(|(x, s)| x > s).count() as u32;
            }
            assert_eq!(a[0].iter().sum::<u32>(), naive);
        }
    }
}
