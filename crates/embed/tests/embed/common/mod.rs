//! Test helpers: tiny random-weight BERT / XLM-R model folders written to a temp dir, a naive
//! f64 reference forward pass over the same weights, and a scripted HTTP server on 127.0.0.1.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};

// ---------------------------------------------------------------- tiny models

pub const HIDDEN: usize = 32;
pub const LAYERS: usize = 2;
pub const HEADS: usize = 4;
pub const INTER: usize = 64;
pub const MAX_POS: usize = 64;
pub const MAX_SEQ: usize = 24;

pub const WORDS: &[&str] = &[
    "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "query", "passage", ":",
    "hello", "world", "a", "b", "c", "##s", ",", ".", "?", "contract", "rack", "bolt", "shelf",
    "load", "el", "la", "de", "trabajo",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    Bert,
    XlmRoberta,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Head {
    None,
    /// BertForSequenceClassification: pooler + classifier.
    Bert(usize),
    /// XLMRobertaForSequenceClassification: classifier.dense + out_proj.
    Roberta(usize),
}

#[derive(Clone, Debug)]
pub struct Spec {
    pub arch: Arch,
    pub head: Head,
    pub tensor_prefix: &'static str,
    pub pooling_cls: bool,
    pub normalize: bool,
    pub query_prompt: Option<&'static str>,
    pub passage_prompt: Option<&'static str>,
    pub sentence_transformers_files: bool,
    pub seed: u64,
    pub f16: bool,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            arch: Arch::Bert,
            head: Head::None,
            tensor_prefix: "",
            pooling_cls: false,
            normalize: true,
            query_prompt: Some("query: "),
            passage_prompt: None,
            sentence_transformers_files: true,
            seed: 42,
            f16: false,
        }
    }
}

/// Weights by name: (shape, values).
pub type Weights = BTreeMap<String, (Vec<usize>, Vec<f32>)>;

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [-a, a).
    pub fn uniform(&mut self, a: f32) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * a
    }
}

pub fn vocab(spec: &Spec) -> Vec<String> {
    let specials: &[&str] = match spec.arch {
        Arch::Bert => &["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
        Arch::XlmRoberta => &["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
    };
    specials
        .iter()
        .chain(WORDS.iter())
        .map(|s| s.to_string())
        .collect()
}

pub fn pad_id(spec: &Spec) -> usize {
    match spec.arch {
        Arch::Bert => 0,
        Arch::XlmRoberta => 1,
    }
}

/// The `model_type`-specific tensor name prefix used by *ForSequenceClassification.
fn head_prefix(spec: &Spec) -> &'static str {
    match spec.arch {
        Arch::Bert => "bert.",
        Arch::XlmRoberta => "roberta.",
    }
}

pub fn make_weights(spec: &Spec) -> Weights {
    let mut rng = Rng::new(spec.seed);
    let v = vocab(spec).len();
    let h = HIDDEN;
    let prefix = match spec.head {
        Head::None => spec.tensor_prefix,
        _ => head_prefix(spec),
    };
    let type_vocab = match spec.arch {
        Arch::Bert => 2,
        Arch::XlmRoberta => 1,
    };
    let max_pos = match spec.arch {
        Arch::Bert => MAX_POS,
        Arch::XlmRoberta => MAX_POS + 2,
    };
    let mut w = Weights::new();
    let mut put = |name: String, shape: Vec<usize>, scale: f32, center: f32| {
        let n: usize = shape.iter().product();
        let vals = (0..n).map(|_| center + rng.uniform(scale)).collect();
        w.insert(name, (shape, vals));
    };
    put(
        format!("{prefix}embeddings.word_embeddings.weight"),
        vec![v, h],
        1.0,
        0.0,
    );
    put(
        format!("{prefix}embeddings.position_embeddings.weight"),
        vec![max_pos, h],
        0.5,
        0.0,
    );
    put(
        format!("{prefix}embeddings.token_type_embeddings.weight"),
        vec![type_vocab, h],
        0.5,
        0.0,
    );
    put(
        format!("{prefix}embeddings.LayerNorm.weight"),
        vec![h],
        0.2,
        1.0,
    );
    put(
        format!("{prefix}embeddings.LayerNorm.bias"),
        vec![h],
        0.2,
        0.0,
    );
    for l in 0..LAYERS {
        let p = format!("{prefix}encoder.layer.{l}.");
        for m in ["query", "key", "value"] {
            put(
                format!("{p}attention.self.{m}.weight"),
                vec![h, h],
                0.4,
                0.0,
            );
            put(format!("{p}attention.self.{m}.bias"), vec![h], 0.1, 0.0);
        }
        put(
            format!("{p}attention.output.dense.weight"),
            vec![h, h],
            0.3,
            0.0,
        );
        put(format!("{p}attention.output.dense.bias"), vec![h], 0.1, 0.0);
        put(
            format!("{p}attention.output.LayerNorm.weight"),
            vec![h],
            0.2,
            1.0,
        );
        put(
            format!("{p}attention.output.LayerNorm.bias"),
            vec![h],
            0.2,
            0.0,
        );
        put(
            format!("{p}intermediate.dense.weight"),
            vec![INTER, h],
            0.3,
            0.0,
        );
        put(format!("{p}intermediate.dense.bias"), vec![INTER], 0.1, 0.0);
        put(format!("{p}output.dense.weight"), vec![h, INTER], 0.3, 0.0);
        put(format!("{p}output.dense.bias"), vec![h], 0.1, 0.0);
        put(format!("{p}output.LayerNorm.weight"), vec![h], 0.2, 1.0);
        put(format!("{p}output.LayerNorm.bias"), vec![h], 0.2, 0.0);
    }
    match spec.head {
        Head::None => {}
        Head::Bert(n) => {
            put(format!("{prefix}pooler.dense.weight"), vec![h, h], 0.4, 0.0);
            put(format!("{prefix}pooler.dense.bias"), vec![h], 0.1, 0.0);
            put("classifier.weight".into(), vec![n, h], 0.5, 0.0);
            put("classifier.bias".into(), vec![n], 0.1, 0.0);
        }
        Head::Roberta(n) => {
            put("classifier.dense.weight".into(), vec![h, h], 0.4, 0.0);
            put("classifier.dense.bias".into(), vec![h], 0.1, 0.0);
            put("classifier.out_proj.weight".into(), vec![n, h], 0.5, 0.0);
            put("classifier.out_proj.bias".into(), vec![n], 0.1, 0.0);
        }
    }
    w
}

fn f32_to_f16(x: f32) -> u16 {
    // Round-to-nearest for normal range values (enough for test weights).
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    let mant = bits & 0x7f_ffff;
    if exp <= 0 {
        return sign;
    }
    let mut h = sign as u32 | ((exp as u32) << 10) | (mant >> 13);
    if mant & 0x1000 != 0 {
        h += 1;
    }
    h as u16
}

pub fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = ((h >> 10) & 0x1f) as i32;
    let mant = (h & 0x3ff) as f32;
    if exp == 0 {
        sign * mant * 2f32.powi(-24)
    } else {
        sign * (1.0 + mant / 1024.0) * 2f32.powi(exp - 15)
    }
}

/// Serialises `w` in the safetensors format (F32, or F16 when `f16`).
pub fn safetensors_bytes(w: &Weights, f16: bool) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    header.insert("__metadata__".into(), json!({"format": "pt"}));
    let mut data = Vec::new();
    for (name, (shape, vals)) in w {
        let start = data.len();
        for v in vals {
            if f16 {
                data.extend_from_slice(&f32_to_f16(*v).to_le_bytes());
            } else {
                data.extend_from_slice(&v.to_le_bytes());
            }
        }
        header.insert(
            name.clone(),
            json!({"dtype": if f16 {"F16"} else {"F32"}, "shape": shape, "data_offsets": [start, data.len()]}),
        );
    }
    let mut h = serde_json::to_vec(&Value::Object(header)).unwrap();
    while h.len() & 7 != 0 {
        h.push(b' ');
    }
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend(h);
    out.extend(data);
    out
}

pub fn tokenizer_json(spec: &Spec) -> Value {
    let vocab = vocab(spec);
    let vocab_map: serde_json::Map<String, Value> = vocab
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), json!(i)))
        .collect();
    let (cls, sep, unk) = match spec.arch {
        Arch::Bert => ("[CLS]", "[SEP]", "[UNK]"),
        Arch::XlmRoberta => ("<s>", "</s>", "<unk>"),
    };
    let added: Vec<Value> = vocab[..5]
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"id": i, "content": t, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}))
        .collect();
    let cls_id = vocab.iter().position(|t| t == cls).unwrap();
    let sep_id = vocab.iter().position(|t| t == sep).unwrap();
    json!({
        "version": "1.0",
        "truncation": {"max_length": 128, "strategy": "LongestFirst", "stride": 0},
        "padding": {"strategy": {"Fixed": 128}, "direction": "Right", "pad_to_multiple_of": null,
                    "pad_id": pad_id(spec), "pad_type_id": 0, "pad_token": vocab[pad_id(spec)]},
        "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                       "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": cls, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": sep, "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": cls, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": sep, "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": if spec.arch == Arch::Bert {1} else {0}}},
                     {"SpecialToken": {"id": sep, "type_id": if spec.arch == Arch::Bert {1} else {0}}}],
            "special_tokens": {
                cls: {"id": cls, "ids": [cls_id], "tokens": [cls]},
                sep: {"id": sep, "ids": [sep_id], "tokens": [sep]}
            }
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordPiece", "unk_token": unk, "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab_map}
    })
}

pub fn config_json(spec: &Spec) -> Value {
    let v = vocab(spec).len();
    let mut c = match spec.arch {
        Arch::Bert => json!({
            "architectures": ["BertModel"], "model_type": "bert", "hidden_act": "gelu",
            "max_position_embeddings": MAX_POS, "type_vocab_size": 2, "pad_token_id": 0,
        }),
        Arch::XlmRoberta => json!({
            "architectures": ["XLMRobertaModel"], "model_type": "xlm-roberta", "hidden_act": "gelu",
            "max_position_embeddings": MAX_POS + 2, "type_vocab_size": 1, "pad_token_id": 1,
            "bos_token_id": 0, "eos_token_id": 2,
        }),
    };
    let o = c.as_object_mut().unwrap();
    o.insert("vocab_size".into(), json!(v));
    o.insert("hidden_size".into(), json!(HIDDEN));
    o.insert("num_hidden_layers".into(), json!(LAYERS));
    o.insert("num_attention_heads".into(), json!(HEADS));
    o.insert("intermediate_size".into(), json!(INTER));
    o.insert("layer_norm_eps".into(), json!(1e-12));
    o.insert("position_embedding_type".into(), json!("absolute"));
    match spec.head {
        Head::None => {}
        Head::Bert(n) | Head::Roberta(n) => {
            let arch = if spec.arch == Arch::Bert {
                "BertForSequenceClassification"
            } else {
                "XLMRobertaForSequenceClassification"
            };
            o.insert("architectures".into(), json!([arch]));
            if n == 3 {
                o.insert(
                    "id2label".into(),
                    json!({"0": "contradiction", "1": "entailment", "2": "neutral"}),
                );
            } else {
                let m: serde_json::Map<String, Value> = (0..n)
                    .map(|i| (i.to_string(), json!(format!("LABEL_{i}"))))
                    .collect();
                o.insert("id2label".into(), Value::Object(m));
            }
        }
    }
    c
}

/// Writes a complete model folder for `spec` into `dir`; returns the weights.
pub fn write_model(dir: &Path, spec: &Spec) -> Weights {
    std::fs::create_dir_all(dir).unwrap();
    let w = make_weights(spec);
    let write_json = |name: &str, v: &Value| {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, serde_json::to_vec_pretty(v).unwrap()).unwrap();
    };
    write_json("config.json", &config_json(spec));
    write_json("tokenizer.json", &tokenizer_json(spec));
    std::fs::write(
        dir.join("model.safetensors"),
        safetensors_bytes(&w, spec.f16),
    )
    .unwrap();
    if spec.sentence_transformers_files {
        let mut modules = vec![
            json!({"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}),
            json!({"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}),
        ];
        if spec.normalize {
            modules.push(json!({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}));
        }
        write_json("modules.json", &Value::Array(modules));
        write_json(
            "1_Pooling/config.json",
            &json!({"word_embedding_dimension": HIDDEN, "pooling_mode_cls_token": spec.pooling_cls,
                    "pooling_mode_mean_tokens": !spec.pooling_cls, "pooling_mode_max_tokens": false,
                    "pooling_mode_mean_sqrt_len_tokens": false}),
        );
        write_json(
            "sentence_bert_config.json",
            &json!({"max_seq_length": MAX_SEQ, "do_lower_case": false}),
        );
        let mut prompts = serde_json::Map::new();
        if let Some(q) = spec.query_prompt {
            prompts.insert("query".into(), json!(q));
        }
        if let Some(p) = spec.passage_prompt {
            prompts.insert("passage".into(), json!(p));
        }
        write_json(
            "config_sentence_transformers.json",
            &json!({"prompts": prompts, "default_prompt_name": null}),
        );
    }
    w
}

// ---------------------------------------------------------------- naive reference

fn get<'a>(w: &'a Weights, name: &str) -> &'a [f32] {
    &w.get(name).unwrap_or_else(|| panic!("no tensor {name}")).1
}

fn linear(x: &[f64], w: &[f32], b: &[f32], inp: usize, out: usize) -> Vec<f64> {
    (0..out)
        .map(|o| b[o] as f64 + (0..inp).map(|i| x[i] * w[o * inp + i] as f64).sum::<f64>())
        .collect()
}

fn layer_norm(x: &[f64], w: &[f32], b: &[f32]) -> Vec<f64> {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    x.iter()
        .enumerate()
        .map(|(i, v)| (v - mean) / (var + 1e-12).sqrt() * w[i] as f64 + b[i] as f64)
        .collect()
}

fn erf(x: f64) -> f64 {
    if x.abs() > 6.0 {
        return x.signum();
    }
    let mut term = x;
    let mut sum = x;
    for n in 1..400 {
        term *= -x * x / n as f64;
        sum += term / (2 * n + 1) as f64;
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

/// Final hidden states of one sequence, f64, straight from the formulas.
pub fn naive_hidden(w: &Weights, spec: &Spec, ids: &[u32], type_ids: &[u32]) -> Vec<Vec<f64>> {
    let p = match spec.head {
        Head::None => spec.tensor_prefix,
        _ => head_prefix(spec),
    };
    let h = HIDDEN;
    let d = h / HEADS;
    let word = get(w, &format!("{p}embeddings.word_embeddings.weight"));
    let pos = get(w, &format!("{p}embeddings.position_embeddings.weight"));
    let tt = get(w, &format!("{p}embeddings.token_type_embeddings.weight"));
    let mut x: Vec<Vec<f64>> = ids
        .iter()
        .enumerate()
        .map(|(j, &id)| {
            let pj = match spec.arch {
                Arch::Bert => j,
                Arch::XlmRoberta => pad_id(spec) + 1 + j,
            };
            let t = type_ids[j] as usize;
            let row: Vec<f64> = (0..h)
                .map(|c| {
                    word[id as usize * h + c] as f64 + pos[pj * h + c] as f64 + tt[t * h + c] as f64
                })
                .collect();
            layer_norm(
                &row,
                get(w, &format!("{p}embeddings.LayerNorm.weight")),
                get(w, &format!("{p}embeddings.LayerNorm.bias")),
            )
        })
        .collect();
    let n = ids.len();
    for l in 0..LAYERS {
        let lp = format!("{p}encoder.layer.{l}.");
        let lin = |x: &[f64], name: &str, inp: usize, out: usize| {
            linear(
                x,
                get(w, &format!("{lp}{name}.weight")),
                get(w, &format!("{lp}{name}.bias")),
                inp,
                out,
            )
        };
        let q: Vec<_> = x
            .iter()
            .map(|r| lin(r, "attention.self.query", h, h))
            .collect();
        let k: Vec<_> = x
            .iter()
            .map(|r| lin(r, "attention.self.key", h, h))
            .collect();
        let v: Vec<_> = x
            .iter()
            .map(|r| lin(r, "attention.self.value", h, h))
            .collect();
        let mut ctx = vec![vec![0f64; h]; n];
        for hd in 0..HEADS {
            for i in 0..n {
                let s: Vec<f64> = (0..n)
                    .map(|j| {
                        (0..d)
                            .map(|c| q[i][hd * d + c] * k[j][hd * d + c])
                            .sum::<f64>()
                            / (d as f64).sqrt()
                    })
                    .collect();
                let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = s.iter().map(|v| (v - m).exp()).collect();
                let z: f64 = e.iter().sum();
                for c in 0..d {
                    ctx[i][hd * d + c] = (0..n).map(|j| e[j] / z * v[j][hd * d + c]).sum();
                }
            }
        }
        for i in 0..n {
            let a = lin(&ctx[i], "attention.output.dense", h, h);
            let r: Vec<f64> = a.iter().zip(&x[i]).map(|(a, b)| a + b).collect();
            let x1 = layer_norm(
                &r,
                get(w, &format!("{lp}attention.output.LayerNorm.weight")),
                get(w, &format!("{lp}attention.output.LayerNorm.bias")),
            );
            let inter: Vec<f64> = lin(&x1, "intermediate.dense", h, INTER)
                .into_iter()
                .map(|t| 0.5 * t * (1.0 + erf(t / 2f64.sqrt())))
                .collect();
            let o = lin(&inter, "output.dense", INTER, h);
            let r2: Vec<f64> = o.iter().zip(&x1).map(|(a, b)| a + b).collect();
            x[i] = layer_norm(
                &r2,
                get(w, &format!("{lp}output.LayerNorm.weight")),
                get(w, &format!("{lp}output.LayerNorm.bias")),
            );
        }
    }
    x
}

/// Sentence vector: mean or CLS pooling, optional normalisation.
pub fn naive_embed(w: &Weights, spec: &Spec, ids: &[u32], normalize: bool) -> Vec<f64> {
    let types = vec![0u32; ids.len()];
    let hs = naive_hidden(w, spec, ids, &types);
    let mut v = if spec.pooling_cls {
        hs[0].clone()
    } else {
        let mut m = vec![0f64; HIDDEN];
        for r in &hs {
            for (a, b) in m.iter_mut().zip(r) {
                *a += b;
            }
        }
        m.iter().map(|a| a / hs.len() as f64).collect()
    };
    if normalize {
        let n = v.iter().map(|a| a * a).sum::<f64>().sqrt();
        v.iter_mut().for_each(|a| *a /= n);
    }
    v
}

/// Logits of a classification head on a (pair) sequence.
pub fn naive_logits(w: &Weights, spec: &Spec, ids: &[u32], type_ids: &[u32]) -> Vec<f64> {
    let hs = naive_hidden(w, spec, ids, type_ids);
    let cls = &hs[0];
    let h = HIDDEN;
    match spec.head {
        Head::Bert(n) => {
            let pooled: Vec<f64> = linear(
                cls,
                get(w, "bert.pooler.dense.weight"),
                get(w, "bert.pooler.dense.bias"),
                h,
                h,
            )
            .into_iter()
            .map(f64::tanh)
            .collect();
            linear(
                &pooled,
                get(w, "classifier.weight"),
                get(w, "classifier.bias"),
                h,
                n,
            )
        }
        Head::Roberta(n) => {
            let x: Vec<f64> = linear(
                cls,
                get(w, "classifier.dense.weight"),
                get(w, "classifier.dense.bias"),
                h,
                h,
            )
            .into_iter()
            .map(f64::tanh)
            .collect();
            linear(
                &x,
                get(w, "classifier.out_proj.weight"),
                get(w, "classifier.out_proj.bias"),
                h,
                n,
            )
        }
        Head::None => panic!("no head"),
    }
}

/// Token ids of `text` under the tiny WordPiece vocabulary (whole words only), with the
/// special tokens around it.
pub fn ids_of(spec: &Spec, text: &str) -> Vec<u32> {
    let vocab = vocab(spec);
    let (cls, sep) = match spec.arch {
        Arch::Bert => (2, 3),
        Arch::XlmRoberta => (0, 2),
    };
    let mut ids = vec![cls];
    for word in text.to_lowercase().split_whitespace() {
        let mut rest = word;
        while !rest.is_empty() {
            // split trailing punctuation
            let (tok, tail) = match rest.find([':', ',', '.', '?']) {
                Some(0) => rest.split_at(1),
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            ids.push(
                vocab
                    .iter()
                    .position(|v| v == tok)
                    .expect("word in tiny vocab") as u32,
            );
            rest = tail;
        }
    }
    ids.truncate(MAX_SEQ - 1);
    ids.push(sep);
    ids
}

pub fn cosine(a: &[f32], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * y).sum();
    let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (na * nb)
}

// ---------------------------------------------------------------- HTTP server

#[derive(Clone, Debug)]
pub struct Request {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub struct Reply {
    pub status: u16,
    pub body: String,
    pub delay: Duration,
}

impl Reply {
    pub fn json(status: u16, v: Value) -> Reply {
        Reply {
            status,
            body: v.to_string(),
            delay: Duration::ZERO,
        }
    }
}

/// A server on 127.0.0.1 that answers at most `max_requests` connections with `handler`
/// (called with the request number, from 0) and then stops.
pub struct Server {
    pub url: String,
    pub requests: Arc<Mutex<Vec<Request>>>,
    handle: Option<JoinHandle<()>>,
}

impl Server {
    pub fn start<F>(max_requests: usize, handler: F) -> Server
    where
        F: Fn(usize, &Request) -> Reply + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&requests);
        let handle = std::thread::spawn(move || {
            for i in 0..max_requests {
                let Ok((stream, _)) = listener.accept() else {
                    return;
                };
                stream.set_read_timeout(Some(Duration::from_secs(5))).ok();
                let Some(req) = read_request(&stream) else {
                    continue;
                };
                log.lock().unwrap().push(req.clone());
                let reply = handler(i, &req);
                std::thread::sleep(reply.delay);
                let _ = write_reply(stream, &reply);
            }
        });
        Server {
            url,
            requests,
            handle: Some(handle),
        }
    }

    pub fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // The thread ends on its own after max_requests; do not block a failing test on it.
        let _ = self.handle.take();
    }
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut headers = Vec::new();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            let (k, v) = (k.trim().to_string(), v.trim().to_string());
            if k.eq_ignore_ascii_case("content-length") {
                len = v.parse().ok()?;
            }
            headers.push((k, v));
        }
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

fn write_reply(mut stream: TcpStream, reply: &Reply) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        reply.status,
        reply.body.len(),
        reply.body
    )?;
    stream.flush()
}
