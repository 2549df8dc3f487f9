//! Loading `tokenizer.json` with the `tokenizers` crate, padding off, truncation set by us.

use std::path::{Path, PathBuf};

use tokenizers::{
    EncodeInput, Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy,
};

use crate::EmbedError;

/// A tokenizer that never pads and truncates to a fixed number of tokens (special tokens
/// included), longest input first for pairs.
pub(crate) struct Tok {
    inner: Tokenizer,
    path: PathBuf,
}

/// Token ids and token type ids of one input.
pub(crate) struct Ids {
    pub ids: Vec<u32>,
    pub type_ids: Vec<u32>,
    /// Whether the input was longer than the truncation length (tokens were cut off).
    pub truncated: bool,
}

impl Tok {
    /// Parses `bytes` (the content of `path`).
    pub(crate) fn from_bytes(
        path: &Path,
        bytes: &[u8],
        max_tokens: usize,
    ) -> Result<Tok, EmbedError> {
        let mut inner = Tokenizer::from_bytes(bytes)
            .map_err(|e| EmbedError::corrupt(path, format!("not a valid tokenizer.json: {e}")))?;
        inner.with_padding(None);
        inner
            .with_truncation(Some(TruncationParams {
                direction: TruncationDirection::Right,
                max_length: max_tokens,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            }))
            .map_err(|e| EmbedError::Tokenizer {
                path: path.to_path_buf(),
                reason: format!("cannot truncate to {max_tokens} tokens: {e}"),
            })?;
        Ok(Tok {
            inner,
            path: path.to_path_buf(),
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Tokenizes `inputs` (single texts or pairs), special tokens added.
    pub(crate) fn encode<'s, E>(&self, inputs: Vec<E>) -> Result<Vec<Ids>, EmbedError>
    where
        E: Into<EncodeInput<'s>> + Send,
    {
        let encodings =
            self.inner
                .encode_batch_fast(inputs, true)
                .map_err(|e| EmbedError::Tokenizer {
                    path: self.path.clone(),
                    reason: e.to_string(),
                })?;
        Ok(encodings
            .into_iter()
            .map(|e| Ids {
                ids: e.get_ids().to_vec(),
                type_ids: e.get_type_ids().to_vec(),
                truncated: !e.get_overflowing().is_empty(),
            })
            .collect())
    }

    /// The tokenizer's own truncation length in `tokenizer.json`, if any (read before we
    /// override it).
    pub(crate) fn declared_max_length(bytes: &[u8]) -> Option<usize> {
        let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
        v.get("truncation")?
            .get("max_length")?
            .as_u64()
            .map(|x| x as usize)
    }
}
