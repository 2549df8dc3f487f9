use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;

/// One request with `Connection: close`; the status and the whole response.
pub(crate) fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if method == "POST" {
        req.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    (status, out)
}

pub(crate) fn attr<'a>(html: &'a str, name: &str) -> &'a str {
    let key = format!("name=\"{name}\" value=\"");
    let at = html.find(&key).unwrap() + key.len();
    &html[at..at + html[at..].find('"').unwrap()]
}

pub(crate) fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn start(dir: &Path) -> String {
    std::fs::write(
        dir.join("golden.jsonl"),
        "{\"id\":\"a\",\"query\":\"vacaciones\",\"expected\":[\"c1\"]}\n",
    )
    .unwrap();
    std::fs::write(dir.join("corpus.jsonl"), "{\"id\":\"c1\",\"text\":\"Los días de vacaciones son treinta.\",\"domain\":\"laboral\"}\n{\"id\":\"c2\",\"text\":\"Asuntos propios: tres días al año.\",\"domain\":\"laboral\"}\n").unwrap();
    let bound = veredicto_web::bind(
        "127.0.0.1",
        0,
        veredicto_web::Config {
            golden: dir.join("golden.jsonl"),
            corpus: Some(dir.join("corpus.jsonl")),
            token: None,
            identity_header: Some("x-reviewer".into()),
            documents: None,
            signals: Some(dir.join("signals.jsonl")),
            clock: || "2026-01-01T00:00:00Z".to_owned(),
            history: veredicto_app::HistorySpec::default_at(
                dir.join("history.sqlite").display().to_string(),
            ),
            audit: None,
            exam: None,
        },
    )
    .unwrap();
    let url = bound.url().to_owned();
    std::thread::spawn(move || bound.serve());
    url.trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned()
}

#[test]
fn a_new_question_is_searched_picked_and_appended_and_a_stale_or_cross_origin_edit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path());
    let origin = format!("http://{addr}");
    let (st, new) = request(
        &addr,
        "GET",
        "/golden/new?id=b&query=asuntos+propios",
        &[],
        "",
    );
    assert_eq!(st, 200);
    assert!(new.contains("value=\"c2\""), "{new}");
    let (csrf, hash) = (attr(&new, "csrf").to_owned(), attr(&new, "hash").to_owned());
    let body = |id: &str| {
        format!(
            "csrf={csrf}&hash={}&id={id}&query=asuntos+propios&expected=c2",
            enc(&hash)
        )
    };
    let me = [("Origin", origin.as_str()), ("x-reviewer", "Ana")];
    // cross-origin, then no CSRF token: 403, nothing written
    let (st, _) = request(
        &addr,
        "POST",
        "/golden/add",
        &[("Origin", "http://evil.example"), ("x-reviewer", "Ana")],
        &body("b"),
    );
    assert_eq!(st, 403);
    let (st, _) = request(&addr, "POST", "/golden/add", &me, "id=b&query=x");
    assert_eq!(st, 403);
    let (st, _) = request(&addr, "POST", "/golden/add", &me, &body("b"));
    assert_eq!(st, 303);
    let golden = std::fs::read_to_string(dir.path().join("golden.jsonl")).unwrap();
    assert_eq!(
        golden.lines().last().unwrap(),
        "{\"id\":\"b\",\"query\":\"asuntos propios\",\"expected\":[\"c2\"]}"
    );
    // the same page again: the file changed since, refused
    let (st, _) = request(&addr, "POST", "/golden/add", &me, &body("c"));
    assert_eq!(st, 409);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("golden.jsonl")).unwrap(),
        golden
    );
    let log = std::fs::read_to_string(dir.path().join("golden.jsonl.log")).unwrap();
    assert_eq!(log.lines().count(), 1);
    assert!(log.contains("\"who\":\"Ana\""));
}

#[test]
fn concurrent_submissions_from_fresh_pages_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path());
    let origin = format!("http://{addr}");
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let (addr, origin) = (addr.clone(), origin.clone());
            std::thread::spawn(move || loop {
                let (_, new) = request(&addr, "GET", "/golden/new?id=x&query=q", &[], "");
                let body = format!(
                    "csrf={}&hash={}&id=n{i}&query=q{i}&expected=c1",
                    attr(&new, "csrf"),
                    enc(attr(&new, "hash"))
                );
                let (st, _) = request(
                    &addr,
                    "POST",
                    "/golden/add",
                    &[("Origin", origin.as_str()), ("x-reviewer", "Ana")],
                    &body,
                );
                match st {
                    303 => break,
                    409 => continue,
                    other => panic!("status {other}"),
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let golden = std::fs::read_to_string(dir.path().join("golden.jsonl")).unwrap();
    assert_eq!(golden.lines().count(), 9, "{golden}");
    let log = std::fs::read_to_string(dir.path().join("golden.jsonl.log")).unwrap();
    assert_eq!(log.lines().count(), 8);
}

#[test]
fn the_interface_follows_the_browser_language_and_the_switch() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path());
    let (_, es) = request(
        &addr,
        "GET",
        "/golden",
        &[("Accept-Language", "es-ES,es;q=0.9")],
        "",
    );
    assert!(es.contains("<html lang=\"es\">") && es.contains("Añadir una pregunta"));
    let (_, en) = request(
        &addr,
        "GET",
        "/golden",
        &[("Accept-Language", "es-ES"), ("Cookie", "lang=en")],
        "",
    );
    assert!(en.contains("<html lang=\"en\">") && en.contains("Add a question"));
    let (st, switch) = request(&addr, "GET", "/lang?to=es", &[], "");
    assert_eq!(st, 303);
    assert!(switch.contains("set-cookie: lang=es"), "{switch}");
}

#[test]
fn another_address_needs_a_token_and_then_every_request_carries_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = |token: Option<&str>| veredicto_web::Config {
        golden: dir.path().join("golden.jsonl"),
        corpus: None,
        token: token.map(str::to_owned),
        identity_header: None,
        documents: None,
        signals: None,
        clock: || "2026-01-01T00:00:00Z".to_owned(),
        history: veredicto_app::HistorySpec::default_at(
            dir.path().join("history.sqlite").display().to_string(),
        ),
        audit: None,
        exam: None,
    };
    let refused = veredicto_web::bind("0.0.0.0", 0, config(None))
        .err()
        .unwrap();
    assert!(refused.contains("needs --token"), "{refused}");
    let bound = veredicto_web::bind("127.0.0.1", 0, config(Some("s3cret"))).unwrap();
    assert!(bound.url().ends_with("/?token=s3cret"));
    let addr = bound.url()["http://".len()..]
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    std::thread::spawn(move || bound.serve());
    assert_eq!(request(&addr, "GET", "/golden", &[], "").0, 401);
    let (st, first) = request(&addr, "GET", "/golden?token=s3cret", &[], "");
    assert_eq!(st, 200);
    assert!(first.contains("set-cookie: veredicto_token=s3cret; HttpOnly"));
    assert_eq!(
        request(
            &addr,
            "GET",
            "/golden",
            &[("Cookie", "veredicto_token=s3cret")],
            ""
        )
        .0,
        200
    );
}

#[test]
fn the_runs_area_lists_an_empty_history() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path());
    let (st, runs) = request(&addr, "GET", "/runs", &[], "");
    assert_eq!(st, 200);
    assert!(runs.contains("No run recorded yet."), "{runs}");
    assert!(
        !dir.path().join("history.sqlite").exists(),
        "reading created the history"
    );
}

#[test]
fn the_exam_is_started_by_a_post_with_the_token_and_without_a_source_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path());
    let origin = format!("http://{addr}");
    let (_, page) = request(&addr, "GET", "/golden", &[], "");
    assert!(page.contains("needs a source to examine"), "{page}");
    let (_, new) = request(&addr, "GET", "/golden/new?id=x&query=", &[], "");
    let csrf = attr(&new, "csrf").to_owned();
    let me = [("Origin", origin.as_str())];
    assert_eq!(request(&addr, "POST", "/golden/exam", &me, "").0, 403);
    assert_eq!(
        request(&addr, "POST", "/golden/exam", &me, &format!("csrf={csrf}")).0,
        404
    );
    assert_eq!(request(&addr, "GET", "/golden/exam/1", &[], "").0, 404);
}

const SIGNALS: &str = "{\"conversation_id\":\"c1\",\"time\":\"2026-01-01T09:00:00Z\",\"query\":\"¿Cuántos días de asuntos propios hay?\",\"retrieved\":[\"c2\"],\"answer_id\":\"a1\",\"event\":\"click_citation\",\"chunk\":\"c2\"}\n{\"conversation_id\":\"c2\",\"time\":\"2026-01-01T10:00:00Z\",\"query\":\"¿Se pagan las vacaciones no disfrutadas?\",\"retrieved\":[\"c1\"],\"answer_id\":\"a2\",\"event\":\"copy\",\"chunk\":\"c1\"}\n";

#[test]
fn questions_are_pasted_in_bulk_and_candidates_accepted_or_rejected_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path());
    std::fs::write(dir.path().join("signals.jsonl"), SIGNALS).unwrap();
    let origin = format!("http://{addr}");
    let me = [("Origin", origin.as_str()), ("x-reviewer", "Ana")];
    let golden_before = std::fs::read_to_string(dir.path().join("golden.jsonl")).unwrap();
    let (_, page) = request(&addr, "GET", "/golden", &[], "");
    let (csrf, hash) = (
        attr(&page, "csrf").to_owned(),
        attr(&page, "hash").to_owned(),
    );
    let paste = format!(
        "csrf={csrf}&hash={}&questions={}",
        enc(&hash),
        enc("VACACIONES\r\n\r\n¿Hay teletrabajo?\r\nhay teletrabajo\r\n")
    );
    let (st, done) = request(&addr, "POST", "/golden/paste", &me, &paste);
    assert_eq!(st, 200, "{done}");
    assert!(done.contains("Added: 1 · not added: 2"), "{done}");
    assert!(done.contains("already asked by a") && done.contains("pasted twice"));
    // Pasted questions wait beside the golden set, which is untouched.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("golden.jsonl")).unwrap(),
        golden_before
    );
    let drafts = std::fs::read_to_string(dir.path().join("golden.jsonl.drafts.jsonl")).unwrap();
    assert_eq!(drafts.lines().count(), 1);
    assert!(
        drafts.contains("\"query\":\"¿Hay teletrabajo?\""),
        "{drafts}"
    );
    let (_, page) = request(&addr, "GET", "/golden", &[], "");
    assert!(page.contains("Questions to complete (1)"), "{page}");
    // A stale paste: refused, nothing written.
    let (st, _) = request(
        &addr,
        "POST",
        "/golden/paste",
        &me,
        &paste.replace(&enc(&hash), "sha256%3Aold"),
    );
    assert_eq!(st, 409);
    // The candidates of the signals file.
    let (st, cands) = request(&addr, "GET", "/golden/candidates", &[], "");
    assert_eq!(st, 200);
    assert!(
        cands.contains("¿Cuántos días de asuntos propios hay?"),
        "{cands}"
    );
    assert!(
        cands.contains("¿Se pagan las vacaciones no disfrutadas?"),
        "{cands}"
    );
    // The candidate after each question's heading: [asuntos propios, vacaciones].
    let id_after = |q: &str| {
        let k = "name=\"candidate\" value=\"";
        let from = cands.find(q).unwrap();
        let at = from + cands[from..].find(k).unwrap() + k.len();
        cands[at..at + cands[at..].find('"').unwrap()].to_owned()
    };
    let ids = [
        id_after("¿Cuántos días de asuntos propios hay?"),
        id_after("¿Se pagan las vacaciones no disfrutadas?"),
    ];
    assert_ne!(ids[0], ids[1]);
    let decide = |id: &str, d: &str, reason: &str| {
        request(
            &addr,
            "POST",
            "/golden/candidates/decide",
            &me,
            &format!(
                "csrf={csrf}&candidate={id}&decision={d}&reason={}",
                enc(reason)
            ),
        )
        .0
    };
    assert_eq!(decide(&ids[0], "accept", "  "), 400, "a reason is required");
    assert_eq!(
        decide(&ids[0], "accept", "una pregunta real de la plantilla"),
        303
    );
    assert_eq!(decide(&ids[1], "reject", "duplica el caso a"), 303);
    assert_eq!(
        decide(&ids[1], "reject", "otra vez"),
        400,
        "decided already"
    );
    let (_, cands) = request(&addr, "GET", "/golden/candidates", &[], "");
    assert!(cands.contains("No candidate waiting."), "{cands}");
    let log = std::fs::read_to_string(dir.path().join("golden.jsonl.log")).unwrap();
    assert!(
        log.contains("\"action\":\"reject_candidate\"")
            && log.contains("\"reason\":\"duplica el caso a\"")
    );
    assert!(log.contains("\"action\":\"accept_candidate\"") && log.contains("\"who\":\"Ana\""));
    // The accepted one waits with its proposed chunk ticked; saving it makes it a case.
    let (_, new) = request(
        &addr,
        "GET",
        &format!(
            "/golden/new?id={}&query={}",
            ids[0],
            enc("¿Cuántos días de asuntos propios hay?")
        ),
        &[],
        "",
    );
    assert!(new.contains("value=\"c2\" checked"), "{new}");
    let body = format!(
        "csrf={csrf}&hash={}&id={}&query={}&expected=c2",
        enc(attr(&new, "hash")),
        ids[0],
        enc("¿Cuántos días de asuntos propios hay?")
    );
    assert_eq!(request(&addr, "POST", "/golden/add", &me, &body).0, 303);
    let drafts = std::fs::read_to_string(dir.path().join("golden.jsonl.drafts.jsonl")).unwrap();
    assert!(!drafts.contains(&ids[0]), "{drafts}");
    assert!(std::fs::read_to_string(dir.path().join("golden.jsonl"))
        .unwrap()
        .contains(&ids[0]));
}

#[test]
fn typed_spans_and_a_case_s_fields_are_one_line_edits_without_javascript() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path());
    let origin = format!("http://{addr}");
    let me = [("Origin", origin.as_str()), ("x-reviewer", "Ana")];
    let g = dir.path().join("golden.jsonl");
    let (_, new) = request(
        &addr,
        "GET",
        "/golden/new?id=s&query=vacaciones+pagadas",
        &[],
        "",
    );
    let csrf = attr(&new, "csrf").to_owned();
    let body = format!(
        "csrf={csrf}&hash={}&id=s&query=vacaciones+pagadas&doc_id=D1&start=3&end=9&quote=",
        enc(attr(&new, "hash"))
    );
    assert_eq!(request(&addr, "POST", "/golden/add", &me, &body).0, 303);
    assert_eq!(
        std::fs::read_to_string(&g).unwrap().lines().last().unwrap(),
        "{\"id\":\"s\",\"query\":\"vacaciones pagadas\",\"evidence\":[{\"doc_id\":\"D1\",\"start\":3,\"end\":9}]}"
    );
    let (st, case) = request(&addr, "GET", "/golden/case?id=s", &[], "");
    assert_eq!(st, 200);
    let hash = attr(&case, "hash").to_owned();
    let fields = format!(
        "csrf={csrf}&hash={}&id=s&gold=true&top_k=3&domain=laboral&tags=a%2C+b",
        enc(&hash)
    );
    assert_eq!(
        request(&addr, "POST", "/golden/case/fields", &me, &fields).0,
        303
    );
    let text = std::fs::read_to_string(&g).unwrap();
    assert_eq!(text.lines().count(), 2);
    assert!(
        text.lines().next().unwrap().contains("\"id\":\"a\""),
        "the other line is kept"
    );
    assert!(
        text.ends_with(
            ",\"gold\":true,\"top_k\":3,\"domain\":\"laboral\",\"tags\":[\"a\",\"b\"]}\n"
        ),
        "{text}"
    );
    // The same page again: stale, refused, nothing written.
    assert_eq!(
        request(&addr, "POST", "/golden/case/fields", &me, &fields).0,
        409
    );
    assert_eq!(std::fs::read_to_string(&g).unwrap(), text);
    // A typed quote on the span case; a span on a case of chunk IDs is refused.
    let (_, case) = request(&addr, "GET", "/golden/case?id=s", &[], "");
    let quote = format!(
        "csrf={csrf}&hash={}&id=s&doc_id=D1&start=&end=&quote={}",
        enc(attr(&case, "hash")),
        enc("días pagados")
    );
    assert_eq!(
        request(&addr, "POST", "/golden/case/evidence", &me, &quote).0,
        303
    );
    assert!(std::fs::read_to_string(&g)
        .unwrap()
        .contains("{\"doc_id\":\"D1\",\"quote\":\"días pagados\"}"));
    let (_, case) = request(&addr, "GET", "/golden/case?id=a", &[], "");
    let on_a = format!(
        "csrf={csrf}&hash={}&id=a&doc_id=D1&start=1&end=2",
        enc(attr(&case, "hash"))
    );
    assert_eq!(
        request(&addr, "POST", "/golden/case/evidence", &me, &on_a).0,
        400
    );
}
