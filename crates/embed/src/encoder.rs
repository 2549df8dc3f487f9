//! The BERT-family transformer encoder (BERT, RoBERTa, XLM-RoBERTa), forward pass only.
//!
//! Sequences are *packed*, not padded: the tokens of every sequence of a batch are stacked
//! into one `T x hidden` matrix, the dense layers run as single GEMMs over all `T` tokens,
//! and attention runs per sequence over exactly its own tokens. No padding means no wasted
//! FLOPs and no attention mask, and a sequence's result does not depend on which other
//! sequences share its batch.

use std::path::Path;

use rayon::prelude::*;

use crate::config::{EncoderConfig, Family};
use crate::kernels::{self, Mat, Threads};
use crate::safetensors::SafeTensors;
use crate::EmbedError;

/// Tensor-name prefixes tried, in order, in front of `embeddings.` / `encoder.`.
const PREFIXES: &[&str] = &["", "bert.", "roberta.", "xlm-roberta.", "model."];

/// Affine parameters of a layer norm.
pub(crate) struct Norm {
    w: Vec<f32>,
    b: Vec<f32>,
}

/// A dense layer stored as `in x out` row-major (transposed from PyTorch's `out x in`).
pub(crate) struct Dense {
    w: Vec<f32>,
    b: Vec<f32>,
    inp: usize,
    out: usize,
}

/// Rows a small dense-layer call is zero-padded to (see [`Dense::needs_padding`]).
const MIN_GEMM_ROWS: usize = 65;

/// Work applied to whole rows of a dense layer's output once they are final.
type Epilogue<'a> = dyn Fn(&mut [f32]) + Sync + 'a;

/// Rows per task of an epilogue run after a single (unsplit) product.
const ROWS_PER_EPILOGUE: usize = 16;

/// Rows per task of a dense layer on `threads` threads (see [`Dense::gemm`]): about two
/// blocks per thread, a multiple of the `gemm` crate's 16-row AVX2 tile, at least 64 rows
/// (so that each call amortises packing the weights) and at most 512.
fn row_block(rows: usize, threads: usize) -> usize {
    (rows.div_ceil(2 * threads).div_ceil(16) * 16).clamp(64, 512)
}

impl Dense {
    /// A layer from a PyTorch `[out, in]` weight matrix and its bias (`out` values).
    pub(crate) fn from_pytorch(w: &[f32], b: Vec<f32>, inp: usize, out: usize) -> Dense {
        debug_assert_eq!(w.len(), out * inp);
        debug_assert_eq!(b.len(), out);
        Dense {
            w: transpose(w, out, inp),
            b,
            inp,
            out,
        }
    }

    /// `out[t x out] = x[t x in] · W + b` for `t` rows (`out` is overwritten).
    pub(crate) fn apply(&self, x: &[f32], rows: usize, out: &mut [f32]) {
        for r in out.chunks_exact_mut(self.out).take(rows) {
            r.copy_from_slice(&self.b);
        }
        self.accumulate(x, rows, out);
    }

    /// `out = act(x · W + b)`: [`Dense::apply`] with the activation applied to each block of
    /// rows as soon as it is computed (the same bits as applying it afterwards).
    pub(crate) fn apply_act(
        &self,
        x: &[f32],
        rows: usize,
        out: &mut [f32],
        act: crate::config::Activation,
    ) {
        for r in out.chunks_exact_mut(self.out).take(rows) {
            r.copy_from_slice(&self.b);
        }
        self.accumulate_then(x, rows, out, &|block| act.apply_seq(block));
    }

    /// `io[t x out] += x[t x in] · W + b` (residual connection fused).
    pub(crate) fn apply_add(&self, x: &[f32], rows: usize, io: &mut [f32]) {
        self.add_bias(rows, io);
        self.accumulate(x, rows, io);
    }

    /// [`Dense::apply_add`], then the layer norm `norm` of each block of rows as soon as it is
    /// computed (the same bits as normalising afterwards).
    pub(crate) fn apply_add_norm(
        &self,
        x: &[f32],
        rows: usize,
        io: &mut [f32],
        norm: &Norm,
        eps: f32,
    ) {
        self.add_bias(rows, io);
        self.accumulate_then(x, rows, io, &|block| {
            kernels::layer_norm_rows(block, &norm.w, &norm.b, eps)
        });
    }

    fn add_bias(&self, rows: usize, io: &mut [f32]) {
        for r in io.chunks_exact_mut(self.out).take(rows) {
            for (v, b) in r.iter_mut().zip(&self.b) {
                *v += b;
            }
        }
    }

    /// `io += x · W` on the blocked GEMM path (see [`Dense::needs_padding`]).
    fn accumulate(&self, x: &[f32], rows: usize, io: &mut [f32]) {
        self.accumulate_then(x, rows, io, &|_| {});
    }

    /// `io += x · W`, then `then` over whole rows of `io` (each row exactly once, in blocks).
    fn accumulate_then(&self, x: &[f32], rows: usize, io: &mut [f32], then: &Epilogue<'_>) {
        if rows == 0 {
            return;
        }
        if self.needs_padding(rows) {
            let mut xp = vec![0f32; MIN_GEMM_ROWS * self.inp];
            xp[..rows * self.inp].copy_from_slice(&x[..rows * self.inp]);
            let mut op = vec![0f32; MIN_GEMM_ROWS * self.out];
            op[..rows * self.out].copy_from_slice(&io[..rows * self.out]);
            self.gemm(&xp, MIN_GEMM_ROWS, &mut op, &|_| {});
            io[..rows * self.out].copy_from_slice(&op[..rows * self.out]);
            then(&mut io[..rows * self.out]);
        } else {
            self.gemm(x, rows, io, then);
        }
    }

    /// The `gemm` crate takes other code paths for small problems (gemv for one row,
    /// "horizontal" kernels when rows x out <= 256, another k blocking when rows and out are
    /// both <= 64), and those round differently from its blocked kernels. On the blocked path
    /// a row's result does not depend on the other rows; padding the calls that would leave it
    /// keeps a text's vector bit-identical alone or in a batch. For real models (out >= 65)
    /// only a single-row call is padded.
    fn needs_padding(&self, rows: usize) -> bool {
        rows < 2 || rows * self.out <= 256 || (rows <= 64 && self.out <= 64)
    }

    /// `io += x · W` over `rows` rows. On more than one thread the rows are cut into blocks
    /// of [`row_block`] rows (the last one shorter), each multiplied by a single-threaded GEMM under
    /// rayon: no synchronisation inside a product, and the weights stream through each
    /// core's caches once per block. A row's result does not depend on the block it falls in
    /// (the `gemm` crate's depth blocking depends on the inner dimension only; every block
    /// stays on its blocked path: see [`Dense::needs_padding`]), so the split changes no bit.
    fn gemm(&self, x: &[f32], rows: usize, io: &mut [f32], then: &Epilogue<'_>) {
        let single = |x: &[f32], rows: usize, io: &mut [f32], threads: Threads| {
            kernels::gemm(
                rows,
                self.out,
                self.inp,
                Mat::rows(x, self.inp),
                Mat::rows(&self.w, self.out),
                io,
                self.out,
                true,
                1.0,
                threads,
            )
        };
        let threads = rayon::current_num_threads();
        let block = row_block(rows, threads);
        let last = rows % block;
        if threads < 2 || rows <= block || (last != 0 && self.needs_padding(last)) {
            single(x, rows, io, Threads::Pool);
            io[..rows * self.out]
                .par_chunks_mut(ROWS_PER_EPILOGUE * self.out)
                .for_each(then);
            return;
        }
        x[..rows * self.inp]
            .par_chunks(block * self.inp)
            .zip(io[..rows * self.out].par_chunks_mut(block * self.out))
            .for_each(|(xb, ob)| {
                single(xb, xb.len() / self.inp, ob, Threads::One);
                then(ob);
            });
    }

    /// `out = x · W + b` by plain dot products in a fixed order: for the small
    /// classification heads, where the result must not depend on how many rows there are.
    pub(crate) fn apply_exact(&self, x: &[f32], rows: usize, out: &mut [f32]) {
        for r in 0..rows {
            let xr = &x[r * self.inp..(r + 1) * self.inp];
            for o in 0..self.out {
                let mut acc = 0f32;
                for (i, xi) in xr.iter().enumerate() {
                    acc += xi * self.w[i * self.out + o];
                }
                out[r * self.out + o] = acc + self.b[o];
            }
        }
    }

    pub(crate) fn out_dim(&self) -> usize {
        self.out
    }
}

struct Layer {
    qkv: Dense,
    attn_out: Dense,
    ln1: Norm,
    ff_in: Dense,
    ff_out: Dense,
    ln2: Norm,
}

/// Loads named tensors with a fixed prefix and checks their shapes.
pub(crate) struct WeightSource<'a> {
    st: &'a SafeTensors,
    prefix: String,
}

impl<'a> WeightSource<'a> {
    /// Finds the prefix under which the encoder's tensors live.
    pub(crate) fn detect(st: &'a SafeTensors) -> Result<Self, EmbedError> {
        for p in PREFIXES {
            if st.contains(&format!("{p}embeddings.word_embeddings.weight")) {
                return Ok(WeightSource {
                    st,
                    prefix: p.to_string(),
                });
            }
        }
        Err(EmbedError::MissingTensor {
            path: st.path().to_path_buf(),
            name: "embeddings.word_embeddings.weight".into(),
            prefixes: PREFIXES.iter().map(|p| p.to_string()).collect(),
        })
    }

    /// A source reading tensor names as they are (for heads outside the encoder prefix).
    pub(crate) fn root(st: &'a SafeTensors) -> Self {
        WeightSource {
            st,
            prefix: String::new(),
        }
    }

    pub(crate) fn has(&self, name: &str) -> bool {
        self.st.contains(&format!("{}{name}", self.prefix))
    }

    pub(crate) fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, EmbedError> {
        let full = format!("{}{name}", self.prefix);
        if !self.st.contains(&full) {
            return Err(EmbedError::MissingTensor {
                path: self.st.path().to_path_buf(),
                name: name.to_string(),
                prefixes: vec![self.prefix.clone()],
            });
        }
        let got = self.st.shape(&full).unwrap_or(&[]);
        // Accept [n] vs [1, n] style differences only when the element counts agree exactly
        // in the same order (e.g. a bias stored as [1, n]).
        let squeeze = |s: &[usize]| s.iter().copied().filter(|&d| d != 1).collect::<Vec<_>>();
        if got != shape && squeeze(got) != squeeze(shape) {
            return Err(EmbedError::TensorShape {
                path: self.st.path().to_path_buf(),
                name: full,
                expected: shape.to_vec(),
                got: got.to_vec(),
            });
        }
        self.st.get_f32(&full)
    }

    /// Layer norm `name.{weight,bias}` (or the old `gamma`/`beta` names).
    pub(crate) fn norm(&self, name: &str, h: usize) -> Result<Norm, EmbedError> {
        let (w, b) = if self.has(&format!("{name}.gamma")) {
            ("gamma", "beta")
        } else {
            ("weight", "bias")
        };
        Ok(Norm {
            w: self.tensor(&format!("{name}.{w}"), &[h])?,
            b: self.tensor(&format!("{name}.{b}"), &[h])?,
        })
    }

    /// Dense layer `name.{weight,bias}` with PyTorch weight shape `[out, in]`.
    pub(crate) fn dense(&self, name: &str, inp: usize, out: usize) -> Result<Dense, EmbedError> {
        let w = self.tensor(&format!("{name}.weight"), &[out, inp])?;
        let b = self.tensor(&format!("{name}.bias"), &[out])?;
        Ok(Dense {
            w: transpose(&w, out, inp),
            b,
            inp,
            out,
        })
    }
}

fn transpose(w: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut t = vec![0f32; w.len()];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = w[r * cols + c];
        }
    }
    t
}

/// A loaded encoder.
pub(crate) struct Encoder {
    pub cfg: EncoderConfig,
    word: Vec<f32>,
    pos: Vec<f32>,
    token_type: Vec<f32>,
    emb_ln: Norm,
    layers: Vec<Layer>,
}

/// One tokenized sequence.
pub(crate) struct Seq<'a> {
    pub ids: &'a [u32],
    pub type_ids: &'a [u32],
}

/// Output of a forward pass: the final hidden states of every token, packed.
pub(crate) struct Hidden {
    /// `T x hidden`, sequences one after another.
    pub data: Vec<f32>,
    /// Start row of each sequence, plus `T` at the end.
    pub offsets: Vec<usize>,
    pub hidden: usize,
}

impl Hidden {
    /// The rows of sequence `i`.
    pub fn seq(&self, i: usize) -> &[f32] {
        &self.data[self.offsets[i] * self.hidden..self.offsets[i + 1] * self.hidden]
    }
}

impl Encoder {
    /// Loads the encoder weights described by `cfg` from `st`.
    pub(crate) fn load(cfg: EncoderConfig, st: &SafeTensors) -> Result<Encoder, EmbedError> {
        let src = WeightSource::detect(st)?;
        let h = cfg.hidden_size;
        let word = src.tensor("embeddings.word_embeddings.weight", &[cfg.vocab_size, h])?;
        let pos = src.tensor(
            "embeddings.position_embeddings.weight",
            &[cfg.max_position_embeddings, h],
        )?;
        let token_type = src.tensor(
            "embeddings.token_type_embeddings.weight",
            &[cfg.type_vocab_size, h],
        )?;
        let emb_ln = src.norm("embeddings.LayerNorm", h)?;
        let mut layers = Vec::with_capacity(cfg.num_layers);
        for i in 0..cfg.num_layers {
            let l = format!("encoder.layer.{i}.");
            let q = src.dense(&format!("{l}attention.self.query"), h, h)?;
            let k = src.dense(&format!("{l}attention.self.key"), h, h)?;
            let v = src.dense(&format!("{l}attention.self.value"), h, h)?;
            layers.push(Layer {
                qkv: fuse_qkv(&q, &k, &v),
                attn_out: src.dense(&format!("{l}attention.output.dense"), h, h)?,
                ln1: src.norm(&format!("{l}attention.output.LayerNorm"), h)?,
                ff_in: src.dense(&format!("{l}intermediate.dense"), h, cfg.intermediate_size)?,
                ff_out: src.dense(&format!("{l}output.dense"), cfg.intermediate_size, h)?,
                ln2: src.norm(&format!("{l}output.LayerNorm"), h)?,
            });
        }
        Ok(Encoder {
            cfg,
            word,
            pos,
            token_type,
            emb_ln,
            layers,
        })
    }

    /// Runs the encoder over `seqs` (each already truncated to the position limit).
    pub(crate) fn forward(&self, seqs: &[Seq<'_>], tokenizer: &Path) -> Result<Hidden, EmbedError> {
        let cfg = &self.cfg;
        let h = cfg.hidden_size;
        let offsets = crate::encoder::packed_offsets(seqs, cfg.max_positions())?;
        let t = *offsets.last().unwrap_or(&0);

        // Embeddings.
        let mut x = vec![0f32; t * h];
        for (si, s) in seqs.iter().enumerate() {
            let mut nonpad = 0usize;
            for (j, (&id, &tt)) in s.ids.iter().zip(s.type_ids).enumerate() {
                let id = token_row(id, cfg.vocab_size, tokenizer)?;
                let tt = (tt as usize).min(cfg.type_vocab_size - 1);
                let p = match cfg.family {
                    Family::Bert => j,
                    Family::Roberta => {
                        let pad = cfg.pad_token_id as usize;
                        if id == pad {
                            pad
                        } else {
                            nonpad += 1;
                            pad + nonpad
                        }
                    }
                };
                let row = &mut x[(offsets[si] + j) * h..(offsets[si] + j + 1) * h];
                let we = &self.word[id * h..(id + 1) * h];
                let pe = &self.pos[p * h..(p + 1) * h];
                let te = &self.token_type[tt * h..(tt + 1) * h];
                for c in 0..h {
                    row[c] = we[c] + pe[c] + te[c];
                }
            }
        }
        kernels::layer_norm(&mut x, &self.emb_ln.w, &self.emb_ln.b, cfg.layer_norm_eps);

        let mut qkv = vec![0f32; t * 3 * h];
        let mut ctx = vec![0f32; t * h];
        let mut ctx_heads = vec![0f32; t * h];
        let mut inter = vec![0f32; t * cfg.intermediate_size];
        for layer in &self.layers {
            layer.qkv.apply(&x, t, &mut qkv);
            self.attention(&qkv, &offsets, &mut ctx_heads, &mut ctx);
            let eps = cfg.layer_norm_eps;
            layer
                .attn_out
                .apply_add_norm(&ctx, t, &mut x, &layer.ln1, eps);
            layer.ff_in.apply_act(&x, t, &mut inter, cfg.activation);
            layer
                .ff_out
                .apply_add_norm(&inter, t, &mut x, &layer.ln2, eps);
        }
        Ok(Hidden {
            data: x,
            offsets,
            hidden: h,
        })
    }

    /// Multi-head self-attention of each sequence over its own tokens.
    ///
    /// `qkv` is `T x 3h` (queries, keys, values side by side); the result goes to `ctx`
    /// (`T x h`). A sequence of at most [`FUSED_MAX_TOKENS`] tokens, with AVX2 + FMA and a
    /// head size that is a multiple of 8 (all-MiniLM-L6-v2: 32), takes the fused attention of
    /// [`crate::attention`] (one task per sequence, all heads); the others one pair of GEMM
    /// calls per (head, sequence), via `heads` (`heads x T x d`, one contiguous block per
    /// pair). Which path a sequence takes depends on its own length only, and its result on
    /// its own rows only.
    fn attention(&self, qkv: &[f32], offsets: &[usize], heads: &mut [f32], ctx: &mut [f32]) {
        let h = self.cfg.hidden_size;
        let nh = self.cfg.num_heads;
        let d = h / nh;
        let t = *offsets.last().unwrap_or(&0);
        let scale = 1.0 / (d as f32).sqrt();

        let nseq = offsets.len().saturating_sub(1);
        let fused =
            |s: usize| fused_attention(d) && offsets[s + 1] - offsets[s] <= FUSED_MAX_TOKENS;
        if (0..nseq).all(fused) {
            self.fused_attention(qkv, offsets, ctx, &fused);
            return;
        }

        let tasks = head_tasks(heads, offsets, d);
        tasks
            .into_par_iter()
            .for_each_init(Vec::new, |scores, (hi, s, out)| {
                let o = offsets[s];
                let len = offsets[s + 1] - o;
                if len == 0 || fused(s) {
                    return;
                }
                scores.clear();
                scores.resize(len * len, 0.0);
                let base = o * 3 * h + hi * d;
                // scores = q · kᵀ * scale
                kernels::gemm(
                    len,
                    len,
                    d,
                    Mat {
                        data: &qkv[base..],
                        rs: 3 * h,
                        cs: 1,
                    },
                    Mat {
                        data: &qkv[base + h..],
                        rs: 1,
                        cs: 3 * h,
                    },
                    scores,
                    len,
                    false,
                    scale,
                    Threads::One,
                );
                softmax_times_values(scores, len, &qkv[base + 2 * h..], 3 * h, d, out);
            });
        merge_heads(heads, ctx, nh, t, d);
        // The short sequences' rows (left as garbage by the merge) are written now.
        if (0..nseq).any(fused) {
            self.fused_attention(qkv, offsets, ctx, &fused);
        }
    }

    /// The fused attention of [`crate::attention`] for the sequences `s` with `pick(s)`, one
    /// task per sequence (all heads), writing their rows of `ctx` directly.
    fn fused_attention(
        &self,
        qkv: &[f32],
        offsets: &[usize],
        ctx: &mut [f32],
        pick: &(dyn Fn(usize) -> bool + Sync),
    ) {
        let h = self.cfg.hidden_size;
        let nh = self.cfg.num_heads;
        let t = *offsets.last().unwrap_or(&0);
        let mut parts = Vec::with_capacity(offsets.len().saturating_sub(1));
        let mut rest = &mut ctx[..t * h];
        for s in 0..offsets.len().saturating_sub(1) {
            let (seg, tail) = rest.split_at_mut((offsets[s + 1] - offsets[s]) * h);
            if pick(s) {
                parts.push((s, seg));
            }
            rest = tail;
        }
        parts.into_par_iter().for_each_init(
            crate::attention::Scratch::default,
            |scratch, (s, seg)| {
                let rows = &qkv[offsets[s] * 3 * h..offsets[s + 1] * 3 * h];
                crate::attention::segment(rows, h, nh, seg, scratch, true);
            },
        );
    }
}

/// Sequences up to this many tokens take the fused attention (when [`fused_attention`]
/// allows it); longer ones the two GEMM calls per head, whose blocked kernel wins once the
/// score matrix is large (measured at 256 tokens: the fused path was slower there).
const FUSED_MAX_TOKENS: usize = 64;

/// Whether [`Encoder::attention`] takes the fused path for head size `d`: the CPU has AVX2
/// and FMA (checked once) and `d` is a multiple of 8.
fn fused_attention(d: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static AVX2: OnceLock<bool> = OnceLock::new();
        d.is_multiple_of(8)
            && *AVX2.get_or_init(|| {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = d;
        false
    }
}

/// Concatenates the query, key and value projections into one `h x 3h` layer.
fn fuse_qkv(q: &Dense, k: &Dense, v: &Dense) -> Dense {
    let (inp, h) = (q.inp, q.out);
    let mut w = vec![0f32; inp * 3 * h];
    for r in 0..inp {
        w[r * 3 * h..r * 3 * h + h].copy_from_slice(&q.w[r * h..(r + 1) * h]);
        w[r * 3 * h + h..r * 3 * h + 2 * h].copy_from_slice(&k.w[r * h..(r + 1) * h]);
        w[r * 3 * h + 2 * h..(r + 1) * 3 * h].copy_from_slice(&v.w[r * h..(r + 1) * h]);
    }
    let mut b = Vec::with_capacity(3 * h);
    b.extend_from_slice(&q.b);
    b.extend_from_slice(&k.b);
    b.extend_from_slice(&v.b);
    Dense {
        w,
        b,
        inp,
        out: 3 * h,
    }
}

/// One attention task per (head, sequence), each owning its `len x d` block of `heads`
/// (`heads x T x d`, sequences packed by `offsets`).
pub(crate) fn head_tasks<'a>(
    heads: &'a mut [f32],
    offsets: &[usize],
    d: usize,
) -> Vec<(usize, usize, &'a mut [f32])> {
    let t = *offsets.last().unwrap_or(&0);
    let nseq = offsets.len().saturating_sub(1);
    let mut tasks = Vec::with_capacity(nseq * heads.len() / (t * d).max(1));
    if t * d == 0 {
        return tasks;
    }
    for (hi, slab) in heads.chunks_exact_mut(t * d).enumerate() {
        let mut rest = slab;
        for s in 0..nseq {
            let len = offsets[s + 1] - offsets[s];
            let (block, tail) = rest.split_at_mut(len * d);
            rest = tail;
            tasks.push((hi, s, block));
        }
    }
    tasks
}

/// Row-wise softmax of the `len x len` `scores`, then `out = softmax(scores) · v`, where `v`
/// holds `len` value rows of `d` floats, `v_stride` apart.
pub(crate) fn softmax_times_values(
    scores: &mut [f32],
    len: usize,
    v: &[f32],
    v_stride: usize,
    d: usize,
    out: &mut [f32],
) {
    for row in scores.chunks_exact_mut(len) {
        kernels::softmax_row(row);
    }
    kernels::gemm(
        len,
        d,
        len,
        Mat::rows(scores, len),
        Mat {
            data: v,
            rs: v_stride,
            cs: 1,
        },
        out,
        d,
        false,
        1.0,
        Threads::One,
    );
}

/// From head-major `heads` (`nh x T x d`) back to token-major `ctx` (`T x nh·d`).
pub(crate) fn merge_heads(heads: &[f32], ctx: &mut [f32], nh: usize, t: usize, d: usize) {
    let h = nh * d;
    ctx[..t * h]
        .par_chunks_mut(h)
        .enumerate()
        .for_each(|(row, out)| {
            for hi in 0..nh {
                let src = &heads[hi * t * d + row * d..hi * t * d + (row + 1) * d];
                out[hi * d..(hi + 1) * d].copy_from_slice(src);
            }
        });
}

/// Start offsets of `seqs` packed one after another, plus the total token count last; a
/// sequence longer than the model's `max_positions` is an error.
pub(crate) fn packed_offsets(
    seqs: &[Seq<'_>],
    max_positions: usize,
) -> Result<Vec<usize>, EmbedError> {
    let mut offsets = Vec::with_capacity(seqs.len() + 1);
    let mut t = 0usize;
    for s in seqs {
        if s.ids.len() > max_positions {
            return Err(EmbedError::InvalidOption {
                option: "max_tokens",
                reason: format!(
                    "a sequence of {} tokens exceeds the model's {max_positions} positions",
                    s.ids.len()
                ),
            });
        }
        offsets.push(t);
        t += s.ids.len();
    }
    offsets.push(t);
    Ok(offsets)
}

/// A token id as a row of the word embeddings; an id beyond `vocab_size` means the tokenizer
/// and the weights do not match.
pub(crate) fn token_row(id: u32, vocab_size: usize, tokenizer: &Path) -> Result<usize, EmbedError> {
    let id = id as usize;
    if id >= vocab_size {
        return Err(EmbedError::config(
            tokenizer,
            "model.vocab",
            format!(
                "token id {id} is outside the model's vocab_size {vocab_size} (tokenizer and weights do not match)"
            ),
        ));
    }
    Ok(id)
}
