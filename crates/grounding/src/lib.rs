//! Grounding audit: frozen cases, per-claim association and support verdicts with reasons,
//! grounding measures, the `check` gate, model suggestions, evidence sheets, append-only
//! reviews and hashed audit packages, over a case file or a recorded run (`veredicto_app`'s `AuditTarget`).
//! No clock, no environment: callers pass times and versions. `veredicto-report`'s `audit`
//! module renders the results; `docs/grounding.md` shows the API in use.

mod absence;
mod agreement;
mod bundle;
pub mod check;
mod citation_mark;
mod compare;
mod error;
mod impact;
mod jsonl;
mod judge;
mod load;
mod metrics;
mod model;
mod package;
mod package_read;
mod policy;
mod relevance;
mod relevance_judge;
mod review;
mod scifact;
mod sheet;
pub mod suggest;

pub use absence::{
    absence_changes, absences, configuration_changes, fact_coverage, reopened_absences,
    AbsenceEntry, FactCoverage, ReopenedAbsence,
};
pub use agreement::{cohen_kappa, reviewer_pairs, Agreement, VERDICTS};
pub use bundle::{build_package, PackageInputs};
pub use check::{
    check, check_with_marks, check_with_relevance, off_topic_violation, CheckOptions, CheckOutcome,
    CheckTotals, RelevanceInForce,
};
pub use citation_mark::{
    citation_marks_of, citation_precision, cited_by, effective_mark, new_citation_mark,
    CitationMark, CitationMarkRecord, CitationPrecision, CITATION_MARKS,
};
pub use compare::{compare, AnswerComparison, Comparison, NotCompared};
pub use error::{GroundingError, Issue};
pub use impact::{impact, load_sources, Impact, SourceSet};
pub use jsonl::{cut_quoted, parse_log, AppendReport, LogRead, TornTail, QUOTE_CHARS};
pub use judge::{
    judge_inputs, judge_method, judge_user_message, parse_judge_reply, JudgeInput, JudgeVerdict,
    JUDGE_SYSTEM_PROMPT, JUDGE_VERSION,
};
pub use load::{load_cases, parse_cases, passage_hash, validate};
pub use metrics::{answer_metrics, claim_supported, document_recall_at, AnswerMetrics};
pub use model::*;
pub use package::{
    check_recorded_run, members_of, seal, seal_run, sha256_hex, tar_gz, unsafe_member_path,
    verify_files, write_dir, Files, Manifest, ManifestEntry, ManifestRun, Member, Members,
    MissingPart, RecordedRun, Verification, MANIFEST, MANIFEST_HASH, PACKAGE_FORMAT,
};
pub use package_read::{
    read_package, read_package_bytes, read_package_with, scan_package, scan_tar_gz, verify_package,
    verify_package_bytes, ReadLimits, Scan, DEFAULT_MAX_MEMBERS, DEFAULT_MAX_MEMBER_BYTES,
    DEFAULT_MAX_TOTAL_BYTES,
};
pub use policy::{load_policy, violations, GroundingPolicy};
pub use relevance::{
    effective_relevance, new_relevance_review, relevance_reviews, split_review_kinds,
    split_review_lines, unknown_answer, Relevance, RelevanceRecord, ReviewKinds, ReviewLine,
    RELEVANCE_VERDICTS,
};
pub use relevance_judge::{
    latest_relevance_suggestion, parse_relevance_reply, relevance_method, relevance_suggestions,
    relevance_user_message, split_suggestion_lines, RelevanceOutcome, RelevanceSuggestion,
    RelevanceVerdict, SuggestionLine, RELEVANCE_SYSTEM_PROMPT, RELEVANCE_VERSION,
};
pub use review::{
    append_citation_mark, append_relevance, append_review, new_review, parse_review_log,
    read_review_lines, read_review_log, read_reviews, review_log_path, ReviewRecord,
};
pub use scifact::scifact_cases;
pub use sheet::{
    build_sheet, build_sheet_with_marks, build_sheet_with_relevance, effective_support, to_csv,
    to_html, to_json, to_markdown, SheetRow,
};

pub use suggest::{
    append_suggestion_lines, append_suggestions, argmax, judge_suggestions, label_to_support,
    nli_inputs, nli_suggestions, read_suggestion_lines, read_suggestion_log, read_suggestions,
    softmax, suggestion_log_path, suggestion_pairs, Judge, JudgeOutcome, JudgeReply, NliModel,
    SuggestError, SuggestionRecord, NLI_METHOD,
};

/// The JSON Schema of case files (same text as `docs/grounding-schema.json`).
pub const CASE_SCHEMA_JSON: &str = include_str!("../schema/grounding-schema.json");
