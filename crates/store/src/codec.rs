//! How a report is kept in `reports.body`: its JSON wire format (`docs/exam-json.md`),
//! zlib-compressed.
//!
//! Measured on a synthetic 200-case report (`bench-store`): 172 kB of JSON become 19 kB at
//! zlib level 3 in about 1.2 ms, and read back in 0.2 ms; levels 6 and 9 save another 2 kB
//! for twice the time. A history of 10,000 such runs keeps 190 MB of reports instead of
//! 1.7 GB. The zlib wrapper's Adler-32 checksum also catches a damaged body.

use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use flate2::Compression;
use std::io::{Read, Write};
use veredicto_core::exam::ExamReport;

/// `reports.encoding` of what [`encode`] writes.
pub(crate) const ENCODING: &str = "json+zlib";

/// Plain JSON, which [`decode`] also reads.
pub(crate) const PLAIN: &str = "json";

/// zlib level: the knee of the size/time curve (see the module docs).
const LEVEL: u32 = 3;

/// The report's JSON, compressed.
pub(crate) fn encode(json: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut enc = ZlibEncoder::new(Vec::with_capacity(json.len() / 6), Compression::new(LEVEL));
    enc.write_all(json)?;
    enc.finish()
}

/// The report's JSON from a stored body.
pub(crate) fn decompress(encoding: &str, body: &[u8]) -> Result<Vec<u8>, String> {
    match encoding {
        ENCODING => {
            let mut out = Vec::with_capacity(body.len() * 8);
            ZlibDecoder::new(body)
                .read_to_end(&mut out)
                .map_err(|e| format!("cannot decompress: {e}"))?;
            Ok(out)
        }
        PLAIN => Ok(body.to_vec()),
        other => Err(format!("unknown encoding `{other}`")),
    }
}

/// Parses a report's JSON.
///
/// Compatibility: `veredicto_core` writes `diagnosis[].outranked_by` only when it is not
/// empty, but (as of this writing) requires it when reading, so a report with such a
/// finding does not read back as written. When the plain parse fails, the missing key is
/// filled in with `[]` and the parse retried; the same place is where defaults for keys
/// added to the wire format later belong, so that old runs stay readable.
pub(crate) fn parse(json: &[u8]) -> Result<ExamReport, serde_json::Error> {
    match serde_json::from_slice(json) {
        Ok(report) => Ok(report),
        Err(first) => {
            let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(json) else {
                return Err(first);
            };
            fill_defaults(&mut value);
            serde_json::from_value(value).map_err(|_| first)
        }
    }
}

/// Adds keys that older or current writers leave out.
fn fill_defaults(report: &mut serde_json::Value) {
    let Some(cases) = report.get_mut("cases").and_then(|c| c.as_array_mut()) else {
        return;
    };
    for case in cases {
        let Some(findings) = case.get_mut("diagnosis").and_then(|d| d.as_array_mut()) else {
            continue;
        };
        for finding in findings {
            if let Some(obj) = finding.as_object_mut() {
                obj.entry("outranked_by")
                    .or_insert_with(|| serde_json::Value::Array(Vec::new()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compresses_and_reads_back() {
        let report = crate::synthetic::Synthetic::new(30, 7).report();
        let json = serde_json::to_vec(&report).expect("serialises");
        let body = encode(&json).expect("compresses");
        assert!(
            body.len() < json.len() / 3,
            "{} vs {}",
            body.len(),
            json.len()
        );
        let back = decompress(ENCODING, &body).expect("decompresses");
        assert_eq!(back, json);
        let parsed = parse(&back).expect("parses");
        assert_eq!(
            serde_json::to_value(&parsed).expect("value"),
            serde_json::to_value(&report).expect("value")
        );
        assert_eq!(decompress(PLAIN, &json).as_deref(), Ok(&json[..]));
        assert!(decompress("lz4", &body).is_err());
        assert!(decompress(ENCODING, &body[..body.len() / 2]).is_err());
    }
}
