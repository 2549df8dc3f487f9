//! DeBERTa-v2 / v3 cross-encoders on tiny random-weight models the tests write themselves,
//! checked against (1) a naive f64 forward pass written below straight from transformers'
//! `modeling_deberta_v2.py` semantics (plain loops, nothing shared with the crate), and (2)
//! logits computed by transformers + PyTorch on the same folders
//! (`tests/data/deberta_tiny_reference.json`, made by `scripts/reference_deberta.py`).
// A test may say what it skips and why (a missing server, model or privilege), or
// show figures it measured.
#![allow(clippy::print_stderr)]

use crate::common;
use std::path::Path;

use common::{ids_of, safetensors_bytes, tokenizer_json, vocab, Arch, Rng, Spec, Weights};
use serde_json::{json, Value};
use veredicto_embed::{CrossEncoder, CrossEncoderOptions, EmbedError, LocalEmbedder, Reranker};

const H: usize = 32;
const HEADS: usize = 4;
const LAYERS: usize = 2;
const INTER: usize = 64;
const MAX_POS: usize = 64;
const EPS: f64 = 1e-7;

/// One tiny DeBERTa-v2 configuration.
#[derive(Clone, Debug)]
struct Variant {
    name: &'static str,
    embedding_size: usize,
    position_biased_input: bool,
    type_vocab_size: usize,
    relative_attention: bool,
    pos_att_type: &'static [&'static str],
    /// Write `pos_att_type` as the legacy `"p2c|c2p"` string instead of a list.
    pos_att_as_string: bool,
    position_buckets: i64,
    max_relative_positions: i64,
    share_att_key: bool,
    norm_rel_ebd: &'static str,
    conv_kernel_size: usize,
    /// `None`: field absent (default `tanh`).
    conv_act: Option<&'static str>,
    hidden_act: &'static str,
    /// `None`: field absent (default `gelu`).
    pooler_hidden_act: Option<&'static str>,
    num_labels: usize,
    seed: u64,
}

const V3: Variant = Variant {
    name: "v3",
    embedding_size: H,
    position_biased_input: false,
    type_vocab_size: 0,
    relative_attention: true,
    pos_att_type: &["p2c", "c2p"],
    pos_att_as_string: true,
    position_buckets: 8,
    max_relative_positions: -1,
    share_att_key: true,
    norm_rel_ebd: "layer_norm",
    conv_kernel_size: 0,
    conv_act: None,
    hidden_act: "gelu",
    pooler_hidden_act: None,
    num_labels: 3,
    seed: 7,
};

/// Every variant the tests run: DeBERTa-v3 style; separate position projections with
/// `embed_proj`, absolute positions, token types and clamped (unbucketed) distances;
/// deberta-v2-xlarge style ConvLayer with c2p only; p2c only with the default conv
/// activation; no relative attention at all (the scale still counts `pos_att_type`).
fn variants() -> Vec<Variant> {
    vec![
        V3,
        Variant {
            name: "separate-keys",
            embedding_size: 16,
            position_biased_input: true,
            type_vocab_size: 2,
            pos_att_type: &["c2p", "p2c"],
            pos_att_as_string: false,
            position_buckets: -1,
            max_relative_positions: 8,
            share_att_key: false,
            norm_rel_ebd: "none",
            hidden_act: "gelu_new",
            pooler_hidden_act: Some("tanh"),
            seed: 11,
            ..V3
        },
        Variant {
            name: "conv-c2p",
            pos_att_type: &["c2p"],
            pos_att_as_string: false,
            max_relative_positions: 32,
            share_att_key: false,
            conv_kernel_size: 3,
            conv_act: Some("gelu"),
            num_labels: 1,
            seed: 13,
            ..V3
        },
        Variant {
            name: "p2c-conv-tanh",
            pos_att_type: &["p2c"],
            pos_att_as_string: false,
            norm_rel_ebd: "none",
            conv_kernel_size: 3,
            pooler_hidden_act: Some("gelu"),
            num_labels: 2,
            seed: 17,
            ..V3
        },
        Variant {
            name: "absolute-only",
            position_biased_input: true,
            relative_attention: false,
            num_labels: 2,
            seed: 19,
            ..V3
        },
    ]
}

/// (premise, hypothesis) pairs from the tiny vocabulary: up to 46 tokens, so relative
/// distances reach 45, far beyond the bucket middle (4) and the clamp (8 / 32).
const PAIRS: &[(&str, &str)] = &[
    (
        "the quick brown fox jumps over the lazy dog.",
        "the lazy dog",
    ),
    (
        "query: the quick brown fox jumps over the lazy dog, hello world, the contract de trabajo.",
        "passage: the rack bolt jumps over the shelf load, a b c, el trabajo.",
    ),
    ("hello world", "hello"),
    (
        "a b c",
        "the quick brown fox jumps over the lazy dog, the rack bolt shelf load.",
    ),
    (
        "la contract de trabajo, the rack bolt, the shelf load.",
        "the shelf load?",
    ),
    ("the quick fox", ""),
];

fn bert_spec() -> Spec {
    Spec {
        arch: Arch::Bert,
        ..Spec::default()
    }
}

fn span(v: &Variant) -> usize {
    if v.position_buckets > 0 {
        v.position_buckets as usize
    } else {
        max_rel(v)
    }
}

fn max_rel(v: &Variant) -> usize {
    if v.max_relative_positions < 1 {
        MAX_POS
    } else {
        v.max_relative_positions as usize
    }
}

fn make_weights(v: &Variant) -> Weights {
    let mut rng = Rng::new(v.seed);
    let nv = vocab(&bert_spec()).len();
    let e = v.embedding_size;
    let mut w = Weights::new();
    let mut put = |name: String, shape: Vec<usize>, scale: f32, center: f32| {
        let n: usize = shape.iter().product();
        let vals = (0..n).map(|_| center + rng.uniform(scale)).collect();
        w.insert(name, (shape, vals));
    };
    let p = "deberta.";
    put(
        format!("{p}embeddings.word_embeddings.weight"),
        vec![nv, e],
        1.0,
        0.0,
    );
    if v.position_biased_input {
        put(
            format!("{p}embeddings.position_embeddings.weight"),
            vec![MAX_POS, e],
            0.5,
            0.0,
        );
    }
    if v.type_vocab_size > 0 {
        put(
            format!("{p}embeddings.token_type_embeddings.weight"),
            vec![v.type_vocab_size, e],
            0.5,
            0.0,
        );
    }
    if e != H {
        put(
            format!("{p}embeddings.embed_proj.weight"),
            vec![H, e],
            0.4,
            0.0,
        );
    }
    put(format!("{p}embeddings.LayerNorm.weight"), vec![H], 0.2, 1.0);
    put(format!("{p}embeddings.LayerNorm.bias"), vec![H], 0.2, 0.0);
    if v.relative_attention {
        put(
            format!("{p}encoder.rel_embeddings.weight"),
            vec![2 * span(v), H],
            1.0,
            0.0,
        );
        if v.norm_rel_ebd == "layer_norm" {
            put(format!("{p}encoder.LayerNorm.weight"), vec![H], 0.2, 1.0);
            put(format!("{p}encoder.LayerNorm.bias"), vec![H], 0.2, 0.0);
        }
    }
    for l in 0..LAYERS {
        let lp = format!("{p}encoder.layer.{l}.");
        let mut projections = vec!["query_proj", "key_proj", "value_proj"];
        if v.relative_attention && !v.share_att_key {
            if v.pos_att_type.contains(&"c2p") {
                projections.push("pos_key_proj");
            }
            if v.pos_att_type.contains(&"p2c") {
                projections.push("pos_query_proj");
            }
        }
        for m in projections {
            put(
                format!("{lp}attention.self.{m}.weight"),
                vec![H, H],
                0.4,
                0.0,
            );
            put(format!("{lp}attention.self.{m}.bias"), vec![H], 0.1, 0.0);
        }
        put(
            format!("{lp}attention.output.dense.weight"),
            vec![H, H],
            0.3,
            0.0,
        );
        put(
            format!("{lp}attention.output.dense.bias"),
            vec![H],
            0.1,
            0.0,
        );
        put(
            format!("{lp}attention.output.LayerNorm.weight"),
            vec![H],
            0.2,
            1.0,
        );
        put(
            format!("{lp}attention.output.LayerNorm.bias"),
            vec![H],
            0.2,
            0.0,
        );
        put(
            format!("{lp}intermediate.dense.weight"),
            vec![INTER, H],
            0.3,
            0.0,
        );
        put(
            format!("{lp}intermediate.dense.bias"),
            vec![INTER],
            0.1,
            0.0,
        );
        put(format!("{lp}output.dense.weight"), vec![H, INTER], 0.3, 0.0);
        put(format!("{lp}output.dense.bias"), vec![H], 0.1, 0.0);
        put(format!("{lp}output.LayerNorm.weight"), vec![H], 0.2, 1.0);
        put(format!("{lp}output.LayerNorm.bias"), vec![H], 0.2, 0.0);
    }
    if v.conv_kernel_size > 0 {
        put(
            format!("{p}encoder.conv.conv.weight"),
            vec![H, H, v.conv_kernel_size],
            0.3,
            0.0,
        );
        put(format!("{p}encoder.conv.conv.bias"), vec![H], 0.1, 0.0);
        put(
            format!("{p}encoder.conv.LayerNorm.weight"),
            vec![H],
            0.2,
            1.0,
        );
        put(format!("{p}encoder.conv.LayerNorm.bias"), vec![H], 0.2, 0.0);
    }
    put("pooler.dense.weight".into(), vec![H, H], 0.4, 0.0);
    put("pooler.dense.bias".into(), vec![H], 0.1, 0.0);
    put("classifier.weight".into(), vec![v.num_labels, H], 0.5, 0.0);
    put("classifier.bias".into(), vec![v.num_labels], 0.1, 0.0);
    w
}

fn config_json(v: &Variant) -> Value {
    let mut c = json!({
        "architectures": ["DebertaV2ForSequenceClassification"],
        "model_type": "deberta-v2",
        "vocab_size": vocab(&bert_spec()).len(),
        "hidden_size": H,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "intermediate_size": INTER,
        "hidden_act": v.hidden_act,
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": MAX_POS,
        "type_vocab_size": v.type_vocab_size,
        "initializer_range": 0.02,
        "layer_norm_eps": 1e-7,
        "relative_attention": v.relative_attention,
        "max_relative_positions": v.max_relative_positions,
        "position_buckets": v.position_buckets,
        "norm_rel_ebd": v.norm_rel_ebd,
        "share_att_key": v.share_att_key,
        "position_biased_input": v.position_biased_input,
        "pad_token_id": 0,
        "pooler_dropout": 0,
        "pooler_hidden_size": H,
    });
    let o = c.as_object_mut().unwrap();
    o.insert(
        "pos_att_type".into(),
        if v.pos_att_as_string {
            json!(v.pos_att_type.join("|"))
        } else {
            json!(v.pos_att_type)
        },
    );
    if v.embedding_size != H {
        o.insert("embedding_size".into(), json!(v.embedding_size));
    }
    if v.conv_kernel_size > 0 {
        o.insert("conv_kernel_size".into(), json!(v.conv_kernel_size));
    }
    if let Some(a) = v.conv_act {
        o.insert("conv_act".into(), json!(a));
    }
    if let Some(a) = v.pooler_hidden_act {
        o.insert("pooler_hidden_act".into(), json!(a));
    }
    let labels: serde_json::Map<String, Value> = if v.num_labels == 3 {
        [(0, "contradiction"), (1, "entailment"), (2, "neutral")]
            .iter()
            .map(|(i, l)| (i.to_string(), json!(l)))
            .collect()
    } else {
        (0..v.num_labels)
            .map(|i| (i.to_string(), json!(format!("LABEL_{i}"))))
            .collect()
    };
    let label2id: serde_json::Map<String, Value> = labels
        .iter()
        .map(|(i, l)| {
            (
                l.as_str().unwrap().to_string(),
                json!(i.parse::<usize>().unwrap()),
            )
        })
        .collect();
    o.insert("id2label".into(), Value::Object(labels));
    o.insert("label2id".into(), Value::Object(label2id));
    c
}

/// Writes the model folder of `v` into `dir`; returns the weights.
fn write_model(dir: &Path, v: &Variant) -> Weights {
    std::fs::create_dir_all(dir).unwrap();
    let w = make_weights(v);
    let write_json = |name: &str, value: &Value| {
        std::fs::write(dir.join(name), serde_json::to_vec_pretty(value).unwrap()).unwrap();
    };
    write_json("config.json", &config_json(v));
    write_json("tokenizer.json", &tokenizer_json(&bert_spec()));
    std::fs::write(dir.join("model.safetensors"), safetensors_bytes(&w, false)).unwrap();
    w
}

/// Pair ids as the tiny WordPiece tokenizer gives them: `[CLS] a [SEP] b [SEP]`, type ids 0
/// up to the first `[SEP]`, 1 after.
fn pair_ids(premise: &str, hypothesis: &str) -> (Vec<u32>, Vec<u32>) {
    let spec = bert_spec();
    let a = ids_of(&spec, premise);
    let b = ids_of(&spec, hypothesis);
    let mut ids = a.clone();
    ids.extend_from_slice(&b[1..]);
    let mut types = vec![0u32; a.len()];
    types.extend(std::iter::repeat_n(1, b.len() - 1));
    (ids, types)
}

/// Loads the folder of `v` (two-label models score their first label: they have no
/// `entailment`).
fn load(dir: &Path, v: &Variant) -> CrossEncoder {
    let opts = CrossEncoderOptions {
        label: (v.num_labels == 2).then(|| "LABEL_0".to_string()),
        ..Default::default()
    };
    CrossEncoder::load_with(dir, &opts).unwrap_or_else(|e| panic!("{}: {e}", v.name))
}

// ---------------------------------------------------------------- naive f64 reference

fn get<'a>(w: &'a Weights, name: &str) -> &'a [f32] {
    &w.get(name).unwrap_or_else(|| panic!("no tensor {name}")).1
}

/// `W x + b` with PyTorch's `[out, in]` weight.
fn linear(x: &[f64], w: &[f32], b: Option<&[f32]>, out: usize) -> Vec<f64> {
    let inp = x.len();
    (0..out)
        .map(|o| {
            b.map_or(0.0, |b| b[o] as f64)
                + (0..inp).map(|i| x[i] * w[o * inp + i] as f64).sum::<f64>()
        })
        .collect()
}

fn lin(w: &Weights, name: &str, x: &[f64], out: usize) -> Vec<f64> {
    linear(
        x,
        get(w, &format!("{name}.weight")),
        Some(get(w, &format!("{name}.bias"))),
        out,
    )
}

fn layer_norm(w: &Weights, name: &str, x: &[f64]) -> Vec<f64> {
    let g = get(w, &format!("{name}.weight"));
    let b = get(w, &format!("{name}.bias"));
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    x.iter()
        .enumerate()
        .map(|(i, v)| (v - mean) / (var + EPS).sqrt() * g[i] as f64 + b[i] as f64)
        .collect()
}

/// `erf(x) = 2/√π · e^(-x²) · Σ 2ⁿ x^(2n+1) / (2n+1)!!`: every term positive, so no
/// cancellation (the alternating Taylor series loses digits beyond |x| ≈ 3).
fn erf(x: f64) -> f64 {
    if x.abs() > 8.0 {
        return x.signum();
    }
    let mut term = x;
    let mut sum = x;
    for n in 1..400 {
        term *= 2.0 * x * x / (2 * n + 1) as f64;
        sum += term;
    }
    sum * (-x * x).exp() * 2.0 / std::f64::consts::PI.sqrt()
}

fn act(name: &str, x: f64) -> f64 {
    match name {
        "gelu" => 0.5 * x * (1.0 + erf(x / 2f64.sqrt())),
        "gelu_new" => {
            0.5 * x
                * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3))).tanh())
        }
        "tanh" => x.tanh(),
        other => panic!("activation {other}"),
    }
}

/// transformers' `make_log_bucket_position` (in f64).
fn bucket(r: i64, buckets: usize, max_position: usize) -> i64 {
    let mid = (buckets / 2) as i64;
    let abs = if r < mid && r > -mid {
        mid - 1
    } else {
        r.abs()
    };
    if abs <= mid {
        return r;
    }
    let log_pos = ((abs as f64 / mid as f64).ln() / ((max_position as f64 - 1.0) / mid as f64).ln()
        * (mid - 1) as f64)
        .ceil() as i64
        + mid;
    r.signum() * log_pos
}

/// `build_relative_position`: query position `a` minus key position `b`, bucketed.
fn relative_pos(v: &Variant, a: usize, b: usize) -> i64 {
    let r = a as i64 - b as i64;
    if v.position_buckets > 0 {
        bucket(r, v.position_buckets as usize, max_rel(v))
    } else {
        r
    }
}

/// Logits of `DebertaV2ForSequenceClassification` on one sequence, f64, straight from the
/// formulas (no padding, so every mask is all ones).
fn naive_logits(w: &Weights, v: &Variant, ids: &[u32], types: &[u32]) -> Vec<f64> {
    let n = ids.len();
    let e = v.embedding_size;
    let d = H / HEADS;
    let p = "deberta.";
    // Embeddings.
    let word = get(w, &format!("{p}embeddings.word_embeddings.weight"));
    let emb: Vec<Vec<f64>> = (0..n)
        .map(|j| {
            let mut row: Vec<f64> = (0..e)
                .map(|c| word[ids[j] as usize * e + c] as f64)
                .collect();
            if v.position_biased_input {
                let pos = get(w, &format!("{p}embeddings.position_embeddings.weight"));
                for c in 0..e {
                    row[c] += pos[j * e + c] as f64;
                }
            }
            if v.type_vocab_size > 0 {
                let tt = get(w, &format!("{p}embeddings.token_type_embeddings.weight"));
                for c in 0..e {
                    row[c] += tt[types[j] as usize * e + c] as f64;
                }
            }
            if e != H {
                row = linear(
                    &row,
                    get(w, &format!("{p}embeddings.embed_proj.weight")),
                    None,
                    H,
                );
            }
            layer_norm(w, &format!("{p}embeddings.LayerNorm"), &row)
        })
        .collect();
    // Relative embeddings.
    let span = span(v);
    let rel: Vec<Vec<f64>> = if v.relative_attention {
        let t = get(w, &format!("{p}encoder.rel_embeddings.weight"));
        (0..2 * span)
            .map(|r| {
                let row: Vec<f64> = t[r * H..(r + 1) * H].iter().map(|&x| x as f64).collect();
                if v.norm_rel_ebd == "layer_norm" {
                    layer_norm(w, &format!("{p}encoder.LayerNorm"), &row)
                } else {
                    row
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    let has = |t: &str| v.pos_att_type.contains(&t);
    let scale_factor = 1 + usize::from(has("c2p")) + usize::from(has("p2c"));
    // transformers' `scaled_size_sqrt` takes this square root in float32, also in a float64
    // model (a relative 4e-8 for sqrt(24)); the same here, so that the float64 logits of
    // transformers and of this reference agree to 1e-12.
    let scale = ((d * scale_factor) as f32).sqrt() as f64;
    let clamp = |x: i64| x.clamp(0, 2 * span as i64 - 1) as usize;

    let mut x = emb.clone();
    for l in 0..LAYERS {
        let lp = format!("{p}encoder.layer.{l}.");
        let a = format!("{lp}attention.self.");
        let proj = |name: &str, rows: &[Vec<f64>]| -> Vec<Vec<f64>> {
            rows.iter()
                .map(|r| lin(w, &format!("{a}{name}"), r, H))
                .collect()
        };
        let q = proj("query_proj", &x);
        let k = proj("key_proj", &x);
        let val = proj("value_proj", &x);
        let (pk_name, pq_name) = if v.share_att_key {
            ("key_proj", "query_proj")
        } else {
            ("pos_key_proj", "pos_query_proj")
        };
        let pos_key = if v.relative_attention && has("c2p") {
            proj(pk_name, &rel)
        } else {
            Vec::new()
        };
        let pos_query = if v.relative_attention && has("p2c") {
            proj(pq_name, &rel)
        } else {
            Vec::new()
        };
        let dot = |u: &[f64], w: &[f64], hd: usize| -> f64 {
            (0..d).map(|c| u[hd * d + c] * w[hd * d + c]).sum()
        };
        let mut ctx = vec![vec![0f64; H]; n];
        for hd in 0..HEADS {
            for i in 0..n {
                let s: Vec<f64> = (0..n)
                    .map(|j| {
                        let mut s = dot(&q[i], &k[j], hd) / scale;
                        if v.relative_attention && has("c2p") {
                            // c2p_pos[i][j] = clamp(relative_pos[i][j] + span)
                            let c2p = clamp(relative_pos(v, i, j) + span as i64);
                            s += dot(&q[i], &pos_key[c2p], hd) / scale;
                        }
                        if v.relative_attention && has("p2c") {
                            // p2c_att[j][i] = k_j · pos_query[clamp(-relative_pos[j][i] + span)],
                            // then transposed.
                            let p2c = clamp(-relative_pos(v, j, i) + span as i64);
                            s += dot(&k[j], &pos_query[p2c], hd) / scale;
                        }
                        s
                    })
                    .collect();
                let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let ex: Vec<f64> = s.iter().map(|v| (v - m).exp()).collect();
                let z: f64 = ex.iter().sum();
                for c in 0..d {
                    ctx[i][hd * d + c] = (0..n).map(|j| ex[j] / z * val[j][hd * d + c]).sum();
                }
            }
        }
        for i in 0..n {
            let o = lin(w, &format!("{lp}attention.output.dense"), &ctx[i], H);
            let r: Vec<f64> = o.iter().zip(&x[i]).map(|(a, b)| a + b).collect();
            let x1 = layer_norm(w, &format!("{lp}attention.output.LayerNorm"), &r);
            let inter: Vec<f64> = lin(w, &format!("{lp}intermediate.dense"), &x1, INTER)
                .into_iter()
                .map(|t| act(v.hidden_act, t))
                .collect();
            let o2 = lin(w, &format!("{lp}output.dense"), &inter, H);
            let r2: Vec<f64> = o2.iter().zip(&x1).map(|(a, b)| a + b).collect();
            x[i] = layer_norm(w, &format!("{lp}output.LayerNorm"), &r2);
        }
        if l == 0 && v.conv_kernel_size > 0 {
            // Conv1d over the embedding output, zero padding (k - 1) / 2, then act, residual
            // with the first layer's output, LayerNorm.
            let ks = v.conv_kernel_size;
            let pad = (ks - 1) / 2;
            let cw = get(w, &format!("{p}encoder.conv.conv.weight"));
            let cb = get(w, &format!("{p}encoder.conv.conv.bias"));
            let conv_act = v.conv_act.unwrap_or("tanh");
            for (i, xi) in x.iter_mut().enumerate() {
                let mut r = vec![0f64; H];
                for o in 0..H {
                    let mut acc = cb[o] as f64;
                    for t in 0..ks {
                        let src = i as i64 + t as i64 - pad as i64;
                        if src < 0 || src >= n as i64 {
                            continue;
                        }
                        for c in 0..H {
                            acc += cw[(o * H + c) * ks + t] as f64 * emb[src as usize][c];
                        }
                    }
                    r[o] = xi[o] + act(conv_act, acc);
                }
                *xi = layer_norm(w, &format!("{p}encoder.conv.LayerNorm"), &r);
            }
        }
    }
    // ContextPooler on the first token, then the classifier.
    let pooled: Vec<f64> = lin(w, "pooler.dense", &x[0], H)
        .into_iter()
        .map(|t| act(v.pooler_hidden_act.unwrap_or("gelu"), t))
        .collect();
    lin(w, "classifier", &pooled, v.num_labels)
}

// ---------------------------------------------------------------- tests

fn max_abs_diff(got: &[f32], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    got.iter()
        .zip(want)
        .map(|(a, b)| (*a as f64 - b).abs())
        .fold(0.0, f64::max)
}

#[test]
fn deberta_variants_match_naive_f64_forward() {
    let mut worst_all = 0f64;
    for v in variants() {
        let dir = tempfile::tempdir().unwrap();
        let w = write_model(dir.path(), &v);
        let ce = load(dir.path(), &v);
        assert_eq!(ce.fingerprint().architecture, "deberta-v2");
        assert_eq!(ce.labels().len(), v.num_labels);
        let mut worst = 0f64;
        let mut spread = 0f64;
        for (premise, hypothesis) in PAIRS {
            let (ids, types) = pair_ids(premise, hypothesis);
            assert!(ids.len() < MAX_POS);
            let got = ce.logits(premise, &[hypothesis]).unwrap().remove(0);
            let want = naive_logits(&w, &v, &ids, &types);
            let diff = max_abs_diff(&got, &want);
            assert!(
                diff < 1e-4,
                "{} {premise:?} / {hypothesis:?}: {got:?} vs {want:?}",
                v.name
            );
            worst = worst.max(diff);
            spread = spread.max(want.iter().map(|x| x.abs()).fold(0.0, f64::max));
        }
        eprintln!(
            "{}: max |logit - naive f64| = {worst:.2e} (logits up to {spread:.2})",
            v.name
        );
        worst_all = worst_all.max(worst);
    }
    eprintln!("all variants: max |logit - naive f64| = {worst_all:.2e}");
}

#[test]
fn longest_pair_exercises_log_buckets_and_clamping() {
    // The test inputs would not prove much if every distance fell inside ±mid.
    let (ids, _) = pair_ids(PAIRS[1].0, PAIRS[1].1);
    let n = ids.len();
    assert!(n >= 40, "{n}");
    let v3 = V3;
    let buckets: std::collections::BTreeSet<i64> =
        (0..n).map(|a| relative_pos(&v3, a, 0)).collect();
    // Beyond mid = 4 the buckets are 5, 6, 7 (log-spaced), never the raw distance.
    assert!(buckets.contains(&5) && buckets.contains(&6) && buckets.contains(&7));
    assert!(buckets.iter().all(|&b| b <= 7), "{buckets:?}");
    // And the relative attention terms change the logits: the same weights without them
    // give other numbers.
    let dir = tempfile::tempdir().unwrap();
    let w = write_model(dir.path(), &v3);
    let (ids, types) = pair_ids(PAIRS[1].0, PAIRS[1].1);
    let with = naive_logits(&w, &v3, &ids, &types);
    let without = naive_logits(
        &w,
        &Variant {
            relative_attention: false,
            ..v3
        },
        &ids,
        &types,
    );
    let moved = with
        .iter()
        .zip(&without)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(moved > 1e-2, "{with:?} vs {without:?}");
}

#[test]
fn scores_do_not_depend_on_batching_and_nli_score_is_entailment_probability() {
    let dir = tempfile::tempdir().unwrap();
    write_model(dir.path(), &V3);
    let ce = CrossEncoder::load(dir.path()).unwrap();
    assert_eq!(ce.labels(), ["contradiction", "entailment", "neutral"]);
    assert_eq!(ce.fingerprint().score, "softmax:entailment");
    let premise = PAIRS[1].0;
    let hyps: Vec<&str> = PAIRS.iter().map(|p| p.1).collect();
    let together = ce.logits(premise, &hyps).unwrap();
    for (h, row) in hyps.iter().zip(&together) {
        let alone = ce.logits(premise, &[h]).unwrap().remove(0);
        assert_eq!(&alone, row, "{h:?}");
    }
    let scores = ce.score(premise, &hyps).unwrap();
    for (s, l) in scores.iter().zip(&together) {
        let z: f32 = l.iter().map(|x| x.exp()).sum();
        assert!((s - l[1].exp() / z).abs() < 1e-6);
    }
}

#[test]
fn local_embedder_refuses_deberta_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    write_model(dir.path(), &V3);
    let err = LocalEmbedder::load(dir.path()).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, EmbedError::UnsupportedArchitecture { .. }),
        "{msg}"
    );
    assert!(
        msg.contains("deberta-v2") && msg.contains("CrossEncoder") && msg.contains("config.json"),
        "{msg}"
    );
}

/// Rewrites one field of the folder's config.json.
fn set_config(dir: &Path, field: &str, value: Value) {
    let p = dir.join("config.json");
    let mut cfg: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    cfg[field] = value;
    std::fs::write(&p, cfg.to_string()).unwrap();
}

#[test]
fn unsupported_options_are_refused_naming_the_field() {
    for (field, value) in [
        ("pos_att_type", json!(["c2p", "p2p"])),
        ("norm_rel_ebd", json!("batch_norm")),
        ("conv_kernel_size", json!(2)),
        ("conv_groups", json!(4)),
        ("pooler_hidden_act", json!("swish")),
        ("hidden_act", json!("mish")),
        ("attention_head_size", json!(16)),
        ("pooler_hidden_size", json!(16)),
        ("position_buckets", json!(1)),
        ("relative_attention", json!("yes")),
    ] {
        let dir = tempfile::tempdir().unwrap();
        write_model(dir.path(), &V3);
        set_config(dir.path(), field, value.clone());
        if field == "conv_groups" {
            set_config(dir.path(), "conv_kernel_size", json!(3));
        }
        let err = CrossEncoder::load(dir.path()).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err, EmbedError::InvalidConfig { .. }),
            "{field}: {msg}"
        );
        assert!(
            msg.contains("config.json") && msg.contains(field),
            "{field}={value}: {msg}"
        );
    }
}

#[test]
fn missing_deberta_tensor_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = write_model(dir.path(), &V3);
    w.remove("deberta.encoder.rel_embeddings.weight");
    std::fs::write(
        dir.path().join("model.safetensors"),
        safetensors_bytes(&w, false),
    )
    .unwrap();
    let err = CrossEncoder::load(dir.path()).unwrap_err();
    assert!(matches!(err, EmbedError::MissingTensor { .. }), "{err}");
    assert!(err.to_string().contains("rel_embeddings"), "{err}");
}

// ---------------------------------------------------------------- transformers reference

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/deberta_tiny_reference.json"
);

/// Writes every variant's folder and the pairs for `scripts/reference_deberta.py`:
/// `VEREDICTO_DEBERTA_DUMP=/tmp/dv2 cargo test -p veredicto-embed --test embed deberta_tiny -- --ignored`.
#[test]
#[ignore = "writes the tiny models for scripts/reference_deberta.py"]
fn dump_models_for_the_python_reference() {
    let Ok(out) = std::env::var("VEREDICTO_DEBERTA_DUMP") else {
        eprintln!("VEREDICTO_DEBERTA_DUMP is not set: nothing written");
        return;
    };
    let out = Path::new(&out);
    for v in variants() {
        write_model(&out.join(v.name), &v);
    }
    let pairs: Vec<Value> = PAIRS
        .iter()
        .map(|(p, h)| {
            let (ids, types) = pair_ids(p, h);
            json!({"premise": p, "hypothesis": h, "ids": ids, "type_ids": types})
        })
        .collect();
    std::fs::write(
        out.join("pairs.json"),
        serde_json::to_vec_pretty(&Value::Array(pairs)).unwrap(),
    )
    .unwrap();
}

#[test]
fn deberta_variants_match_transformers_logits() {
    let fixture: Value = serde_json::from_slice(&std::fs::read(FIXTURE).unwrap()).unwrap();
    let mut worst_all = 0f64;
    let mut worst_f32 = 0f64;
    let mut worst_naive = 0f64;
    for v in variants() {
        let m = fixture["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == v.name)
            .unwrap_or_else(|| panic!("{} not in the fixture", v.name));
        let dir = tempfile::tempdir().unwrap();
        let w = write_model(dir.path(), &v);
        let ce = load(dir.path(), &v);
        // The fixture was computed on exactly these files.
        for file in ["config.json", "model.safetensors"] {
            assert_eq!(
                ce.fingerprint().files[file],
                m["sha256"][file].as_str().unwrap(),
                "{}: {file} differs from the one the fixture was made from; rerun scripts/reference_deberta.py",
                v.name
            );
        }
        let cases = m["pairs"].as_array().unwrap();
        assert_eq!(cases.len(), PAIRS.len());
        for ((premise, hypothesis), case) in PAIRS.iter().zip(cases) {
            assert_eq!(case["premise"], *premise);
            let (ids, types) = pair_ids(premise, hypothesis);
            let fixture_ids: Vec<u32> = serde_json::from_value(case["ids"].clone()).unwrap();
            assert_eq!(fixture_ids, ids, "the tokenizers package gave other ids");
            let want: Vec<f64> = serde_json::from_value(case["logits"].clone()).unwrap();
            let got = ce.logits(premise, &[hypothesis]).unwrap().remove(0);
            let diff = max_abs_diff(&got, &want);
            assert!(
                diff < 1e-4,
                "{} {premise:?} / {hypothesis:?}: {got:?} vs transformers {want:?}",
                v.name
            );
            worst_all = worst_all.max(diff);
            let want_f32: Vec<f64> = serde_json::from_value(case["logits_f32"].clone()).unwrap();
            worst_f32 = worst_f32.max(max_abs_diff(&got, &want_f32));
            // The naive reference and transformers agree with each other (both f64).
            let naive = naive_logits(&w, &v, &ids, &types);
            let d = naive
                .iter()
                .zip(&want)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(
                d < 1e-9,
                "{}: naive {naive:?} vs transformers {want:?}",
                v.name
            );
            worst_naive = worst_naive.max(d);
        }
    }
    eprintln!(
        "max |logit - transformers f64| = {worst_all:.2e} (f32 model: {worst_f32:.2e}); \
         max |naive f64 - transformers f64| = {worst_naive:.2e}"
    );
}
