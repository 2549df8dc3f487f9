//! The ingestion gate: which corpus lines an ingest rejected, and whether the latest batch
//! may be promoted under the `[ingest]` policy (a count and/or a percentage of rejected
//! lines), unless a person accepted it with a written reason.
//!
//! Pure: the caller reads the corpus, the index and the policy file; this module decides.

use serde::{Deserialize, Serialize};

/// Why a corpus line was left out of an ingest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RejectReason {
    /// Not JSON, or JSON that is not an object.
    Unparseable,
    /// No `id` (nor BEIR `_id`), or an empty one.
    MissingId,
    /// The ID of an earlier line (the first occurrence is kept).
    DuplicateId,
    /// Nothing to embed: no text (or representation), or only blanks.
    EmptyText,
    /// A precomputed vector whose dimension differs from the index's (or the first line's).
    WrongDimension,
    /// `valid_to` is before the day of the ingest.
    Expired,
    /// Any other field of the wrong type or form (named in the rejection).
    InvalidField,
}

impl RejectReason {
    /// The snake_case name used in JSON and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            RejectReason::Unparseable => "unparseable",
            RejectReason::MissingId => "missing_id",
            RejectReason::DuplicateId => "duplicate_id",
            RejectReason::EmptyText => "empty_text",
            RejectReason::WrongDimension => "wrong_dimension",
            RejectReason::Expired => "expired",
            RejectReason::InvalidField => "invalid_field",
        }
    }
}

impl std::fmt::Display for RejectReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One rejected corpus line: where, which chunk (when its ID could be read), why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    /// The corpus file as given to the ingest.
    pub file: String,
    /// 1-based line number.
    pub line: usize,
    /// The chunk ID, when the line has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub reason: RejectReason,
    /// The field at fault (`-` for the whole line).
    pub field: String,
    /// A one-line explanation (values cut short).
    pub message: String,
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: field `{}`: {}: {}",
            self.file, self.line, self.field, self.reason, self.message
        )
    }
}

/// A person's written acceptance of a batch's rejections (append-only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acceptance {
    /// When it was given (RFC 3339, as the caller formats it).
    pub time: String,
    /// The written reason.
    pub reason: String,
    /// How many rejections the batch had when it was accepted.
    pub rejected: usize,
}

/// The `[ingest]` table of the policy file. With neither limit set, no rejection is allowed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngestPolicy {
    /// At most this many rejected lines per batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rejected: Option<u64>,
    /// At most this percentage (0..=100) of the batch's corpus lines rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rejected_percent: Option<f64>,
}

impl IngestPolicy {
    /// Checks the ranges; the error names the key.
    pub fn validate(&self) -> Result<(), crate::policy::PolicyError> {
        if let Some(p) = self.max_rejected_percent {
            if !(p.is_finite() && (0.0..=100.0).contains(&p)) {
                return Err(crate::policy::PolicyError {
                    key: "ingest.max_rejected_percent".into(),
                    message: format!("must be between 0 and 100, got {p}"),
                });
            }
        }
        Ok(())
    }

    /// Whether `rejected` of `lines` corpus lines is within the policy. Both limits apply
    /// when both are set; with none, zero rejections are allowed.
    pub fn allows(&self, rejected: usize, lines: usize) -> bool {
        let count_ok = match (self.max_rejected, self.max_rejected_percent) {
            (None, None) => rejected == 0,
            (Some(max), _) => rejected as u64 <= max,
            (None, Some(_)) => true,
        };
        let percent_ok = match self.max_rejected_percent {
            Some(p) => rejected == 0 || (lines > 0 && percent(rejected, lines) <= p),
            None => true,
        };
        count_ok && percent_ok
    }
}

/// `rejected` as a percentage of `lines` (0 when there are no lines).
pub fn percent(rejected: usize, lines: usize) -> f64 {
    if lines == 0 {
        0.0
    } else {
        rejected as f64 * 100.0 / lines as f64
    }
}

/// What the gate says about a batch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateOutcome {
    /// The batch judged (the index's latest).
    pub batch: String,
    /// Corpus lines the batch read (accepted + rejected).
    pub lines: usize,
    /// Its rejections, in line order.
    pub rejected: Vec<Rejection>,
    /// `rejected` as a percentage of `lines`.
    pub rejected_percent: f64,
    /// The policy's limits (worded by the report layer: `veredicto_report::gate`).
    pub policy: IngestPolicy,
    /// Whether the rejections are within the policy.
    pub within_policy: bool,
    /// The latest written acceptance of this batch, if any.
    pub accepted: Option<Acceptance>,
    /// Where acceptances of this batch were found: `index manifest` and/or `history
    /// LOCATION` (empty when none was).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub accepted_in: Vec<String>,
    /// `pass` (within policy), `accepted` (over it, but accepted in writing) or `blocked`.
    pub status: GateStatus,
}

/// The gate's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateStatus {
    Pass,
    Accepted,
    Blocked,
}

impl GateOutcome {
    /// Exit code 0 unless blocked.
    pub fn blocks(&self) -> bool {
        self.status == GateStatus::Blocked
    }
}

impl GateOutcome {
    /// Adds acceptances of this batch found elsewhere (the run history), named by `place`:
    /// the latest of all becomes [`GateOutcome::accepted`], and a batch over the policy is
    /// accepted when either place holds an acceptance.
    pub fn with_acceptances(mut self, place: &str, found: &[Acceptance]) -> GateOutcome {
        let Some(latest) = found.last() else {
            return self;
        };
        self.accepted_in.push(place.to_owned());
        let newer = self.accepted.as_ref().is_none_or(|a| {
            crate::time::parse_timestamp_ms(&latest.time)
                >= crate::time::parse_timestamp_ms(&a.time)
        });
        if newer {
            self.accepted = Some(latest.clone());
        }
        if !self.within_policy {
            self.status = GateStatus::Accepted;
        }
        self
    }
}

/// Where [`judge`] says it found the acceptances of the index's own batch record.
pub const IN_MANIFEST: &str = "index manifest";

/// The identity of a batch, whichever folder its index is in: `sha256:<hex>` over its
/// label, time and rejected lines (file, line, ID, reason, field), as a JSON array. The
/// history records acceptances under it, and the gate looks them up by it.
pub fn batch_fingerprint(name: &str, time: &str, rejected: &[Rejection]) -> String {
    let lines: Vec<serde_json::Value> = rejected
        .iter()
        .map(|r| serde_json::json!([r.file, r.line, r.id, r.reason.as_str(), r.field]))
        .collect();
    let value = serde_json::json!([name, time, lines]);
    crate::fingerprint::sha256_bytes(value.to_string().as_bytes())
}

/// Judges a batch: within the policy passes; over it, the latest acceptance (if any)
/// lets it through; otherwise it is blocked.
pub fn judge(
    batch: &str,
    lines: usize,
    rejected: &[Rejection],
    acceptances: &[Acceptance],
    policy: &IngestPolicy,
) -> GateOutcome {
    let within = policy.allows(rejected.len(), lines);
    let accepted = acceptances.last().cloned();
    let status = match (within, &accepted) {
        (true, _) => GateStatus::Pass,
        (false, Some(_)) => GateStatus::Accepted,
        (false, None) => GateStatus::Blocked,
    };
    GateOutcome {
        batch: batch.to_owned(),
        lines,
        rejected: rejected.to_vec(),
        rejected_percent: percent(rejected.len(), lines),
        policy: policy.clone(),
        within_policy: within,
        accepted_in: if acceptances.is_empty() {
            Vec::new()
        } else {
            vec![IN_MANIFEST.to_owned()]
        },
        accepted,
        status,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rej(line: usize) -> Rejection {
        Rejection {
            file: "c.jsonl".into(),
            line,
            id: None,
            reason: RejectReason::EmptyText,
            field: "text".into(),
            message: "nothing to embed".into(),
        }
    }

    #[test]
    fn without_limits_no_rejection_is_allowed() {
        let p = IngestPolicy::default();
        assert!(p.allows(0, 10));
        assert!(!p.allows(1, 10));
    }

    #[test]
    fn count_and_percent_both_apply() {
        let p = IngestPolicy {
            max_rejected: Some(3),
            max_rejected_percent: Some(10.0),
        };
        assert!(p.allows(3, 30));
        assert!(!p.allows(3, 20)); // 15%
        assert!(!p.allows(4, 1000));
        let only_pct = IngestPolicy {
            max_rejected: None,
            max_rejected_percent: Some(1.0),
        };
        assert!(only_pct.allows(23, 10_000));
        assert!(!only_pct.allows(23, 1_000));
    }

    #[test]
    fn over_the_limit_blocks_until_accepted_in_writing() {
        let rs: Vec<_> = (1..=23).map(rej).collect();
        let p = IngestPolicy::default();
        let out = judge("b1", 100, &rs, &[], &p);
        assert_eq!(out.status, GateStatus::Blocked);
        assert!(out.blocks());
        let a = Acceptance {
            time: "2025-11-14T09:30:00Z".into(),
            reason: "known bad export, fixed upstream".into(),
            rejected: 23,
        };
        let out = judge("b1", 100, &rs, std::slice::from_ref(&a), &p);
        assert_eq!(out.status, GateStatus::Accepted);
        assert_eq!(out.accepted, Some(a));
        assert_eq!(judge("b2", 100, &[], &[], &p).status, GateStatus::Pass);
    }

    #[test]
    fn percent_out_of_range_names_the_key() {
        let p = IngestPolicy {
            max_rejected: None,
            max_rejected_percent: Some(101.0),
        };
        assert_eq!(p.validate().unwrap_err().key, "ingest.max_rejected_percent");
    }

    #[test]
    fn an_acceptance_from_the_history_lets_a_batch_through_and_says_where() {
        let rejected = [rej(3), rej(7)];
        let blocked = judge("b", 10, &rejected, &[], &IngestPolicy::default());
        assert_eq!(blocked.status, GateStatus::Blocked);
        assert!(blocked.accepted_in.is_empty());
        let same = blocked.clone().with_acceptances("history h.db", &[]);
        assert_eq!(same, blocked, "nothing found changes nothing");
        let a = |time: &str, reason: &str| Acceptance {
            time: time.into(),
            reason: reason.into(),
            rejected: 2,
        };
        let o = blocked.with_acceptances("history h.db", &[a("2026-11-30T10:00:00Z", "h")]);
        assert_eq!(o.status, GateStatus::Accepted);
        assert_eq!(o.accepted_in, ["history h.db"]);
        // Both places: the newest acceptance is shown, both places are named.
        let m = judge(
            "b",
            10,
            &rejected,
            &[a("2026-11-30T11:00:00Z", "m")],
            &IngestPolicy::default(),
        );
        let o = m.with_acceptances("history h.db", &[a("2026-11-30T10:00:00Z", "h")]);
        assert_eq!(o.accepted_in, [IN_MANIFEST, "history h.db"]);
        assert_eq!(o.accepted.unwrap().reason, "m");
    }

    #[test]
    fn a_batch_fingerprint_follows_label_time_and_rejected_lines() {
        let f = batch_fingerprint("b", "2026-11-30T08:00:00Z", &[rej(3)]);
        assert!(f.starts_with("sha256:"));
        assert_eq!(f, batch_fingerprint("b", "2026-11-30T08:00:00Z", &[rej(3)]));
        assert_ne!(f, batch_fingerprint("b", "2026-11-30T08:00:01Z", &[rej(3)]));
        assert_ne!(f, batch_fingerprint("c", "2026-11-30T08:00:00Z", &[rej(3)]));
        assert_ne!(f, batch_fingerprint("b", "2026-11-30T08:00:00Z", &[rej(4)]));
    }
}
