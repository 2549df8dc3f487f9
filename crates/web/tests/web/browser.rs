//! The workbench's flows in a real browser: Debian's Chromium, headless, driven through
//! chromedriver (W3C WebDriver). Each flow saves a screenshot of every page it visits to
//! `target/workbench-screenshots/` (under `CARGO_TARGET_DIR` when set) and prints the paths.
//! Without chromium or chromedriver the tests print why and pass, unless
//! `VEREDICTO_REQUIRE_BROWSER=1` (the test command sets it): then they fail.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::webdriver::{browser_or_skip, screenshot_path, Browser};
use veredicto_app::{ExamRequest, Recording};

const CTRL_ENTER: &str = "\u{E009}\u{E007}";

/// The project of the golden-set flows: two cases' worth of corpus, one case, and the run
/// file the exam reads (the retriever's answers, the new case's included).
fn project(dir: &Path) {
    std::fs::write(
        dir.join("golden.jsonl"),
        "{\"id\":\"a\",\"query\":\"vacaciones\",\"expected\":[\"c1\"]}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("corpus.jsonl"),
        "{\"id\":\"c1\",\"text\":\"Los días de vacaciones son treinta naturales al año.\",\"domain\":\"laboral\",\"batch\":\"2026-01\"}\n{\"id\":\"c2\",\"text\":\"Asuntos propios: tres días al año, a elegir con preaviso.\",\"domain\":\"laboral\",\"batch\":\"2026-01\"}\n{\"id\":\"c3\",\"text\":\"El preaviso de baja voluntaria es de quince días.\",\"domain\":\"laboral\",\"batch\":\"2026-02\"}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("run.trec"),
        "a Q0 c1 1 0.91 bench\na Q0 c2 2 0.40 bench\nb Q0 c2 1 0.88 bench\nb Q0 c3 2 0.35 bench\n",
    )
    .unwrap();
}

fn history(dir: &Path) -> veredicto_app::HistorySpec {
    veredicto_app::HistorySpec::default_at(dir.join("history.sqlite").display().to_string())
}

/// The exam "Run the exam" starts: `app::run_exam` over the run file, recorded in the
/// project's history (what `veredicto serve` builds from veredicto.toml's source).
fn runner(dir: PathBuf) -> veredicto_web::ExamRunner {
    runner_over(dir, "run.trec", None)
}

/// The exam over the run file `run` of `dir`, under the policy file `policy` (default: the
/// built-in policy).
fn runner_over(
    dir: PathBuf,
    run: &'static str,
    policy: Option<&'static str>,
) -> veredicto_web::ExamRunner {
    veredicto_web::ExamRunner(Arc::new(move |events: veredicto_app::Events<'_>| {
        let err = |e: veredicto_app::Error| e.to_string();
        let loaded = veredicto_app::golden::load(
            &dir.join("golden.jsonl"),
            Some(&dir.join("corpus.jsonl")),
            None,
            events,
        )
        .map_err(err)?;
        let opened = veredicto_app::retriever::open(
            &format!("run:{}", dir.join(run).display()),
            &[],
            &veredicto_retrieve::Options::default(),
        )
        .map_err(err)?;
        let policy = match policy {
            Some(p) => {
                veredicto_formats::policy::PolicyFile::read_sections(
                    &dir.join(p),
                    &[veredicto_formats::policy::Section::Exam],
                )
                .map_err(|e| e.to_string())?
                .exam
            }
            None => veredicto_core::policy::Policy::default(),
        };
        let history = dir.join("history.sqlite").display().to_string();
        veredicto_app::run_exam(ExamRequest {
            retriever: opened.retriever.as_ref(),
            embedder: None,
            cases: &loaded.cases,
            policy: &policy,
            corpus: loaded.corpus,
            corpus_fingerprint: None,
            notes: &BTreeMap::new(),
            as_of: "2026-01-01",
            settings: Default::default(),
            rerank_spec: None,
            fusion: None,
            check_vectors: None,
            timings: false,
            record: Some(Recording {
                history: &history,
                label: Some("workbench".into()),
                created_at: "2026-01-01T00:00:00Z".into(),
                tool_version: "test".into(),
                git_revision: None,
                chunk_size: None,
                chunk_overlap: None,
                compare: None,
                fail_on_regression: false,
                seed: veredicto_core::compare::DEFAULT_SEED,
            }),
            drafts: Vec::new(),
            events,
        })
        .map_err(err)
    }))
}

/// Serves `dir` on a free loopback port; the base URL (`http://127.0.0.1:P`).
fn serve(dir: &Path, audit: Option<PathBuf>) -> String {
    serve_with(dir, audit, runner(dir.to_path_buf()))
}

fn serve_with(dir: &Path, audit: Option<PathBuf>, exam: veredicto_web::ExamRunner) -> String {
    serve_searching(dir, audit, exam, None)
}

/// Serves `dir`, its new questions searched through `source` when given.
fn serve_searching(
    dir: &Path,
    audit: Option<PathBuf>,
    exam: veredicto_web::ExamRunner,
    source: Option<veredicto_formats::config::Source>,
) -> String {
    let bound = veredicto_web::bind(
        "127.0.0.1",
        0,
        veredicto_web::Config {
            golden: dir.join("golden.jsonl"),
            corpus: Some(dir.join("corpus.jsonl")),
            token: None,
            identity_header: None,
            documents: Some(dir.join("documents.jsonl")),
            signals: Some(dir.join("signals.jsonl")),
            history: history(dir),
            clock: || "2026-01-02T10:00:00Z".to_owned(),
            audit: audit.map(|p| p.display().to_string()),
            exam: Some(exam),
        },
    )
    .unwrap();
    let bound = match source {
        Some(s) => bound.search_through(veredicto_web::SearchSource {
            settings: crate::search::settings(dir, Some(s)),
            net: veredicto_app::source::Net::default(),
        }),
        None => bound,
    };
    let url = bound.url().trim_end_matches('/').to_owned();
    std::thread::spawn(move || bound.serve());
    url
}

fn say_name(b: &Browser, name: &str) {
    b.type_into("#reviewer", name);
    b.click("form[action=\"/reviewer\"] button");
    b.wait_for_text("main", name, 10);
}

fn shot(b: &Browser, name: &str) {
    b.screenshot(&screenshot_path(name));
}

#[test]
fn a_new_question_is_searched_picked_saved_and_examined_in_chromium() {
    let Some((chromium, driver)) = browser_or_skip("the golden-set browser flow") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    // The project's source is its own index (the corpus embedded with MiniLM): the search
    // goes through it, as `veredicto search` would.
    let kb = crate::search::index(dir.path());
    let base = serve_searching(
        dir.path(),
        None,
        runner(dir.path().to_path_buf()),
        Some(veredicto_formats::config::Source::Index(kb)),
    );
    let b = Browser::start(&chromium, &driver, "en");
    let started = Instant::now();
    b.goto(&format!("{base}/golden"));
    shot(&b, "golden-first-visit");
    say_name(&b, "Ana");
    b.type_into("#id", "b");
    b.type_into("#query", "¿Cuántos días de asuntos propios hay?");
    b.click("form[action=\"/golden/new\"] button");
    // The search lists the chunks the index ranks, with their fields from the corpus; pick
    // the one that answers.
    let hits = b.wait_for_text("main", "Asuntos propios: tres días", 30);
    assert!(hits.contains("batch: 2026-01"), "{hits}");
    let searched = b.text("#searched");
    assert!(
        searched.contains("Searched through the project's source index:"),
        "{searched}"
    );
    b.click("input[value=\"c2\"]");
    shot(&b, "golden-new-question");
    b.click("form[action=\"/golden/add\"] button");
    b.wait_for_text("#count", "1–2 / 2", 10);
    let golden = std::fs::read_to_string(dir.path().join("golden.jsonl")).unwrap();
    assert_eq!(
        golden.lines().last().unwrap(),
        "{\"id\":\"b\",\"query\":\"¿Cuántos días de asuntos propios hay?\",\"expected\":[\"c2\"]}"
    );
    let log = std::fs::read_to_string(dir.path().join("golden.jsonl.log")).unwrap();
    assert!(log.contains("\"who\":\"Ana\"") && log.contains("\"action\":\"add_case\""));
    shot(&b, "golden-saved");
    // Run the exam from the page: progress, then the verdict and the recorded run.
    b.click("#run-exam");
    let verdict = b.wait_for_text("main", "failing cases", 60);
    assert!(
        verdict.contains("ACCEPT") || verdict.contains("STOP"),
        "{verdict}"
    );
    shot(&b, "golden-exam-verdict");
    let last = veredicto_app::workbench::last_results(&history(dir.path())).unwrap();
    let seen = last.get("b").expect("the exam saw the new case");
    assert_eq!(seen.ranks, vec![("c2".to_owned(), Some(1))]);
    b.click("#exam-run");
    b.wait_for_text("body", "asuntos propios", 10);
    shot(&b, "run-report");
    b.goto(&format!("{base}/golden"));
    let table = b.text("main table");
    assert!(table.contains("1.00 · c2 #1"), "{table}");
    shot(&b, "golden-last-results");
    // A second exam, then the two runs side by side.
    b.click("#run-exam");
    b.wait_for_text("main", "failing cases", 60);
    b.goto(&format!("{base}/runs"));
    b.wait_for_text("main", "workbench", 10);
    shot(&b, "runs");
    b.click("a[href^=\"/runs/compare?new=\"]");
    let compared = b.wait_for_text("#comparison", "comparison with", 30);
    assert!(compared.contains("over 2 shared cases"), "{compared}");
    shot(&b, "runs-compared");
    eprintln!(
        "golden-set flow in chromium: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// A page of another origin (another port of the same machine: same site, other origin)
/// whose form posts to the workbench, with the right CSRF token even.
fn hostile_page(target: &str, csrf: &str, hash: &str) -> String {
    let html = format!(
        "<!DOCTYPE html><html><body><form method=\"post\" action=\"{target}/golden/add\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\"><input type=\"hidden\" name=\"hash\" value=\"{hash}\"><input type=\"hidden\" name=\"id\" value=\"evil\"><input type=\"hidden\" name=\"query\" value=\"x\"><button id=\"go\" type=\"submit\">win a prize</button></form></body></html>"
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{html}",
                    html.len()
                )
                .as_bytes(),
            );
        }
    });
    url
}

#[test]
fn a_stale_edit_and_a_cross_origin_post_are_refused_in_chromium() {
    let Some((chromium, driver)) = browser_or_skip("the refused-edits browser flow") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let base = serve(dir.path(), None);
    let b = Browser::start(&chromium, &driver, "es");
    b.goto(&format!("{base}/golden"));
    say_name(&b, "Ana");
    b.goto(&format!("{base}/golden/new?id=c&query=preaviso+de+baja"));
    b.click("input[value=\"c3\"]");
    // Someone edits the golden file by hand while the page is open.
    let golden = dir.path().join("golden.jsonl");
    let mut by_hand = std::fs::read_to_string(&golden).unwrap();
    by_hand.push_str("{\"id\":\"h\",\"query\":\"a mano\",\"expected\":[\"c1\"]}\n");
    std::fs::write(&golden, &by_hand).unwrap();
    b.click("form[action=\"/golden/add\"] button");
    let refused = b.wait_for_text("main", "no se escribió nada", 10);
    assert!(refused.contains("cambió"), "{refused}");
    shot(&b, "golden-stale-edit-refused");
    assert_eq!(std::fs::read_to_string(&golden).unwrap(), by_hand);
    // Another origin's form, even with the page's own CSRF token: refused.
    b.goto(&format!("{base}/golden/new?id=c&query=preaviso"));
    let csrf = b
        .script("return document.querySelector('input[name=csrf]').value;")
        .as_str()
        .unwrap()
        .to_owned();
    let hash = b
        .script("return document.querySelector('input[name=hash]').value;")
        .as_str()
        .unwrap()
        .to_owned();
    let evil = hostile_page(&base, &csrf, &hash);
    b.goto(&evil);
    b.click("#go");
    b.wait_for_text("body", "403 forbidden: cross-origin request", 10);
    shot(&b, "golden-cross-origin-refused");
    assert_eq!(std::fs::read_to_string(&golden).unwrap(), by_hand);
    assert!(
        !std::fs::read_to_string(dir.path().join("golden.jsonl.log"))
            .unwrap_or_default()
            .contains("evil")
    );
}

fn claims_project(dir: &Path) -> PathBuf {
    project(dir);
    let cases = dir.join("claims.yaml");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/web/fixtures/claims.yaml"),
        &cases,
    )
    .unwrap();
    cases
}

fn figures(cases: &Path) -> (usize, usize) {
    let t = veredicto_app::audit::open_file(cases, veredicto_app::Events::silent()).unwrap();
    let out = veredicto_app::audit::check(&t, None, &[]).unwrap();
    (out.totals.supported, out.totals.unreviewed)
}

#[test]
fn a_verdict_by_keyboard_is_appended_and_changes_the_audit_figures_in_chromium() {
    let Some((chromium, driver)) = browser_or_skip("the claims browser flow") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cases = claims_project(dir.path());
    let base = serve(dir.path(), Some(cases.clone()));
    assert_eq!(figures(&cases), (0, 2));
    let b = Browser::start(&chromium, &driver, "en");
    let started = Instant::now();
    b.goto(&format!("{base}/claims"));
    say_name(&b, "Ana");
    let queue = b.text("#queue");
    assert!(
        queue.contains("C-017-2") && queue.contains("C-017-3") && !queue.contains("C-017-1"),
        "{queue}"
    );
    shot(&b, "claims-queue");
    b.click("a[href=\"/claims/C-017-2\"]");
    b.wait_for_text("#claim", "El plazo de devolución es de 30 días.", 10);
    // The claim's sentence is highlighted; the cited passage shows its exact text.
    assert_eq!(
        b.text("#answer mark"),
        "Puedes devolver cualquier artículo en 30 días, incluidos los de venta final.[D-01]"
    );
    let passages = b.text("#h-passages + figure");
    assert!(
        passages.contains("D-01@returns-v4#p04")
            && passages.contains("returned at position 1")
            && passages.contains("30 días naturales posteriores a la entrega"),
        "{passages}"
    );
    shot(&b, "claim-card");
    // 1 chooses "supported" and moves to the reason; Ctrl+Enter appends.
    b.script("document.activeElement && document.activeElement.blur(); return null;");
    b.keys(&["1"]);
    assert_eq!(b.focused_id(), "reason");
    assert_eq!(
        b.script("return document.getElementById('v1').checked;"),
        serde_json::json!(true)
    );
    b.type_into("#reason", "D-01 p04: 30 días naturales desde la entrega.");
    b.keys(&[CTRL_ENTER]);
    b.wait_for_text("#appended", "C-017-2", 10);
    assert!(b.url().contains("/claims/C-017-3"), "{}", b.url());
    shot(&b, "claim-appended");
    let log = std::fs::read_to_string(dir.path().join("claims.yaml.reviews.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
    assert_eq!(
        line,
        serde_json::json!({"case": "Q-017", "answer": "A-017", "claim": "C-017-2",
            "support": "supported", "reason": "D-01 p04: 30 días naturales desde la entrega.",
            "reviewer": "Ana", "time": "2026-01-02T10:00:00Z"})
    );
    assert_eq!(figures(&cases), (1, 1), "audit check's figures");
    // A "not evaluable" without a reason is not sent: the reason is required.
    b.keys(&["4"]);
    b.keys(&[CTRL_ENTER]);
    assert!(b.url().contains("/claims/C-017-3"));
    assert_eq!(
        log,
        std::fs::read_to_string(dir.path().join("claims.yaml.reviews.jsonl")).unwrap()
    );

    // A second reviewer, blind: the verdict in force is hidden; disagreeing adds an annex.
    let luis = Browser::start(&chromium, &driver, "es");
    luis.goto(&format!("{base}/claims"));
    say_name(&luis, "Luis");
    luis.click("a[href^=\"/claims/blind?on=1\"]");
    luis.wait_for_text("main", "a ciegas", 10);
    assert!(luis.text("#queue").contains("C-017-2"));
    shot(&luis, "claims-blind-queue");
    luis.goto(&format!("{base}/claims/C-017-2"));
    let card = luis.text("main");
    assert!(
        !card.contains("D-01 p04: 30 días naturales desde la entrega."),
        "{card}"
    );
    assert!(luis.try_find("#verdicts").is_none());
    shot(&luis, "claim-card-blind");
    luis.script("document.activeElement && document.activeElement.blur(); return null;");
    luis.keys(&["2"]);
    luis.type_into(
        "#reason",
        "Sólo para compras directas: el pasaje limita el alcance.",
    );
    luis.keys(&[CTRL_ENTER]);
    luis.wait_for_text("#appended", "C-017-2", 10);
    let log = std::fs::read_to_string(dir.path().join("claims.yaml.reviews.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 2);
    assert_eq!(
        figures(&cases),
        (1, 1),
        "an annex never replaces the verdict"
    );
    // The agreement panel, as `audit agreement` computes it.
    b.goto(&format!("{base}/claims?show=disagreements"));
    let panel = b.text("#agreement-reviewers + p");
    assert!(panel.contains("pairs: 1"), "{panel}");
    assert!(b.text("#queue").contains("C-017-2"));
    let t = veredicto_app::audit::open_file(&cases, veredicto_app::Events::silent()).unwrap();
    let a = veredicto_app::audit::agreement(&t, false);
    assert_eq!((a.pairs, a.matrix[0][1]), (1, 1));
    shot(&b, "claims-agreement");
    eprintln!(
        "claims flow in chromium (two reviewers): {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn an_answer_relevance_verdict_by_keyboard_is_appended_and_changes_audit_check_in_chromium() {
    let Some((chromium, driver)) = browser_or_skip("the answer-relevance browser flow") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cases = claims_project(dir.path());
    let base = serve(dir.path(), Some(cases.clone()));
    let check = || {
        let t = veredicto_app::audit::open_file(&cases, veredicto_app::Events::silent()).unwrap();
        let out = veredicto_app::audit::check(&t, None, &[]).unwrap();
        (out.totals.relevance_judged, out.totals.off_topic, out.pass)
    };
    assert_eq!(check(), (0, 0, true));
    let b = Browser::start(&chromium, &driver, "en");
    b.goto(&format!("{base}/claims"));
    say_name(&b, "Ana");
    b.click("a[href=\"/claims/C-017-2\"]");
    b.wait_for_text(
        "#h-relevance",
        "Does answer A-017 address the question?",
        10,
    );
    assert!(b
        .text("#progress")
        .contains("answers judged for relevance: 0 / 1"));
    shot(&b, "claim-card-relevance");
    // Without a reason the browser does not send it: the reason is required.
    b.click("#relevance-off_topic");
    assert!(b.try_find("#relevance-appended").is_none());
    assert!(!dir.path().join("claims.yaml.reviews.jsonl").exists());
    // By keyboard: the reason, then Tab past "addresses" and "partly" to "off topic", and
    // Enter.
    b.type_into(
        "#relevance-reason",
        "Se pregunta si la venta final se devuelve; responde sobre el plazo del reembolso.",
    );
    b.keys(&["\u{E004}", "\u{E004}", "\u{E004}"]);
    assert_eq!(b.focused_id(), "relevance-off_topic");
    b.keys(&["\u{E007}"]);
    b.wait_for_text("#relevance-appended", "off topic", 10);
    shot(&b, "claim-relevance-appended");
    let log = std::fs::read_to_string(dir.path().join("claims.yaml.reviews.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
    assert_eq!(
        line,
        serde_json::json!({"case": "Q-017", "answer": "A-017", "relevance": "off_topic",
            "reason": "Se pregunta si la venta final se devuelve; responde sobre el plazo del reembolso.",
            "reviewer": "Ana", "time": "2026-01-02T10:00:00Z"})
    );
    assert!(b
        .text("#progress")
        .contains("answers judged for relevance: 1 / 1"));
    assert!(b.text("#relevance-verdicts").contains("off topic"));
    assert_eq!(
        check(),
        (1, 1, false),
        "audit check: judged, off topic, gate missed"
    );
}

#[test]
fn a_failing_case_shows_its_ranked_list_and_its_outranking_chunks_are_rated_in_chromium() {
    let Some((chromium, driver)) = browser_or_skip("the ranked-list browser flow") else {
        return;
    };
    // The bundled example and its "stop" run: the IRPF table chunk is buried at rank 15.
    let dir = tempfile::tempdir().unwrap();
    let rack = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/rack");
    for f in [
        "golden.jsonl",
        "corpus.jsonl",
        "policy.toml",
        "run-stop.trec",
    ] {
        std::fs::copy(rack.join(f), dir.path().join(f)).unwrap();
    }
    let base = serve_with(
        dir.path(),
        None,
        runner_over(
            dir.path().to_path_buf(),
            "run-stop.trec",
            Some("policy.toml"),
        ),
    );
    let b = Browser::start(&chromium, &driver, "en");
    b.goto(&format!("{base}/golden"));
    say_name(&b, "Ana");
    b.click("#run-exam");
    b.wait_for_text("main", "STOP", 60);
    b.goto(&format!("{base}/golden"));
    b.click("a[href$=\"/cases/q-irpf-autonomos\"]");
    let ranking = b.wait_for_text("#ranking", "silver_finanzas_123", 10);
    assert!(ranking.contains("15 silver_finanzas_123"), "{ranking}");
    assert!(ranking.contains("✓ expected"), "{ranking}");
    shot(&b, "run-case-ranking");
    // Rate the chunk at rank 2 (it outranks two expected ones).
    b.click("tr:nth-child(2) button[value=\"relevant\"]");
    b.wait_for_text("#ranking", "relevant (Ana)", 10);
    shot(&b, "run-case-rated");
    let log = std::fs::read_to_string(dir.path().join("golden.jsonl.judgments.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
    assert_eq!(line["case"], "q-irpf-autonomos");
    assert_eq!(line["chunk"], "silver_finanzas_124");
    assert_eq!(line["grade"], "relevant");
    assert_eq!(line["who"], "Ana");
    assert_eq!(
        std::fs::read(dir.path().join("golden.jsonl")).unwrap(),
        std::fs::read(rack.join("golden.jsonl")).unwrap(),
        "the golden set is untouched"
    );
    // The run's report (the renderer every front end uses) says so.
    b.click("a[href^=\"/runs/\"]");
    let note = b.wait_for_text("#judgments", "judged relevant", 10);
    assert!(
        note.contains("1 outranking chunk judged relevant: the golden set may be incomplete")
            && note.contains("case q-irpf-autonomos: chunk silver_finanzas_124"),
        "{note}"
    );
    shot(&b, "run-report-judgments");
}

#[test]
fn questions_pasted_and_a_candidate_accepted_then_completed_in_chromium() {
    let Some((chromium, driver)) = browser_or_skip("the bulk-questions browser flow") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    std::fs::write(
        dir.path().join("signals.jsonl"),
        "{\"conversation_id\":\"c1\",\"time\":\"2026-01-01T09:00:00Z\",\"query\":\"¿Cuánto dura el preaviso de baja?\",\"retrieved\":[\"c3\"],\"answer_id\":\"a1\",\"event\":\"click_citation\",\"chunk\":\"c3\"}\n{\"conversation_id\":\"c2\",\"time\":\"2026-01-01T10:00:00Z\",\"query\":\"vacaciones\",\"retrieved\":[\"c1\"],\"answer_id\":\"a2\",\"event\":\"copy\",\"chunk\":\"c1\"}\n{\"conversation_id\":\"c3\",\"time\":\"2026-01-01T11:00:00Z\",\"query\":\"¿Hay bolsa de horas?\",\"retrieved\":[\"c2\"],\"answer_id\":\"a3\",\"event\":\"click_citation\",\"chunk\":\"c2\"}\n",
    )
    .unwrap();
    let base = serve(dir.path(), None);
    let b = Browser::start(&chromium, &driver, "es");
    let started = Instant::now();
    b.goto(&format!("{base}/golden"));
    say_name(&b, "Ana");
    b.type_into(
        "#questions",
        "¿Cuántos días de asuntos propios hay?\n\nVacaciones\n¿cuántos días de asuntos propios hay\n",
    );
    shot(&b, "golden-paste");
    b.click("#paste");
    let result = b.wait_for_text("#paste-result", "Añadidas: 1", 10);
    assert!(result.contains("no añadidas: 2"), "{result}");
    shot(&b, "golden-pasted");
    // The candidates: "vacaciones" is a case already; the other two wait.
    b.goto(&format!("{base}/golden/candidates"));
    let list = b.wait_for_text("main", "¿Cuánto dura el preaviso de baja?", 10);
    assert!(list.contains("¿Hay bolsa de horas?"), "{list}");
    shot(&b, "golden-candidates");
    let n = b
        .script("return [...document.querySelectorAll('section.candidate h2')].findIndex(h => h.textContent.includes('bolsa'));")
        .as_i64()
        .unwrap();
    b.type_into(
        &format!("#reason-{n}"),
        "no es una pregunta de la plantilla",
    );
    b.click(&format!("#cand-{n} button[value=reject]"));
    b.wait_for_text("main", "¿Cuánto dura el preaviso de baja?", 10);
    assert!(!b.text("main").contains("bolsa de horas"));
    b.type_into("#reason-0", "pregunta frecuente, bien respondida");
    b.click("#cand-0 button[value=accept]");
    b.wait_for_text("#no-candidates", "Ninguna candidata pendiente", 10);
    // Both wait to be completed on the golden page; complete the accepted one.
    b.goto(&format!("{base}/golden"));
    let drafts = b.wait_for_text("#drafts", "preaviso", 10);
    assert!(drafts.contains("asuntos propios"), "{drafts}");
    shot(&b, "golden-drafts");
    b.click("#drafts a[href*=\"cand-\"]");
    b.wait_for_text("main", "propuesto por las señales", 10);
    shot(&b, "golden-complete-candidate");
    b.click("form[action=\"/golden/add\"] button[type=submit]");
    b.wait_for_text("#count", "1–2 / 2", 10);
    let golden = std::fs::read_to_string(dir.path().join("golden.jsonl")).unwrap();
    let last = golden.lines().last().unwrap();
    assert!(
        last.starts_with("{\"id\":\"cand-")
            && last.ends_with(
                "\"query\":\"¿Cuánto dura el preaviso de baja?\",\"expected\":[\"c3\"]}"
            ),
        "{last}"
    );
    let drafts = std::fs::read_to_string(dir.path().join("golden.jsonl.drafts.jsonl")).unwrap();
    assert_eq!(drafts.lines().count(), 1, "{drafts}");
    eprintln!(
        "bulk-questions flow in chromium: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// Selects the characters `from..to` (UTF-16, as the DOM counts) of the first text node of
/// `css`, as a mouse would, and lets the page's script see it.
fn select(b: &Browser, css: &str, needle: &str) {
    b.script(&format!(
        "const el = document.querySelector('{css}'); const node = el.firstChild; const at = node.data.indexOf('{needle}'); const r = document.createRange(); r.setStart(node, at); r.setEnd(node, at + '{needle}'.length); const s = window.getSelection(); s.removeAllRanges(); s.addRange(r); document.dispatchEvent(new MouseEvent('mouseup', {{bubbles: true}})); return at;"
    ));
}

#[test]
fn evidence_spans_selected_in_a_chunk_and_a_document_and_a_case_s_fields_set_in_chromium() {
    let Some((chromium, driver)) = browser_or_skip("the evidence-span browser flow") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    // A document with a character outside the BMP before the passage (two UTF-16 units,
    // one Unicode scalar value), and a chunk of it that knows where it starts.
    std::fs::write(
        dir.path().join("documents.jsonl"),
        "{\"id\":\"D1\",\"text\":\"Año 🕒 2026. La bolsa de horas es de 80 horas al año.\"}\n",
    )
    .unwrap();
    let mut corpus = std::fs::read_to_string(dir.path().join("corpus.jsonl")).unwrap();
    corpus.push_str("{\"id\":\"c4\",\"text\":\"La bolsa de horas es de 80 horas al año.\",\"doc_id\":\"D1\",\"start\":12,\"end\":52}\n");
    std::fs::write(dir.path().join("corpus.jsonl"), corpus).unwrap();
    let base = serve(dir.path(), None);
    let b = Browser::start(&chromium, &driver, "en");
    let started = Instant::now();
    b.goto(&format!("{base}/golden"));
    say_name(&b, "Ana");
    b.goto(&format!("{base}/golden/new?id=h&query=bolsa+de+horas"));
    b.wait_for_text("main", "80 horas", 10);
    select(&b, "p.passage-text[data-doc=D1]", "80 horas");
    let start = b.script("return document.querySelector('#start').value;");
    assert_eq!(
        start.as_str(),
        Some("36"),
        "scalar values of the document, not UTF-16"
    );
    shot(&b, "golden-span-in-chunk");
    b.click("form[action=\"/golden/add\"] button[type=submit]");
    b.wait_for_text("#count", "1–2 / 2", 10);
    let golden = dir.path().join("golden.jsonl");
    assert_eq!(
        std::fs::read_to_string(&golden).unwrap().lines().last().unwrap(),
        "{\"id\":\"h\",\"query\":\"bolsa de horas\",\"evidence\":[{\"doc_id\":\"D1\",\"start\":36,\"end\":44}]}"
    );
    // The case's fields, then a second span selected in the document's text.
    b.click("a[href=\"/golden/case?id=h\"]");
    b.wait_for_text("#line", "evidence", 10);
    b.click("#gold");
    b.type_into("#top_k", "5");
    b.type_into("#domain", "laboral");
    b.type_into("#tags", "jornada, horas");
    shot(&b, "golden-case-fields");
    b.click("#fields button");
    b.wait_for_text("#line", "\"gold\":true", 10);
    b.type_into("#doc", "D1");
    b.click("form[action=\"/golden/document\"] button");
    b.wait_for_text("#document", "bolsa de horas", 10);
    select(&b, "#document", "bolsa de horas");
    shot(&b, "golden-span-in-document");
    b.click("form.span button[type=submit]");
    b.wait_for_text("#line", "\"start\":15", 10);
    shot(&b, "golden-case-with-spans");
    let text = std::fs::read_to_string(&golden).unwrap();
    assert_eq!(
        text.lines().last().unwrap(),
        "{\"id\":\"h\",\"query\":\"bolsa de horas\",\"evidence\":[{\"doc_id\":\"D1\",\"start\":36,\"end\":44},{\"doc_id\":\"D1\",\"start\":15,\"end\":29}],\"gold\":true,\"top_k\":5,\"domain\":\"laboral\",\"tags\":[\"jornada\",\"horas\"]}"
    );
    // The golden reader takes it, the spans located in the documents.
    let read = veredicto_formats::golden::read_golden_with(
        &golden,
        Some(
            &veredicto_formats::documents::read_documents(&dir.path().join("documents.jsonl"))
                .unwrap(),
        ),
    );
    assert!(read.is_ok(), "{read:?}");
    let log = std::fs::read_to_string(dir.path().join("golden.jsonl.log")).unwrap();
    assert!(
        log.contains("\"action\":\"set_fields\"") && log.contains("\"action\":\"add_evidence\"")
    );
    eprintln!(
        "evidence-span flow in chromium: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
