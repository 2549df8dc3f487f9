//! The DeBERTa-v2 / DeBERTa-v3 encoder (`model_type` `"deberta-v2"`), forward pass only: the
//! backbone of `DebertaV2ForSequenceClassification` cross-encoders (NLI models, rerankers).
//!
//! What differs from BERT (`encoder.rs`), following transformers' `modeling_deberta_v2.py`:
//!
//! - **Embeddings**: word embeddings of width `embedding_size`, plus absolute position
//!   embeddings only when `position_biased_input` (DeBERTa-v3: no), plus token type
//!   embeddings only when `type_vocab_size > 0` (DeBERTa-v3: none); `embed_proj` (no bias)
//!   to `hidden_size` when the widths differ; LayerNorm.
//! - **Disentangled attention**: the score of query token `i` for key token `j` is
//!   `(q_i·k_j + q_i·pk[δ(i-j)] + k_j·pq[δ(i-j)]) / sqrt(d · (1 + #pos_att_type))`, where the
//!   second term is there with `c2p`, the third with `p2c`; `pk` / `pq` are the relative
//!   embeddings (`encoder.rel_embeddings`, layer-normed by `encoder.LayerNorm` when
//!   `norm_rel_ebd` is `layer_norm`) projected by the layer's `key_proj` / `query_proj`
//!   (`share_att_key`) or `pos_key_proj` / `pos_query_proj`. `δ(r)` is the relative distance
//!   `r`, log-bucketed beyond `±position_buckets/2` when `position_buckets > 0`, shifted by
//!   the span (`position_buckets`, else `max_relative_positions`) and clamped to the table.
//!   (transformers computes the `p2c` term as `k_j·pq[clamp(span - bucket(j - i))]`; the
//!   bucketing is odd, so that is the same index.)
//! - **ConvLayer** (`conv_kernel_size > 0`, deberta-v2-xlarge / xxlarge): after the first
//!   layer, `LayerNorm(h + act(conv1d(embeddings)))`, the convolution zero-padded at each
//!   sequence's ends.
//!
//! The relative-embedding projections do not depend on the input: they are computed once at
//! load time. Like `encoder.rs`, sequences are packed (no padding, no mask): attention runs
//! per sequence over exactly its own tokens, so a sequence's result does not depend on the
//! other sequences of its batch.

use std::path::Path;

use rayon::prelude::*;
use serde_json::Value;

use crate::config::EncoderConfig;
use crate::encoder::{Dense, Hidden, Seq, WeightSource};
use crate::kernels::{self, Mat, Threads};
use crate::safetensors::SafeTensors;
use crate::EmbedError;

/// Tensor-name prefixes tried, in order, in front of `embeddings.` / `encoder.`.
const PREFIXES: &[&str] = &["deberta.", ""];

/// An activation of the pooler or the convolution layer (`pooler_hidden_act`, `conv_act`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Act {
    /// Exact GELU (`"gelu"`).
    GeluErf,
    /// The tanh approximation (`"gelu_new"`, `"gelu_pytorch_tanh"`, `"gelu_fast"`).
    GeluTanh,
    /// `max(0, x)`.
    Relu,
    /// `tanh(x)`.
    Tanh,
}

impl Act {
    fn parse(name: &str, path: &Path, field: &str) -> Result<Act, EmbedError> {
        match name {
            "gelu" => Ok(Act::GeluErf),
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Ok(Act::GeluTanh),
            "relu" => Ok(Act::Relu),
            "tanh" => Ok(Act::Tanh),
            other => Err(EmbedError::config(
                path,
                field,
                format!("activation `{other}` is not supported (gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, relu, tanh)"),
            )),
        }
    }

    /// Applies the activation in place.
    pub(crate) fn apply(self, x: &mut [f32]) {
        match self {
            Act::GeluErf => kernels::gelu_erf(x),
            Act::GeluTanh => kernels::gelu_tanh(x),
            Act::Relu => kernels::relu(x),
            Act::Tanh => {
                for v in x.iter_mut() {
                    *v = v.tanh();
                }
            }
        }
    }
}

/// The ConvLayer options (`conv_kernel_size > 0`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConvConfig {
    /// `conv_kernel_size` (odd).
    pub kernel: usize,
    /// `conv_act` (default `tanh`).
    pub act: Act,
}

/// The DeBERTa-v2 fields of `config.json`, checked and with transformers' defaults.
#[derive(Clone, Debug)]
pub(crate) struct DebertaV2Config {
    /// `embedding_size` (default `hidden_size`).
    pub embedding_size: usize,
    /// `position_biased_input` (default true): add absolute position embeddings.
    pub position_biased_input: bool,
    /// `type_vocab_size` (default 0: no token type embeddings).
    pub type_vocab_size: usize,
    /// `relative_attention` (default false).
    pub relative_attention: bool,
    /// `"c2p"` in `pos_att_type`.
    pub c2p: bool,
    /// `"p2c"` in `pos_att_type`.
    pub p2c: bool,
    /// `position_buckets`, when > 0.
    pub position_buckets: Option<usize>,
    /// `max_relative_positions`, or `max_position_embeddings` when < 1.
    pub max_relative_positions: usize,
    /// `share_att_key` (default false).
    pub share_att_key: bool,
    /// `norm_rel_ebd` contains `layer_norm`.
    pub norm_rel_ebd: bool,
    /// The ConvLayer after the first layer, when `conv_kernel_size > 0`.
    pub conv: Option<ConvConfig>,
    /// `pooler_hidden_act` (default `gelu`).
    pub pooler_act: Act,
}

impl DebertaV2Config {
    /// Half the number of rows of the relative embedding table.
    pub(crate) fn att_span(&self) -> usize {
        self.position_buckets.unwrap_or(self.max_relative_positions)
    }

    /// `1 + #{c2p, p2c}`: the attention scores are divided by `sqrt(head_dim * this)`
    /// (also when `relative_attention` is off, as in transformers).
    fn scale_factor(&self) -> usize {
        1 + usize::from(self.c2p) + usize::from(self.p2c)
    }

    /// Relative position attention terms are computed.
    fn relative(&self) -> bool {
        self.relative_attention && (self.c2p || self.p2c)
    }
}

fn get_bool_or(v: &Value, path: &Path, field: &str, default: bool) -> Result<bool, EmbedError> {
    match v.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(x) => Err(EmbedError::config(
            path,
            field,
            format!("expected true or false, got {x}"),
        )),
    }
}

fn get_int_or(v: &Value, path: &Path, field: &str, default: i64) -> Result<i64, EmbedError> {
    match v.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(x) => x.as_i64().ok_or_else(|| {
            EmbedError::config(path, field, format!("expected an integer, got {x}"))
        }),
    }
}

fn get_str_or<'v>(
    v: &'v Value,
    path: &Path,
    field: &str,
    default: &'v str,
) -> Result<&'v str, EmbedError> {
    match v.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::String(s)) => Ok(s),
        Some(x) => Err(EmbedError::config(
            path,
            field,
            format!("expected a string, got {x}"),
        )),
    }
}

/// A `"a|b"` string or a list of strings, lower-cased and trimmed (empty entries dropped).
fn get_list(v: &Value, path: &Path, field: &str) -> Result<Vec<String>, EmbedError> {
    let bad = |x: &Value| {
        EmbedError::config(
            path,
            field,
            format!("expected a list of strings or a `|`-separated string, got {x}"),
        )
    };
    let items: Vec<String> = match v.get(field) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => s.split('|').map(str::to_string).collect(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| x.as_str().map(str::to_string).ok_or_else(|| bad(x)))
            .collect::<Result<_, _>>()?,
        Some(x) => return Err(bad(x)),
    };
    Ok(items
        .into_iter()
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect())
}

fn positive(x: i64) -> Option<usize> {
    usize::try_from(x).ok().filter(|&x| x > 0)
}

/// Reads the DeBERTa-v2 fields of `config.json` (already parsed as `v`, read from `path`).
pub(crate) fn parse_config(
    v: &Value,
    path: &Path,
    hidden_size: usize,
    num_heads: usize,
    max_position_embeddings: usize,
) -> Result<DebertaV2Config, EmbedError> {
    let embedding_size = positive(get_int_or(v, path, "embedding_size", hidden_size as i64)?)
        .ok_or_else(|| EmbedError::config(path, "embedding_size", "must be at least 1"))?;
    let type_vocab_size = usize::try_from(get_int_or(v, path, "type_vocab_size", 0)?)
        .map_err(|_| EmbedError::config(path, "type_vocab_size", "must not be negative"))?;
    let mut c2p = false;
    let mut p2c = false;
    for t in get_list(v, path, "pos_att_type")? {
        match t.as_str() {
            "c2p" => c2p = true,
            "p2c" => p2c = true,
            other => {
                return Err(EmbedError::config(
                    path,
                    "pos_att_type",
                    format!("`{other}` is not supported (c2p, p2c)"),
                ))
            }
        }
    }
    let relative_attention = get_bool_or(v, path, "relative_attention", false)?;
    let position_buckets = positive(get_int_or(v, path, "position_buckets", -1)?);
    let max_relative_positions = positive(get_int_or(v, path, "max_relative_positions", -1)?)
        .unwrap_or(max_position_embeddings);
    if relative_attention {
        if let Some(b) = position_buckets {
            // The log buckets divide by `b / 2` and by `ln((max_relative_positions - 1) / (b / 2))`.
            if b < 2 {
                return Err(EmbedError::config(
                    path,
                    "position_buckets",
                    format!("{b} is too small (at least 2, or -1 for none)"),
                ));
            }
            if max_relative_positions <= b / 2 + 1 {
                return Err(EmbedError::config(
                    path,
                    "max_relative_positions",
                    format!(
                        "{max_relative_positions} must exceed position_buckets / 2 + 1 = {} for log buckets",
                        b / 2 + 1
                    ),
                ));
            }
        }
    }
    let norm_rel_ebd = {
        let mut on = false;
        for t in get_str_or(v, path, "norm_rel_ebd", "none")?.split('|') {
            match t.trim().to_ascii_lowercase().as_str() {
                "layer_norm" => on = true,
                "none" | "" => {}
                other => {
                    return Err(EmbedError::config(
                        path,
                        "norm_rel_ebd",
                        format!("`{other}` is not supported (layer_norm, none)"),
                    ))
                }
            }
        }
        on
    };
    let conv = match get_int_or(v, path, "conv_kernel_size", 0)? {
        k if k <= 0 => None,
        k if k % 2 == 0 => {
            return Err(EmbedError::config(
                path,
                "conv_kernel_size",
                format!("{k}: only odd kernel sizes keep the sequence length"),
            ))
        }
        k => {
            let groups = get_int_or(v, path, "conv_groups", 1)?;
            if groups != 1 {
                return Err(EmbedError::config(
                    path,
                    "conv_groups",
                    format!("{groups} groups are not supported (only 1)"),
                ));
            }
            Some(ConvConfig {
                kernel: k as usize,
                act: Act::parse(get_str_or(v, path, "conv_act", "tanh")?, path, "conv_act")?,
            })
        }
    };
    let head_dim = hidden_size / num_heads;
    let attention_head_size = get_int_or(v, path, "attention_head_size", head_dim as i64)?;
    if attention_head_size != head_dim as i64 {
        return Err(EmbedError::config(
            path,
            "attention_head_size",
            format!(
                "{attention_head_size} is not supported (only hidden_size / num_attention_heads = {head_dim})"
            ),
        ));
    }
    let pooler_hidden_size = get_int_or(v, path, "pooler_hidden_size", hidden_size as i64)?;
    if pooler_hidden_size != hidden_size as i64 {
        return Err(EmbedError::config(
            path,
            "pooler_hidden_size",
            format!("{pooler_hidden_size} is not supported (only hidden_size = {hidden_size})"),
        ));
    }
    Ok(DebertaV2Config {
        embedding_size,
        position_biased_input: get_bool_or(v, path, "position_biased_input", true)?,
        type_vocab_size,
        relative_attention,
        c2p,
        p2c,
        position_buckets,
        max_relative_positions,
        share_att_key: get_bool_or(v, path, "share_att_key", false)?,
        norm_rel_ebd,
        conv,
        pooler_act: Act::parse(
            get_str_or(v, path, "pooler_hidden_act", "gelu")?,
            path,
            "pooler_hidden_act",
        )?,
    })
}

/// transformers' `make_log_bucket_position` for one relative distance `r`: `r` itself when
/// `|r| <= mid` (`mid = buckets / 2`), else `sign(r) (mid + ceil(ln(|r| / mid) /
/// ln((max_position - 1) / mid) (mid - 1)))`, computed in f32 as PyTorch does.
pub(crate) fn log_bucket(r: i64, buckets: usize, max_position: usize) -> i64 {
    let mid = (buckets / 2) as i64;
    let a = r.abs();
    if a <= mid {
        return r;
    }
    let midf = mid as f32;
    // transformers builds `(max_position - 1) / mid` as a Python float, then an f32 tensor.
    let top = ((max_position as f64 - 1.0) / mid as f64) as f32;
    let log_pos = ((a as f32 / midf).ln() / top.ln() * (mid - 1) as f32).ceil() + midf;
    r.signum() * log_pos as i64
}

/// `δ(r)` for `r` in `-(n-1)..=(n-1)`, at index `r + n - 1`: the row of the relative
/// embedding table a distance uses.
fn relative_index_table(opts: &DebertaV2Config, n: usize) -> Vec<u32> {
    let span = opts.att_span() as i64;
    let n = n as i64;
    (-(n - 1)..n)
        .map(|r| {
            let b = match opts.position_buckets {
                Some(buckets) => log_bucket(r, buckets, opts.max_relative_positions),
                None => r,
            };
            (b + span).clamp(0, 2 * span - 1) as u32
        })
        .collect()
}

/// Affine parameters of a layer norm.
struct Ln {
    w: Vec<f32>,
    b: Vec<f32>,
}

impl Ln {
    fn load(src: &WeightSource<'_>, name: &str, h: usize) -> Result<Ln, EmbedError> {
        Ok(Ln {
            w: src.tensor(&format!("{name}.weight"), &[h])?,
            b: src.tensor(&format!("{name}.bias"), &[h])?,
        })
    }

    fn apply(&self, x: &mut [f32], eps: f32) {
        kernels::layer_norm(x, &self.w, &self.b, eps);
    }
}

struct Layer {
    /// Query, key and value projections fused: `h -> 3h`.
    qkv: Dense,
    /// The relative embeddings through the key projection, `2 span x h` (for c2p).
    pos_key: Vec<f32>,
    /// The relative embeddings through the query projection, `2 span x h` (for p2c).
    pos_query: Vec<f32>,
    attn_out: Dense,
    ln1: Ln,
    ff_in: Dense,
    ff_out: Dense,
    ln2: Ln,
}

/// The ConvLayer: a 1-D convolution over each sequence's embeddings, added to the first
/// layer's output.
struct Conv {
    /// The `kernel` taps side by side, `h -> kernel * h`, no bias.
    taps: Dense,
    bias: Vec<f32>,
    kernel: usize,
    act: Act,
    ln: Ln,
}

/// A loaded DeBERTa-v2 encoder.
pub(crate) struct DebertaV2 {
    pub cfg: EncoderConfig,
    opts: DebertaV2Config,
    /// `vocab x embedding_size`.
    word: Vec<f32>,
    /// `max_position_embeddings x embedding_size`, with `position_biased_input`.
    pos: Option<Vec<f32>>,
    /// `type_vocab_size x embedding_size`, when `type_vocab_size > 0`.
    token_type: Option<Vec<f32>>,
    /// `embedding_size -> hidden_size`, when they differ.
    embed_proj: Option<Dense>,
    emb_ln: Ln,
    layers: Vec<Layer>,
    conv: Option<Conv>,
    /// See [`relative_index_table`], for sequences up to `cfg.max_positions()` tokens.
    rel_index: Vec<u32>,
}

impl DebertaV2 {
    /// Loads the encoder weights described by `cfg` (which must carry DeBERTa options) from
    /// `st`.
    pub(crate) fn load(cfg: EncoderConfig, st: &SafeTensors) -> Result<DebertaV2, EmbedError> {
        let Some(opts) = cfg.deberta.clone() else {
            return Err(EmbedError::config(
                st.path(),
                "model_type",
                format!("`{}` is not deberta-v2", cfg.model_type),
            ));
        };
        let prefix = PREFIXES
            .iter()
            .find(|p| st.contains(&format!("{p}embeddings.word_embeddings.weight")))
            .ok_or_else(|| EmbedError::MissingTensor {
                path: st.path().to_path_buf(),
                name: "embeddings.word_embeddings.weight".into(),
                prefixes: PREFIXES.iter().map(|p| p.to_string()).collect(),
            })?;
        let src = WeightSource::root(st);
        let h = cfg.hidden_size;
        let e = opts.embedding_size;
        let word = src.tensor(
            &format!("{prefix}embeddings.word_embeddings.weight"),
            &[cfg.vocab_size, e],
        )?;
        let pos = if opts.position_biased_input {
            Some(src.tensor(
                &format!("{prefix}embeddings.position_embeddings.weight"),
                &[cfg.max_position_embeddings, e],
            )?)
        } else {
            None
        };
        let token_type = if opts.type_vocab_size > 0 {
            Some(src.tensor(
                &format!("{prefix}embeddings.token_type_embeddings.weight"),
                &[opts.type_vocab_size, e],
            )?)
        } else {
            None
        };
        let embed_proj = if e != h {
            let w = src.tensor(&format!("{prefix}embeddings.embed_proj.weight"), &[h, e])?;
            Some(Dense::from_pytorch(&w, vec![0.0; h], e, h))
        } else {
            None
        };
        let emb_ln = Ln::load(&src, &format!("{prefix}embeddings.LayerNorm"), h)?;

        // The relative embeddings, layer-normed once (they do not depend on the input).
        let span = opts.att_span();
        let rel = if opts.relative() {
            let mut rel = src.tensor(
                &format!("{prefix}encoder.rel_embeddings.weight"),
                &[2 * span, h],
            )?;
            if opts.norm_rel_ebd {
                Ln::load(&src, &format!("{prefix}encoder.LayerNorm"), h)?
                    .apply(&mut rel, cfg.layer_norm_eps);
            }
            rel
        } else {
            Vec::new()
        };
        let project = |d: &Dense| {
            let mut out = vec![0f32; 2 * span * h];
            d.apply(&rel, 2 * span, &mut out);
            out
        };

        let mut layers = Vec::with_capacity(cfg.num_layers);
        for i in 0..cfg.num_layers {
            let l = format!("{prefix}encoder.layer.{i}.");
            let a = format!("{l}attention.self.");
            let raw = |name: &str| -> Result<(Vec<f32>, Vec<f32>), EmbedError> {
                Ok((
                    src.tensor(&format!("{a}{name}.weight"), &[h, h])?,
                    src.tensor(&format!("{a}{name}.bias"), &[h])?,
                ))
            };
            let (qw, qb) = raw("query_proj")?;
            let (kw, kb) = raw("key_proj")?;
            let (vw, vb) = raw("value_proj")?;
            let (mut pos_key, mut pos_query) = (Vec::new(), Vec::new());
            if opts.relative() {
                let (pk, pq) = if opts.share_att_key {
                    ("key_proj", "query_proj")
                } else {
                    ("pos_key_proj", "pos_query_proj")
                };
                if opts.c2p {
                    let (w, b) = raw(pk)?;
                    pos_key = project(&Dense::from_pytorch(&w, b, h, h));
                }
                if opts.p2c {
                    let (w, b) = raw(pq)?;
                    pos_query = project(&Dense::from_pytorch(&w, b, h, h));
                }
            }
            let qkv_w: Vec<f32> = [qw, kw, vw].concat();
            let qkv_b: Vec<f32> = [qb, kb, vb].concat();
            layers.push(Layer {
                qkv: Dense::from_pytorch(&qkv_w, qkv_b, h, 3 * h),
                pos_key,
                pos_query,
                attn_out: src.dense(&format!("{l}attention.output.dense"), h, h)?,
                ln1: Ln::load(&src, &format!("{l}attention.output.LayerNorm"), h)?,
                ff_in: src.dense(&format!("{l}intermediate.dense"), h, cfg.intermediate_size)?,
                ff_out: src.dense(&format!("{l}output.dense"), cfg.intermediate_size, h)?,
                ln2: Ln::load(&src, &format!("{l}output.LayerNorm"), h)?,
            });
        }

        let conv = match opts.conv {
            Some(c) if cfg.num_layers > 0 => {
                let k = c.kernel;
                // PyTorch Conv1d weight: [out, in, kernel]; tap t is the [out, in] slice.
                let w = src.tensor(&format!("{prefix}encoder.conv.conv.weight"), &[h, h, k])?;
                let mut taps = vec![0f32; k * h * h];
                for o in 0..h {
                    for i in 0..h {
                        for t in 0..k {
                            taps[(t * h + o) * h + i] = w[(o * h + i) * k + t];
                        }
                    }
                }
                Some(Conv {
                    taps: Dense::from_pytorch(&taps, vec![0.0; k * h], h, k * h),
                    bias: src.tensor(&format!("{prefix}encoder.conv.conv.bias"), &[h])?,
                    kernel: k,
                    act: c.act,
                    ln: Ln::load(&src, &format!("{prefix}encoder.conv.LayerNorm"), h)?,
                })
            }
            _ => None,
        };
        let rel_index = if opts.relative() {
            relative_index_table(&opts, cfg.max_positions())
        } else {
            Vec::new()
        };
        Ok(DebertaV2 {
            cfg,
            opts,
            word,
            pos,
            token_type,
            embed_proj,
            emb_ln,
            layers,
            conv,
            rel_index,
        })
    }

    /// Runs the encoder over `seqs` (each already truncated to the position limit).
    pub(crate) fn forward(&self, seqs: &[Seq<'_>], tokenizer: &Path) -> Result<Hidden, EmbedError> {
        let cfg = &self.cfg;
        let h = cfg.hidden_size;
        let e = self.opts.embedding_size;
        let offsets = crate::encoder::packed_offsets(seqs, cfg.max_positions())?;
        let t = *offsets.last().unwrap_or(&0);

        // Embeddings.
        let mut emb = vec![0f32; t * e];
        for (si, s) in seqs.iter().enumerate() {
            for (j, (&id, &tt)) in s.ids.iter().zip(s.type_ids).enumerate() {
                let id = crate::encoder::token_row(id, cfg.vocab_size, tokenizer)?;
                let row = &mut emb[(offsets[si] + j) * e..(offsets[si] + j + 1) * e];
                row.copy_from_slice(&self.word[id * e..(id + 1) * e]);
                if let Some(pos) = &self.pos {
                    for (r, p) in row.iter_mut().zip(&pos[j * e..(j + 1) * e]) {
                        *r += p;
                    }
                }
                if let Some(tte) = &self.token_type {
                    let tt = (tt as usize).min(self.opts.type_vocab_size - 1);
                    for (r, p) in row.iter_mut().zip(&tte[tt * e..(tt + 1) * e]) {
                        *r += p;
                    }
                }
            }
        }
        let mut x = match &self.embed_proj {
            Some(proj) => {
                let mut x = vec![0f32; t * h];
                proj.apply(&emb, t, &mut x);
                x
            }
            None => emb,
        };
        self.emb_ln.apply(&mut x, cfg.layer_norm_eps);
        let embeddings = self.conv.as_ref().map(|_| x.clone());

        let mut qkv = vec![0f32; t * 3 * h];
        let mut ctx = vec![0f32; t * h];
        let mut ctx_heads = vec![0f32; t * h];
        let mut inter = vec![0f32; t * cfg.intermediate_size];
        for (li, layer) in self.layers.iter().enumerate() {
            layer.qkv.apply(&x, t, &mut qkv);
            self.attention(layer, &qkv, &offsets, &mut ctx_heads, &mut ctx);
            layer.attn_out.apply_add(&ctx, t, &mut x);
            layer.ln1.apply(&mut x, cfg.layer_norm_eps);
            layer.ff_in.apply(&x, t, &mut inter);
            cfg.activation.apply(&mut inter);
            layer.ff_out.apply_add(&inter, t, &mut x);
            layer.ln2.apply(&mut x, cfg.layer_norm_eps);
            if li == 0 {
                if let (Some(conv), Some(emb)) = (&self.conv, &embeddings) {
                    conv.apply(emb, &offsets, h, &mut x, cfg.layer_norm_eps);
                }
            }
        }
        Ok(Hidden {
            data: x,
            offsets,
            hidden: h,
        })
    }

    /// Disentangled multi-head self-attention of each sequence over its own tokens.
    ///
    /// `qkv` is `T x 3h` (queries, keys, values side by side); the result goes to `ctx`
    /// (`T x h`), via `heads` (`heads x T x d`, one contiguous block per (head, sequence)).
    fn attention(
        &self,
        layer: &Layer,
        qkv: &[f32],
        offsets: &[usize],
        heads: &mut [f32],
        ctx: &mut [f32],
    ) {
        let h = self.cfg.hidden_size;
        let nh = self.cfg.num_heads;
        let d = h / nh;
        let t = *offsets.last().unwrap_or(&0);
        let scale = 1.0 / ((d * self.opts.scale_factor()) as f32).sqrt();
        let relative = self.opts.relative();
        let (c2p, p2c) = (relative && self.opts.c2p, relative && self.opts.p2c);
        // rel_index[r + max - 1] = δ(r).
        let max = self.cfg.max_positions();

        let tasks = crate::encoder::head_tasks(heads, offsets, d);
        tasks.into_par_iter().for_each_init(
            || (Vec::new(), Vec::new(), Vec::new()),
            |(scores, c2p_att, p2c_att), (hi, s, out)| {
                let o = offsets[s];
                let len = offsets[s + 1] - o;
                if len == 0 {
                    return;
                }
                scores.clear();
                scores.resize(len * len, 0.0);
                let base = o * 3 * h + hi * d;
                let q = Mat {
                    data: &qkv[base..],
                    rs: 3 * h,
                    cs: 1,
                };
                let k = Mat {
                    data: &qkv[base + h..],
                    rs: 3 * h,
                    cs: 1,
                };
                // scores = q · kᵀ * scale
                kernels::gemm(
                    len,
                    len,
                    d,
                    q,
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
                if c2p || p2c {
                    // δ(i - j) for i, j < len: rows lo..=hi of the relative table are used.
                    let idx = &self.rel_index[max - len..max + len - 1];
                    let lo = *idx.iter().min().unwrap_or(&0) as usize;
                    let w = *idx.iter().max().unwrap_or(&0) as usize + 1 - lo;
                    if c2p {
                        // c2p[i][r] = q_i · pos_key[lo + r] * scale
                        c2p_att.clear();
                        c2p_att.resize(len * w, 0.0);
                        kernels::gemm(
                            len,
                            w,
                            d,
                            q,
                            Mat {
                                data: &layer.pos_key[lo * h + hi * d..],
                                rs: 1,
                                cs: h,
                            },
                            c2p_att,
                            w,
                            false,
                            scale,
                            Threads::One,
                        );
                    }
                    if p2c {
                        // p2c[j][r] = k_j · pos_query[lo + r] * scale
                        p2c_att.clear();
                        p2c_att.resize(len * w, 0.0);
                        kernels::gemm(
                            len,
                            w,
                            d,
                            k,
                            Mat {
                                data: &layer.pos_query[lo * h + hi * d..],
                                rs: 1,
                                cs: h,
                            },
                            p2c_att,
                            w,
                            false,
                            scale,
                            Threads::One,
                        );
                    }
                    for i in 0..len {
                        let row = &mut scores[i * len..(i + 1) * len];
                        for (j, sc) in row.iter_mut().enumerate() {
                            // idx[(i - j) + len - 1] = δ(i - j)
                            let r = idx[i + len - 1 - j] as usize - lo;
                            let mut rel = 0f32;
                            if c2p {
                                rel += c2p_att[i * w + r];
                            }
                            if p2c {
                                rel += p2c_att[j * w + r];
                            }
                            *sc += rel;
                        }
                    }
                }
                crate::encoder::softmax_times_values(
                    scores,
                    len,
                    &qkv[base + 2 * h..],
                    3 * h,
                    d,
                    out,
                );
            },
        );
        crate::encoder::merge_heads(heads, ctx, nh, t, d);
    }
}

impl Conv {
    /// `x = LayerNorm(x + act(conv1d(emb)))`, the convolution zero-padded at each sequence's
    /// ends (`emb` and `x` are `T x h`, packed by `offsets`).
    fn apply(&self, emb: &[f32], offsets: &[usize], h: usize, x: &mut [f32], eps: f32) {
        let t = *offsets.last().unwrap_or(&0);
        let k = self.kernel;
        let pad = (k - 1) / 2;
        // y[row][tap * h + c] = (W_tap · emb_row)[c]
        let mut y = vec![0f32; t * k * h];
        self.taps.apply(emb, t, &mut y);
        let mut out = vec![0f32; t * h];
        for s in 0..offsets.len() - 1 {
            let (o, len) = (offsets[s], offsets[s + 1] - offsets[s]);
            for p in 0..len {
                let dst = &mut out[(o + p) * h..(o + p + 1) * h];
                dst.copy_from_slice(&self.bias);
                for tap in 0..k {
                    // Input position p + tap - pad, skipped outside the sequence.
                    let Some(src) = (p + tap).checked_sub(pad).filter(|&q| q < len) else {
                        continue;
                    };
                    let yrow = &y[(o + src) * k * h + tap * h..(o + src) * k * h + (tap + 1) * h];
                    for (d, v) in dst.iter_mut().zip(yrow) {
                        *d += v;
                    }
                }
            }
        }
        self.act.apply(&mut out);
        for (a, b) in x.iter_mut().zip(&out) {
            *a += b;
        }
        self.ln.apply(x, eps);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bucket in f64, to see how far each f32 result is from a rounding boundary.
    fn bucket_f64(r: i64, buckets: usize, max_position: usize) -> (i64, f64) {
        let mid = (buckets / 2) as i64;
        if r.abs() <= mid {
            return (r, f64::INFINITY);
        }
        let v = (r.abs() as f64 / mid as f64).ln()
            / ((max_position as f64 - 1.0) / mid as f64).ln()
            * (mid - 1) as f64;
        let margin = (v - v.round()).abs();
        (r.signum() * (v.ceil() as i64 + mid), margin)
    }

    #[test]
    fn log_buckets_of_released_models_are_far_from_rounding_boundaries() {
        // DeBERTa-v3 and v2-xlarge: position_buckets 256, max_relative_positions 512; and the
        // tiny test models. For every distance a 512-token input (or the tiny max) can have,
        // the f32 result equals the f64 one and the f64 value is not within 1e-4 of an
        // integer, so any correctly rounded f32 evaluation (PyTorch's included) agrees.
        for (buckets, max_pos, n) in [(256, 512, 512), (8, 64, 64), (8, 32, 64)] {
            for r in -(n as i64 - 1)..n as i64 {
                let (want, margin) = bucket_f64(r, buckets, max_pos);
                assert_eq!(log_bucket(r, buckets, max_pos), want, "r = {r}");
                assert!(
                    margin > 1e-4 || margin == 0.0 && r.abs() == max_pos as i64 - 1,
                    "r = {r}: {margin}"
                );
            }
        }
        // Spot values: exact inside ±mid, log-spaced and saturating beyond.
        assert_eq!(log_bucket(-128, 256, 512), -128);
        assert_eq!(log_bucket(129, 256, 512), 129);
        assert_eq!(log_bucket(511, 256, 512), 255);
        assert_eq!(log_bucket(-511, 256, 512), -255);
        assert_eq!(log_bucket(5, 8, 64), 5);
        assert_eq!(log_bucket(20, 8, 64), 6);
    }
}
