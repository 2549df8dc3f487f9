//! The claims area over HTTP: a verdict appended as `audit review` appends it, the reason
//! required, an annex for a second opinion, two browsers submitting at once, the answer's
//! relevance verdict, and the claims reopened by a source change.

use std::path::{Path, PathBuf};

use crate::golden::{attr, enc, request};

fn start(dir: &Path) -> (String, PathBuf) {
    start_with(dir, None)
}

/// Serves the claims fixture, checking its verdicts against `sources` when given.
fn start_with(dir: &Path, sources: Option<PathBuf>) -> (String, PathBuf) {
    let cases = dir.join("claims.yaml");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/web/fixtures/claims.yaml"),
        &cases,
    )
    .unwrap();
    std::fs::write(dir.join("golden.jsonl"), "").unwrap();
    let bound = veredicto_web::bind(
        "127.0.0.1",
        0,
        veredicto_web::Config {
            golden: dir.join("golden.jsonl"),
            corpus: None,
            token: None,
            identity_header: Some("x-reviewer".into()),
            documents: None,
            signals: None,
            clock: || "2026-01-01T00:00:00Z".to_owned(),
            history: veredicto_app::HistorySpec::default_at(
                dir.join("history.sqlite").display().to_string(),
            ),
            audit: Some(cases.display().to_string()),
            exam: None,
        },
    )
    .unwrap()
    .with_audit_sources(sources);
    let url = bound.url().to_owned();
    std::thread::spawn(move || bound.serve());
    (
        url.trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned(),
        cases,
    )
}

fn reviews(cases: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(veredicto_grounding::review_log_path(cases))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_verdict_is_appended_as_audit_review_appends_it_and_a_second_opinion_is_an_annex() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, cases) = start(dir.path());
    let origin = format!("http://{addr}");
    let (st, card) = request(
        &addr,
        "GET",
        "/claims/C-017-3",
        &[("x-reviewer", "Ana")],
        "",
    );
    assert_eq!(st, 200);
    assert!(card.contains("<mark>El reembolso comienza cuando envías la solicitud.[D-02]</mark>"));
    assert!(card.contains("<script src=\"/assets/review.js\" defer></script>"));
    assert!(card.contains("content-security-policy: default-src 'none'; script-src 'self';"));
    let csrf = attr(&card, "csrf").to_owned();
    let me = |who: &'static str| [("Origin", origin.clone()), ("x-reviewer", who.to_owned())];
    let post = |who: &'static str, body: &str| {
        let h = me(who);
        let h: Vec<(&str, &str)> = h.iter().map(|(k, v)| (*k, v.as_str())).collect();
        request(&addr, "POST", "/claims/C-017-3/review", &h, body)
    };
    // No reason: refused, with the message `audit review` gives; nothing appended.
    let (st, page) = post(
        "Ana",
        &format!("csrf={csrf}&support=not_evaluable&reason=+"),
    );
    assert_eq!(st, 400);
    assert!(page.contains("must say what is missing"), "{page}");
    assert!(reviews(&cases).is_empty());
    let (st, _) = post(
        "Ana",
        &format!(
            "csrf={csrf}&support=unsupported&reason={}",
            enc("D-02 p07: empieza al llegar al almacén")
        ),
    );
    assert_eq!(st, 303);
    // What `veredicto audit review CASES --claim C-017-3 ...` appends, byte for byte.
    let by_cli = tempfile::tempdir().unwrap();
    let copy = by_cli.path().join("claims.yaml");
    std::fs::copy(&cases, &copy).unwrap();
    let t = veredicto_app::audit::open_file(&copy, veredicto_app::Events::silent()).unwrap();
    veredicto_app::audit::record::review(
        &t,
        &veredicto_app::audit::record::Review {
            claim: "C-017-3",
            support: veredicto_grounding::Support::Unsupported,
            reason: "D-02 p07: empieza al llegar al almacén",
            reviewer: "Ana",
            diagnosis: None,
            time: "2026-01-01T00:00:00Z",
        },
    )
    .unwrap();
    assert_eq!(
        std::fs::read(veredicto_grounding::review_log_path(&cases)).unwrap(),
        std::fs::read(veredicto_grounding::review_log_path(&copy)).unwrap()
    );
    // A second reviewer disagrees: an annex, the verdict in force stays.
    let (st, _) = post(
        "Luis",
        &format!("csrf={csrf}&support=partially_supported&reason=matiz"),
    );
    assert_eq!(st, 303);
    let (_, card) = request(
        &addr,
        "GET",
        "/claims/C-017-3?appended=C-017-3",
        &[("x-reviewer", "Luis")],
        "",
    );
    assert!(
        card.contains("an annex that disagrees (unsupported)"),
        "{card}"
    );
    let (_, queue) = request(
        &addr,
        "GET",
        "/claims?show=disagreements",
        &[("x-reviewer", "Luis")],
        "",
    );
    assert!(queue.contains("/claims/C-017-3"), "{queue}");
    assert!(queue.contains("pairs: 1"), "{queue}");
    assert_eq!(reviews(&cases).len(), 2);
    // Cross-origin, and without the CSRF token: 403, nothing appended.
    let (st, _) = request(
        &addr,
        "POST",
        "/claims/C-017-3/review",
        &[("Origin", "http://evil.example"), ("x-reviewer", "Eve")],
        &format!("csrf={csrf}&support=supported&reason=x"),
    );
    assert_eq!(st, 403);
    let (st, _) = post("Eve", "support=supported&reason=x");
    assert_eq!(st, 403);
    assert_eq!(reviews(&cases).len(), 2);
}

#[test]
fn two_browsers_submitting_at_once_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, cases) = start(dir.path());
    let origin = format!("http://{addr}");
    let (_, card) = request(&addr, "GET", "/claims/C-017-2", &[], "");
    let csrf = attr(&card, "csrf").to_owned();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let threads: Vec<_> = ["Ana", "Luis"]
        .into_iter()
        .map(|who| {
            let (addr, origin, csrf, barrier) =
                (addr.clone(), origin.clone(), csrf.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut statuses = Vec::new();
                barrier.wait();
                for claim in ["C-017-2", "C-017-3", "C-017-2", "C-017-3"] {
                    let (st, _) = request(
                        &addr,
                        "POST",
                        &format!("/claims/{claim}/review"),
                        &[("Origin", origin.as_str()), ("x-reviewer", who)],
                        &format!("csrf={csrf}&support=supported&reason={who}+{claim}"),
                    );
                    statuses.push(st);
                }
                statuses
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), vec![303; 4]);
    }
    let log = reviews(&cases);
    assert_eq!(log.len(), 8, "{log:?}");
    for who in ["Ana", "Luis"] {
        assert_eq!(log.iter().filter(|r| r["reviewer"] == who).count(), 4);
    }
}

#[test]
fn an_answer_relevance_verdict_is_appended_as_audit_review_appends_it() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, cases) = start(dir.path());
    let origin = format!("http://{addr}");
    let (st, card) = request(
        &addr,
        "GET",
        "/claims/C-017-2",
        &[("x-reviewer", "Ana")],
        "",
    );
    assert_eq!(st, 200);
    assert!(
        card.contains("Does answer A-017 address the question?"),
        "{card}"
    );
    assert!(card.contains("No relevance verdict yet."), "{card}");
    assert!(
        card.contains("answers judged for relevance: 0 / 1"),
        "{card}"
    );
    for v in ["addresses", "partly", "off_topic"] {
        assert!(
            card.contains(&format!("name=\"relevance\" value=\"{v}\"")),
            "a button for {v}: {card}"
        );
    }
    let csrf = attr(&card, "csrf").to_owned();
    let post = |who: &str, body: &str| {
        request(
            &addr,
            "POST",
            "/claims/C-017-2/relevance",
            &[("Origin", origin.as_str()), ("x-reviewer", who)],
            body,
        )
    };
    // The reason is required, as `audit review --answer` requires it; a verdict outside the
    // three is refused; nothing appended.
    let (st, page) = post("Ana", &format!("csrf={csrf}&relevance=off_topic&reason=+"));
    assert_eq!(st, 400);
    assert!(
        page.contains("a relevance verdict needs a reason"),
        "{page}"
    );
    let (st, _) = post("Ana", &format!("csrf={csrf}&relevance=maybe&reason=x"));
    assert_eq!(st, 400);
    assert!(reviews(&cases).is_empty());
    let reason = "Se pregunta por la venta final; responde sobre el plazo del reembolso";
    let (st, _) = post(
        "Ana",
        &format!("csrf={csrf}&relevance=off_topic&reason={}", enc(reason)),
    );
    assert_eq!(st, 303);
    // Byte for byte what `veredicto audit review CASES --answer A-017 ...` appends.
    let by_cli = tempfile::tempdir().unwrap();
    let copy = by_cli.path().join("claims.yaml");
    std::fs::copy(&cases, &copy).unwrap();
    let t = veredicto_app::audit::open_file(&copy, veredicto_app::Events::silent()).unwrap();
    veredicto_app::audit::record::review_relevance(
        &t,
        &veredicto_app::audit::record::RelevanceReview {
            case: None,
            answer: "A-017",
            relevance: veredicto_grounding::Relevance::OffTopic,
            reason,
            reviewer: "Ana",
            time: "2026-01-01T00:00:00Z",
        },
    )
    .unwrap();
    assert_eq!(
        std::fs::read(veredicto_grounding::review_log_path(&cases)).unwrap(),
        std::fs::read(veredicto_grounding::review_log_path(&copy)).unwrap()
    );
    // The card shows it and progress counts it; audit check reports it.
    let (_, card) = request(
        &addr,
        "GET",
        "/claims/C-017-2?relevance=appended",
        &[("x-reviewer", "Ana")],
        "",
    );
    assert!(
        card.contains("Relevance appended on answer A-017 · off topic: the original verdict"),
        "{card}"
    );
    assert!(
        card.contains("<li><strong>off topic</strong> — Se pregunta"),
        "{card}"
    );
    assert!(
        card.contains("answers judged for relevance: 1 / 1"),
        "{card}"
    );
    let t = veredicto_app::audit::open_file(&cases, veredicto_app::Events::silent()).unwrap();
    let out = veredicto_app::audit::check(&t, None, &[]).unwrap();
    assert_eq!((out.totals.off_topic, out.pass), (1, false));
    // A second reviewer, blind: the verdict in force is hidden; theirs is an annex.
    let blind = [("x-reviewer", "Luis"), ("Cookie", "blind=1")];
    let (_, card) = request(&addr, "GET", "/claims/C-017-3", &blind, "");
    assert!(!card.contains("Se pregunta por la venta final"), "{card}");
    assert!(!card.contains("relevance-verdicts"), "{card}");
    let (st, _) = request(
        &addr,
        "POST",
        "/claims/C-017-3/relevance",
        &[
            ("Origin", origin.as_str()),
            ("x-reviewer", "Luis"),
            ("Cookie", "blind=1"),
        ],
        &format!("csrf={csrf}&relevance=partly&reason=responde+la+mitad"),
    );
    assert_eq!(st, 303);
    let (_, card) = request(
        &addr,
        "GET",
        "/claims/C-017-3?relevance=appended",
        &blind,
        "",
    );
    assert!(
        card.contains("Relevance appended on answer A-017 · partly addresses it</p>"),
        "blind: whether it agrees is not said: {card}"
    );
    let log = reviews(&cases);
    assert_eq!(log.len(), 2);
    assert_eq!(log[1]["relevance"], "partly");
    assert_eq!(log[1]["reviewer"], "Luis");
    // Cross-origin: 403, nothing appended.
    let (st, _) = request(
        &addr,
        "POST",
        "/claims/C-017-2/relevance",
        &[("Origin", "http://evil.example"), ("x-reviewer", "Eve")],
        &format!("csrf={csrf}&relevance=addresses&reason=x"),
    );
    assert_eq!(st, 403);
    assert_eq!(reviews(&cases).len(), 2);
}

#[test]
fn claims_judged_against_a_passage_that_changed_are_listed_as_reopened() {
    let dir = tempfile::tempdir().unwrap();
    let sources =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/grounding/q017-sources-v5.yaml");
    let (addr, _cases) = start_with(dir.path(), Some(sources));
    let origin = format!("http://{addr}");
    // D-02 p07 changed in refunds-v3; the only claim citing it (C-017-3) has no verdict yet,
    // and D-01 moved to returns-v5 with the same text: nothing reopened.
    let (st, queue) = request(&addr, "GET", "/claims", &[("x-reviewer", "Ana")], "");
    assert_eq!(st, 200);
    assert!(queue.contains("Reopened by a source change"), "{queue}");
    assert!(
        queue.contains("None: every verdict was given against the current text."),
        "{queue}"
    );
    let (_, card) = request(&addr, "GET", "/claims/C-017-3", &[], "");
    let csrf = attr(&card, "csrf").to_owned();
    let (st, _) = request(
        &addr,
        "POST",
        "/claims/C-017-3/review",
        &[("Origin", origin.as_str()), ("x-reviewer", "Ana")],
        &format!("csrf={csrf}&support=unsupported&reason=p07+dice+al+llegar+al+almac%C3%A9n"),
    );
    assert_eq!(st, 303);
    // Now its verdict was given against refunds-v2's p07, which has changed.
    let (_, queue) = request(&addr, "GET", "/claims", &[("x-reviewer", "Ana")], "");
    let section = &queue[queue.find("id=\"reopened\"").expect("section")..];
    let section = &section[..section.find("</section>").unwrap()];
    assert!(section.contains("/claims/C-017-3"), "{section}");
    assert!(section.contains("unsupported"), "{section}");
    assert!(
        section.contains("D-02#p07 refunds-v2 -&gt; refunds-v3: passage text changed"),
        "{section}"
    );
    assert!(
        !section.contains("C-017-1"),
        "unchanged text reopens nothing: {section}"
    );
    // What the app computes is what `audit impact` computes, kept to claims with a verdict.
    let t = veredicto_app::audit::open_file(&_cases, veredicto_app::Events::silent()).unwrap();
    let current = veredicto_grounding::load_sources(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/grounding/q017-sources-v5.yaml"),
    )
    .unwrap();
    let reopened = veredicto_app::claims::reopened(&t, &current);
    assert_eq!(reopened.len(), 1);
    assert_eq!(reopened[0].claim, "C-017-3");
    // Its card shows what changed and the passage as the current sources hold it.
    let (_, card) = request(
        &addr,
        "GET",
        "/claims/C-017-3",
        &[("x-reviewer", "Ana")],
        "",
    );
    let changed = &card[card.find("id=\"changed\"").expect("changed section")..];
    let changed = &changed[..changed.find("</section>").unwrap()];
    assert!(
        changed.contains("Now: D-02@refunds-v3#p07")
            && changed.contains("se completa en un plazo de 10 días hábiles"),
        "{changed}"
    );
    // An unchanged claim's card has no such section.
    let (_, card) = request(
        &addr,
        "GET",
        "/claims/C-017-1",
        &[("x-reviewer", "Ana")],
        "",
    );
    assert!(!card.contains("id=\"changed\""), "{card}");
    // Hidden in a blind second review.
    let (_, queue) = request(
        &addr,
        "GET",
        "/claims",
        &[("x-reviewer", "Luis"), ("Cookie", "blind=1")],
        "",
    );
    assert!(!queue.contains("Reopened by a source change"), "{queue}");
}

#[test]
fn a_citation_mark_is_appended_as_audit_review_appends_it() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, cases) = start(dir.path());
    let origin = format!("http://{addr}");
    let (st, card) = request(
        &addr,
        "GET",
        "/claims/C-017-2",
        &[("x-reviewer", "Ana")],
        "",
    );
    assert_eq!(st, 200);
    assert!(card.contains("id=\"mark-D-01\""), "{card}");
    for v in ["necessary", "redundant", "irrelevant"] {
        assert!(
            card.contains(&format!("id=\"mark-D-01-{v}\"")),
            "a button for {v}: {card}"
        );
    }
    let csrf = attr(&card, "csrf").to_owned();
    let post = |body: &str| {
        request(
            &addr,
            "POST",
            "/claims/C-017-2/citation",
            &[("Origin", origin.as_str()), ("x-reviewer", "Ana")],
            body,
        )
    };
    // A citation the claim does not cite, a mark outside the three, no reason: refused,
    // nothing appended.
    for bad in [
        format!("csrf={csrf}&citation=D-02&mark=necessary&reason=x"),
        format!("csrf={csrf}&citation=D-01&mark=maybe&reason=x"),
        format!("csrf={csrf}&citation=D-01&mark=necessary&reason=+"),
    ] {
        let (st, _) = post(&bad);
        assert_eq!(st, 400, "{bad}");
    }
    assert!(reviews(&cases).is_empty());
    // Without the CSRF token: 403.
    let (st, _) = post("citation=D-01&mark=necessary&reason=x");
    assert_eq!(st, 403);
    let reason = "Sin D-01 nada respalda el plazo";
    let (st, _) = post(&format!(
        "csrf={csrf}&citation=D-01&mark=necessary&reason={}",
        enc(reason)
    ));
    assert_eq!(st, 303);
    // Byte for byte what `veredicto audit review CASES --claim C-017-2 --citation D-01 ...`
    // appends.
    let by_cli = tempfile::tempdir().unwrap();
    let copy = by_cli.path().join("claims.yaml");
    std::fs::copy(&cases, &copy).unwrap();
    let t = veredicto_app::audit::open_file(&copy, veredicto_app::Events::silent()).unwrap();
    veredicto_app::audit::record::review_citation(
        &t,
        &veredicto_app::audit::record::CitationReview {
            claim: "C-017-2",
            citation: "D-01",
            mark: veredicto_grounding::CitationMark::Necessary,
            reason,
            reviewer: "Ana",
            time: "2026-01-01T00:00:00Z",
        },
    )
    .unwrap();
    assert_eq!(
        std::fs::read(veredicto_grounding::review_log_path(&cases)).unwrap(),
        std::fs::read(veredicto_grounding::review_log_path(&copy)).unwrap()
    );
    // The card lists the mark in force; audit check counts it.
    let (_, card) = request(
        &addr,
        "GET",
        "/claims/C-017-2",
        &[("x-reviewer", "Ana")],
        "",
    );
    assert!(
        card.contains("<li><strong>necessary</strong> — Sin D-01 nada respalda el plazo"),
        "{card}"
    );
    let t = veredicto_app::audit::open_file(&cases, veredicto_app::Events::silent()).unwrap();
    let out = veredicto_app::audit::check(&t, None, &[]).unwrap();
    let marked: usize = out
        .cases
        .iter()
        .flat_map(|c| &c.answers)
        .filter_map(|a| a.citation_precision.as_ref())
        .map(|p| p.marked)
        .sum();
    assert_eq!(marked, 1);
    // Hidden in a blind second review.
    let (_, card) = request(
        &addr,
        "GET",
        "/claims/C-017-2",
        &[("x-reviewer", "Luis"), ("Cookie", "blind=1")],
        "",
    );
    assert!(!card.contains("Sin D-01 nada respalda"), "{card}");
}
