//! A minimal reader for the safetensors format: an 8-byte little-endian header length, a JSON
//! header `{name: {dtype, shape, data_offsets: [start, end]}, "__metadata__": {...}}`, then the
//! raw little-endian tensor bytes. Every check failure names the file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::EmbedError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dtype {
    F32,
    F16,
    Bf16,
    F64,
    I64,
}

impl Dtype {
    fn parse(s: &str) -> Option<Dtype> {
        Some(match s {
            "F32" => Dtype::F32,
            "F16" => Dtype::F16,
            "BF16" => Dtype::Bf16,
            "F64" => Dtype::F64,
            "I64" => Dtype::I64,
            _ => return None,
        })
    }

    fn size(self) -> usize {
        match self {
            Dtype::F32 => 4,
            Dtype::F16 | Dtype::Bf16 => 2,
            Dtype::F64 | Dtype::I64 => 8,
        }
    }
}

#[derive(Debug)]
struct Entry {
    dtype: Option<Dtype>,
    dtype_name: String,
    shape: Vec<usize>,
    start: usize,
    end: usize,
}

/// A parsed safetensors file held in memory.
#[derive(Debug)]
pub(crate) struct SafeTensors {
    path: PathBuf,
    data: Vec<u8>,
    base: usize,
    entries: HashMap<String, Entry>,
}

const MAX_HEADER: u64 = 100 << 20;

impl SafeTensors {
    /// Parses `bytes` (the whole file) read from `path`.
    pub(crate) fn parse(path: &Path, data: Vec<u8>) -> Result<SafeTensors, EmbedError> {
        let bad = |reason: String| EmbedError::corrupt(path, reason);
        if data.len() < 8 {
            return Err(bad(format!(
                "{} bytes, too short for a safetensors header",
                data.len()
            )));
        }
        let mut len_bytes = [0u8; 8];
        len_bytes.copy_from_slice(&data[..8]);
        let header_len = u64::from_le_bytes(len_bytes);
        if header_len > MAX_HEADER || header_len > (data.len() - 8) as u64 {
            return Err(bad(format!(
                "header length {header_len} does not fit in a {}-byte file (not a safetensors file, or truncated)",
                data.len()
            )));
        }
        let base = 8 + header_len as usize;
        let header: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(&data[8..base])
                .map_err(|e| bad(format!("header is not a JSON object: {e}")))?;
        let body_len = data.len() - base;
        let mut entries = HashMap::new();
        for (name, meta) in header {
            if name == "__metadata__" {
                continue;
            }
            let entry = parse_entry(&meta)
                .ok_or_else(|| bad(format!("tensor `{name}`: malformed header entry {meta}")))?;
            if entry.end < entry.start || entry.end > body_len {
                return Err(bad(format!(
                    "tensor `{name}`: data offsets [{}, {}] outside the {body_len} data bytes (truncated file?)",
                    entry.start, entry.end
                )));
            }
            if let Some(dtype) = entry.dtype {
                let numel: usize = entry.shape.iter().product();
                if numel * dtype.size() != entry.end - entry.start {
                    return Err(bad(format!(
                        "tensor `{name}`: shape {:?} of {} needs {} bytes, offsets span {}",
                        entry.shape,
                        entry.dtype_name,
                        numel * dtype.size(),
                        entry.end - entry.start
                    )));
                }
            }
            entries.insert(name, entry);
        }
        Ok(SafeTensors {
            path: path.to_path_buf(),
            data,
            base,
            entries,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn contains(&self, name: &str) -> bool {
        self.entries.contains_key(name)
    }

    pub(crate) fn shape(&self, name: &str) -> Option<&[usize]> {
        self.entries.get(name).map(|e| e.shape.as_slice())
    }

    /// The tensor `name` as f32 (F16, BF16 and F64 are converted).
    pub(crate) fn get_f32(&self, name: &str) -> Result<Vec<f32>, EmbedError> {
        let entry = self
            .entries
            .get(name)
            .ok_or_else(|| EmbedError::MissingTensor {
                path: self.path.clone(),
                name: name.to_string(),
                prefixes: vec![],
            })?;
        let bytes = &self.data[self.base + entry.start..self.base + entry.end];
        let data: Vec<f32> = match entry.dtype {
            Some(Dtype::F32) => bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            Some(Dtype::F16) => bytes
                .chunks_exact(2)
                .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
                .collect(),
            Some(Dtype::Bf16) => bytes
                .chunks_exact(2)
                .map(|b| f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16))
                .collect(),
            Some(Dtype::F64) => bytes
                .chunks_exact(8)
                .map(|b| {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(b);
                    f64::from_le_bytes(a) as f32
                })
                .collect(),
            Some(Dtype::I64) | None => {
                return Err(EmbedError::corrupt(
                    &self.path,
                    format!(
                        "tensor `{name}` has dtype {}, expected a floating-point type (F32, F16, BF16, F64)",
                        entry.dtype_name
                    ),
                ))
            }
        };
        Ok(data)
    }
}

fn parse_entry(meta: &serde_json::Value) -> Option<Entry> {
    let obj = meta.as_object()?;
    let dtype_name = obj.get("dtype")?.as_str()?.to_string();
    let shape = obj
        .get("shape")?
        .as_array()?
        .iter()
        .map(|v| v.as_u64().map(|d| d as usize))
        .collect::<Option<Vec<_>>>()?;
    let offsets = obj.get("data_offsets")?.as_array()?;
    if offsets.len() != 2 {
        return None;
    }
    let start = offsets[0].as_u64()? as usize;
    let end = offsets[1].as_u64()? as usize;
    Some(Entry {
        dtype: Dtype::parse(&dtype_name),
        dtype_name,
        shape,
        start,
        end,
    })
}

/// IEEE 754 half to single precision (exact).
fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exp = ((h >> 10) & 0x1f) as u32;
    let frac = (h & 0x3ff) as u32;
    let bits = match exp {
        0 if frac == 0 => sign,
        0 => {
            // Subnormal: value = frac * 2^-24.
            let v = frac as f32 * f32::from_bits(0x3380_0000); // 2^-24
            return if sign != 0 { -v } else { v };
        }
        0x1f => sign | 0x7f80_0000 | (frac << 13),
        _ => sign | ((exp + 127 - 15) << 23) | (frac << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_conversion_is_exact_on_known_values() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert!(f16_to_f32(0x7c00).is_infinite());
        assert_eq!(f16_to_f32(0x8000), -0.0);
    }

    #[test]
    fn truncated_header_is_named() {
        let err = SafeTensors::parse(Path::new("m.safetensors"), vec![1, 2, 3]).unwrap_err();
        assert!(err.to_string().contains("m.safetensors"), "{err}");
    }
}
