//! Reading and validating a case file (YAML or JSON, chosen by extension; YAML otherwise).

use crate::error::{GroundingError, Issue};
use crate::model::*;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::Path;

/// Reads, parses and validates a case file. The raw bytes are returned too (packages copy them).
pub fn load_cases(path: &Path) -> Result<(CaseSet, Vec<u8>), GroundingError> {
    let bytes = std::fs::read(path).map_err(|e| GroundingError::io(path, e))?;
    let text = String::from_utf8(bytes.clone()).map_err(|e| GroundingError::Parse {
        path: path.to_path_buf(),
        message: format!("not UTF-8: {e}"),
    })?;
    let set = parse_cases(path, &text)?;
    Ok((set, bytes))
}

/// Parses and validates case text; `path` is only used in messages and to pick the format.
pub fn parse_cases(path: &Path, text: &str) -> Result<CaseSet, GroundingError> {
    let is_json = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let set: CaseSet = if is_json {
        veredicto_formats::json::from_str(text).map_err(|e| GroundingError::Parse {
            path: path.to_path_buf(),
            message: format!(
                "line {} column {}: {}",
                e.line(),
                e.column(),
                veredicto_core::redact::message(&e.to_string())
            ),
        })?
    } else {
        parse_yaml(path, text)?
    };
    let issues = validate(&set, text);
    if issues.is_empty() {
        Ok(set)
    } else {
        Err(GroundingError::Invalid {
            path: path.to_path_buf(),
            issues,
        })
    }
}

/// How deeply YAML collections may nest (as serde_json allows for JSON).
pub const MAX_NESTING: usize = 128;

/// Parses YAML after checking its nesting ([`check_yaml_nesting`]); errors name the file
/// and quote at most an excerpt of an offending value.
pub(crate) fn parse_yaml<T: serde::de::DeserializeOwned>(
    path: &Path,
    text: &str,
) -> Result<T, GroundingError> {
    check_yaml_nesting(text).map_err(|line| GroundingError::Parse {
        path: path.to_path_buf(),
        message: format!("line {line}: collections nested more than {MAX_NESTING} levels deep"),
    })?;
    serde_norway::from_str(text).map_err(|e| GroundingError::Parse {
        path: path.to_path_buf(),
        message: veredicto_core::redact::message(&e.to_string()),
    })
}

/// Refuses YAML whose collections nest deeper than [`MAX_NESTING`] before it reaches the
/// parser (whose time grows with the square of the depth), returning the 1-based line where
/// the limit is passed. The depth is counted from above: one level per indentation step,
/// per `- ` / `? ` indicator on a line and per open `[` / `{`; quoted text, comments and
/// the lines of block scalars (`|`, `>`) are skipped.
pub(crate) fn check_yaml_nesting(text: &str) -> Result<(), usize> {
    let mut indents: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    let mut quote: Option<u8> = None;
    let mut block_scalar: Option<usize> = None;
    for (n, line) in text.lines().enumerate() {
        let lineno = n + 1;
        let b = line.as_bytes();
        let indent = b.iter().take_while(|&&c| c == b' ').count();
        let blank = b[indent..].iter().all(|c| c.is_ascii_whitespace());
        if let Some(parent) = block_scalar {
            if blank || indent > parent {
                continue;
            }
            block_scalar = None;
        }
        if quote.is_none() && flow == 0 {
            if blank || b[indent] == b'#' {
                continue;
            }
            if line.starts_with("---") || line.starts_with("...") {
                indents.clear();
            }
            while indents.last().is_some_and(|&i| i >= indent) {
                indents.pop();
            }
            indents.push(indent);
        }
        let mut depth = indents.len();
        let mut node_start = quote.is_none();
        let mut i = indent;
        let mut code_end = b.len();
        while i < b.len() {
            let c = b[i];
            let next_blank = b.get(i + 1).is_none_or(|c| c.is_ascii_whitespace());
            if let Some(q) = quote {
                if c == b'\\' && q == b'"' {
                    i += 2;
                    continue;
                }
                if c == q {
                    quote = None;
                }
                i += 1;
                continue;
            }
            match c {
                b'#' if i == 0 || b[i - 1].is_ascii_whitespace() => {
                    code_end = i;
                    break;
                }
                b'"' | b'\'' if node_start => {
                    quote = Some(c);
                    node_start = false;
                }
                b'[' | b'{' if node_start || flow > 0 => {
                    flow += 1;
                    node_start = true;
                }
                b']' | b'}' if flow > 0 => {
                    flow -= 1;
                    node_start = false;
                }
                b',' if flow > 0 => node_start = true,
                b'-' | b'?' if node_start && flow == 0 && next_blank => depth += 1,
                b':' if next_blank || flow > 0 => node_start = true,
                b' ' | b'\t' => {}
                _ => node_start = false,
            }
            if depth + flow > MAX_NESTING {
                return Err(lineno);
            }
            i += 1;
        }
        if quote.is_none() && flow == 0 {
            let code = line[..code_end].trim_end();
            let indicator =
                code.trim_end_matches(|c: char| c.is_ascii_digit() || c == '+' || c == '-');
            if indicator.ends_with(['|', '>'])
                && (indicator.len() == 1
                    || indicator[..indicator.len() - 1].ends_with([' ', ':', '-']))
            {
                block_scalar = Some(indent);
            }
        }
    }
    Ok(())
}

/// `sha256:<hex>` of a passage text.
pub fn passage_hash(text: &str) -> String {
    let d = Sha256::digest(text.as_bytes());
    format!("sha256:{}", hex(&d))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Best-effort line of `value` at or after the line that holds `anchor` (1-based).
fn find_line(text: &str, anchor: &str, value: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| l.contains(anchor)).unwrap_or(0);
    lines
        .iter()
        .enumerate()
        .skip(start)
        .find(|(_, l)| l.contains(value))
        .map(|(i, _)| i + 1)
}

struct Ctx<'a> {
    text: &'a str,
    issues: Vec<Issue>,
}

impl Ctx<'_> {
    fn push(&mut self, yaml_path: String, field: &str, anchor: &str, value: &str, message: String) {
        let line = find_line(self.text, anchor, value);
        self.issues.push(Issue {
            yaml_path,
            field: field.to_string(),
            line,
            message,
        });
    }
}

/// Every semantic rule of the schema beyond types (types are checked by the parser).
pub fn validate(set: &CaseSet, text: &str) -> Vec<Issue> {
    let mut cx = Ctx {
        text,
        issues: Vec::new(),
    };
    if set.schema != SCHEMA_VERSION {
        cx.push(
            "schema".into(),
            "schema",
            "schema",
            "schema",
            format!("expected `{SCHEMA_VERSION}`, found `{}`", set.schema),
        );
    }
    let mut case_ids = BTreeSet::new();
    let mut claim_ids = BTreeSet::new();
    for (ci, case) in set.cases.iter().enumerate() {
        let cp = format!("cases[{ci}]");
        let anchor = format!("id: {}", case.id);
        if case.id.trim().is_empty() {
            cx.push(
                format!("{cp}.id"),
                "id",
                "cases",
                "id:",
                "empty case id".into(),
            );
        }
        if !case_ids.insert(case.id.clone()) {
            cx.push(
                format!("{cp}.id"),
                "id",
                &anchor,
                &case.id,
                format!("duplicate case id `{}`", case.id),
            );
        }
        let mut source_ids = BTreeSet::new();
        for (si, s) in case.sources.iter().enumerate() {
            if !source_ids.insert(s.id.as_str()) {
                cx.push(
                    format!("{cp}.sources[{si}].id"),
                    "id",
                    &anchor,
                    &s.id,
                    format!("duplicate source id `{}`", s.id),
                );
            }
            let mut pids = BTreeSet::new();
            for (pi, p) in s.passages.iter().enumerate() {
                let pp = format!("{cp}.sources[{si}].passages[{pi}]");
                if !pids.insert(p.id.as_str()) {
                    cx.push(
                        format!("{pp}.id"),
                        "id",
                        &anchor,
                        &p.id,
                        format!("duplicate passage id `{}` in source `{}`", p.id, s.id),
                    );
                }
                match (&p.text, &p.hash) {
                    (None, None) => cx.push(
                        pp.clone(),
                        "text",
                        &anchor,
                        &p.id,
                        "a passage needs its exact `text`, or a `hash` plus `neighbours`".into(),
                    ),
                    (None, Some(_))
                        if p.neighbours.as_deref().is_none_or(|n| n.trim().is_empty()) =>
                    {
                        cx.push(
                            format!("{pp}.neighbours"),
                            "neighbours",
                            &anchor,
                            &p.id,
                            "a passage located by hash needs its neighbouring text".into(),
                        )
                    }
                    (Some(t), Some(h)) if *h != passage_hash(t) => cx.push(
                        format!("{pp}.hash"),
                        "hash",
                        &anchor,
                        h,
                        format!(
                            "hash does not match the passage text (text hashes to {})",
                            passage_hash(t)
                        ),
                    ),
                    _ => {}
                }
            }
        }
        let passage_exists = |src: &str, pid: &str| {
            case.sources
                .iter()
                .any(|s| s.id == src && s.passages.iter().any(|p| p.id == pid))
        };
        for (vi, v) in case.valid_sources.iter().enumerate() {
            if !source_ids.contains(v.as_str()) {
                cx.push(
                    format!("{cp}.valid_sources[{vi}]"),
                    "valid_sources",
                    &anchor,
                    v,
                    format!("unknown source id `{v}`"),
                );
            }
        }
        for (ri, r) in case.retrieval.iter().enumerate() {
            let rp = format!("{cp}.retrieval[{ri}]");
            if r.position as usize != ri + 1 {
                cx.push(
                    format!("{rp}.position"),
                    "position",
                    &anchor,
                    "position",
                    format!(
                        "positions must be 1, 2, 3… in the order returned; found {} at index {ri}",
                        r.position
                    ),
                );
            }
            if !source_ids.contains(r.source.as_str()) {
                cx.push(
                    format!("{rp}.source"),
                    "source",
                    &anchor,
                    &r.source,
                    format!("unknown source id `{}`", r.source),
                );
            } else if let Some(p) = &r.passage {
                if !passage_exists(&r.source, p) {
                    cx.push(
                        format!("{rp}.passage"),
                        "passage",
                        &anchor,
                        p,
                        format!("unknown passage `{p}` of source `{}`", r.source),
                    );
                }
            }
        }
        let mut fact_ids = BTreeSet::new();
        for (fi, f) in case.required_facts.iter().enumerate() {
            if !fact_ids.insert(f.id.as_str()) {
                cx.push(
                    format!("{cp}.required_facts[{fi}].id"),
                    "id",
                    &anchor,
                    &f.id,
                    format!("duplicate fact id `{}`", f.id),
                );
            }
        }
        validate_additions(case, &cp, &anchor, &mut cx);
        let mut answer_ids = BTreeSet::new();
        for (ai, a) in case.answers.iter().enumerate() {
            let ap = format!("{cp}.answers[{ai}]");
            if !answer_ids.insert(a.id.as_str()) {
                cx.push(
                    format!("{ap}.id"),
                    "id",
                    &anchor,
                    &a.id,
                    format!("duplicate answer id `{}`", a.id),
                );
            }
            let mut cit_ids = BTreeSet::new();
            for (ki, c) in a.citations.iter().enumerate() {
                let kp = format!("{ap}.citations[{ki}]");
                if !cit_ids.insert(c.id.as_str()) {
                    cx.push(
                        format!("{kp}.id"),
                        "id",
                        &anchor,
                        &c.id,
                        format!("duplicate citation id `{}`", c.id),
                    );
                }
                if !source_ids.contains(c.source.as_str()) {
                    cx.push(
                        format!("{kp}.source"),
                        "source",
                        &anchor,
                        &c.source,
                        format!("citation `{}` names unknown source `{}`", c.id, c.source),
                    );
                } else if let Some(p) = &c.passage {
                    if !passage_exists(&c.source, p) {
                        cx.push(
                            format!("{kp}.passage"),
                            "passage",
                            &anchor,
                            p,
                            format!(
                                "citation `{}` names unknown passage `{p}` of source `{}`",
                                c.id, c.source
                            ),
                        );
                    }
                }
            }
            for (li, cl) in a.claims.iter().enumerate() {
                let lp = format!("{ap}.claims[{li}]");
                let canchor = format!("id: {}", cl.id);
                if !claim_ids.insert(cl.id.clone()) {
                    cx.push(
                        format!("{lp}.id"),
                        "id",
                        &canchor,
                        &cl.id,
                        format!(
                            "duplicate claim id `{}` (claim ids are unique in the file)",
                            cl.id
                        ),
                    );
                }
                for (xi, cid) in cl.citations.iter().enumerate() {
                    if !cit_ids.contains(cid.as_str()) {
                        cx.push(
                            format!("{lp}.citations[{xi}]"),
                            "citations",
                            &canchor,
                            cid,
                            format!(
                                "unknown citation id `{cid}` (answer `{}` shows: {})",
                                a.id,
                                a.citations
                                    .iter()
                                    .map(|c| c.id.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        );
                    }
                }
                for (xi, fid) in cl.facts.iter().enumerate() {
                    if !fact_ids.contains(fid.as_str()) {
                        cx.push(
                            format!("{lp}.facts[{xi}]"),
                            "facts",
                            &canchor,
                            fid,
                            format!("claim mapped to missing required fact `{fid}`"),
                        );
                    }
                }
                if let Some(av) = &cl.association {
                    if av.reason.trim().is_empty() {
                        cx.push(
                            format!("{lp}.association.reason"),
                            "reason",
                            &canchor,
                            "association",
                            "an association verdict needs a reason".into(),
                        );
                    }
                    let has = !cl.citations.is_empty();
                    if (av.verdict == Association::Attached) != has {
                        cx.push(
                            format!("{lp}.association.verdict"),
                            "verdict",
                            &canchor,
                            "association",
                            format!(
                                "`{}` contradicts the claim's {} attached citation(s)",
                                av.verdict.as_str(),
                                cl.citations.len()
                            ),
                        );
                    }
                }
                if let Some(sv) = &cl.support {
                    if sv.reason.trim().is_empty() {
                        let msg = if sv.verdict == Support::NotEvaluable {
                            "`not_evaluable` must say what is missing in `reason`"
                        } else {
                            "a support verdict needs a reason"
                        };
                        cx.push(
                            format!("{lp}.support.reason"),
                            "reason",
                            &canchor,
                            "support",
                            msg.into(),
                        );
                    }
                }
            }
        }
    }
    cx.issues
}

/// Whether `r` (`SOURCE#PASSAGE` or `SOURCE`) names a source, or a passage of it, in `case`.
fn resolves(case: &Case, r: &str, passage_required: bool) -> bool {
    let (src, pid) = match r.split_once('#') {
        Some((s, p)) => (s, Some(p)),
        None => (r, None),
    };
    let Some(s) = case.sources.iter().find(|s| s.id == src) else {
        return false;
    };
    match pid {
        Some(p) => s.passages.iter().any(|x| x.id == p),
        None => !passage_required,
    }
}

/// A BCP 47-shaped language tag: `es`, `es-ES`, `zh-Hant-TW`.
fn is_language_tag(s: &str) -> bool {
    let mut parts = s.split('-');
    let first = parts.next().unwrap_or_default();
    (2..=8).contains(&first.len())
        && first.chars().all(|c| c.is_ascii_alphabetic())
        && parts.all(|p| (1..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphanumeric()))
}

fn is_sha256(s: &str) -> bool {
    s.strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')))
}

/// Absences, where facts are stated, and the replay configuration.
fn validate_additions(case: &Case, cp: &str, anchor: &str, cx: &mut Ctx<'_>) {
    let mut ids = BTreeSet::new();
    for (i, (id, a)) in case.absences().into_iter().enumerate() {
        let up = format!("{cp}.unanswerable[{i}]");
        if a.text.trim().is_empty() {
            cx.push(
                format!("{up}.text"),
                "unanswerable",
                anchor,
                "unanswerable",
                "an absence must say what the sources lack".into(),
            );
        }
        if !ids.insert(id.clone()) {
            cx.push(
                format!("{up}.id"),
                "id",
                anchor,
                &id,
                format!("duplicate absence id `{id}`"),
            );
        }
        for (si, src) in a.sources.iter().enumerate() {
            if !case.sources.iter().any(|s| &s.id == src) {
                cx.push(
                    format!("{up}.sources[{si}]"),
                    "sources",
                    anchor,
                    src,
                    format!("absence `{id}` names unknown source id `{src}`"),
                );
            }
        }
    }
    for (fi, f) in case.required_facts.iter().enumerate() {
        for (xi, r) in f.found_in.iter().enumerate() {
            if !resolves(case, r, false) {
                cx.push(
                    format!("{cp}.required_facts[{fi}].found_in[{xi}]"),
                    "found_in",
                    anchor,
                    r,
                    format!(
                        "fact `{}` is found in `{r}`, which is not a source or `SOURCE#PASSAGE` of the case",
                        f.id
                    ),
                );
            }
        }
    }
    let Some(conf) = &case.configuration else {
        return;
    };
    let kp = format!("{cp}.configuration");
    for (field, value) in [
        ("retrieval_config", &conf.retrieval_config),
        ("generation_config", &conf.generation_config),
        ("prompt_version", &conf.prompt_version),
        ("model", &conf.model),
        ("app_revision", &conf.app_revision),
        ("locale", &conf.locale),
    ] {
        let Some(v) = value else { continue };
        if v.trim().is_empty() || v.chars().any(char::is_control) {
            cx.push(
                format!("{kp}.{field}"),
                field,
                anchor,
                field,
                "must be a non-empty single-line value (leave the field out when unknown)".into(),
            );
        }
    }
    if let Some(l) = conf.locale.as_deref().filter(|l| !l.trim().is_empty()) {
        if !is_language_tag(l) {
            cx.push(
                format!("{kp}.locale"),
                "locale",
                anchor,
                "locale",
                "not a language tag (expected e.g. `es`, `es-ES`)".into(),
            );
        }
    }
    for (r, h) in &conf.passage_hashes {
        let hp = format!("{kp}.passage_hashes");
        if !resolves(case, r, true) {
            cx.push(
                hp.clone(),
                "passage_hashes",
                anchor,
                r,
                format!("`{r}` is not a `SOURCE#PASSAGE` of the case"),
            );
            continue;
        }
        if !is_sha256(h) {
            cx.push(
                hp,
                "passage_hashes",
                anchor,
                r,
                format!("hash of `{r}` must be `sha256:` and 64 lowercase hex digits"),
            );
            continue;
        }
        let (src, pid) = r.split_once('#').unwrap_or((r, ""));
        let text = case
            .sources
            .iter()
            .find(|s| s.id == src)
            .and_then(|s| s.passages.iter().find(|p| p.id == pid))
            .and_then(|p| {
                p.text
                    .as_deref()
                    .map(passage_hash)
                    .or_else(|| p.hash.clone())
            });
        if let Some(t) = text.filter(|t| t != h) {
            cx.push(
                hp,
                "passage_hashes",
                anchor,
                r,
                format!("`{r}` was generated from text hashing to {h}, but the case records {t}"),
            );
        }
    }
}
