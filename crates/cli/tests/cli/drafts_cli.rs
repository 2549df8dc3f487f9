//! `golden draft`, `golden accept` / `reject`, `exam --allow-drafts` and `judge` against a
//! chat server on 127.0.0.1 that answers as OpenAI's chat completions API documents (the
//! recorded response envelope below, its `usage`, a 400 for an unsupported
//! `response_format`, a 429 with `Retry-After`), with every request body checked.

use crate::common::{example, stderr, stdout, veredicto_in, workspace};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A response of `POST /v1/chat/completions` as OpenAI's API reference shows it (the
/// content is replaced per request).
const RECORDED: &str = r#"{
  "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
  "object": "chat.completion",
  "created": 1741570283,
  "model": "gpt-4o-mini-2024-07-18",
  "choices": [
    {
      "index": 0,
      "message": {"role": "assistant", "content": "", "refusal": null, "annotations": []},
      "logprobs": null,
      "finish_reason": "stop"
    }
  ],
  "usage": {
    "prompt_tokens": 1117,
    "completion_tokens": 46,
    "total_tokens": 1163,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
  },
  "service_tier": "default",
  "system_fingerprint": "fp_06737a9306"
}"#;

struct Answer {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
    delay: Duration,
}

impl Answer {
    /// The recorded envelope with `content` as the assistant's message.
    fn content(content: &str) -> Answer {
        let mut v: Value = serde_json::from_str(RECORDED).unwrap();
        v["choices"][0]["message"]["content"] = json!(content);
        Answer {
            status: 200,
            headers: Vec::new(),
            body: v.to_string(),
            delay: Duration::ZERO,
        }
    }
    fn status(status: u16, body: Value) -> Answer {
        Answer {
            status,
            headers: Vec::new(),
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }
}

/// A chat server answering every connection (one request each) with `handler`.
struct Chat {
    url: String,
    bodies: Arc<Mutex<Vec<Value>>>,
}

impl Chat {
    fn start(handler: impl Fn(usize, &Value) -> Answer + Send + 'static) -> Chat {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&bodies);
        std::thread::spawn(move || {
            for (i, stream) in listener.incoming().enumerate() {
                let Ok(stream) = stream else { return };
                stream.set_read_timeout(Some(Duration::from_secs(5))).ok();
                let Some((path, body)) = read(&stream) else {
                    continue;
                };
                assert_eq!(path, "/v1/chat/completions");
                log.lock().unwrap().push(body.clone());
                let a = handler(i, &body);
                std::thread::sleep(a.delay);
                let _ = write(stream, &a);
            }
        });
        Chat { url, bodies }
    }
    fn count(&self) -> usize {
        self.bodies.lock().unwrap().len()
    }
    fn bodies(&self) -> Vec<Value> {
        self.bodies.lock().unwrap().clone()
    }
}

fn read(stream: &TcpStream) -> Option<(String, Value)> {
    let mut r = BufReader::new(stream);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_owned();
    let mut len = 0;
    loop {
        let mut h = String::new();
        r.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some((path, serde_json::from_slice(&body).ok()?))
}

fn write(mut s: TcpStream, a: &Answer) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        a.status,
        a.body.len()
    );
    for (k, v) in &a.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    s.write_all(a.body.as_bytes())?;
    s.flush()
}

/// The passages of a drafting request: `(chunk ID, text)`.
fn passages(user: &str) -> Vec<(String, String)> {
    let part = user.split("\nPassages:\n").nth(1).expect("passages");
    let mut out = Vec::new();
    for block in part.split("\n[").skip(1) {
        let (id, rest) = block.split_once("] (document ").expect("chunk header");
        let text = rest.split_once(")\n").expect("text").1.trim_end();
        out.push((id.to_owned(), text.to_owned()));
    }
    out
}

fn kind(user: &str) -> &str {
    user.strip_prefix("Kind: ")
        .and_then(|u| u.lines().next())
        .expect("kind")
}

/// What a careful model would answer: a question in Spanish quoting the start of each
/// passage it needs; for an unanswerable question, one on parking (the rack corpus has no
/// word of it), the same in every domain but one word.
fn drafter(user: &str) -> String {
    let ps = passages(user);
    let domain = user
        .lines()
        .find_map(|l| l.strip_prefix("Domain: "))
        .unwrap_or("");
    let quote = |t: &str| t.chars().take(40).collect::<String>().trim().to_owned();
    match kind(user) {
        "unanswerable" => json!({
            "question": format!("¿Cuánto cuesta el aparcamiento de la oficina{}?", if domain == "laboral" { " central" } else { "" }),
            "quotes": [],
            "why": "ningún pasaje habla de aparcamiento",
        }),
        k => {
            let need = if k == "two_chunks" { 2 } else { 1 };
            json!({
                "question": format!("¿Qué dice {}?", ps.iter().take(need).map(|(id, _)| id.as_str()).collect::<Vec<_>>().join(" y ")),
                "quotes": ps.iter().take(need).map(|(id, t)| json!({"chunk": id, "quote": quote(t)})).collect::<Vec<_>>(),
                "why": "el pasaje lo dice",
            })
        }
    }
    .to_string()
}

/// Checks what every request must carry.
fn check_request(body: &Value, schema: bool) {
    assert_eq!(body["model"], "tiny-drafter");
    assert_eq!(body["temperature"], 0);
    assert_eq!(body["seed"], 11);
    let msgs = body["messages"].as_array().expect("messages");
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[0]["role"], "system");
    assert_eq!(msgs[1]["role"], "user");
    let prompt =
        std::fs::read_to_string(workspace().join("crates/app/prompts/golden-draft-v1.txt"))
            .unwrap();
    if msgs[0]["content"] == prompt.as_str() {
        assert!(msgs[1]["content"]
            .as_str()
            .unwrap()
            .contains("\nLanguage: Spanish\n"));
    }
    if schema {
        assert_eq!(body["response_format"]["type"], "json_schema");
        assert_eq!(body["response_format"]["json_schema"]["strict"], true);
    } else {
        assert!(body.get("response_format").is_none(), "{body}");
    }
}

fn user_of(body: &Value) -> String {
    body["messages"][1]["content"].as_str().unwrap().to_owned()
}

/// A project in a temp folder: the rack corpus, golden set and run, and veredicto.toml.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in ["corpus.jsonl", "golden.jsonl", "run-stop.trec"] {
        std::fs::copy(example(f), dir.path().join(f)).unwrap();
    }
    std::fs::write(
        dir.path().join("veredicto.toml"),
        "golden = \"golden.jsonl\"\ncorpus = \"corpus.jsonl\"\n",
    )
    .unwrap();
    dir
}

fn draft(dir: &Path, url: &str, extra: &[&str]) -> std::process::Output {
    let mut a = vec![
        "golden",
        "draft",
        "--chat",
        url,
        "--model",
        "tiny-drafter",
        "--seed",
        "11",
        "--out",
        "drafts.jsonl",
        "--per-domain",
        "1",
    ];
    a.extend_from_slice(extra);
    veredicto_in(dir, &a)
}

fn lines(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn drafted_accepted_rejected_then_examined_on_the_rack() {
    let dir = project();
    let d = dir.path();
    let chat = Chat::start(|_, b| Answer::content(&drafter(&user_of(b))));
    let o = draft(d, &chat.url, &["--price-per-1k-tokens", "0.5"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for b in chat.bodies() {
        check_request(&b, true);
    }
    // 4 domains, each with several documents: one of each kind in each.
    assert_eq!(chat.count(), 12, "{}", stderr(&o));
    let drafts = lines(&d.join("drafts.jsonl"));
    let kinds = |k: &str| drafts.iter().filter(|x| x["kind"] == k).count();
    assert_eq!((kinds("one_chunk"), kinds("two_chunks")), (4, 4));
    // The unanswerable question is one across domains once merged by its text; laboral's
    // differs by a word (an embedding model would merge it).
    assert_eq!(kinds("unanswerable"), 2, "{drafts:#?}");
    let err = stderr(&o);
    assert!(err.contains("in Spanish"), "{err}");
    assert!(err.contains("2 merged into an earlier one"), "{err}");
    assert!(
        err.contains("12 replies (0 from the cache), 12 request(s) sent, 13956 token(s)"),
        "{err}"
    );
    assert!(err.contains("estimated cost 6.9780"), "{err}");
    for x in &drafts {
        assert_eq!(x["origin"], "draft");
        assert!(x["drafted"]["prompt"]
            .as_str()
            .unwrap()
            .starts_with("golden-draft-v1 sha256:"));
        assert_eq!(x["drafted"]["model"], "gpt-4o-mini-2024-07-18");
        // Every quote sits where the draft says in its chunk.
        for q in x["quotes"].as_array().unwrap() {
            let corpus = std::fs::read_to_string(d.join("corpus.jsonl")).unwrap();
            let chunk: Value = corpus
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .find(|c| c["id"] == q["chunk"])
                .unwrap();
            let text: String = chunk["text"]
                .as_str()
                .unwrap()
                .chars()
                .skip(q["start"].as_u64().unwrap() as usize)
                .take((q["end"].as_u64().unwrap() - q["start"].as_u64().unwrap()) as usize)
                .collect();
            assert_eq!(text, q["quote"].as_str().unwrap());
        }
    }
    let two = drafts.iter().find(|x| x["kind"] == "two_chunks").unwrap();
    assert_eq!(two["expected"].as_array().unwrap().len(), 2);
    assert_ne!(two["quotes"][0]["doc_id"], two["quotes"][1]["doc_id"]);

    // A golden set holding a draft is not examined, unless asked.
    let golden_before = std::fs::read_to_string(d.join("golden.jsonl")).unwrap();
    let mut with_draft = golden_before.clone();
    with_draft.push_str(&format!("{}\n", drafts[0]));
    std::fs::write(d.join("mixed.jsonl"), &with_draft).unwrap();
    let exam = |golden: &str, extra: &[&str]| {
        let mut a = vec![
            "exam",
            "--golden",
            golden,
            "--run",
            "run-stop.trec",
            "--no-record",
        ];
        a.extend_from_slice(extra);
        veredicto_in(d, &a)
    };
    let o = exam("mixed.jsonl", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("mixed.jsonl: line 13: origin:") && err.contains("--allow-drafts"),
        "{err}"
    );
    assert_eq!(
        err.lines().filter(|l| l.contains("error")).count(),
        1,
        "{err}"
    );
    let o = exam("mixed.jsonl", &["--allow-drafts"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // The report counts them (the text report and the JSON's warnings).
    let draft_id = drafts[0]["id"].as_str().unwrap();
    assert!(
        stdout(&o).contains(&format!(
            "warning: 1 case of the golden set is a draft no person accepted (examined because drafts were allowed): {draft_id}"
        )),
        "{}",
        stdout(&o)
    );
    let o = exam("mixed.jsonl", &["--allow-drafts", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        json["warnings"],
        serde_json::json!([{"kind": "unaccepted_drafts", "cases": [draft_id]}])
    );

    // Accept one: it moves into the golden file, the drafts file loses it, the log says it.
    let id = drafts[0]["id"].as_str().unwrap().to_owned();
    let decide = |what: &str, id: &str, reason: &str| {
        veredicto_in(
            d,
            &[
                "golden",
                what,
                id,
                "--drafts",
                "drafts.jsonl",
                "--reason",
                reason,
                "--reviewer",
                "ana",
                "--time",
                "2026-12-04T20:00:00Z",
            ],
        )
    };
    let o = decide("accept", &id, "la cita responde la pregunta");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("golden.jsonl:13"), "{}", stderr(&o));
    let golden = lines(&d.join("golden.jsonl"));
    assert_eq!(golden.len(), 13);
    let case = &golden[12];
    assert_eq!(case["id"], id.as_str());
    assert_eq!(case["origin"], "accepted");
    assert_eq!(case["accepted"]["by"], "ana");
    assert_eq!(case["accepted"]["at"], "2026-12-04T20:00:00Z");
    assert!(std::fs::read_to_string(d.join("golden.jsonl"))
        .unwrap()
        .starts_with(&golden_before));
    assert_eq!(lines(&d.join("drafts.jsonl")).len(), drafts.len() - 1);
    // Twice: it is no longer a draft.
    let o = decide("accept", &id, "otra vez");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no draft with id"), "{}", stderr(&o));
    // An unanswerable draft has no expected chunks: refused, with why.
    let un = drafts.iter().find(|x| x["kind"] == "unanswerable").unwrap();
    let o = decide("accept", un["id"].as_str().unwrap(), "sí");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unanswerable"), "{}", stderr(&o));
    let o = decide("reject", un["id"].as_str().unwrap(), "nadie lo pregunta");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // A decision needs a reason.
    let o = decide("reject", drafts[1]["id"].as_str().unwrap(), " ");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("needs a reason"), "{}", stderr(&o));
    let log = std::fs::read_to_string(d.join("golden.jsonl.log")).unwrap();
    let actions: Vec<String> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["action"].to_string())
        .collect();
    assert_eq!(actions, ["\"accept_draft\"", "\"reject_draft\""]);

    // The accepted case is examined like any other.
    let o = exam("golden.jsonl", &["--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!stderr(&o).contains("no person accepted"));
    let report: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(report["cases"].as_array().unwrap().len(), 13);

    // A second draft: nothing is sent (the cache), and what was decided is not drafted
    // again.
    let before = chat.count();
    let o = draft(d, &chat.url, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(chat.count(), before, "the cache answers");
    assert!(
        stderr(&o).contains("12 replies (12 from the cache), 0 request(s) sent, 0 token(s)"),
        "{}",
        stderr(&o)
    );
    // The accepted one, and the rejected one with the two asking the same.
    assert!(
        stderr(&o).contains("4 already in the golden set or decided"),
        "{}",
        stderr(&o)
    );
    assert_eq!(lines(&d.join("drafts.jsonl")).len(), drafts.len() - 2);
}

#[test]
fn a_reply_that_is_not_the_json_asked_for_is_asked_again_once_then_quoted() {
    let dir = project();
    let d = dir.path();
    // First request unreadable, its retry fine.
    let chat = Chat::start(|i, b| {
        if i == 0 {
            Answer::content("Claro, aquí tienes una pregunta: ¿cuántos días de vacaciones hay?")
        } else {
            Answer::content(&drafter(&user_of(b)))
        }
    });
    let o = draft(d, &chat.url, &["--limit", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let bodies = chat.bodies();
    assert_eq!(bodies.len(), 2);
    assert!(user_of(&bodies[1]).contains("Your previous reply could not be read"));
    assert_eq!(lines(&d.join("drafts.jsonl")).len(), 1);

    // Unreadable twice: an error quoting the reply's start, nothing guessed, nothing cached.
    let long = format!(
        "Claro, aquí tienes {}",
        "una pregunta muy larga ".repeat(40)
    );
    let chat = Chat::start(move |_, _| Answer::content(&long));
    let o = draft(d, &chat.url, &["--limit", "1", "--no-cache"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(chat.count(), 2);
    let err = stderr(&o);
    assert!(
        err.contains("Claro, aquí tienes una pregunta muy larga"),
        "{err}"
    );
    assert!(err.contains("asked twice"), "{err}");
    assert!(err.lines().all(|l| l.chars().count() < 700), "{err}");
    assert!(lines(&d.join("drafts.jsonl")).is_empty());
}

#[test]
fn a_server_refusing_the_json_schema_is_asked_with_the_prompt_alone() {
    let dir = project();
    let d = dir.path();
    let chat = Chat::start(|_, b| {
        if b.get("response_format").is_some() {
            Answer::status(
                400,
                json!({"error": {"message": "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.", "type": "invalid_request_error", "param": "response_format", "code": null}}),
            )
        } else {
            Answer::content(&drafter(&user_of(b)))
        }
    });
    let o = draft(d, &chat.url, &["--limit", "2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let bodies = chat.bodies();
    assert_eq!(bodies.len(), 4);
    check_request(&bodies[0], true);
    check_request(&bodies[1], false);
    assert!(
        stderr(&o).contains("refused the JSON schema 2 time(s)"),
        "{}",
        stderr(&o)
    );
    // With --json-schema on, the refusal is the error; with off, nothing is asked of it.
    let o = draft(
        d,
        &chat.url,
        &["--limit", "1", "--json-schema", "on", "--no-cache"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("refused the JSON schema"),
        "{}",
        stderr(&o)
    );
    let before = chat.count();
    let o = draft(
        d,
        &chat.url,
        &["--limit", "1", "--json-schema", "off", "--no-cache"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(chat.count(), before + 1);
    check_request(&chat.bodies()[before], false);
}

#[test]
fn a_429_waits_for_retry_after_and_a_hanging_server_meets_the_timeout_and_deadline() {
    let dir = project();
    let d = dir.path();
    let chat = Chat::start(|i, b| {
        if i == 0 {
            let mut a = Answer::status(
                429,
                json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}),
            );
            a.headers.push(("Retry-After", "1".into()));
            a
        } else {
            Answer::content(&drafter(&user_of(b)))
        }
    });
    let t = Instant::now();
    let o = draft(d, &chat.url, &["--limit", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(chat.count(), 2);
    assert!(
        t.elapsed() >= Duration::from_millis(950),
        "{:?}",
        t.elapsed()
    );

    let hang = Chat::start(|_, _| Answer {
        delay: Duration::from_secs(30),
        ..Answer::content("{}")
    });
    let t = Instant::now();
    let o = draft(
        d,
        &hang.url,
        &[
            "--limit",
            "1",
            "--timeout",
            "1",
            "--retries",
            "0",
            "--no-cache",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("timed out after 1000 ms"),
        "{}",
        stderr(&o)
    );
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    let t = Instant::now();
    let o = draft(
        d,
        &hang.url,
        &[
            "--limit",
            "1",
            "--timeout",
            "5",
            "--retries",
            "9",
            "--deadline",
            "2",
            "--no-cache",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("deadline"), "{}", stderr(&o));
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

#[test]
fn near_duplicate_questions_merge_by_embedding() {
    let model = workspace().join("models/all-MiniLM-L6-v2");
    if !model.join("model.safetensors").is_file() {
        panic!("{} missing: run scripts/fetch-model.sh", model.display());
    }
    let dir = project();
    let d = dir.path();
    let chat = Chat::start(|_, b| Answer::content(&drafter(&user_of(b))));
    let o = draft(d, &chat.url, &["--embed-model", model.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let drafts = lines(&d.join("drafts.jsonl"));
    // The laboral parking question, a word apart, joins the others.
    let un: Vec<&Value> = drafts
        .iter()
        .filter(|x| x["kind"] == "unanswerable")
        .collect();
    assert_eq!(un.len(), 1, "{drafts:#?}");
    assert_eq!(un[0]["merged"].as_array().unwrap().len(), 3);
}

/// The relevance judge: `relevant` for the new travel procedure's chunks, `not` otherwise.
fn relevance(b: &Value) -> Answer {
    assert_eq!(b["model"], "tiny-judge");
    assert_eq!(b["temperature"], 0);
    assert_eq!(b["seed"], 0);
    assert_eq!(b["response_format"]["json_schema"]["name"], "relevance");
    let prompt =
        std::fs::read_to_string(workspace().join("crates/app/prompts/relevance-v1.txt")).unwrap();
    assert_eq!(b["messages"][0]["content"], prompt.as_str());
    let user = user_of(b);
    assert!(user.starts_with("Query:\n"), "{user}");
    let grade = if user.contains("Passage [silver_viajes_10") {
        "relevant"
    } else {
        "not"
    };
    Answer::content(&json!({"grade": grade, "reason": "the passage decides"}).to_string())
}

#[test]
fn judge_suggests_beside_peoples_judgments_and_measures_agreement() {
    let dir = project();
    let d = dir.path();
    let o = veredicto_in(d, &["exam", "--run", "run-stop.trec"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let chat = Chat::start(|_, b| relevance(b));
    let judge = |extra: &[&str]| {
        let mut a = vec![
            "judge",
            "--chat",
            chat.url.as_str(),
            "--model",
            "tiny-judge",
            "--time",
            "2026-12-04T20:00:00Z",
        ];
        a.extend_from_slice(extra);
        veredicto_in(d, &a)
    };
    let o = judge(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let asked = chat.count();
    assert!(asked > 0);
    let suggested = lines(&d.join("golden.jsonl.suggestions.jsonl"));
    assert_eq!(suggested.len(), asked);
    let relevant = suggested
        .iter()
        .filter(|s| s["grade"] == "relevant")
        .count();
    assert!(relevant > 0, "{out}");
    assert!(
        out.contains(&format!(
            "{relevant} outranking chunk{} suggested relevant: the golden set may be incomplete",
            if relevant == 1 { "" } else { "s" }
        )),
        "{out}"
    );
    assert!(out.contains("no chunk rated by both yet"), "{out}");
    assert!(!d.join("golden.jsonl.judgments.jsonl").exists());

    // People's judgments on two of the chunks: one agrees, one does not.
    let s0 = &suggested[0];
    let other = if s0["grade"] == "relevant" {
        "not"
    } else {
        "relevant"
    };
    let s1 = &suggested[1];
    let people = format!(
        "{}\n{}\n",
        json!({"at": "t", "who": "ana", "case": s0["case"], "chunk": s0["chunk"], "grade": s0["grade"], "run": "r"}),
        json!({"at": "t", "who": "ana", "case": s1["case"], "chunk": s1["chunk"], "grade": other, "run": "r"}),
    );
    let _ = other;
    std::fs::write(d.join("golden.jsonl.judgments.jsonl"), &people).unwrap();
    let o = veredicto_in(d, &["judge", "--agreement", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let ag: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(ag["pairs"], 2);
    assert_eq!(ag["labels"], json!(["relevant", "partly", "not"]));
    assert_eq!(ag["observed"], 0.5);

    // The HTML report says it, apart from people's judgments.
    let o = veredicto_in(d, &["report", "latest"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("suggested relevant: the golden set may be incomplete"),
        "report"
    );
    let o = veredicto_in(d, &["report", "latest", "--format", "human"]);
    assert!(stdout(&o).contains("suggested relevant"), "{}", stdout(&o));

    // Again: the cache answers.
    let o = judge(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(chat.count(), asked);
}

#[test]
fn every_new_command_help_ends_with_short_examples() {
    for cmd in [
        &["golden", "draft"][..],
        &["golden", "accept"],
        &["golden", "reject"],
        &["judge"],
        &["audit", "extract"],
    ] {
        let mut a = cmd.to_vec();
        a.push("--help");
        let o = veredicto_in(Path::new("."), &a);
        assert_eq!(o.status.code(), Some(0));
        let help = stdout(&o);
        let (_, tail) = help.rsplit_once("\nExamples:\n").expect("examples");
        let ex: Vec<&str> = tail.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(
            (2..=3).contains(&ex.len())
                && ex.iter().all(|l| l.chars().count() <= 98
                    && l.contains(&format!("veredicto {}", cmd.join(" ")))),
            "{cmd:?}: {ex:?}"
        );
    }
}

#[test]
fn audit_extract_suggests_claims_beside_the_case_file_never_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases = d.join("q017.yaml");
    std::fs::copy(workspace().join("examples/grounding/q017.yaml"), &cases).unwrap();
    let before = std::fs::read(&cases).unwrap();
    let chat = Chat::start(|i, b| {
        assert_eq!(b["temperature"], 0);
        assert_eq!(b["response_format"]["json_schema"]["name"], "claims");
        let prompt =
            std::fs::read_to_string(workspace().join("crates/app/prompts/claims-v1.txt")).unwrap();
        assert_eq!(b["messages"][0]["content"], prompt.as_str());
        let user = user_of(b);
        assert!(user.contains("citation IDs shown: D-01, D-02"), "{user}");
        if i == 0 {
            // A quote that is not in the answer: asked again.
            return Answer::content(
                &json!({"claims": [{"text": "t", "quote": "en 60 días", "citations": []}]})
                    .to_string(),
            );
        }
        Answer::content(
            &json!({"claims": [
                {"text": "Se puede devolver cualquier artículo en 30 días.", "quote": "Puedes devolver cualquier artículo en 30 días", "citations": ["D-01"]},
                {"text": "Incluye los artículos de venta final.", "quote": "incluidos los de venta final", "citations": ["D-01"]},
                {"text": "El reembolso se completa en cinco días.", "quote": "Normalmente se completa en cinco días", "citations": []},
            ]})
            .to_string(),
        )
    });
    let o = veredicto_in(
        d,
        &[
            "audit",
            "extract",
            "q017.yaml",
            "--chat",
            &chat.url,
            "--model",
            "tiny",
            "--out",
            "claims.jsonl",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(chat.count(), 2);
    assert!(user_of(&chat.bodies()[1]).contains("could not be read"));
    let recs = lines(&d.join("claims.jsonl"));
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["origin"], "suggestion");
    assert_eq!(recs[0]["claims"].as_array().unwrap().len(), 3);
    assert_eq!(recs[0]["claims"][0]["id"], "S-A-017-1");
    assert_eq!(recs[0]["claims"][0]["start"], 0);
    assert!(recs[0]["suggested"]["prompt"]
        .as_str()
        .unwrap()
        .starts_with("claims-v1 sha256:"));
    assert_eq!(
        std::fs::read(&cases).unwrap(),
        before,
        "the case file is unchanged"
    );
    // Again: from the cache.
    let o = veredicto_in(
        d,
        &[
            "audit",
            "extract",
            "q017.yaml",
            "--chat",
            &chat.url,
            "--model",
            "tiny",
            "--out",
            "claims.jsonl",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(chat.count(), 2);
}
