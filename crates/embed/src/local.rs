//! [`LocalEmbedder`]: a sentence-transformers folder run on the CPU.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::{self, EncoderConfig, Pooling};
use crate::encoder::{Encoder, Seq};
use crate::safetensors::SafeTensors;
use crate::tokenize::{Ids, Tok};
use crate::{EmbedError, Embedder, ModelFingerprint, TextKind};

/// Overrides for what the model folder says, and run-time settings. `None` means "as the
/// folder says" (or the documented default when the folder says nothing).
#[derive(Clone, Debug, Default)]
pub struct LocalEmbedderOptions {
    /// Pooling; default: `1_Pooling/config.json`, else mean.
    pub pooling: Option<Pooling>,
    /// L2 normalisation; default: a `Normalize` module in `modules.json`, else off.
    pub normalize: Option<bool>,
    /// Truncation length in tokens (special tokens included); default:
    /// `sentence_bert_config.json` `max_seq_length`, else the tokenizer's, else 512; never more
    /// than the model's position embeddings allow.
    pub max_tokens: Option<usize>,
    /// Prefix for queries; default: `prompts.query` of `config_sentence_transformers.json`,
    /// else none.
    pub query_prefix: Option<String>,
    /// Prefix for passages; default: `prompts.passage` / `prompts.document`, else none.
    pub passage_prefix: Option<String>,
    /// Texts per forward pass (default 32).
    pub batch_size: Option<usize>,
    /// Threads for inference (default: rayon's global pool). Results do not depend on it.
    pub threads: Option<usize>,
    /// Name recorded in the fingerprint (default: the folder's name).
    pub name: Option<String>,
}

/// A BERT-family sentence embedder loaded from a model folder (see the crate docs).
pub struct LocalEmbedder {
    encoder: Encoder,
    tokenizer: Tok,
    /// The same tokenizer without truncation, to count a text's tokens.
    counter: Tok,
    fingerprint: ModelFingerprint,
    pooling: Pooling,
    batch_size: usize,
    pool: Option<rayon::ThreadPool>,
    folder: PathBuf,
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

/// The files every local model needs: config, tokenizer, weights (read and hashed once).
pub(crate) struct ModelFiles {
    pub cfg: EncoderConfig,
    pub tokenizer_path: PathBuf,
    pub tokenizer_bytes: Vec<u8>,
    pub weights: SafeTensors,
    pub hashes: BTreeMap<String, String>,
}

pub(crate) fn read_model_files(dir: &Path) -> Result<ModelFiles, EmbedError> {
    if !dir.is_dir() {
        return Err(EmbedError::io(
            dir,
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "model folder not found (for all-MiniLM-L6-v2 run scripts/fetch-model.sh)",
            ),
        ));
    }
    let config_path = config::required(dir, "config.json", "model architecture and sizes")?;
    let tokenizer_path = config::required(dir, "tokenizer.json", "the tokenizer")?;
    let weights_path = config::required(
        dir,
        "model.safetensors",
        "the weights; convert a pytorch_model.bin to safetensors first",
    )?;
    let config_bytes = config::read_file(&config_path)?;
    let cfg = config::encoder_config(&config_path)?;
    let tokenizer_bytes = config::read_file(&tokenizer_path)?;
    let weight_bytes = config::read_file(&weights_path)?;
    let mut hashes = BTreeMap::new();
    hashes.insert("config.json".into(), config::sha256_hex(&config_bytes));
    hashes.insert(
        "tokenizer.json".into(),
        config::sha256_hex(&tokenizer_bytes),
    );
    hashes.insert(
        "model.safetensors".into(),
        config::sha256_hex(&weight_bytes),
    );
    let weights = SafeTensors::parse(&weights_path, weight_bytes)?;
    Ok(ModelFiles {
        cfg,
        tokenizer_path,
        tokenizer_bytes,
        weights,
        hashes,
    })
}

pub(crate) fn thread_pool(threads: Option<usize>) -> Result<Option<rayon::ThreadPool>, EmbedError> {
    match threads {
        None => Ok(None),
        Some(0) => Err(EmbedError::InvalidOption {
            option: "threads",
            reason: "must be at least 1".into(),
        }),
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map(Some)
            .map_err(|e| EmbedError::InvalidOption {
                option: "threads",
                reason: e.to_string(),
            }),
    }
}

pub(crate) fn resolve_max_tokens(
    requested: Option<usize>,
    folder_default: Option<usize>,
    cfg: &EncoderConfig,
) -> Result<usize, EmbedError> {
    let limit = cfg.max_positions();
    match requested {
        Some(0) => Err(EmbedError::InvalidOption {
            option: "max_tokens",
            reason: "must be at least 1".into(),
        }),
        Some(n) if n > limit => Err(EmbedError::InvalidOption {
            option: "max_tokens",
            reason: format!("{n} exceeds the model's {limit} position embeddings"),
        }),
        Some(n) => Ok(n),
        None => Ok(folder_default.unwrap_or(512).clamp(1, limit)),
    }
}

impl LocalEmbedder {
    /// Loads the model folder `dir` with the settings the folder declares.
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        Self::load_with(dir, &LocalEmbedderOptions::default())
    }

    /// Loads the model folder `dir`, `opts` overriding what the folder declares.
    pub fn load_with(dir: &Path, opts: &LocalEmbedderOptions) -> Result<Self, EmbedError> {
        // Refused before the weights are read and hashed (other problems of config.json are
        // reported by `read_model_files`, in its order).
        let config_path = dir.join("config.json");
        if matches!(config::encoder_config(&config_path), Ok(c) if c.deberta.is_some()) {
            return Err(EmbedError::UnsupportedArchitecture {
                path: config_path,
                found: "deberta-v2 (DeBERTa-v2/v3 runs only as a CrossEncoder, not as a sentence embedder)"
                    .into(),
                supported: config::EMBEDDER_ARCHITECTURES.to_vec(),
            });
        }
        let files = read_model_files(dir)?;
        let st = config::sentence_transformers_config(dir)?;
        let cfg = files.cfg;
        let max_tokens = resolve_max_tokens(
            opts.max_tokens,
            st.max_seq_length
                .or_else(|| Tok::declared_max_length(&files.tokenizer_bytes)),
            &cfg,
        )?;
        let batch_size = match opts.batch_size {
            Some(0) => {
                return Err(EmbedError::InvalidOption {
                    option: "batch_size",
                    reason: "must be at least 1".into(),
                })
            }
            Some(n) => n,
            None => 32,
        };
        let pooling = opts.pooling.or(st.pooling).unwrap_or(Pooling::Mean);
        let normalize = opts.normalize.or(st.normalize).unwrap_or(false);
        let tokenizer = Tok::from_bytes(&files.tokenizer_path, &files.tokenizer_bytes, max_tokens)?;
        let counter = Tok::from_bytes(
            &files.tokenizer_path,
            &files.tokenizer_bytes,
            usize::MAX / 2,
        )?;
        let encoder = Encoder::load(cfg, &files.weights)?;
        let name = opts.name.clone().unwrap_or_else(|| {
            dir.canonicalize()
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| dir.display().to_string())
        });
        let fingerprint = ModelFingerprint {
            name,
            architecture: encoder.cfg.model_type.clone(),
            files: files.hashes,
            pooling: pooling.as_str().to_string(),
            normalize,
            dim: encoder.cfg.hidden_size,
            max_tokens,
            query_prefix: opts
                .query_prefix
                .clone()
                .or(st.query_prefix)
                .unwrap_or_default(),
            passage_prefix: opts
                .passage_prefix
                .clone()
                .or(st.passage_prefix)
                .unwrap_or_default(),
        };
        Ok(LocalEmbedder {
            encoder,
            tokenizer,
            counter,
            fingerprint,
            pooling,
            batch_size,
            pool: thread_pool(opts.threads)?,
            folder: dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()),
        })
    }

    /// The token ids `text` is embedded from (prefix added, special tokens included,
    /// truncated to `max_tokens`): shows what the model actually reads.
    pub fn token_ids(&self, text: &str, kind: TextKind) -> Result<Vec<u32>, EmbedError> {
        let input = format!("{}{text}", self.prefix(kind));
        let mut ids = self.tokenizer.encode(vec![input])?;
        Ok(ids.pop().map(|e| e.ids).unwrap_or_default())
    }

    fn prefix(&self, kind: TextKind) -> &str {
        match kind {
            TextKind::Query => &self.fingerprint.query_prefix,
            TextKind::Passage => &self.fingerprint.passage_prefix,
        }
    }

    /// Token ids of one batch (prefix added, truncated).
    fn tokenize(&self, texts: &[&str], prefix: &str) -> Result<Vec<Ids>, EmbedError> {
        let inputs: Vec<String> = texts.iter().map(|t| format!("{prefix}{t}")).collect();
        self.tokenizer.encode(inputs)
    }

    /// Embeds `texts` batch after batch; the next batch is tokenized while the current one
    /// runs through the encoder (both on the same thread pool, so tokenization fills the
    /// moments the forward pass leaves a thread idle). Vectors do not depend on it: each
    /// batch's ids are the same whenever they are computed.
    /// Also returns how many texts the tokenizer truncated (counted on the same ids).
    fn embed_pipelined(
        &self,
        texts: &[&str],
        prefix: &str,
    ) -> Result<(Vec<Vec<f32>>, usize), EmbedError> {
        let batches: Vec<&[&str]> = texts.chunks(self.batch_size).collect();
        let mut out = Vec::with_capacity(texts.len());
        let mut truncated = 0usize;
        let mut next = match batches.first() {
            Some(b) => Some(self.tokenize(b, prefix)?),
            None => None,
        };
        for i in 0..batches.len() {
            let Some(ids) = next.take() else { break };
            truncated += ids.iter().filter(|e| e.truncated).count();
            let (vectors, following) = rayon::join(
                || self.embed_ids(&ids),
                || {
                    batches
                        .get(i + 1)
                        .map(|b| self.tokenize(b, prefix))
                        .transpose()
                },
            );
            out.extend(vectors?);
            next = following?;
        }
        Ok((out, truncated))
    }

    /// Runs the encoder over one tokenized batch and pools each sequence.
    fn embed_ids(&self, ids: &[Ids]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let seqs: Vec<Seq<'_>> = ids
            .iter()
            .map(|e| Seq {
                ids: &e.ids,
                type_ids: &e.type_ids,
            })
            .collect();
        let hidden = self.encoder.forward(&seqs, self.tokenizer.path())?;
        let h = hidden.hidden;
        let mut out = Vec::with_capacity(ids.len());
        for i in 0..seqs.len() {
            let rows = hidden.seq(i);
            let n = rows.len() / h;
            let mut v = vec![0f32; h];
            match self.pooling {
                Pooling::Cls => v.copy_from_slice(&rows[..h.min(rows.len())]),
                Pooling::Mean => {
                    for row in rows.chunks_exact(h) {
                        for (a, b) in v.iter_mut().zip(row) {
                            *a += b;
                        }
                    }
                    let inv = 1.0 / n.max(1) as f32;
                    for a in v.iter_mut() {
                        *a *= inv;
                    }
                }
            }
            if self.fingerprint.normalize {
                l2_normalize(&mut v);
            }
            out.push(v);
        }
        Ok(out)
    }
}

/// `v / max(‖v‖, 1e-12)`, as `torch.nn.functional.normalize`.
pub(crate) fn l2_normalize(v: &mut [f32]) {
    let norm = v
        .iter()
        .map(|x| (*x as f64) * (*x as f64))
        .sum::<f64>()
        .sqrt();
    let inv = 1.0 / norm.max(1e-12);
    for x in v.iter_mut() {
        *x = (*x as f64 * inv) as f32;
    }
}

impl Embedder for LocalEmbedder {
    fn fingerprint(&self) -> &ModelFingerprint {
        &self.fingerprint
    }

    fn dim(&self) -> usize {
        self.fingerprint.dim
    }

    fn folder(&self) -> Option<&Path> {
        Some(&self.folder)
    }

    fn token_count(&self, text: &str, kind: TextKind) -> Option<usize> {
        let input = format!("{}{text}", self.prefix(kind));
        let mut ids = self.counter.encode(vec![input]).ok()?;
        ids.pop().map(|e| e.ids.len())
    }

    fn embed(&self, texts: &[&str], kind: TextKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_counting_truncated(texts, kind).map(|(v, _)| v)
    }

    /// The truncation count comes from the ids the vectors are computed from: no second,
    /// untruncated tokenisation.
    fn embed_counting_truncated(
        &self,
        texts: &[&str],
        kind: TextKind,
    ) -> Result<(Vec<Vec<f32>>, Option<usize>), EmbedError> {
        let prefix = self.prefix(kind);
        let run = || self.embed_pipelined(texts, prefix);
        let (vectors, truncated) = match &self.pool {
            Some(pool) => pool.install(run)?,
            None => run()?,
        };
        Ok((vectors, Some(truncated)))
    }
}
