//! The append-only review and suggestion logs: appends are whole or absent, a torn tail from a
//! crash is reported and moved aside without losing complete records, a bad line in the
//! middle is an error naming file and line.

use std::path::Path;
use veredicto_grounding::*;

fn rec(reviewer: &str) -> ReviewRecord {
    ReviewRecord {
        case: "Q-017".into(),
        answer: "A-017".into(),
        claim: "C-017-2".into(),
        support: Support::Supported,
        reason: "ok".into(),
        reviewer: reviewer.into(),
        time: "t".into(),
        diagnosis: None,
    }
}

fn line(r: &ReviewRecord) -> String {
    format!("{}\n", serde_json::to_string(r).expect("json"))
}

#[test]
fn torn_last_record_is_left_out_with_its_line_and_length() {
    let mut b = line(&rec("a")).into_bytes();
    b.extend_from_slice(line(&rec("b")).as_bytes());
    let whole = b.len();
    b.extend_from_slice(&line(&rec("c")).as_bytes()[..20]);
    let log = parse_review_log(Path::new("x.reviews.jsonl"), &b).expect("read");
    assert_eq!(log.records.len(), 2);
    assert_eq!(log.complete_len, whole as u64);
    let t = log.torn.clone().expect("torn");
    assert_eq!((t.line, t.bytes), (3, 20));
    let w = log.warning(Path::new("x.reviews.jsonl")).expect("warning");
    assert!(w.contains("x.reviews.jsonl: line 3"), "{w}");
    // Zeros left by a crash (file size updated, data not) are torn too.
    let mut z = line(&rec("a")).into_bytes();
    z.extend_from_slice(&[0u8; 64]);
    assert!(parse_review_log(Path::new("x"), &z)
        .expect("read")
        .torn
        .is_some());
    // Half a UTF-8 character is torn, not a whole-file error.
    let mut u = line(&rec("a")).into_bytes();
    u.extend_from_slice(&"{\"reason\":\"ñ".as_bytes()[..12]);
    assert_eq!(
        parse_review_log(Path::new("x"), &u)
            .expect("read")
            .records
            .len(),
        1
    );
}

#[test]
fn a_bad_line_in_the_middle_is_an_error_naming_file_and_line() {
    let mut b = line(&rec("a")).into_bytes();
    b.extend_from_slice(b"{torn\n");
    b.extend_from_slice(line(&rec("b")).as_bytes());
    let e = parse_review_log(Path::new("x.reviews.jsonl"), &b).expect_err("bad line");
    assert!(e.to_string().starts_with("x.reviews.jsonl: line 2:"), "{e}");
}

#[test]
fn append_moves_a_torn_tail_aside_and_keeps_complete_records() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("c.yaml.reviews.jsonl");
    append_review(&log, &rec("a")).expect("append");
    let whole = std::fs::read(&log).expect("log");
    let mut torn = whole.clone();
    torn.extend_from_slice(b"{\"case\":\"Q-01");
    std::fs::write(&log, &torn).expect("write");
    // A previous quarantine keeps its name; the new one takes the next number.
    std::fs::write(dir.path().join("c.yaml.reviews.jsonl.torn-1"), b"old").expect("write");
    let rep = append_review(&log, &rec("b")).expect("append");
    let (t, to) = rep.quarantined.clone().expect("quarantined");
    assert_eq!(t.line, 2);
    assert_eq!(to, dir.path().join("c.yaml.reviews.jsonl.torn-2"));
    assert_eq!(std::fs::read(&to).expect("q"), b"{\"case\":\"Q-01");
    assert!(rep.warning(&log).expect("warning").contains("moved to"));
    let now = std::fs::read_to_string(&log).expect("log");
    assert_eq!(now, format!("{}{}", line(&rec("a")), line(&rec("b"))));
    assert_eq!(read_reviews(&log).expect("read").len(), 2);
}

#[test]
fn append_after_a_whole_last_record_without_newline_keeps_both() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("c.yaml.reviews.jsonl");
    std::fs::write(&log, line(&rec("a")).trim_end()).expect("write");
    let rep = append_review(&log, &rec("b")).expect("append");
    assert!(rep.quarantined.is_none());
    assert_eq!(read_reviews(&log).expect("read").len(), 2);
}

#[test]
fn append_to_a_log_with_a_bad_middle_line_appends_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("c.yaml.reviews.jsonl");
    let bad = format!("{}{{bad\n{}", line(&rec("a")), line(&rec("b")));
    std::fs::write(&log, &bad).expect("write");
    assert!(append_review(&log, &rec("c")).is_err());
    assert_eq!(std::fs::read_to_string(&log).expect("log"), bad);
}

#[test]
fn suggestion_log_appends_are_whole_and_torn_tails_recovered() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("c.yaml.suggestions.jsonl");
    let s = SuggestionRecord {
        case: "Q".into(),
        answer: "A".into(),
        claim: "C".into(),
        suggestion: Support::Supported,
        label: "entailment".into(),
        probabilities: Default::default(),
        confidence: None,
        reason: None,
        model: "m".into(),
        method: NLI_METHOD.into(),
        time: "t".into(),
    };
    append_suggestions(&log, &[s.clone(), s.clone()]).expect("append");
    let mut b = std::fs::read(&log).expect("log");
    b.extend_from_slice(b"{\"case\"");
    std::fs::write(&log, &b).expect("write");
    let read = read_suggestion_log(&log).expect("read");
    assert_eq!(
        (read.records.len(), read.torn.map(|t| t.line)),
        (2, Some(3))
    );
    let rep = append_suggestions(&log, std::slice::from_ref(&s)).expect("append");
    assert!(rep.quarantined.is_some());
    assert_eq!(read_suggestions(&log).expect("read").len(), 3);
}

#[test]
fn concurrent_appends_lose_nothing_and_interleave_no_bytes() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("c.yaml.reviews.jsonl");
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    append_review(&log, &rec(&format!("t{t}-{i}"))).expect("append");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("thread");
    }
    let read = read_review_log(&log).expect("read");
    assert!(read.torn.is_none());
    let mut who: Vec<String> = read.records.iter().map(|r| r.reviewer.clone()).collect();
    who.sort();
    who.dedup();
    assert_eq!(who.len(), 200);
}

/// A complete last line (it ends with its newline) that is not a valid record was taken for
/// a torn write: ignored with exit 0, then moved aside by the next append. It is an error
/// naming the file, the line and the field, and the append adds nothing.
#[test]
fn a_whole_but_invalid_last_line_is_an_error_naming_file_line_and_field_not_a_torn_tail() {
    let mut bad = serde_json::to_value(rec("b")).expect("json");
    bad["support"] = serde_json::json!("maybe");
    let b = format!("{}{}\n", line(&rec("a")), bad);
    let e = parse_review_log(Path::new("x.reviews.jsonl"), b.as_bytes()).expect_err("invalid");
    let text = e.to_string();
    assert!(
        text.starts_with("x.reviews.jsonl: line 2: field `support`: unknown variant `maybe`"),
        "{text}"
    );
    // Each kind of problem names its field.
    let cases: [(&str, serde_json::Value, &str); 4] = [
        ("case", serde_json::json!(5), "invalid type: integer `5`"),
        ("time", serde_json::Value::Null, "invalid type: null"),
        ("extra", serde_json::json!("x"), "unknown field `extra`"),
        ("reason", serde_json::json!(["a"]), "invalid type: sequence"),
    ];
    for (field, value, reason) in cases {
        let mut v = serde_json::to_value(rec("b")).expect("json");
        v[field] = value;
        let b = format!("{}{v}\n", line(&rec("a")));
        let e = parse_review_log(Path::new("x"), b.as_bytes()).expect_err(field);
        let want = format!("x: line 2: field `{field}`: {reason}");
        assert!(e.to_string().starts_with(&want), "{e}");
    }
    let mut v = serde_json::to_value(rec("b")).expect("json");
    v.as_object_mut().expect("object").remove("reviewer");
    let b = format!("{}{v}\n", line(&rec("a")));
    let e = parse_review_log(Path::new("x"), b.as_bytes()).expect_err("missing");
    assert!(
        e.to_string()
            .starts_with("x: line 2: field `reviewer`: missing field `reviewer`"),
        "{e}"
    );
    // Malformed JSON on a whole line: an error too (a crash does not write the newline).
    let b = format!("{}{{\"case\": \"Q-0\n", line(&rec("a")));
    let e = parse_review_log(Path::new("x"), b.as_bytes()).expect_err("malformed");
    assert!(
        e.to_string().starts_with("x: line 2: malformed JSON"),
        "{e}"
    );

    // On disk: the append refuses, appends nothing and moves nothing aside.
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("c.yaml.reviews.jsonl");
    let content = format!("{}{}\n", line(&rec("a")), bad);
    std::fs::write(&log, &content).expect("write");
    let e = append_review(&log, &rec("c")).expect_err("refused");
    assert!(e.to_string().contains("line 2: field `support`"), "{e}");
    assert_eq!(std::fs::read_to_string(&log).expect("log"), content);
    assert!(!dir.path().join("c.yaml.reviews.jsonl.torn-1").exists());
    assert!(read_reviews(&log).is_err());
    // The same bytes without the final newline are a torn tail, as before.
    std::fs::write(&log, content.trim_end()).expect("write");
    let read = read_review_log(&log).expect("torn tail");
    assert_eq!(
        (read.records.len(), read.torn.map(|t| t.line)),
        (1, Some(2))
    );
}

/// The warning for a torn tail and the error for a bad line quoted the value whole: a
/// 600 KB `support` became 600 KB on stderr. Quoted values are cut to 200 characters.
#[test]
fn a_huge_value_is_quoted_cut_in_warnings_and_errors() {
    let huge = "z".repeat(600_000);
    let mut bad = serde_json::to_value(rec("b")).expect("json");
    bad["support"] = serde_json::json!(huge);
    // A whole line: the error.
    let b = format!("{}{bad}\n", line(&rec("a")));
    let e = parse_review_log(Path::new("x"), b.as_bytes())
        .expect_err("invalid")
        .to_string();
    assert!(e.len() < 1_000, "{} bytes", e.len());
    assert!(e.contains("(600000 characters)"), "{e}");
    // A huge unknown key, too.
    let mut odd = serde_json::to_value(rec("b")).expect("json");
    odd[huge.as_str()] = serde_json::json!(1);
    let b = format!("{}{odd}\n", line(&rec("a")));
    let e = parse_review_log(Path::new("x"), b.as_bytes())
        .expect_err("invalid")
        .to_string();
    assert!(e.len() < 1_000, "{} bytes", e.len());
    // A torn tail: the reader's warning and the append's warning.
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("c.yaml.reviews.jsonl");
    std::fs::write(&log, format!("{}{bad}", line(&rec("a")))).expect("write");
    let read = read_review_log(&log).expect("torn");
    let w = read.warning(&log).expect("warning");
    assert!(w.len() < 1_500, "{} bytes", w.len());
    assert!(w.contains("line 2") && w.contains("field `support`"), "{w}");
    let rep = append_review(&log, &rec("c")).expect("append");
    let w = rep.warning(&log).expect("warning");
    assert!(w.len() < 1_500, "{} bytes", w.len());
    assert_eq!(read_reviews(&log).expect("read").len(), 2);
}

#[test]
fn quoted_values_are_cut_and_short_ones_kept() {
    assert_eq!(
        cut_quoted("unknown variant `maybe`, expected `a`"),
        "unknown variant `maybe`, expected `a`"
    );
    let long = "y".repeat(250);
    assert_eq!(
        cut_quoted(&format!("invalid type: string \"{long}\", expected x")),
        format!(
            "invalid type: string \"{}… (250 characters)\", expected x",
            "y".repeat(200)
        )
    );
    // An escaped quote does not end the value; an unclosed quote runs to the end.
    assert_eq!(cut_quoted("s \"a\\\"b\" t"), "s \"a\\\"b\" t");
    assert_eq!(
        cut_quoted(&format!("s `{long}")),
        format!("s `{}… (250 characters)", "y".repeat(200))
    );
}
