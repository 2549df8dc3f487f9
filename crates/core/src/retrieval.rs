//! Rules applied to what a retriever answered, before any measure reads it: the same for
//! every source (the own index, a run file, HTTP, a command, pgvector, OpenSearch /
//! Elasticsearch, Qdrant).
//!
//! - **Duplicate chunk IDs** ([`DuplicateRule`]): a list that names one chunk twice would
//!   count it as two hits. By default the first occurrence in rank order is kept, later ones
//!   are removed and the list is re-ranked densely ([`remove_duplicates`]); what was removed
//!   is reported per case ([`RemovedDuplicates`]). `refuse` stops instead, naming the case
//!   and the chunk ([`first_duplicate`]).
//! - **A retriever that failed** ([`FailureLimit`]): cases the retriever failed for are
//!   not figures about the knowledge base. Beyond a limit (by default more than a quarter of
//!   the cases, and always when every case failed) the exam cannot judge anything.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::str::FromStr;

/// Most repeated IDs listed per case in [`RemovedDuplicates::ids`].
pub const MAX_LISTED_DUPLICATES: usize = 20;

/// What to do with a chunk ID that a retriever returns more than once for one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DuplicateRule {
    /// Keep the first occurrence in rank order, remove the later ones, re-rank densely and
    /// report what was removed (`keep-first`, the default).
    #[default]
    KeepFirst,
    /// Stop with an error naming the case and the chunk (`refuse`).
    Refuse,
}

impl DuplicateRule {
    /// The rule's name as flags and the project file spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            DuplicateRule::KeepFirst => "keep-first",
            DuplicateRule::Refuse => "refuse",
        }
    }
}

impl fmt::Display for DuplicateRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DuplicateRule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "keep-first" => Ok(DuplicateRule::KeepFirst),
            "refuse" => Ok(DuplicateRule::Refuse),
            other => Err(format!(
                "expected `keep-first` or `refuse`, got `{}`",
                crate::redact::short(other)
            )),
        }
    }
}

/// The duplicates removed from one case's list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemovedDuplicates {
    /// Results removed (each later occurrence of an ID counts once).
    pub count: usize,
    /// The IDs that were repeated, each once, in the rank order of their first removed
    /// occurrence; at most [`MAX_LISTED_DUPLICATES`].
    pub ids: Vec<String>,
}

/// Keeps the first occurrence of each ID (`id` gives an item's) in the order given, removes
/// the later ones and closes the gaps, so ranks stay contiguous. `None` when nothing was
/// removed.
pub fn remove_duplicates<T>(
    items: &mut Vec<T>,
    id: impl Fn(&T) -> &str,
) -> Option<RemovedDuplicates> {
    let mut seen: HashSet<String> = HashSet::with_capacity(items.len());
    let mut keep = Vec::with_capacity(items.len());
    let mut ids: Vec<String> = Vec::new();
    let mut listed: HashSet<String> = HashSet::new();
    for item in items.iter() {
        let key = id(item);
        if seen.contains(key) {
            keep.push(false);
            if ids.len() < MAX_LISTED_DUPLICATES && listed.insert(key.to_owned()) {
                ids.push(key.to_owned());
            }
        } else {
            seen.insert(key.to_owned());
            keep.push(true);
        }
    }
    let count = keep.iter().filter(|k| !**k).count();
    if count == 0 {
        return None;
    }
    let mut flags = keep.into_iter();
    items.retain(|_| flags.next().unwrap_or(true));
    Some(RemovedDuplicates { count, ids })
}

/// The first repeated ID in rank order: (its ID, the 1-based rank of its first occurrence,
/// the 1-based rank of the repetition), the repetition as early as possible.
pub fn first_duplicate<T>(items: &[T], id: impl Fn(&T) -> &str) -> Option<(String, usize, usize)> {
    let mut first: HashMap<&str, usize> = HashMap::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let key = id(item);
        if let Some(&at) = first.get(key) {
            return Some((key.to_owned(), at + 1, i + 1));
        }
        first.insert(key, i);
    }
    None
}

/// Ranks known beyond a list (chunk ID → 1-based rank) after `removed` duplicates were taken
/// out of its first `listed` places: ranks beyond the list move up by `removed`, so the
/// ranking stays contiguous.
pub fn shift_ranks_beyond(
    known: &mut BTreeMap<String, (usize, Option<f64>)>,
    listed: usize,
    removed: usize,
) {
    for (rank, _) in known.values_mut() {
        if *rank > listed {
            *rank = rank.saturating_sub(removed).max(1);
        }
    }
}

/// The most cases a retriever may fail for before the exam stops with an error instead of
/// a verdict. Whatever the limit, an exam in which every case failed is an error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FailureLimit {
    /// At most this many cases (`3`; `0`: any failure is an error).
    Count(usize),
    /// At most this share of the cases, 0 to 1 (`25%`).
    Share(f64),
}

/// The default limit: a quarter of the cases.
pub const DEFAULT_FAILURE_LIMIT: FailureLimit = FailureLimit::Share(0.25);

impl Default for FailureLimit {
    fn default() -> Self {
        DEFAULT_FAILURE_LIMIT
    }
}

impl FailureLimit {
    /// Whether `failed` of `cases` cases is more than the limit allows (always when every
    /// case failed). Shares allow `⌊share × cases⌋` failures (1e-9 tolerance): 25% of 8 is
    /// 2, 25% of 3 is 0.
    pub fn exceeded(self, failed: usize, cases: usize) -> bool {
        if failed == 0 {
            return false;
        }
        if failed >= cases {
            return true;
        }
        failed > self.allowed(cases)
    }

    /// How many failing cases of `cases` the limit allows (before "every case failed").
    pub fn allowed(self, cases: usize) -> usize {
        match self {
            FailureLimit::Count(n) => n,
            FailureLimit::Share(s) => (s * cases as f64 + 1e-9).floor().max(0.0) as usize,
        }
    }
}

impl fmt::Display for FailureLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailureLimit::Count(n) => write!(f, "{n}"),
            FailureLimit::Share(s) => {
                let p = s * 100.0;
                if (p - p.round()).abs() < 1e-9 {
                    write!(f, "{}%", p.round() as i64)
                } else {
                    write!(f, "{p}%")
                }
            }
        }
    }
}

impl FromStr for FailureLimit {
    type Err = String;
    /// `N` (a number of cases) or `P%` (a share of the cases, 0 to 100).
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let bad = || {
            format!(
                "expected a number of cases (`3`) or a share of the cases (`10%`), got `{}`",
                crate::redact::short(s)
            )
        };
        match t.strip_suffix('%') {
            Some(p) => {
                let v: f64 = p.trim().parse().map_err(|_| bad())?;
                if v.is_finite() && (0.0..=100.0).contains(&v) {
                    Ok(FailureLimit::Share(v / 100.0))
                } else {
                    Err(format!(
                        "a share of the cases must be between 0% and 100%, got `{}`",
                        crate::redact::short(s)
                    ))
                }
            }
            None => t
                .parse::<usize>()
                .map(FailureLimit::Count)
                .map_err(|_| bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_occurrence_is_kept_and_ranks_close_up() {
        let mut list = vec!["c1", "c1", "x", "c1", "y", "x", "c1"];
        let removed = remove_duplicates(&mut list, |s| s).unwrap();
        assert_eq!(list, ["c1", "x", "y"]);
        assert_eq!(removed.count, 4);
        assert_eq!(removed.ids, ["c1", "x"]);
        let mut clean = vec!["a", "b"];
        assert_eq!(remove_duplicates(&mut clean, |s| s), None);
        assert_eq!(clean, ["a", "b"]);
    }

    #[test]
    fn the_listed_ids_are_bounded_and_the_count_is_not() {
        let mut list: Vec<String> = (0..30).map(|i| format!("c{i}")).collect();
        list.extend(list.clone());
        let removed = remove_duplicates(&mut list, String::as_str).unwrap();
        assert_eq!(removed.count, 30);
        assert_eq!(removed.ids.len(), MAX_LISTED_DUPLICATES);
        assert_eq!(removed.ids[0], "c0");
        assert_eq!(list.len(), 30);
    }

    #[test]
    fn the_first_duplicate_names_both_ranks() {
        assert_eq!(
            first_duplicate(&["a", "b", "b", "a"], |s| s),
            Some(("b".to_owned(), 2, 3))
        );
        assert_eq!(first_duplicate(&["a", "b"], |s| s), None);
    }

    #[test]
    fn known_ranks_beyond_the_list_move_up_by_the_removed_count() {
        let mut known = BTreeMap::from([
            ("in".to_owned(), (2, None)),
            ("beyond".to_owned(), (15, Some(0.5))),
        ]);
        shift_ranks_beyond(&mut known, 10, 3);
        assert_eq!(known["in"].0, 2);
        assert_eq!(known["beyond"], (12, Some(0.5)));
    }

    #[test]
    fn failure_limits_parse_print_and_decide() {
        for text in ["0", "3", "10%", "25%", "12.5%", "100%"] {
            assert_eq!(text.parse::<FailureLimit>().unwrap().to_string(), text);
        }
        for bad in ["", "-1", "x", "101%", "-5%", "nan%"] {
            assert!(bad.parse::<FailureLimit>().is_err(), "{bad}");
        }
        let quarter = DEFAULT_FAILURE_LIMIT;
        assert!(!quarter.exceeded(0, 4));
        assert!(!quarter.exceeded(1, 4));
        assert!(quarter.exceeded(2, 4));
        assert!(quarter.exceeded(1, 3), "25% of 3 cases allows none");
        assert!(!quarter.exceeded(2, 8));
        assert!(quarter.exceeded(3, 8));
        // Every case failing is always an error, whatever the limit.
        assert!(FailureLimit::Share(1.0).exceeded(5, 5));
        assert!(FailureLimit::Count(10).exceeded(2, 2));
        assert!(!FailureLimit::Count(10).exceeded(2, 3));
        assert!(FailureLimit::Count(0).exceeded(1, 100));
    }

    #[test]
    fn duplicate_rules_parse_and_print_back() {
        for text in ["keep-first", "refuse"] {
            assert_eq!(text.parse::<DuplicateRule>().unwrap().to_string(), text);
        }
        assert!("keep_first".parse::<DuplicateRule>().is_err());
        assert_eq!(DuplicateRule::default(), DuplicateRule::KeepFirst);
    }
}
