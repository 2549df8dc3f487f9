//! The words of the typed findings core returns: one function per family renders every
//! variant to its sentence. The renderers word at render time; the JSON renderers
//! ([`crate::json`]) write a worded copy ([`worded_exam`], [`worded_runs`],
//! [`worded_comparison`]) so the JSON keeps the sentences beside `kind` and the numbers
//! without any caller having to remember to word the data first.

use std::collections::BTreeMap;
use veredicto_core::compare::{
    short_time, CaseGroup, Comparison, Compatibility, EnteredChunk, Pattern, PatternFinding,
    PatternSeen, RunsDiagnosis, RunsNote, SettingChange,
};
use veredicto_core::diagnosis::{DiagnosisFinding, Finding};
use veredicto_core::exam::ExamReport;

/// The sentence of a diagnosis finding (the `finding` field of the JSON).
pub fn diagnosis(d: &DiagnosisFinding) -> String {
    use DiagnosisFinding as D;
    match d {
        D::NotInCorpus { source } if source == "index" => {
            "expected chunk not in the index (never ingested)".to_owned()
        }
        D::NotInCorpus { source } => format!("expected chunk not in the {source}"),
        D::NotInCollection { collection } => format!(
            "expected chunk not in the {collection}: asked by ID, the retriever does not hold it (deleted, never loaded, or stored under another ID), so nothing else can be blamed"
        ),
        D::NoText => "chunk has no text".to_owned(),
        D::TableWithoutHeader { table_lines } => format!(
            "table without a header row: {table_lines} table lines and no header separator (|---|)"
        ),
        D::TableCutMidRow { last_line } => {
            format!("table cut mid-row: last line is `{last_line}`")
        }
        D::EndsMidSentence { tail } => format!("text ends mid-sentence: `…{tail}`"),
        D::TooShort { chars, min } => {
            format!("very short chunk: {chars} characters (< {min})")
        }
        D::TooLong { chars, max } => format!("very long chunk: {chars} characters (> {max})"),
        D::TableWithoutDescription => {
            "table without a description: no representation, the raw table is embedded"
                .to_owned()
        }
        D::NoRepresentation => "no representation: the raw content is embedded".to_owned(),
        D::RepresentationIsTable => "representation is the raw table, not a description".to_owned(),
        D::MostlyNumbers { digit_share } => format!(
            "representation is mostly numbers ({:.0}% digits)",
            digit_share * 100.0
        ),
        D::DomainMismatch {
            chunk_domain,
            case_domain,
        } => format!("chunk domain `{chunk_domain}` differs from the case's `{case_domain}`"),
        D::ValidityEnded {
            valid_to,
            exam_date,
        } => format!("validity window ended on {valid_to} (exam date {exam_date})"),
        D::ValidityNotStarted {
            valid_from,
            exam_date,
        } => format!("validity window starts on {valid_from} (exam date {exam_date})"),
        // The precision of the tables (four decimals), not every digit of an f64.
        D::Buried {
            rank,
            score: Some(s),
            k,
        } => format!("buried at rank {rank} (score {s:.4}) below the top {k}"),
        D::Buried {
            rank,
            score: None,
            k,
        } => format!("buried at rank {rank} below the top {k}"),
        D::NotRetrieved { results } => {
            format!("not retrieved at all ({results} results for this case)")
        }
        D::NotWithinDepth { depth, results } => {
            format!("not within depth {depth} ({results} results for this case)")
        }
        D::NotInRun { results } => format!("not in the run ({results} results for this case)"),
        D::RetrieverFailed { error } => format!("the retriever failed for this case: {error}"),
        D::LostByAnn {
            exact_rank,
            served_rank,
        } => format!(
            "lost by the ANN index: exact rank {exact_rank}, served rank {}",
            served_rank.map_or("—".to_owned(), |r| r.to_string())
        ),
        D::MissedUnderExactToo => "misses expected chunks under exact search too: not the ANN index (embedding, chunking or labels)".to_owned(),
        D::MissingUnderExactToo { missing, collection } => format!(
            "misses expected chunks under exact search too because {missing} of them {} not in the {collection}: neither the ANN index nor the embedding",
            if *missing == 1 { "is" } else { "are" }
        ),
        D::StructuralNoise {
            k,
            noise,
            max_noise,
            expected,
            perfect_noise,
            suggested_top_k,
        } => format!(
            "structural noise: {noise} of the top {k} results score below the worst expected chunk (ceiling {max_noise}); with {expected} expected chunk(s) even a perfect ranking leaves {perfect_noise}: lower this case's top_k to {suggested_top_k}, or calibrate the ceiling"
        ),
        D::RankingNoise { k, noise, max_noise } => format!(
            "{noise} of the top {k} results score below the worst expected chunk (ceiling {max_noise}): generic descriptions, mixed chunks or loose facets"
        ),
        D::DocumentNotInCorpus { doc_id, source } => format!(
            "no chunk of the {source} is located in document `{doc_id}` (never ingested, or its chunks carry no doc_id/start/end)"
        ),
        D::EvidenceDropped { uncovered, chars } => format!(
            "{uncovered} of the evidence's {chars} characters are in no chunk: the chunking dropped that text, so no ranking can retrieve it"
        ),
        D::EvidenceSplit { chunks } => format!(
            "evidence split across chunks {}",
            holding_chunks(chunks)
        ),
        D::TableHeaderApart { header, rows } => format!(
            "the table's header row is in chunk {}, its rows in {}",
            header.id,
            rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>().join(", ")
        ),
        D::EvidenceBuried {
            rank,
            score,
            k,
            covered,
            chunks,
        } => format!(
            "covered only at rank {rank}{} below the top {k} ({}% of it in the top {k}); held by {}",
            score.map(|s| format!(" (score {s:.4})")).unwrap_or_default(),
            crate::fmt::pct0(*covered),
            holding_chunks(chunks)
        ),
        D::EvidenceNotRetrieved {
            results,
            covered,
            chunks,
        } => format!(
            "not covered within the {results} results for this case ({}% of it in the top K); held by {}",
            crate::fmt::pct0(*covered),
            if chunks.is_empty() {
                "no chunk".to_owned()
            } else {
                holding_chunks(chunks)
            }
        ),
    }
}

/// `c17 (rank 2) and c18 (rank 23)`; a chunk not retrieved says so.
fn holding_chunks(chunks: &[veredicto_core::evidence::HoldingChunk]) -> String {
    let named: Vec<String> = chunks
        .iter()
        .map(|c| match c.rank {
            Some(r) => format!("{} (rank {r})", c.id),
            None => format!("{} (not retrieved)", c.id),
        })
        .collect();
    match named.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// The sentence of `f`: worded from its kind, or, for a finding recorded before findings
/// were typed, the sentence it was stored with.
pub fn finding_sentence(f: &Finding) -> String {
    match &f.detail {
        Some(d) => diagnosis(d),
        None => f.finding.clone(),
    }
}

/// A copy of `report` whose typed findings carry their `finding` sentence (as its JSON
/// shows them).
pub fn worded_exam(report: &ExamReport) -> ExamReport {
    let mut report = report.clone();
    for f in report.cases.iter_mut().flat_map(|c| c.diagnosis.iter_mut()) {
        if let Some(d) = &f.detail {
            f.finding = diagnosis(d);
        }
    }
    report
}

/// `62%`: a share in whole percent, as the patterns print it.
fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Up to 12 IDs, then how many more.
fn join(ids: &[String]) -> String {
    const MAX: usize = 12;
    let mut s = ids.iter().take(MAX).cloned().collect::<Vec<_>>().join(", ");
    if ids.len() > MAX {
        s.push_str(&format!(", … {} more", ids.len() - MAX));
    }
    s
}

/// "the last accepted run <id> (<time>)".
fn since(accepted_run: &str, accepted_at: &str) -> String {
    format!("the last accepted run {accepted_run} ({accepted_at})")
}

/// "batch `viernes` ingested 2025-11-14 17:20" (or "batches `a`, `b`") for the chunks known
/// to have entered since the accepted run; `None` when none is.
fn new_batches(entered: &[EnteredChunk]) -> Option<String> {
    let batches: BTreeMap<&str, Option<&str>> = entered
        .iter()
        .filter(|e| e.entered_since == Some(true))
        .filter_map(|e| Some((e.ingest_batch.as_deref()?, e.ingested_at.as_deref())))
        .collect();
    let items: Vec<String> = batches
        .iter()
        .map(|(b, at)| match at {
            Some(t) => format!("`{b}` ingested {}", short_time(t)),
            None => format!("`{b}`"),
        })
        .collect();
    match items.len() {
        0 => None,
        1 => Some(format!("batch {}", items[0])),
        _ => Some(format!("batches {}", items.join(", "))),
    }
}

/// "outranking them now: …": the entered chunks grouped by batch (name order; unknown
/// last), chunks in the order listed; then those the accepted run itself retrieved.
fn describe_entered(entered: &[EnteredChunk]) -> String {
    if entered.is_empty() {
        return "no outranking chunk of a new batch is listed".to_owned();
    }
    let (seen_before, entered): (Vec<&EnteredChunk>, Vec<&EnteredChunk>) =
        entered.iter().partition(|e| e.in_accepted_run.is_some());
    let old: Vec<String> = seen_before
        .iter()
        .filter_map(|e| {
            let s = e.in_accepted_run.as_ref()?;
            Some(format!(
                "{} (rank {}) above {} in {}, retrieved by the accepted run at rank {} for {}",
                e.id, e.rank, e.expected, e.case, s.rank, s.case
            ))
        })
        .collect();
    let old = (!old.is_empty()).then(|| {
        format!(
            "{} chunk(s) that were already there: {}",
            old.len(),
            join(&old)
        )
    });
    if entered.is_empty() {
        return format!("outranking them now: {}", old.unwrap_or_default());
    }
    type Group = (Option<String>, Option<bool>, Vec<String>);
    let mut groups: BTreeMap<(bool, String), Group> = BTreeMap::new();
    for e in entered {
        let key = (
            e.ingest_batch.is_none(),
            e.ingest_batch.clone().unwrap_or_default(),
        );
        let g = groups
            .entry(key)
            .or_insert((e.ingested_at.clone(), e.entered_since, Vec::new()));
        g.2.push(format!(
            "{} (rank {}) above {} in {}",
            e.id, e.rank, e.expected, e.case
        ));
    }
    let parts: Vec<String> = groups
        .into_iter()
        .map(|((unknown, name), (at, since, items))| {
            let batch = if unknown {
                "of unknown batch".to_owned()
            } else {
                format!(
                    "of batch `{name}`{}{}",
                    at.map(|t| format!(" ingested {}", short_time(&t)))
                        .unwrap_or_default(),
                    if since.is_none() {
                        ", entry time unknown"
                    } else {
                        ""
                    }
                )
            };
            format!("{} chunk(s) {batch}: {}", items.len(), join(&items))
        })
        .chain(old)
        .collect();
    format!("outranking them now: {}", parts.join("; "))
}

/// What one typed observation of pattern finding `f` saw, in words (`None` for the policy
/// context, which only shapes the cause).
pub fn pattern_seen(f: &PatternFinding, seen: &PatternSeen) -> Option<String> {
    use PatternSeen as S;
    Some(match seen {
        S::DomainFailing {
            domain,
            domain_cases,
            domain_failing,
            other_cases,
            other_failing,
            fisher_p,
        } => format!(
            "{domain_failing} of {domain_cases} cases of domain `{domain}` fail recall ({}), against {other_failing} of {other_cases} cases elsewhere ({}); one-sided Fisher exact p = {fisher_p:.4}",
            pct(ratio(*domain_failing, *domain_cases)),
            pct(ratio(*other_failing, *other_cases)),
        ),
        S::OnlyGroup {
            group,
            failing,
            failing_in_group,
            group_cases,
            failing_other,
            other_cases,
            fisher_p,
        } => {
            let what = match group {
                CaseGroup::Numeric => "numeric/table",
                CaseGroup::Gold => "gold",
            };
            format!(
                "{failing_in_group} of the {failing} cases failing recall are {what} ({}): {failing_in_group} of {group_cases} {what} cases fail ({}), against {failing_other} of {other_cases} other cases ({}); one-sided Fisher exact p = {fisher_p:.4}",
                pct(ratio(*failing_in_group, *failing)),
                pct(ratio(*failing_in_group, *group_cases)),
                pct(ratio(*failing_other, *other_cases)),
            )
        }
        S::GoldPolicy { .. } => return None,
        S::NoiseOverCeiling {
            recall_passing,
            over,
        } => {
            let detail: Vec<String> = over
                .iter()
                .map(|c| {
                    format!(
                        "{} (noise {} > {} of K {})",
                        c.case, c.noise, c.max_noise, c.k
                    )
                })
                .collect();
            format!(
                "{} of {recall_passing} cases that pass recall exceed the noise ceiling ({}): {}",
                over.len(),
                pct(ratio(over.len(), *recall_passing)),
                join(&detail)
            )
        }
        S::ChunksMissing {
            accepted_run,
            accepted_at,
            collection,
            chunks,
        } => format!(
            "{} case(s) passed in {} and fail now because the {collection} no longer holds {} of their expected chunks: {}; missing: {}",
            f.cases.len(),
            since(accepted_run, accepted_at),
            chunks.len(),
            join(&f.cases),
            join(chunks)
        ),
        S::IngestionRegression {
            accepted_run,
            accepted_at,
        } => format!(
            "{} case(s) passed in {} and fail now with no new chunk in their domain: {}; {}",
            f.cases.len(),
            since(accepted_run, accepted_at),
            join(&f.cases),
            describe_entered(&f.entered)
        ),
        S::DomainIngestionRegression {
            domain,
            accepted_run,
            accepted_at,
            new_in_domain,
        } => format!(
            "{} case(s) of domain `{domain}` passed in {} and fail now, and new chunks entered that domain ({}): {}; {}",
            f.cases.len(),
            since(accepted_run, accepted_at),
            join(new_in_domain),
            join(&f.cases),
            describe_entered(&f.entered)
        ),
        S::SlowDecline { trends } => {
            let parts: Vec<String> = trends
                .iter()
                .map(|t| {
                    format!(
                        "{} {:.4} → {:.4} over {} runs (OLS slope {:.4} per run, one-sided permutation p = {:.4}, Holm-adjusted {:.4}; largest single-run drop {:.4}; {} of {} cases lower than {} runs ago)",
                        t.metric,
                        t.from,
                        t.to,
                        t.runs,
                        t.slope,
                        t.p_value,
                        t.p_adjusted,
                        t.largest_step,
                        t.moving_cases,
                        t.cases,
                        t.runs.saturating_sub(1)
                    )
                })
                .collect();
            format!("slow generalised decline: {}", parts.join("; "))
        }
        S::NoiseRising {
            from,
            to,
            runs,
            slope,
            p_value,
            cases,
        } => format!(
            "mean noise rising: {from:.3} → {to:.3} of K over {runs} runs (OLS slope {slope:.4} per run, one-sided permutation p = {p_value:.4}, {cases} cases)"
        ),
    })
}

/// What pattern finding `f` saw (its `saw` sentence): its observations joined by `; `.
pub fn pattern_saw(f: &PatternFinding) -> String {
    if f.seen.is_empty() {
        return f.saw.clone();
    }
    f.seen
        .iter()
        .filter_map(|s| pattern_seen(f, s))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The suggested cause of pattern finding `f` (its `cause` sentence).
pub fn pattern_cause(f: &PatternFinding) -> String {
    if f.seen.is_empty() {
        return f.cause.clone();
    }
    let regression_since = f.seen.iter().find_map(|s| match s {
        PatternSeen::IngestionRegression {
            accepted_run,
            accepted_at,
        }
        | PatternSeen::DomainIngestionRegression {
            accepted_run,
            accepted_at,
            ..
        }
        | PatternSeen::ChunksMissing {
            accepted_run,
            accepted_at,
            ..
        } => Some(since(accepted_run, accepted_at)),
        _ => None,
    });
    let domain = f.domain.as_deref().unwrap_or_default();
    match f.pattern {
        Pattern::DomainFailing => format!(
            "ingestion or classification of domain `{domain}`: review its ingestion stages and its labels (chapters 6–9), not the global index"
        ),
        Pattern::NumericFailing => "chunking of tables or missing descriptions: check header rows, cut rows and that every table has a description in its representation (chapters 10–12); the most frequent pattern in a first deployment".to_owned(),
        Pattern::GoldFailing => {
            let (label, rules) = f
                .seen
                .iter()
                .find_map(|s| match s {
                    PatternSeen::GoldPolicy {
                        gold_label,
                        boost_rules,
                    } => Some((gold_label.as_str(), *boost_rules)),
                    _ => None,
                })
                .unwrap_or(("gold", 0));
            if rules > 0 {
                format!(
                    "the authority layer is not surfacing although a boost is declared ([boost] in the policy, {rules} rule{}): calibrate the boost (its factors and additions, and whether the rule for `{label}` matches the curated syntheses), and check they carry the `{label}` label",
                    if rules == 1 { "" } else { "s" }
                )
            } else {
                format!(
                    "the authority layer is not surfacing: check that the curated syntheses carry the `{label}` label and the calibration of the boost the consumer applies"
                )
            }
        }
        Pattern::ChunksMissing => {
            let since = regression_since.unwrap_or_default();
            let collection = f
                .seen
                .iter()
                .find_map(|s| match s {
                    PatternSeen::ChunksMissing { collection, .. } => Some(collection.as_str()),
                    _ => None,
                })
                .unwrap_or("collection");
            format!(
                "expected chunks left the {collection} since {since} (rows deleted, a partial re-index, or IDs that changed): restore them, or update the golden set if they were retired on purpose; nothing needs to have entered to explain these failures"
            )
        }
        Pattern::IngestionRegression => {
            let since = regression_since.unwrap_or_default();
            if f.entered.iter().any(|e| e.entered_since == Some(true)) {
                return match new_batches(&f.entered) {
                    Some(b) => format!("regression by the latest ingestion: {b} buried the old; review what entered since {since}"),
                    None => format!("regression by the latest ingestion: something new buried the old; review what entered since {since}"),
                };
            }
            // Nothing is known to have entered: say what is known, not an ingestion.
            let already = f.entered.iter().filter(|e| e.in_accepted_run.is_some()).count();
            let unknown = f.entered.iter().filter(|e| e.entered_since.is_none()).count();
            let mut known = Vec::new();
            if already > 0 {
                known.push(format!("{already} of the chunks above the expected ones were already retrieved by that run"));
            }
            if unknown > 0 {
                known.push(format!("whether {unknown} other(s) entered cannot be told (no ingestion batch, and no chunk list kept with that run)"));
            }
            let known = if known.is_empty() {
                String::new()
            } else {
                format!(" ({})", known.join("; "))
            };
            format!("no chunk is known to have entered since {since}{known}: before blaming an ingestion, check what else changed (chunks deleted, edited or re-embedded; the retriever or its settings)")
        }
        Pattern::DomainIngestionRegression => format!(
            "the latest ingestion into domain `{domain}`{} buried its older chunks: check the classification of the new chunks against the old ones (a concept they share without labels or facets to tell them apart, chapter 9)",
            new_batches(&f.entered)
                .map(|b| format!(" ({b})"))
                .unwrap_or_default()
        ),
        Pattern::SlowDecline => "silent staleness: sources out of sync or validity windows not updated (the ghost mode arriving); review source synchronisation and the chunks' valid_from / valid_to".to_owned(),
        Pattern::NoiseHigh => "structural noise: generic descriptions, mixed chunks or loose facets (chapters 12, 10 and 9); calibrate the ceiling from the healthy cases' noise (see the noise calibration)".to_owned(),
    }
}

/// The sentence of a cross-run diagnosis note.
pub fn runs_note(n: &RunsNote) -> String {
    match n {
        RunsNote::NoRun => "no run to diagnose".to_owned(),
        RunsNote::RegressionDomainsWithoutCorpus => "without a corpus, whether anything entered a regressed case's domain cannot be checked: those cases are listed as ingestion regressions".to_owned(),
        RunsNote::RegressedCasesWithoutDomain => {
            "some regressed cases have no domain: listed as ingestion regressions".to_owned()
        }
        RunsNote::NoAcceptedRun => {
            "no accepted run before the newest: regressions by ingestion are not checked"
                .to_owned()
        }
        RunsNote::TooFewRunsForTrends { needed, available } => {
            format!("trends need at least {needed} runs in the window; {available} available")
        }
        RunsNote::NoSharedCases => {
            "no case is shared by every run of the trend window".to_owned()
        }
    }
}

/// A copy of a cross-run diagnosis with its `saw`, `cause` and `notes` sentences (as its
/// JSON shows them).
pub fn worded_runs(d: &RunsDiagnosis) -> RunsDiagnosis {
    let mut d = d.clone();
    for f in &mut d.findings {
        if !f.seen.is_empty() {
            f.saw = pattern_saw(f);
            f.cause = pattern_cause(f);
        }
    }
    if !d.noted.is_empty() {
        d.notes = d.noted.iter().map(runs_note).collect();
    }
    d
}

/// Up to 10 IDs, then how many more (the comparability notes' lists).
fn list10(ids: &[String]) -> String {
    const MAX: usize = 10;
    let mut s = ids.iter().take(MAX).cloned().collect::<Vec<_>>().join(", ");
    if ids.len() > MAX {
        s.push_str(&format!(", … {} more", ids.len() - MAX));
    }
    s
}

fn setting_changes(changes: &[SettingChange]) -> String {
    changes
        .iter()
        .map(|c| format!("{} {} → {}", c.key, c.base, c.new))
        .collect::<Vec<_>>()
        .join("; ")
}

/// One sentence per difference between two runs' settings, from the typed `golden`,
/// `policy`, `k` and `config` of their [`Compatibility`].
pub fn compat_differences(c: &Compatibility) -> Vec<String> {
    let mut differences = Vec::new();
    let golden = &c.golden;
    if golden.differs() {
        let mut parts = Vec::new();
        if !golden.added.is_empty() {
            parts.push(format!(
                "{} case(s) added ({})",
                golden.added.len(),
                list10(&golden.added)
            ));
        }
        if !golden.removed.is_empty() {
            parts.push(format!(
                "{} case(s) removed ({})",
                golden.removed.len(),
                list10(&golden.removed)
            ));
        }
        for ch in &golden.changed_cases {
            let mut s = format!("case {} changed: {}", ch.id, ch.fields.join(", "));
            if !ch.expected_added.is_empty() {
                s.push_str(&format!(" (+{})", ch.expected_added.join(" +")));
            }
            if !ch.expected_removed.is_empty() {
                s.push_str(&format!(" (-{})", ch.expected_removed.join(" -")));
            }
            if !ch.compared {
                s.push_str(", not compared");
            }
            parts.push(s);
        }
        if parts.is_empty() {
            parts.push(
                "fingerprint differs but every case reads the same in the reports (order or a declared field such as top_k)"
                    .to_owned(),
            );
        }
        differences.push(format!(
            "golden set changed: {}; compared on the {} shared case(s)",
            parts.join("; "),
            golden.shared
        ));
    }
    let policy = &c.policy;
    if policy.changed || !policy.changes.is_empty() {
        if policy.changes.is_empty() {
            differences.push(
                "policy fingerprint differs but the effective policies in the reports are equal"
                    .to_owned(),
            );
        } else {
            differences.push(format!(
                "policy changed: {}",
                setting_changes(&policy.changes)
            ));
        }
    }
    if let Some(k) = &c.k {
        let mut s = format!("K changed: default {} → {}", k.base, k.new);
        if !k.cases.is_empty() {
            let ids: Vec<String> = k.cases.iter().map(|c| c.id.clone()).collect();
            s.push_str(&format!(
                "; {} shared case(s) compared at the smaller K, recomputed from the expected chunks' ranks, noise not compared ({})",
                ids.len(),
                list10(&ids)
            ));
        }
        differences.push(s);
    }
    // A different query embedder first and in its own words: the two runs rank with
    // different vectors, so their scores and ranks are not comparable case by case.
    let (model, config): (Vec<SettingChange>, Vec<SettingChange>) = c
        .config
        .iter()
        .cloned()
        .partition(|s| s.key == "embedding_model" || s.key == "model_hash");
    // A run that embeds no query (a run file, a lexical retriever, a fusion of run files)
    // has no model: that is not a change of model, and its ranks compare case by case.
    let (changed, one_sided): (Vec<SettingChange>, Vec<SettingChange>) = model
        .into_iter()
        .partition(|s| !s.base.is_null() && !s.new.is_null());
    if !changed.is_empty() {
        differences.push(format!(
            "query embedder changed: {}: the runs embed their queries with different models, so their scores and ranks are not comparable case by case",
            setting_changes(&changed)
        ));
    }
    if !one_sided.is_empty() {
        differences.push(format!(
            "query embedding differs: {}: only one of the runs embeds its queries (the other reads a run file or ranks without query vectors)",
            setting_changes(&one_sided)
        ));
    }
    if !config.is_empty() {
        differences.push(format!("config changed: {}", setting_changes(&config)));
    }
    differences
}

/// A copy of a comparison with its `differences` sentences (as its JSON shows them).
pub fn worded_comparison(c: &Comparison) -> Comparison {
    let mut c = c.clone();
    c.compatibility.differences = compat_differences(&c.compatibility);
    c
}

/// The notes of a cross-run diagnosis, worded (or as recorded, for an older diagnosis).
pub fn runs_notes(d: &RunsDiagnosis) -> Vec<String> {
    if d.noted.is_empty() {
        d.notes.clone()
    } else {
        d.noted.iter().map(runs_note).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(id: &str, rank: Option<usize>) -> veredicto_core::evidence::HoldingChunk {
        veredicto_core::evidence::HoldingChunk {
            id: id.into(),
            rank,
            start: 0,
            end: 10,
        }
    }

    /// One value of every variant. The match is exhaustive, so a new variant without a
    /// sample (and, through [`diagnosis`], without wording) does not compile.
    fn every_diagnosis() -> Vec<DiagnosisFinding> {
        use DiagnosisFinding as D;
        let all = vec![
            D::NotInCorpus {
                source: "index".into(),
            },
            D::NotInCollection {
                collection: "table `kb`".into(),
            },
            D::NoText,
            D::TableWithoutHeader { table_lines: 3 },
            D::TableCutMidRow {
                last_line: "| a | b".into(),
            },
            D::EndsMidSentence { tail: "and".into() },
            D::TooShort { chars: 3, min: 40 },
            D::TooLong {
                chars: 7000,
                max: 6000,
            },
            D::TableWithoutDescription,
            D::NoRepresentation,
            D::RepresentationIsTable,
            D::MostlyNumbers { digit_share: 0.62 },
            D::DomainMismatch {
                chunk_domain: "a".into(),
                case_domain: "b".into(),
            },
            D::ValidityEnded {
                valid_to: "2024-01-01".into(),
                exam_date: "2025-01-01".into(),
            },
            D::ValidityNotStarted {
                valid_from: "2026-01-01".into(),
                exam_date: "2025-01-01".into(),
            },
            D::Buried {
                rank: 7,
                score: Some(0.5),
                k: 5,
            },
            D::NotRetrieved { results: 10 },
            D::NotWithinDepth {
                depth: 100,
                results: 100,
            },
            D::NotInRun { results: 3 },
            D::RetrieverFailed {
                error: "timeout".into(),
            },
            D::LostByAnn {
                exact_rank: 2,
                served_rank: None,
            },
            D::MissedUnderExactToo,
            D::MissingUnderExactToo {
                missing: 2,
                collection: "table `kb`".into(),
            },
            D::StructuralNoise {
                k: 10,
                noise: 9,
                max_noise: 3,
                expected: 1,
                perfect_noise: 9,
                suggested_top_k: 1,
            },
            D::RankingNoise {
                k: 10,
                noise: 5,
                max_noise: 3,
            },
            D::DocumentNotInCorpus {
                doc_id: "LEY-35-2006".into(),
                source: "corpus".into(),
            },
            D::EvidenceDropped {
                uncovered: 37,
                chars: 120,
            },
            D::EvidenceSplit {
                chunks: vec![held("c17", Some(2)), held("c18", Some(23))],
            },
            D::TableHeaderApart {
                header: held("c40", None),
                rows: vec![held("c41", Some(12))],
            },
            D::EvidenceBuried {
                rank: 14,
                score: Some(0.41),
                k: 10,
                covered: 0.6,
                chunks: vec![held("c17", Some(2)), held("c18", Some(14))],
            },
            D::EvidenceNotRetrieved {
                results: 100,
                covered: 0.0,
                chunks: vec![held("c9", None)],
            },
        ];
        for d in &all {
            match d {
                D::NotInCorpus { .. }
                | D::NotInCollection { .. }
                | D::NoText
                | D::TableWithoutHeader { .. }
                | D::TableCutMidRow { .. }
                | D::EndsMidSentence { .. }
                | D::TooShort { .. }
                | D::TooLong { .. }
                | D::TableWithoutDescription
                | D::NoRepresentation
                | D::RepresentationIsTable
                | D::MostlyNumbers { .. }
                | D::DomainMismatch { .. }
                | D::ValidityEnded { .. }
                | D::ValidityNotStarted { .. }
                | D::Buried { .. }
                | D::NotRetrieved { .. }
                | D::NotWithinDepth { .. }
                | D::NotInRun { .. }
                | D::RetrieverFailed { .. }
                | D::LostByAnn { .. }
                | D::MissedUnderExactToo
                | D::MissingUnderExactToo { .. }
                | D::StructuralNoise { .. }
                | D::RankingNoise { .. }
                | D::DocumentNotInCorpus { .. }
                | D::EvidenceDropped { .. }
                | D::EvidenceSplit { .. }
                | D::TableHeaderApart { .. }
                | D::EvidenceBuried { .. }
                | D::EvidenceNotRetrieved { .. } => {}
            }
        }
        all
    }

    #[test]
    fn every_diagnosis_kind_has_a_sentence_and_a_distinct_kind() {
        let all = every_diagnosis();
        let mut kinds = std::collections::BTreeSet::new();
        for d in &all {
            let text = diagnosis(d);
            assert!(!text.is_empty(), "{d:?}");
            assert!(!text.contains('{'), "{text}");
            let v = serde_json::to_value(d).unwrap();
            let kind = v["kind"].as_str().unwrap().to_owned();
            assert!(kinds.insert(kind.clone()), "duplicate kind {kind}");
            // The JSON reads back to the same value.
            let back: DiagnosisFinding = serde_json::from_value(v).unwrap();
            assert_eq!(&back, d);
        }
        assert_eq!(kinds.len(), all.len());
    }

    #[test]
    fn sentences_keep_the_words_of_before() {
        use DiagnosisFinding as D;
        let cases = [
            (
                D::Buried {
                    rank: 7,
                    score: Some(0.469_584_077_596_664_4),
                    k: 5,
                },
                "buried at rank 7 (score 0.4696) below the top 5",
            ),
            (
                D::NotInCorpus {
                    source: "corpus".into(),
                },
                "expected chunk not in the corpus",
            ),
            (
                D::MostlyNumbers { digit_share: 0.62 },
                "representation is mostly numbers (62% digits)",
            ),
            (
                D::LostByAnn {
                    exact_rank: 2,
                    served_rank: None,
                },
                "lost by the ANN index: exact rank 2, served rank —",
            ),
        ];
        for (d, want) in cases {
            assert_eq!(diagnosis(&d), want);
        }
    }

    fn pattern_finding(pattern: Pattern, seen: Vec<PatternSeen>) -> PatternFinding {
        PatternFinding {
            pattern,
            saw: String::new(),
            cause: String::new(),
            seen,
            cases: vec!["c1".into(), "c2".into()],
            domain: Some("viajes".into()),
            evidence: BTreeMap::new(),
            entered: vec![EnteredChunk {
                case: "c1".into(),
                expected: "e1".into(),
                id: "nuevo0".into(),
                rank: 2,
                score: Some(0.9),
                ingest_batch: Some("viernes".into()),
                ingested_at: Some("2025-11-14T17:20:00Z".into()),
                domain: Some("viajes".into()),
                entered_since: Some(true),
                in_accepted_run: None,
            }],
            runs: 1,
        }
    }

    /// One finding per pattern with every kind of observation. Exhaustive matches: a new
    /// pattern or kind without a sample here (and so without wording) does not compile.
    fn every_pattern() -> Vec<PatternFinding> {
        use PatternSeen as S;
        let all = vec![
            pattern_finding(
                Pattern::DomainFailing,
                vec![S::DomainFailing {
                    domain: "viajes".into(),
                    domain_cases: 4,
                    domain_failing: 4,
                    other_cases: 8,
                    other_failing: 0,
                    fisher_p: 0.002,
                }],
            ),
            pattern_finding(
                Pattern::NumericFailing,
                vec![S::OnlyGroup {
                    group: CaseGroup::Numeric,
                    failing: 3,
                    failing_in_group: 3,
                    group_cases: 4,
                    failing_other: 0,
                    other_cases: 8,
                    fisher_p: 0.01,
                }],
            ),
            pattern_finding(
                Pattern::GoldFailing,
                vec![
                    S::OnlyGroup {
                        group: CaseGroup::Gold,
                        failing: 2,
                        failing_in_group: 2,
                        group_cases: 2,
                        failing_other: 0,
                        other_cases: 10,
                        fisher_p: 0.015,
                    },
                    S::GoldPolicy {
                        gold_label: "SINTESIS_CURADA".into(),
                        boost_rules: 1,
                    },
                ],
            ),
            pattern_finding(
                Pattern::ChunksMissing,
                vec![S::ChunksMissing {
                    accepted_run: "r02".into(),
                    accepted_at: "2025-10-03T10:00:00Z".into(),
                    collection: "table `kb`".into(),
                    chunks: vec!["e1".into()],
                }],
            ),
            pattern_finding(
                Pattern::IngestionRegression,
                vec![S::IngestionRegression {
                    accepted_run: "r02".into(),
                    accepted_at: "2025-10-03T10:00:00Z".into(),
                }],
            ),
            pattern_finding(
                Pattern::DomainIngestionRegression,
                vec![S::DomainIngestionRegression {
                    domain: "viajes".into(),
                    accepted_run: "r02".into(),
                    accepted_at: "2025-10-03T10:00:00Z".into(),
                    new_in_domain: vec!["nuevo0".into()],
                }],
            ),
            pattern_finding(
                Pattern::SlowDecline,
                vec![S::SlowDecline {
                    trends: vec![veredicto_core::compare::Decline {
                        metric: "mean_recall".into(),
                        from: 1.0,
                        to: 0.8,
                        runs: 8,
                        slope: -0.03,
                        p_value: 0.001,
                        p_adjusted: 0.002,
                        largest_step: 0.05,
                        moving_cases: 4,
                        cases: 12,
                    }],
                }],
            ),
            pattern_finding(
                Pattern::NoiseHigh,
                vec![
                    S::NoiseOverCeiling {
                        recall_passing: 12,
                        over: vec![veredicto_core::compare::NoisyCase {
                            case: "fiscal2".into(),
                            noise: 7,
                            max_noise: 3,
                            k: 10,
                        }],
                    },
                    S::NoiseRising {
                        from: 0.1,
                        to: 0.3,
                        runs: 8,
                        slope: 0.02,
                        p_value: 0.01,
                        cases: 12,
                    },
                ],
            ),
        ];
        for f in &all {
            match f.pattern {
                Pattern::DomainFailing
                | Pattern::NumericFailing
                | Pattern::GoldFailing
                | Pattern::ChunksMissing
                | Pattern::IngestionRegression
                | Pattern::DomainIngestionRegression
                | Pattern::SlowDecline
                | Pattern::NoiseHigh => {}
            }
            for seen in &f.seen {
                match seen {
                    S::DomainFailing { .. }
                    | S::OnlyGroup { .. }
                    | S::GoldPolicy { .. }
                    | S::NoiseOverCeiling { .. }
                    | S::ChunksMissing { .. }
                    | S::IngestionRegression { .. }
                    | S::DomainIngestionRegression { .. }
                    | S::SlowDecline { .. }
                    | S::NoiseRising { .. } => {}
                }
            }
        }
        all
    }

    #[test]
    fn every_pattern_and_kind_has_words() {
        let all = every_pattern();
        assert_eq!(all.len(), 8, "one finding per pattern");
        for f in &all {
            let saw = pattern_saw(f);
            let cause = pattern_cause(f);
            assert!(!saw.is_empty() && !cause.is_empty(), "{f:?}");
            for seen in &f.seen {
                let v = serde_json::to_value(seen).unwrap();
                assert!(v["kind"].is_string(), "{v}");
                let back: PatternSeen = serde_json::from_value(v).unwrap();
                assert_eq!(&back, seen);
            }
        }
        let noise = &all[7];
        assert_eq!(
            pattern_saw(noise),
            "1 of 12 cases that pass recall exceed the noise ceiling (8%): fiscal2 (noise 7 > 3 of K 10); mean noise rising: 0.100 → 0.300 of K over 8 runs (OLS slope 0.0200 per run, one-sided permutation p = 0.0100, 12 cases)"
        );
        assert_eq!(
            pattern_cause(&all[3]),
            "expected chunks left the table `kb` since the last accepted run r02 (2025-10-03T10:00:00Z) (rows deleted, a partial re-index, or IDs that changed): restore them, or update the golden set if they were retired on purpose; nothing needs to have entered to explain these failures"
        );
        assert_eq!(
            pattern_cause(&all[4]),
            "regression by the latest ingestion: batch `viernes` ingested 2025-11-14 17:20 buried the old; review what entered since the last accepted run r02 (2025-10-03T10:00:00Z)"
        );
        assert!(pattern_cause(&all[2]).contains("1 rule)"));
        // The JSON keeps the sentences beside the kinds once filled.
        let d = RunsDiagnosis {
            run: Some("r03".into()),
            runs: 3,
            last_accepted: None,
            findings: all,
            trends: Vec::new(),
            noise: None,
            notes: Vec::new(),
            noted: vec![RunsNote::NoAcceptedRun],
        };
        let v = serde_json::to_value(worded_runs(&d)).unwrap();
        assert_eq!(v["findings"][0]["seen"][0]["kind"], "domain_failing");
        assert_eq!(v["findings"][0]["seen"][0]["domain_failing"], 4);
        assert!(v["findings"][0]["saw"]
            .as_str()
            .unwrap()
            .starts_with("4 of 4 cases of domain `viajes` fail recall (100%)"));
        assert_eq!(v["noted"][0]["kind"], "no_accepted_run");
        assert_eq!(
            v["notes"][0],
            "no accepted run before the newest: regressions by ingestion are not checked"
        );
    }

    #[test]
    fn every_runs_note_has_words() {
        let all = [
            RunsNote::NoRun,
            RunsNote::RegressionDomainsWithoutCorpus,
            RunsNote::RegressedCasesWithoutDomain,
            RunsNote::NoAcceptedRun,
            RunsNote::TooFewRunsForTrends {
                needed: 5,
                available: 3,
            },
            RunsNote::NoSharedCases,
        ];
        for n in &all {
            match n {
                RunsNote::NoRun
                | RunsNote::RegressionDomainsWithoutCorpus
                | RunsNote::RegressedCasesWithoutDomain
                | RunsNote::NoAcceptedRun
                | RunsNote::TooFewRunsForTrends { .. }
                | RunsNote::NoSharedCases => {}
            }
            assert!(!runs_note(n).is_empty());
        }
        assert_eq!(
            runs_note(&all[4]),
            "trends need at least 5 runs in the window; 3 available"
        );
    }

    #[test]
    fn every_settings_difference_has_words() {
        use veredicto_core::compare::{CaseChange, CaseK, GoldenDiff, KChange, PolicyDiff};
        let change = |key: &str| SettingChange {
            key: key.into(),
            base: serde_json::json!(0.3),
            new: serde_json::json!(0.4),
        };
        let c = Compatibility {
            comparable: false,
            golden: GoldenDiff {
                changed: true,
                base_fingerprint: "a".into(),
                new_fingerprint: "b".into(),
                base_cases: 3,
                new_cases: 3,
                shared: 2,
                added: vec!["q4".into()],
                removed: vec!["q3".into()],
                changed_cases: vec![CaseChange {
                    id: "q2".into(),
                    fields: vec!["expected".into()],
                    expected_added: vec!["x".into()],
                    expected_removed: vec!["y".into()],
                    compared: false,
                }],
            },
            policy: PolicyDiff {
                changed: true,
                base_fingerprint: "p".into(),
                new_fingerprint: "q".into(),
                changes: vec![change("noise_ceiling")],
            },
            k: Some(KChange {
                base: 10,
                new: 5,
                cases: vec![CaseK {
                    id: "q1".into(),
                    base: 10,
                    new: 5,
                    compared_at: 5,
                }],
            }),
            config: vec![change("depth")],
            corpus_changed: false,
            differences: Vec::new(),
        };
        assert_eq!(
            compat_differences(&c),
            [
                "golden set changed: 1 case(s) added (q4); 1 case(s) removed (q3); case q2 changed: expected (+x) (-y), not compared; compared on the 2 shared case(s)",
                "policy changed: noise_ceiling 0.3 → 0.4",
                "K changed: default 10 → 5; 1 shared case(s) compared at the smaller K, recomputed from the expected chunks' ranks, noise not compared (q1)",
                "config changed: depth 0.3 → 0.4",
            ]
        );
    }

    #[test]
    fn a_run_without_a_query_model_is_not_a_change_of_model() {
        let c = Compatibility {
            comparable: true,
            golden: veredicto_core::compare::GoldenDiff {
                changed: false,
                base_fingerprint: "a".into(),
                new_fingerprint: "a".into(),
                base_cases: 3,
                new_cases: 3,
                shared: 3,
                added: Vec::new(),
                removed: Vec::new(),
                changed_cases: Vec::new(),
            },
            policy: veredicto_core::compare::PolicyDiff {
                changed: false,
                base_fingerprint: "p".into(),
                new_fingerprint: "p".into(),
                changes: Vec::new(),
            },
            k: None,
            config: vec![SettingChange {
                key: "embedding_model".into(),
                base: serde_json::json!("multilingual-e5-small"),
                new: serde_json::Value::Null,
            }],
            corpus_changed: false,
            differences: Vec::new(),
        };
        assert_eq!(
            compat_differences(&c),
            [
                r#"query embedding differs: embedding_model "multilingual-e5-small" → null: only one of the runs embeds its queries (the other reads a run file or ranks without query vectors)"#
            ]
        );
    }

    #[test]
    fn findings_recorded_before_the_kinds_keep_their_sentence() {
        // A history written by an older version: sentences only, no `kind`.
        let old: Finding = serde_json::from_str(
            r#"{"check": "embedding", "chunk": "t", "finding": "buried at rank 9 below the top 5"}"#,
        )
        .unwrap();
        assert_eq!(old.detail, None);
        assert_eq!(finding_sentence(&old), "buried at rank 9 below the top 5");
        // A typed one reads back with its kind and is worded from it.
        let new: Finding = serde_json::from_str(
            r#"{"check": "embedding", "chunk": "t", "finding": "", "kind": "buried", "rank": 9, "score": null, "k": 5}"#,
        )
        .unwrap();
        assert_eq!(
            new.detail,
            Some(DiagnosisFinding::Buried {
                rank: 9,
                score: None,
                k: 5
            })
        );
        assert_eq!(finding_sentence(&new), "buried at rank 9 below the top 5");
        let old: PatternFinding = serde_json::from_str(
            r#"{"pattern": "slow_decline", "saw": "old saw", "cause": "old cause", "cases": [],
                "domain": null, "evidence": {}, "entered": [], "runs": 8}"#,
        )
        .unwrap();
        assert_eq!(
            (pattern_saw(&old), pattern_cause(&old)),
            ("old saw".to_owned(), "old cause".to_owned())
        );
    }
}
