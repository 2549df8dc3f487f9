//! Scaled dot-product self-attention of [`crate::E5Embedder`] and of the f32 BERT encoder
//! (all-MiniLM-L6-v2), one text (segment) at a time.
//!
//! Per head, the segment's keys are transposed (`[head dim][tokens]`, padded to 8 tokens) so
//! that a query's scores for eight keys come out of one vector multiply-add per dimension;
//! the softmax's exponentials are computed eight at a time (a Cephes-style polynomial,
//! within 2 ulp of `exp`); the context is the probability-weighted sum of the value rows.
//! Every output is computed by one task in a fixed order, so the result does not depend on
//! the thread count. Without AVX2 and FMA a portable version computes the same formulas.

/// Reusable buffers of one task.
#[derive(Default)]
pub(crate) struct Scratch {
    kt: Vec<f32>,
    v: Vec<f32>,
    scores: Vec<f32>,
}

/// Attention of one segment: `qkv` holds its `n` tokens' rows `[q | k | v]` (`3·h` values),
/// `out` receives `n` rows of `h` values (the heads' contexts side by side).
pub(crate) fn segment(
    qkv: &[f32],
    h: usize,
    heads: usize,
    out: &mut [f32],
    s: &mut Scratch,
    avx2: bool,
) {
    let n = qkv.len() / (3 * h);
    let hd = h / heads;
    let np = n.div_ceil(8) * 8;
    let scale = 1.0 / (hd as f32).sqrt();
    s.kt.clear();
    s.kt.resize(hd * np, 0.0);
    s.v.clear();
    s.v.resize(n * hd, 0.0);
    s.scores.clear();
    s.scores.resize(np, 0.0);
    for head in 0..heads {
        for t in 0..n {
            let k = &qkv[t * 3 * h + h + head * hd..][..hd];
            for (d, kv) in k.iter().enumerate() {
                s.kt[d * np + t] = *kv;
            }
            s.v[t * hd..(t + 1) * hd].copy_from_slice(&qkv[t * 3 * h + 2 * h + head * hd..][..hd]);
        }
        for t in 0..n {
            let q = &qkv[t * 3 * h + head * hd..][..hd];
            let ctx = &mut out[t * h + head * hd..][..hd];
            #[cfg(target_arch = "x86_64")]
            if avx2 && hd.is_multiple_of(8) {
                // SAFETY: the caller detected AVX2 and FMA; hd is a multiple of 8.
                unsafe { query_avx2(q, &s.kt, &s.v, n, np, scale, &mut s.scores, ctx) };
                continue;
            }
            let _ = avx2;
            query_scalar(q, &s.kt, &s.v, n, np, scale, &mut s.scores, ctx);
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn query_scalar(
    q: &[f32],
    kt: &[f32],
    v: &[f32],
    n: usize,
    np: usize,
    scale: f32,
    scores: &mut [f32],
    ctx: &mut [f32],
) {
    let hd = q.len();
    let sc = &mut scores[..n];
    sc.fill(0.0);
    for (d, qd) in q.iter().enumerate() {
        for (a, k) in sc.iter_mut().zip(&kt[d * np..d * np + n]) {
            *a += qd * k;
        }
    }
    let mut mx = f32::NEG_INFINITY;
    for a in sc.iter_mut() {
        *a *= scale;
        mx = mx.max(*a);
    }
    let mut sum = 0f32;
    for a in sc.iter_mut() {
        *a = (*a - mx).exp();
        sum += *a;
    }
    ctx.fill(0.0);
    for (s, p) in sc.iter().enumerate() {
        for (c, x) in ctx.iter_mut().zip(&v[s * hd..(s + 1) * hd]) {
            *c += p * x;
        }
    }
    let inv = 1.0 / sum;
    ctx.iter_mut().for_each(|c| *c *= inv);
}

/// `exp(x)` for eight lanes (Cephes' `expf`: range reduction by `ln 2` in two parts, degree-5
/// polynomial); inputs below −87.3 give 0 or a tiny value, as the softmax needs.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
fn exp8(x: std::arch::x86_64::__m256) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let x = _mm256_max_ps(
        _mm256_min_ps(x, _mm256_set1_ps(88.376_26)),
        _mm256_set1_ps(-87.336_55),
    );
    let fx = _mm256_round_ps(
        _mm256_mul_ps(x, _mm256_set1_ps(std::f32::consts::LOG2_E)),
        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC,
    );
    let x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693_359_4), x);
    let x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.121_944_4e-4), x);
    let mut y = _mm256_set1_ps(1.987_569_1e-4);
    for c in [
        1.398_199_9e-3,
        8.333_452e-3,
        4.166_579_6e-2,
        1.666_666_5e-1,
        0.5,
    ] {
        y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(c));
    }
    let x2 = _mm256_mul_ps(x, x);
    y = _mm256_fmadd_ps(y, x2, _mm256_add_ps(x, _mm256_set1_ps(1.0)));
    let e = _mm256_slli_epi32(
        _mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)),
        23,
    );
    _mm256_mul_ps(y, _mm256_castsi256_ps(e))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn query_avx2(
    q: &[f32],
    kt: &[f32],
    v: &[f32],
    n: usize,
    np: usize,
    scale: f32,
    scores: &mut [f32],
    ctx: &mut [f32],
) {
    use std::arch::x86_64::*;
    let hd = q.len();
    let scores = &mut scores[..np];
    let ktp = kt.as_ptr();
    let vs = _mm256_set1_ps(scale);
    let mut vmax = _mm256_set1_ps(f32::NEG_INFINITY);
    let mut s0 = 0;
    while s0 < np {
        // Four independent accumulators over the dimensions, added in a fixed order.
        let mut acc = [_mm256_setzero_ps(); 4];
        for d in 0..hd {
            // SAFETY: d < hd and s0 + 8 <= np: inside kt ([hd][np]).
            let k = unsafe { _mm256_loadu_ps(ktp.add(d * np + s0)) };
            acc[d % 4] = _mm256_fmadd_ps(_mm256_set1_ps(q[d]), k, acc[d % 4]);
        }
        let a = _mm256_mul_ps(
            _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])),
            vs,
        );
        // Padding keys (past n) do not take part in the maximum.
        let valid = (n - s0).min(8) as i32;
        let idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let mask = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(valid), idx));
        let a = _mm256_blendv_ps(_mm256_set1_ps(f32::NEG_INFINITY), a, mask);
        vmax = _mm256_max_ps(vmax, a);
        // SAFETY: s0 + 8 <= np = scores.len().
        unsafe { _mm256_storeu_ps(scores.as_mut_ptr().add(s0), a) };
        s0 += 8;
    }
    let mx = hmax(vmax);
    let vmx = _mm256_set1_ps(mx);
    let mut vsum = _mm256_setzero_ps();
    let mut s0 = 0;
    while s0 < np {
        // SAFETY: s0 + 8 <= np.
        let a = unsafe { _mm256_loadu_ps(scores.as_ptr().add(s0)) };
        // exp(-inf - mx) is clamped to a tiny value; padding lanes are zeroed below.
        let e = exp8(_mm256_sub_ps(a, vmx));
        let valid = (n - s0).min(8) as i32;
        let idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let mask = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(valid), idx));
        let e = _mm256_and_ps(e, mask);
        vsum = _mm256_add_ps(vsum, e);
        // SAFETY: as above.
        unsafe { _mm256_storeu_ps(scores.as_mut_ptr().add(s0), e) };
        s0 += 8;
    }
    let sum = hsum(vsum);
    let groups = hd / 8;
    let mut c = [_mm256_setzero_ps(); 8];
    let vp = v.as_ptr();
    for (s, p) in scores[..n].iter().enumerate() {
        let pv = _mm256_set1_ps(*p);
        for (g, cg) in c.iter_mut().enumerate().take(groups) {
            // SAFETY: s < n and g < hd / 8: inside v ([n][hd]).
            let x = unsafe { _mm256_loadu_ps(vp.add(s * hd + g * 8)) };
            *cg = _mm256_fmadd_ps(pv, x, *cg);
        }
    }
    let inv = _mm256_set1_ps(1.0 / sum);
    for (g, cg) in c.iter().enumerate().take(groups) {
        // SAFETY: g < hd / 8: inside ctx.
        unsafe { _mm256_storeu_ps(ctx.as_mut_ptr().add(g * 8), _mm256_mul_ps(*cg, inv)) };
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
fn hsum(v: std::arch::x86_64::__m256) -> f32 {
    use std::arch::x86_64::*;
    let lo = _mm256_castps256_ps128(v);
    let hi = _mm256_extractf128_ps(v, 1);
    let s = _mm_add_ps(lo, hi);
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
fn hmax(v: std::arch::x86_64::__m256) -> f32 {
    use std::arch::x86_64::*;
    let lo = _mm256_castps256_ps128(v);
    let hi = _mm256_extractf128_ps(v, 1);
    let s = _mm_max_ps(lo, hi);
    let s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    _mm_cvtss_f32(_mm_max_ss(s, _mm_shuffle_ps(s, s, 1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both versions against the textbook formula in f64, for segments shorter and longer
    /// than a vector and not multiples of 8.
    #[test]
    fn attention_matches_the_formula() {
        let (h, heads) = (64, 2);
        let hd = h / heads;
        let mut seed = 11u32;
        let mut next = || {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 * 6.0 - 3.0
        };
        #[cfg(target_arch = "x86_64")]
        let fast = std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma");
        #[cfg(not(target_arch = "x86_64"))]
        let fast = false;
        for n in [1usize, 5, 8, 13, 40] {
            let qkv: Vec<f32> = (0..n * 3 * h).map(|_| next()).collect();
            for avx2 in [false, fast] {
                let mut out = vec![0f32; n * h];
                segment(&qkv, h, heads, &mut out, &mut Scratch::default(), avx2);
                for t in 0..n {
                    for head in 0..heads {
                        let q = &qkv[t * 3 * h + head * hd..][..hd];
                        let sc: Vec<f64> = (0..n)
                            .map(|s| {
                                let k = &qkv[s * 3 * h + h + head * hd..][..hd];
                                q.iter()
                                    .zip(k)
                                    .map(|(a, b)| *a as f64 * *b as f64)
                                    .sum::<f64>()
                                    / (hd as f64).sqrt()
                            })
                            .collect();
                        let mx = sc.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                        let e: Vec<f64> = sc.iter().map(|x| (x - mx).exp()).collect();
                        let z: f64 = e.iter().sum();
                        for dd in 0..hd {
                            let want: f64 = (0..n)
                                .map(|s| e[s] / z * qkv[s * 3 * h + 2 * h + head * hd + dd] as f64)
                                .sum();
                            let got = out[t * h + head * hd + dd] as f64;
                            assert!(
                                (got - want).abs() < 1e-5 * (1.0 + want.abs()),
                                "n {n} avx2 {avx2}: {got} vs {want}"
                            );
                        }
                    }
                }
            }
        }
    }
}
