//! [`CrossEncoder`]: a local sequence-classification model scoring (query, passage) pairs.

use std::path::Path;

use crate::config::Family;
use crate::deberta::{Act, DebertaV2};
use crate::encoder::{Dense, Encoder, Hidden, Seq, WeightSource};
use crate::local::{read_model_files, resolve_max_tokens, thread_pool};
use crate::tokenize::Tok;
use crate::{EmbedError, Reranker, RerankerFingerprint};

/// Settings of a [`CrossEncoder`]; `None` means the default.
#[derive(Clone, Debug, Default)]
pub struct CrossEncoderOptions {
    /// Truncation length of a (query, passage) pair in tokens (default: the tokenizer's
    /// declared length, else 512, capped by the position embeddings).
    pub max_tokens: Option<usize>,
    /// Pairs per forward pass (default 32).
    pub batch_size: Option<usize>,
    /// Threads for inference (default: rayon's global pool).
    pub threads: Option<usize>,
    /// For a multi-label model (e.g. NLI), the label whose softmax probability is the score
    /// (default: `entailment` when `id2label` has it). Ignored for single-logit models.
    pub label: Option<String>,
    /// Name recorded in the fingerprint (default: the folder's name).
    pub name: Option<String>,
}

enum Head {
    /// BERT: `classifier(tanh(pooler(h_cls)))`.
    Bert { pooler: Dense, classifier: Dense },
    /// RoBERTa / XLM-R: `out_proj(tanh(dense(h_cls)))`.
    Roberta { dense: Dense, out_proj: Dense },
    /// DeBERTa-v2: `classifier(act(pooler.dense(h_cls)))`, `act` = `pooler_hidden_act`.
    DebertaV2 {
        pooler: Dense,
        act: Act,
        classifier: Dense,
    },
}

/// The transformer under the head.
enum Backbone {
    /// BERT, RoBERTa, XLM-RoBERTa (`encoder.rs`).
    Bert(Box<Encoder>),
    /// DeBERTa-v2 / v3 (`deberta.rs`).
    DebertaV2(Box<DebertaV2>),
}

impl Backbone {
    fn model_type(&self) -> &str {
        match self {
            Backbone::Bert(e) => &e.cfg.model_type,
            Backbone::DebertaV2(d) => &d.cfg.model_type,
        }
    }

    fn forward(&self, seqs: &[Seq<'_>], tokenizer: &Path) -> Result<Hidden, EmbedError> {
        match self {
            Backbone::Bert(e) => e.forward(seqs, tokenizer),
            Backbone::DebertaV2(d) => d.forward(seqs, tokenizer),
        }
    }
}

/// How logits become one score.
#[derive(Clone, Copy, Debug)]
enum ScoreFrom {
    /// The single logit itself.
    Logit,
    /// Softmax probability of this label.
    Softmax(usize),
}

/// A cross-encoder: `BertForSequenceClassification`,
/// `(XLM)RobertaForSequenceClassification` or `DebertaV2ForSequenceClassification` weights in
/// a model folder.
pub struct CrossEncoder {
    encoder: Backbone,
    head: Head,
    tokenizer: Tok,
    fingerprint: RerankerFingerprint,
    score_from: ScoreFrom,
    labels: Vec<String>,
    batch_size: usize,
    pool: Option<rayon::ThreadPool>,
}

impl std::fmt::Debug for CrossEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrossEncoder")
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

impl CrossEncoder {
    /// Loads the model folder `dir` with default options.
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        Self::load_with(dir, &CrossEncoderOptions::default())
    }

    /// Loads the model folder `dir` with `opts`.
    pub fn load_with(dir: &Path, opts: &CrossEncoderOptions) -> Result<Self, EmbedError> {
        let files = read_model_files(dir)?;
        let cfg = files.cfg;
        let h = cfg.hidden_size;
        let n = cfg.num_labels.max(1);
        let root = WeightSource::root(&files.weights);
        let head = if let Some(deberta) = &cfg.deberta {
            // `DebertaV2ForSequenceClassification`: `pooler` and `classifier` at the root.
            Head::DebertaV2 {
                pooler: root.dense("pooler.dense", h, h)?,
                act: deberta.pooler_act,
                classifier: root.dense("classifier", h, n)?,
            }
        } else if root.has("classifier.out_proj.weight") {
            Head::Roberta {
                dense: root.dense("classifier.dense", h, h)?,
                out_proj: root.dense("classifier.out_proj", h, n)?,
            }
        } else if root.has("classifier.weight") {
            let src = WeightSource::detect(&files.weights)?;
            Head::Bert {
                pooler: src.dense("pooler.dense", h, h)?,
                classifier: root.dense("classifier", h, n)?,
            }
        } else {
            return Err(EmbedError::MissingTensor {
                path: files.weights.path().to_path_buf(),
                name: match cfg.family {
                    Family::Bert => "classifier.weight (a *ForSequenceClassification head)",
                    Family::Roberta => {
                        "classifier.out_proj.weight (a *ForSequenceClassification head)"
                    }
                }
                .into(),
                prefixes: vec![String::new()],
            });
        };
        let labels: Vec<String> = (0..n)
            .map(|i| {
                cfg.id2label
                    .get(&i)
                    .cloned()
                    .unwrap_or_else(|| format!("LABEL_{i}"))
            })
            .collect();
        let (score_from, score_name) = if n == 1 {
            (ScoreFrom::Logit, "logit".to_string())
        } else {
            let wanted = opts.label.clone().unwrap_or_else(|| "entailment".into());
            match labels.iter().position(|l| l.eq_ignore_ascii_case(&wanted)) {
                Some(i) => (ScoreFrom::Softmax(i), format!("softmax:{}", labels[i])),
                None => {
                    return Err(EmbedError::InvalidOption {
                        option: "label",
                        reason: format!(
                            "the model has {n} labels {labels:?} and none is `{wanted}`; choose one"
                        ),
                    })
                }
            }
        };
        let max_tokens = resolve_max_tokens(
            opts.max_tokens,
            Tok::declared_max_length(&files.tokenizer_bytes),
            &cfg,
        )?;
        let batch_size = match opts.batch_size {
            Some(0) => {
                return Err(EmbedError::InvalidOption {
                    option: "batch_size",
                    reason: "must be at least 1".into(),
                })
            }
            Some(b) => b,
            None => 32,
        };
        let tokenizer = Tok::from_bytes(&files.tokenizer_path, &files.tokenizer_bytes, max_tokens)?;
        let encoder = if cfg.deberta.is_some() {
            Backbone::DebertaV2(Box::new(DebertaV2::load(cfg, &files.weights)?))
        } else {
            Backbone::Bert(Box::new(Encoder::load(cfg, &files.weights)?))
        };
        let name = opts.name.clone().unwrap_or_else(|| {
            dir.canonicalize()
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| dir.display().to_string())
        });
        Ok(CrossEncoder {
            fingerprint: RerankerFingerprint {
                name,
                architecture: encoder.model_type().to_string(),
                files: files.hashes,
                max_tokens,
                score: score_name,
            },
            encoder,
            head,
            tokenizer,
            score_from,
            labels,
            batch_size,
            pool: thread_pool(opts.threads)?,
        })
    }

    /// The model's labels (`id2label`, or `LABEL_i`), in logit order.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// The raw logits of every (query, passage) pair, one row per passage.
    pub fn logits(&self, query: &str, passages: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let run = || {
            let mut out = Vec::with_capacity(passages.len());
            for chunk in passages.chunks(self.batch_size) {
                out.extend(self.logits_batch(query, chunk)?);
            }
            Ok(out)
        };
        match &self.pool {
            Some(pool) => pool.install(run),
            None => run(),
        }
    }

    fn logits_batch(&self, query: &str, passages: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let pairs: Vec<(&str, &str)> = passages.iter().map(|p| (query, *p)).collect();
        let ids = self.tokenizer.encode(pairs)?;
        let seqs: Vec<Seq<'_>> = ids
            .iter()
            .map(|e| Seq {
                ids: &e.ids,
                type_ids: &e.type_ids,
            })
            .collect();
        let hidden = self.encoder.forward(&seqs, self.tokenizer.path())?;
        let h = hidden.hidden;
        let m = seqs.len();
        let mut cls = vec![0f32; m * h];
        for i in 0..m {
            let rows = hidden.seq(i);
            if rows.len() >= h {
                cls[i * h..(i + 1) * h].copy_from_slice(&rows[..h]);
            }
        }
        let (first, act, second) = match &self.head {
            Head::Bert { pooler, classifier } => (pooler, Act::Tanh, classifier),
            Head::Roberta { dense, out_proj } => (dense, Act::Tanh, out_proj),
            Head::DebertaV2 {
                pooler,
                act,
                classifier,
            } => (pooler, *act, classifier),
        };
        let mut mid = vec![0f32; m * first.out_dim()];
        first.apply_exact(&cls, m, &mut mid);
        act.apply(&mut mid);
        let n = second.out_dim();
        let mut logits = vec![0f32; m * n];
        second.apply_exact(&mid, m, &mut logits);
        Ok(logits.chunks_exact(n).map(<[f32]>::to_vec).collect())
    }
}

impl Reranker for CrossEncoder {
    fn fingerprint(&self) -> &RerankerFingerprint {
        &self.fingerprint
    }

    fn score(&self, query: &str, passages: &[&str]) -> Result<Vec<f32>, EmbedError> {
        let logits = self.logits(query, passages)?;
        Ok(logits
            .into_iter()
            .map(|row| match self.score_from {
                ScoreFrom::Logit => row[0],
                ScoreFrom::Softmax(i) => {
                    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let sum: f32 = row.iter().map(|x| (x - max).exp()).sum();
                    (row[i] - max).exp() / sum
                }
            })
            .collect())
    }
}
