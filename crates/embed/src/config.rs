//! Reading a Hugging Face / sentence-transformers model folder: `config.json` and the
//! sentence-transformers side files (`modules.json`, `1_Pooling/config.json`,
//! `sentence_bert_config.json`, `config_sentence_transformers.json`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::EmbedError;

/// The encoder architectures this crate runs (`model_type` values of `config.json`).
/// `deberta-v2` (DeBERTa-v2 and -v3) runs only as a [`crate::CrossEncoder`]
/// (`DebertaV2ForSequenceClassification`), not as a sentence embedder.
pub const SUPPORTED_ARCHITECTURES: &[&str] = &["bert", "roberta", "xlm-roberta", "deberta-v2"];

/// The architectures [`crate::LocalEmbedder`] runs.
pub(crate) const EMBEDDER_ARCHITECTURES: &[&str] = &["bert", "roberta", "xlm-roberta"];

/// Which family of encoder: decides position ids and tensor name prefixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    /// BERT (and MiniLM, BGE-en, e5-en, ...): positions 0..n. DeBERTa-v2 too (its absolute
    /// positions, when it has any, are 0..n); its own options are in [`EncoderConfig::deberta`].
    Bert,
    /// RoBERTa / XLM-RoBERTa: positions start at `pad_token_id + 1`.
    Roberta,
}

/// The activation of the feed-forward block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Activation {
    /// Exact GELU, `x Φ(x)` (`"gelu"`).
    GeluErf,
    /// The tanh approximation (`"gelu_new"`, `"gelu_pytorch_tanh"`, `"gelu_fast"`).
    GeluTanh,
    /// `max(0, x)`.
    Relu,
}

impl Activation {
    /// Applies the activation in place.
    pub(crate) fn apply(self, x: &mut [f32]) {
        match self {
            Activation::GeluErf => crate::kernels::gelu_erf(x),
            Activation::GeluTanh => crate::kernels::gelu_tanh(x),
            Activation::Relu => crate::kernels::relu(x),
        }
    }

    /// [`Activation::apply`] on the calling thread only (the same bits).
    pub(crate) fn apply_seq(self, x: &mut [f32]) {
        match self {
            Activation::GeluErf => crate::kernels::gelu_erf_chunk(x),
            Activation::GeluTanh => crate::kernels::gelu_tanh_chunk(x),
            Activation::Relu => crate::kernels::relu(x),
        }
    }
}

/// The parts of `config.json` an encoder needs.
#[derive(Clone, Debug)]
pub(crate) struct EncoderConfig {
    /// `model_type`, normalised (`"bert"`, `"roberta"`, `"xlm-roberta"`).
    pub model_type: String,
    pub family: Family,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub intermediate_size: usize,
    pub activation: Activation,
    pub layer_norm_eps: f32,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub pad_token_id: u32,
    /// Number of classification outputs (`id2label` size, `num_labels`, or 1).
    pub num_labels: usize,
    /// `id2label`, when given.
    pub id2label: BTreeMap<usize, String>,
    /// The DeBERTa-v2 options, for `model_type` `deberta-v2` (run by `deberta.rs`, not by
    /// `encoder.rs`).
    pub deberta: Option<crate::deberta::DebertaV2Config>,
}

impl EncoderConfig {
    /// The longest input, in tokens, the position embeddings allow.
    pub fn max_positions(&self) -> usize {
        match self.family {
            Family::Bert => self.max_position_embeddings,
            Family::Roberta => self
                .max_position_embeddings
                .saturating_sub(self.pad_token_id as usize + 1),
        }
    }
}

pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>, EmbedError> {
    std::fs::read(path).map_err(|e| EmbedError::io(path, e))
}

pub(crate) fn read_json(path: &Path) -> Result<Value, EmbedError> {
    let bytes = read_file(path)?;
    serde_json::from_slice(&bytes).map_err(|e| EmbedError::corrupt(path, format!("not JSON: {e}")))
}

/// `dir/file`, or a [`EmbedError::MissingFile`] naming it.
pub(crate) fn required(dir: &Path, file: &str, why: &'static str) -> Result<PathBuf, EmbedError> {
    let path = dir.join(file);
    if path.is_file() {
        Ok(path)
    } else {
        Err(EmbedError::MissingFile {
            dir: dir.to_path_buf(),
            file: file.to_string(),
            why,
        })
    }
}

fn get_usize(v: &Value, path: &Path, field: &str) -> Result<usize, EmbedError> {
    match v.get(field) {
        Some(x) => x.as_u64().map(|x| x as usize).ok_or_else(|| {
            EmbedError::config(path, field, format!("expected an integer, got {x}"))
        }),
        None => Err(EmbedError::config(path, field, "missing")),
    }
}

fn get_usize_or(v: &Value, path: &Path, field: &str, default: usize) -> Result<usize, EmbedError> {
    if matches!(v.get(field), None | Some(Value::Null)) {
        Ok(default)
    } else {
        get_usize(v, path, field)
    }
}

fn normalise_model_type(raw: &str) -> String {
    raw.to_ascii_lowercase().replace('_', "-")
}

/// Infers `model_type` from `architectures` (old configs may lack `model_type`).
fn model_type_from_architectures(archs: &[String]) -> Option<&'static str> {
    archs.iter().find_map(|a| {
        if a.starts_with("XLMRoberta") {
            Some("xlm-roberta")
        } else if a.starts_with("Roberta") {
            Some("roberta")
        } else if a.starts_with("Bert") {
            Some("bert")
        } else if a.starts_with("DebertaV2") {
            Some("deberta-v2")
        } else {
            None
        }
    })
}

/// Parses `config.json` of an encoder model.
pub(crate) fn encoder_config(path: &Path) -> Result<EncoderConfig, EmbedError> {
    let v = read_json(path)?;
    if !v.is_object() {
        return Err(EmbedError::corrupt(path, "expected a JSON object"));
    }
    let architectures: Vec<String> = v
        .get("architectures")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let model_type = match v.get("model_type").and_then(Value::as_str) {
        Some(t) => normalise_model_type(t),
        None => match model_type_from_architectures(&architectures) {
            Some(t) => t.to_string(),
            None => {
                return Err(EmbedError::UnsupportedArchitecture {
                    path: path.to_path_buf(),
                    found: format!("no model_type; architectures {architectures:?}"),
                    supported: SUPPORTED_ARCHITECTURES.to_vec(),
                })
            }
        },
    };
    let family = match model_type.as_str() {
        "bert" | "deberta-v2" => Family::Bert,
        "roberta" | "xlm-roberta" => Family::Roberta,
        _ => {
            return Err(EmbedError::UnsupportedArchitecture {
                path: path.to_path_buf(),
                found: if architectures.is_empty() {
                    model_type
                } else {
                    format!("{model_type} ({})", architectures.join(", "))
                },
                supported: SUPPORTED_ARCHITECTURES.to_vec(),
            })
        }
    };
    let is_deberta = model_type == "deberta-v2";
    if let Some(p) = v.get("position_embedding_type").and_then(Value::as_str) {
        // DeBERTa's positions are set by its own fields (`relative_attention`, ...).
        if p != "absolute" && !is_deberta {
            return Err(EmbedError::config(
                path,
                "position_embedding_type",
                format!("`{p}` is not supported (only `absolute`)"),
            ));
        }
    }
    let hidden_size = get_usize(&v, path, "hidden_size")?;
    let num_heads = get_usize(&v, path, "num_attention_heads")?;
    if num_heads == 0 || hidden_size % num_heads != 0 {
        return Err(EmbedError::config(
            path,
            "num_attention_heads",
            format!("{num_heads} heads do not divide hidden_size {hidden_size}"),
        ));
    }
    let act_name = v
        .get("hidden_act")
        .and_then(Value::as_str)
        .unwrap_or("gelu");
    let activation = match act_name {
        "gelu" => Activation::GeluErf,
        "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Activation::GeluTanh,
        "relu" => Activation::Relu,
        other => {
            return Err(EmbedError::config(
                path,
                "hidden_act",
                format!("activation `{other}` is not supported (gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, relu)"),
            ))
        }
    };
    let layer_norm_eps = match v.get("layer_norm_eps") {
        None | Some(Value::Null) if is_deberta => 1e-7,
        None | Some(Value::Null) => 1e-12,
        Some(x) => x.as_f64().ok_or_else(|| {
            EmbedError::config(
                path,
                "layer_norm_eps",
                format!("expected a number, got {x}"),
            )
        })? as f32,
    };
    let default_pad = if family == Family::Roberta { 1 } else { 0 };
    let pad_token_id = get_usize_or(&v, path, "pad_token_id", default_pad)? as u32;
    let id2label: BTreeMap<usize, String> = v
        .get("id2label")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, l)| Some((k.parse().ok()?, l.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let num_labels = match v.get("num_labels").and_then(Value::as_u64) {
        Some(n) => n as usize,
        None if !id2label.is_empty() => id2label.len(),
        None => 1,
    };
    let max_position_embeddings = get_usize(&v, path, "max_position_embeddings")?;
    let deberta = if is_deberta {
        Some(crate::deberta::parse_config(
            &v,
            path,
            hidden_size,
            num_heads,
            max_position_embeddings,
        )?)
    } else {
        None
    };
    let cfg = EncoderConfig {
        model_type,
        family,
        vocab_size: get_usize(&v, path, "vocab_size")?,
        hidden_size,
        num_layers: get_usize(&v, path, "num_hidden_layers")?,
        num_heads,
        intermediate_size: get_usize(&v, path, "intermediate_size")?,
        activation,
        layer_norm_eps,
        max_position_embeddings,
        type_vocab_size: get_usize_or(&v, path, "type_vocab_size", 2)?.max(1),
        pad_token_id,
        num_labels,
        id2label,
        deberta,
    };
    if cfg.max_positions() == 0 {
        return Err(EmbedError::config(
            path,
            "max_position_embeddings",
            format!("{max_position_embeddings} leaves no room for a token"),
        ));
    }
    Ok(cfg)
}

/// How token vectors become one sentence vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pooling {
    /// Average of the token vectors (attention mask respected).
    Mean,
    /// The first token's vector (`[CLS]` / `<s>`).
    Cls,
}

impl Pooling {
    /// The name recorded in fingerprints: `"mean"` or `"cls"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Pooling::Mean => "mean",
            Pooling::Cls => "cls",
        }
    }
}

impl std::str::FromStr for Pooling {
    type Err = EmbedError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "mean" => Ok(Pooling::Mean),
            "cls" => Ok(Pooling::Cls),
            _ => Err(EmbedError::InvalidOption {
                option: "pooling",
                reason: format!("`{s}`: expected `mean` or `cls`"),
            }),
        }
    }
}

/// What the sentence-transformers files of a folder say (all optional).
#[derive(Clone, Debug, Default)]
pub(crate) struct SentenceTransformersConfig {
    pub pooling: Option<Pooling>,
    pub normalize: Option<bool>,
    pub max_seq_length: Option<usize>,
    pub query_prefix: Option<String>,
    pub passage_prefix: Option<String>,
}

/// Reads `modules.json`, the pooling config it points to, `sentence_bert_config.json` and
/// `config_sentence_transformers.json`, whichever exist.
pub(crate) fn sentence_transformers_config(
    dir: &Path,
) -> Result<SentenceTransformersConfig, EmbedError> {
    let mut st = SentenceTransformersConfig::default();
    let mut pooling_dir: Option<PathBuf> = None;
    let modules = dir.join("modules.json");
    if modules.is_file() {
        let v = read_json(&modules)?;
        let list = v
            .as_array()
            .ok_or_else(|| EmbedError::corrupt(&modules, "expected a JSON array of modules"))?;
        st.normalize = Some(false);
        for m in list {
            let kind = m.get("type").and_then(Value::as_str).unwrap_or("");
            let sub = m.get("path").and_then(Value::as_str).unwrap_or("");
            if kind.ends_with(".Pooling") {
                pooling_dir = Some(dir.join(sub));
            } else if kind.ends_with(".Normalize") {
                st.normalize = Some(true);
            }
        }
    } else if dir.join("2_Normalize").is_dir() {
        st.normalize = Some(true);
    }
    let pooling_cfg = pooling_dir
        .unwrap_or_else(|| dir.join("1_Pooling"))
        .join("config.json");
    if pooling_cfg.is_file() {
        let v = read_json(&pooling_cfg)?;
        let flag = |k: &str| v.get(k).and_then(Value::as_bool).unwrap_or(false);
        st.pooling = if flag("pooling_mode_cls_token") {
            Some(Pooling::Cls)
        } else if flag("pooling_mode_mean_tokens") {
            Some(Pooling::Mean)
        } else if let Some(mode) = v.get("pooling_mode").and_then(Value::as_str) {
            Some(mode.parse().map_err(|_| {
                EmbedError::config(
                    &pooling_cfg,
                    "pooling_mode",
                    format!("`{mode}` is not supported (mean, cls)"),
                )
            })?)
        } else {
            return Err(EmbedError::config(
                &pooling_cfg,
                "pooling_mode_*",
                "no supported pooling mode enabled (mean tokens or CLS token)",
            ));
        };
    }
    let sbert = dir.join("sentence_bert_config.json");
    if sbert.is_file() {
        let v = read_json(&sbert)?;
        st.max_seq_length = v
            .get("max_seq_length")
            .and_then(Value::as_u64)
            .map(|x| x as usize);
    }
    let st_cfg = dir.join("config_sentence_transformers.json");
    if st_cfg.is_file() {
        let v = read_json(&st_cfg)?;
        if let Some(prompts) = v.get("prompts").and_then(Value::as_object) {
            let pick = |names: &[&str]| {
                names
                    .iter()
                    .find_map(|n| prompts.get(*n).and_then(Value::as_str))
                    .map(str::to_string)
            };
            st.query_prefix = pick(&["query", "queries"]);
            st.passage_prefix = pick(&["passage", "document", "documents", "doc", "corpus"]);
        }
    }
    Ok(st)
}

/// `sha256:<hex>` of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(bytes);
    let mut s = String::with_capacity(7 + 64);
    s.push_str("sha256:");
    for b in digest {
        s.push_str(&format!("{b:02x}"));
    }
    s
}
