//! Opening the retriever a command examines: a URI, and for a `fusion:` retriever its arms
//! (`--arm`, `VEREDICTO_ARMS` or `[retriever] arms` of veredicto.toml, resolved in
//! [`crate::Settings::arms`]).

use std::path::{Path, PathBuf};

use veredicto_core::exam::{ArmLatency, ExamReport, FusionReport};
use veredicto_retrieve::fusion::{FusionRetriever, FusionStats, SCHEME};
use veredicto_retrieve::{Options, Retriever};

use crate::Result;

/// A retriever opened, with the handle on its per-arm figures when it is a fusion.
pub struct Opened {
    /// The retriever.
    pub retriever: Box<dyn Retriever>,
    /// A fusion's method and per-arm figures (filled as it answers); `None` for any other
    /// retriever.
    pub fusion: Option<FusionHandle>,
    /// The folder of veredicto's index the retriever reads (itself, or a fusion's first
    /// `index:` arm): the query model is the one that index was built with.
    pub index_dir: Option<PathBuf>,
}

/// What the exam reads of a fusion retriever after it ran: its method and its arms' figures.
#[derive(Debug, Clone)]
pub struct FusionHandle {
    /// The fusion as written after `fusion:` (`rrf?k=60`).
    pub method: String,
    /// The per-arm figures.
    pub stats: FusionStats,
}

/// Whether `uri` names a fusion of arms (`fusion:METHOD?PARAMS`).
pub fn is_fusion(uri: &str) -> bool {
    uri.get(..SCHEME.len())
        .is_some_and(|h| h.eq_ignore_ascii_case(SCHEME))
}

/// Opens `uri`; a `fusion:` URI over `arms` (in order), every other URI alone (`arms` are
/// not read).
pub fn open(uri: &str, arms: &[String], options: &Options) -> Result<Opened> {
    if is_fusion(uri) {
        let fusion = FusionRetriever::open(uri, arms, options)?;
        let handle = FusionHandle {
            method: fusion.fusion().to_string(),
            stats: fusion.stats(),
        };
        return Ok(Opened {
            retriever: Box::new(fusion),
            fusion: Some(handle),
            index_dir: arms.iter().find_map(|a| index_dir(a)),
        });
    }
    Ok(Opened {
        retriever: veredicto_retrieve::open(uri, options)?,
        fusion: None,
        index_dir: index_dir(uri),
    })
}

/// The folder an `index:DIR[?mode=…]` URI names (a folder whose name holds `?` read whole
/// when it exists); `None` for any other URI.
pub fn index_dir(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("index:")?;
    if Path::new(rest).is_dir() {
        return Some(PathBuf::from(rest));
    }
    Some(PathBuf::from(rest.split_once('?').map_or(rest, |(d, _)| d)))
}

/// The report's fusion section: recall at each case's K of each arm (from what it
/// answered) and of the fused ranking (the report's ranks of the expected chunks), the
/// cases only one arm finds, and with `timings` each arm's time.
pub fn fusion_report(handle: &FusionHandle, report: &ExamReport, timings: bool) -> FusionReport {
    let arms = handle
        .stats
        .arms()
        .into_iter()
        .map(|a| {
            let latency = timings.then(|| {
                let total_ms = a.total_seconds() * 1e3;
                ArmLatency {
                    calls: a.seconds.len(),
                    cases: a.cases,
                    total_ms,
                    ms_per_case: if a.cases == 0 {
                        0.0
                    } else {
                        total_ms / a.cases as f64
                    },
                }
            });
            (a.uri, a.kind, a.expected_ranks, latency)
        })
        .collect();
    FusionReport::from_ranks(&handle.method, arms, &report.cases)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_folder_of_a_uri_leaves_its_mode_out() {
        assert_eq!(index_dir("index:kb?mode=bm25"), Some(PathBuf::from("kb")));
        assert_eq!(index_dir("index:kb"), Some(PathBuf::from("kb")));
        assert_eq!(index_dir("run:kb"), None);
        assert!(is_fusion("FUSION:rrf"));
        assert!(!is_fusion("index:fusion:"));
    }
}
