//! veredicto's workbench (`veredicto serve`): a local web app over the application crate:
//! the golden set (cases, new questions, the exam run from the page), the claims of a
//! grounding audit, the runs (reports, two runs side by side, a case's ranked list with its
//! outranking chunks rated). HTML is rendered on the server (no external asset, a strict
//! Content-Security-Policy; one script of the server's own adds keys to the claim card, and
//! every page works without it); every handler calls `veredicto_app` and renders its values.
//!
//! Security: the CLI binds 127.0.0.1 unless given a token; with a token every request
//! carries it (`?token=`, then a cookie); every POST carries the server's CSRF token and an
//! `Origin` of the server's own, else 403; requests whose `Host` is not the server's are
//! refused (DNS rebinding); bodies are bounded; only the project's golden file and the logs
//! beside it, the audit's review log (or its run in the history) and the runs the exam
//! records are written.

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use veredicto_app::workbench::{self, NewCase, Saved};
use veredicto_report::html::escape;

mod case;
mod claims;
mod exam;
mod questions;
mod runs;

/// Largest request body accepted.
pub const BODY_LIMIT: usize = 64 * 1024;
/// Cases per page of the golden set.
pub const PAGE: usize = 100;
/// Runs per page of the runs list.
pub const RUNS_PAGE: usize = 200;

/// What the server serves.
#[derive(Debug, Clone)]
pub struct Config {
    /// The golden file edited.
    pub golden: PathBuf,
    /// The corpus searched for a question's chunks.
    pub corpus: Option<PathBuf>,
    /// The documents evidence spans point into (their text shown to select a passage).
    pub documents: Option<PathBuf>,
    /// The production signals file the candidates are proposed from (what `veredicto
    /// signals candidates` reads); `None`: the candidates page says it is not set.
    pub signals: Option<PathBuf>,
    /// Required on every request when set.
    pub token: Option<String>,
    /// A header a reverse proxy sets with the reviewer's name.
    pub identity_header: Option<String>,
    /// The run history the runs area lists.
    pub history: veredicto_app::HistorySpec,
    /// The time written with each edit (RFC 3339).
    pub clock: fn() -> String,
    /// What the claims area reviews: a case file, or an audit run (ID, unique prefix or
    /// `latest`) in the history; `None`: the area says how to set it.
    pub audit: Option<String>,
    /// Runs the exam on the project's settings for "Run the exam"; `None`: the button says
    /// the project has no source to examine.
    pub exam: Option<ExamRunner>,
}

/// Runs the project's exam (recording the run), handing progress to the events: the front
/// end that resolved the settings builds it (`veredicto serve` runs what `veredicto exam`
/// runs).
#[derive(Clone)]
pub struct ExamRunner(pub Arc<RunExam>);

/// The function an [`ExamRunner`] holds: the exam's outcome, or its error as a sentence.
pub type RunExam =
    dyn Fn(veredicto_app::Events<'_>) -> Result<veredicto_app::ExamOutcome, String> + Send + Sync;

impl std::fmt::Debug for ExamRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExamRunner")
    }
}

/// The project's source the question search goes through (what `veredicto search` and
/// `veredicto exam` open: an own index or a retriever URI), with the network options that
/// bound each search; without one the search is by the corpus file's words.
#[derive(Debug, Clone)]
pub struct SearchSource {
    /// The project's settings (their source, arms, model and environment).
    pub settings: veredicto_app::Settings,
    /// Per-request timeout, retries and total deadline of each search.
    pub net: veredicto_app::source::Net,
}

/// A server bound to its address, not yet serving.
pub struct Bound {
    listener: TcpListener,
    url: String,
    state: Arc<AppState>,
}

pub(crate) struct AppState {
    pub(crate) config: Config,
    pub(crate) csrf: String,
    hosts: Vec<String>,
    origins: Vec<String>,
    pub(crate) edits: tokio::sync::Mutex<()>,
    /// Serialises verdicts appended from this server (the log's own lock guards against
    /// other writers).
    pub(crate) reviews: tokio::sync::Mutex<()>,
    /// The exams started from the page, by number (1-based).
    pub(crate) exams: std::sync::Mutex<Vec<Arc<exam::Job>>>,
    /// The corpus as last read for searches (read again when the file changes).
    corpus: std::sync::Mutex<Option<Arc<workbench::CorpusIndex>>>,
    /// The source questions are searched through, when the project names one.
    search: Option<SearchSource>,
    /// That source once opened (its retriever and query model).
    sources: workbench::SourceCache,
    /// Recorded runs read from the history (a run never changes once recorded).
    runs: workbench::RunCache,
    /// The corpus as the reports read it (read again when the file changes).
    chunks: workbench::CorpusCache,
    /// Runs' reports and comparisons computed before.
    reports: workbench::ReportCache,
    /// The current sources the claims queue checks verdicts against (see
    /// [`Bound::with_audit_sources`]).
    pub(crate) audit_sources: Option<std::path::PathBuf>,
}

impl AppState {
    /// The corpus file ready to search: the copy read before while the file is unchanged,
    /// else read now.
    fn corpus_index(
        &self,
        path: &std::path::Path,
    ) -> veredicto_app::Result<Arc<workbench::CorpusIndex>> {
        let mut cached = self.corpus.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = cached
            .as_ref()
            .filter(|c| c.path() == path && c.is_current())
        {
            return Ok(c.clone());
        }
        let fresh = Arc::new(workbench::CorpusIndex::load(path)?);
        *cached = Some(fresh.clone());
        Ok(fresh)
    }
}

/// Binds `host:port` (`port` 0: a free one). Another address than the loopback one needs a
/// token.
pub fn bind(host: &str, port: u16, config: Config) -> Result<Bound, String> {
    let ip: std::net::IpAddr = host
        .parse()
        .map_err(|_| format!("--host {host}: not an IP address"))?;
    if !ip.is_loopback() && config.token.is_none() {
        return Err(format!(
            "--host {host}: serving beyond this machine needs --token T (or VEREDICTO_SERVE_TOKEN)"
        ));
    }
    let listener = TcpListener::bind(SocketAddr::new(ip, port))
        .map_err(|e| format!("--host {host} --port {port}: {e}"))?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let authority = addr.to_string();
    let mut hosts = vec![authority.clone()];
    if ip.is_loopback() {
        hosts.push(format!("localhost:{}", addr.port()));
    }
    let origins = hosts.iter().map(|h| format!("http://{h}")).collect();
    let mut raw = [0u8; 16];
    getrandom::fill(&mut raw).map_err(|e| e.to_string())?;
    let csrf: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    let url = match &config.token {
        Some(t) => format!("http://{authority}/?token={t}"),
        None => format!("http://{authority}/"),
    };
    Ok(Bound {
        listener,
        url,
        state: Arc::new(AppState {
            config,
            csrf,
            hosts,
            origins,
            edits: tokio::sync::Mutex::new(()),
            reviews: tokio::sync::Mutex::new(()),
            exams: std::sync::Mutex::new(Vec::new()),
            corpus: std::sync::Mutex::new(None),
            search: None,
            sources: workbench::SourceCache::new(),
            runs: workbench::RunCache::new(),
            chunks: workbench::CorpusCache::new(),
            reports: workbench::ReportCache::new(),
            audit_sources: None,
        }),
    })
}

impl Bound {
    /// Searches new questions' chunks through `source` (opened at the first search and kept
    /// open) instead of the corpus file's words.
    pub fn search_through(mut self, source: SearchSource) -> Bound {
        if let Some(st) = Arc::get_mut(&mut self.state) {
            st.search = Some(source);
        }
        self
    }

    /// The current sources (a file as `veredicto audit impact --sources` reads it) that the
    /// claims queue checks verdicts against: claims judged against a cited passage that has
    /// since changed are listed as reopened.
    pub fn with_audit_sources(mut self, sources: Option<std::path::PathBuf>) -> Bound {
        if let Some(st) = Arc::get_mut(&mut self.state) {
            st.audit_sources = sources;
        }
        self
    }

    /// The address to open (with the token when there is one).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Serves until the process is stopped.
    pub fn serve(self) -> std::io::Result<()> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(self.listener)?;
            axum::serve(listener, router(self.state)).await
        })
    }
}

fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(|| async { redirect("/golden") }))
        .route("/golden", get(golden_page))
        .route("/golden/new", get(new_question))
        .route("/golden/add", post(add_case))
        .route("/golden/paste", post(questions::paste))
        .route("/golden/case", get(case::case_page))
        .route("/golden/case/fields", post(case::set_fields))
        .route("/golden/case/evidence", post(case::add_evidence))
        .route("/golden/document", get(case::document_page))
        .route("/assets/select.js", get(case::script))
        .route("/golden/candidates", get(questions::candidates_page))
        .route("/golden/candidates/decide", post(questions::decide))
        .route("/reviewer", post(set_reviewer))
        .route("/lang", get(set_lang))
        .route("/runs", get(runs_page))
        .route("/runs/compare", get(compare_page))
        .route("/runs/trends", get(runs::trends_page))
        .route("/runs/{id}", get(run_report))
        .route("/runs/{id}/cases/{case}", get(case_page))
        .route("/judgments", post(judge))
        .route("/golden/exam", post(exam::start))
        .route("/golden/exam/{n}", get(exam::progress))
        .route("/claims", get(claims::queue_page))
        .route("/claims/blind", get(claims::set_blind))
        .route("/claims/{id}", get(claims::card_page))
        .route("/claims/{id}/review", post(claims::submit))
        .route("/claims/{id}/relevance", post(claims::submit_relevance))
        .route("/claims/{id}/citation", post(claims::submit_mark))
        .route("/assets/review.js", get(claims::script))
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(state)
}

pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|p| p.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

pub(crate) fn forbidden(why: &str) -> Response {
    (StatusCode::FORBIDDEN, format!("403 forbidden: {why}\n")).into_response()
}

/// The checks every request passes: its Host, the token, and for a POST the Origin and the
/// CSRF token (the form's `csrf` field, checked in the handlers that read the body).
async fn guard(State(st): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !st.hosts.iter().any(|h| h == host) {
        return forbidden("unknown Host");
    }
    let mut set_token = None;
    if let Some(token) = &st.config.token {
        let from_query = req.uri().query().and_then(|q| {
            form_urlencoded::parse(q.as_bytes())
                .find(|(k, _)| k == "token")
                .map(|(_, v)| v.into_owned())
        });
        let ok = from_query.as_deref() == Some(token.as_str())
            || cookie(headers, "veredicto_token") == Some(token.as_str());
        if !ok {
            return (
                StatusCode::UNAUTHORIZED,
                "401: this server needs its token\n",
            )
                .into_response();
        }
        if from_query.is_some() {
            set_token = Some(token.clone());
        }
    }
    if req.method() != axum::http::Method::GET && req.method() != axum::http::Method::HEAD {
        let origin = headers
            .get(header::ORIGIN)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        if !st.origins.iter().any(|o| o == origin) {
            return forbidden("cross-origin request");
        }
    }
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    // A page that sets its own (the run's report: its inline script) keeps it.
    if !h.contains_key(header::CONTENT_SECURITY_POLICY) {
        h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
        ),
    );
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // `same-origin`, not `no-referrer`: under `no-referrer` a browser sends `Origin: null`
    // with the page's own form posts, and the Origin check would refuse them all.
    h.insert("referrer-policy", HeaderValue::from_static("same-origin"));
    if let Some(t) = set_token {
        if let Ok(v) = HeaderValue::from_str(&format!(
            "veredicto_token={t}; HttpOnly; SameSite=Strict; Path=/"
        )) {
            h.append(header::SET_COOKIE, v);
        }
    }
    resp
}

pub(crate) fn redirect(to: &str) -> Response {
    (StatusCode::SEE_OTHER, [(header::LOCATION, to.to_owned())]).into_response()
}

pub(crate) fn form(bytes: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(bytes).into_owned().collect()
}

/// A POST's form, once its `csrf` field is the server's token (else the 403 to answer):
/// the one CSRF check of every handler that changes state.
// The refusal is the response the handler returns as it is, once per request.
#[allow(clippy::result_large_err)]
pub(crate) fn posted_form(st: &AppState, bytes: &[u8]) -> Result<Vec<(String, String)>, Response> {
    let f = form(bytes);
    if field(&f, "csrf") == st.csrf {
        Ok(f)
    } else {
        Err(forbidden("missing or wrong CSRF token"))
    }
}

pub(crate) fn field<'a>(f: &'a [(String, String)], name: &str) -> &'a str {
    f.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or("")
}

/// Spanish or English, by the `lang` cookie, else the browser's first language.
pub(crate) fn spanish(headers: &HeaderMap) -> bool {
    if let Some(l) = cookie(headers, "lang") {
        return l == "es";
    }
    headers
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("es"))
}

pub(crate) fn t(es: bool, en: &'static str, sp: &'static str) -> &'static str {
    if es {
        sp
    } else {
        en
    }
}

pub(crate) fn reviewer(st: &AppState, headers: &HeaderMap) -> Option<String> {
    if let Some(h) = &st.config.identity_header {
        return headers
            .get(h.as_str())
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .filter(|s| !s.is_empty());
    }
    cookie(headers, "reviewer").map(|v| {
        form_urlencoded::parse(format!("r={v}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    })
}

pub(crate) fn page(es: bool, title: &str, body: &str) -> Response {
    page_with(es, title, "", body)
}

/// A page with `head` (trusted markup: a meta refresh, a script of the server's) added to
/// its head.
pub(crate) fn page_with(es: bool, title: &str, head: &str, body: &str) -> Response {
    let html = format!(
        "<!DOCTYPE html>\n<html lang=\"{}\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<link rel=\"icon\" href=\"data:,\">\n{head}<title>{} · veredicto</title>\n<style>{CSS}</style>\n</head>\n<body>\n<header><nav aria-label=\"{}\"><a href=\"/golden\">{}</a> <a href=\"/claims\">{}</a> <a href=\"/runs\">{}</a> <a href=\"/lang?to={}\" lang=\"{}\">{}</a></nav></header>\n<main>\n<h1>{}</h1>\n{body}</main>\n</body>\n</html>\n",
        if es { "es" } else { "en" },
        escape(title),
        t(es, "Areas", "Áreas"),
        t(es, "Golden set", "Conjunto dorado"),
        t(es, "Claims", "Afirmaciones"),
        t(es, "Runs", "Ejecuciones"),
        if es { "en" } else { "es" },
        if es { "en" } else { "es" },
        if es { "English" } else { "Español" },
        escape(title),
    );
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
}

pub(crate) const CSS: &str = "body{font-family:system-ui,sans-serif;margin:0;color:#1a1a1a;background:#fff}header{background:#0b3d2e;padding:.5rem 1rem}header a{color:#fff;font-weight:600}main{padding:1rem;max-width:70rem}table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ccc;padding:.3rem;text-align:left;vertical-align:top}label{display:block;margin:.4rem 0 .1rem;font-weight:600}input[type=text],textarea{width:100%;max-width:40rem;padding:.3rem}button{margin-top:.6rem;padding:.4rem 1rem}.error{color:#8b0000;font-weight:600}:focus{outline:3px solid #1f6feb}.choice{display:flex;align-items:center;gap:.5rem;margin:.2rem 0}.choice label{display:inline;margin:0}kbd{border:1px solid #888;border-radius:3px;padding:0 .3rem;font-family:monospace;background:#f4f4f4}.tabs{list-style:none;padding:0;display:flex;gap:1rem}.tabs a[aria-current]{font-weight:700;color:#1a1a1a}mark{background:#ffe27a}.passage blockquote,#answer{border-left:4px solid #0b3d2e;margin-left:0;padding-left:1rem}.verdict{font-size:1.2rem}tr.expected{background:#e8f5e9}.rate{display:inline}.rate button{margin:0 .2rem 0 0;padding:.1rem .4rem}";

pub(crate) fn html_error(es: bool, status: StatusCode, msg: &str) -> Response {
    let mut r = page(
        es,
        t(es, "Error", "Error"),
        &format!("<p class=\"error\" role=\"alert\">{}</p>\n", escape(msg)),
    );
    *r.status_mut() = status;
    r
}

/// The answer to an edit made on a stale page: 409, nothing written.
pub(crate) fn stale(es: bool) -> Response {
    html_error(
        es,
        StatusCode::CONFLICT,
        t(es, "The golden file changed since this page was loaded: nothing was written. Reload and redo the edit.", "El fichero dorado cambió desde que se cargó esta página: no se escribió nada. Recargue y rehaga el cambio."),
    )
}

pub(crate) fn reviewer_form(st: &AppState, es: bool, back: &str) -> String {
    format!(
        "<form method=\"post\" action=\"/reviewer\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"back\" value=\"{}\"><label for=\"reviewer\">{}</label><input type=\"text\" id=\"reviewer\" name=\"reviewer\" required><button type=\"submit\">{}</button></form>\n",
        st.csrf,
        escape(back),
        t(es, "Your name (recorded with each change)", "Su nombre (queda registrado con cada cambio)"),
        t(es, "Save", "Guardar"),
    )
}

async fn golden_page(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    axum::extract::RawQuery(q): axum::extract::RawQuery,
) -> Response {
    let es = spanish(&headers);
    let q = form(q.unwrap_or_default().as_bytes());
    let offset: usize = field(&q, "offset").parse().unwrap_or(0);
    let golden = st.config.golden.clone();
    let spec = st.config.history.clone();
    let state = st.clone();
    let loaded = tokio::task::spawn_blocking(move || {
        let page = workbench::golden_page(&golden, offset, PAGE)?;
        let last = workbench::last_results_in(&spec, &state.runs)?;
        let drafts = veredicto_app::golden_edits::drafts(&golden)?;
        Ok::<_, veredicto_app::Error>((page, last, drafts))
    })
    .await;
    let (p, last, drafts) = match loaded {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => return html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
        Err(e) => return html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    let mut b = String::new();
    match reviewer(&st, &headers) {
        Some(name) => b.push_str(&format!(
            "<p>{} <strong>{}</strong></p>\n",
            t(es, "Reviewer:", "Revisor:"),
            escape(&name)
        )),
        None => b.push_str(&reviewer_form(&st, es, "/golden")),
    }
    b.push_str(&format!(
        "<h2>{}</h2>\n<form method=\"get\" action=\"/golden/new\"><label for=\"id\">{}</label><input type=\"text\" id=\"id\" name=\"id\" required><label for=\"query\">{}</label><textarea id=\"query\" name=\"query\" rows=\"2\" required></textarea><button type=\"submit\">{}</button></form>\n",
        t(es, "Add a question", "Añadir una pregunta"),
        t(es, "Case ID", "ID del caso"),
        t(es, "Question", "Pregunta"),
        t(es, "Search the corpus", "Buscar en el corpus"),
    ));
    b.push_str(&questions::section(&st, es, &p.hash, &drafts));
    b.push_str(&exam::button(&st, es));
    let end = (offset + p.rows.len()).min(p.total);
    b.push_str(&format!(
        "<h2>{}</h2>\n<p id=\"count\">{} {}–{} / {}</p>\n<table><thead><tr><th scope=\"col\">ID</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th></tr></thead><tbody>\n",
        t(es, "Cases", "Casos"),
        t(es, "Cases", "Casos"),
        if p.total == 0 { 0 } else { offset + 1 },
        end,
        p.total,
        t(es, "Question", "Pregunta"),
        t(es, "Expected chunks", "Fragmentos esperados"),
        t(es, "Last result (recall, ranks)", "Último resultado (recall, posiciones)"),
    ));
    for r in &p.rows {
        b.push_str(&format!(
            "<tr><td><a href=\"/golden/case?id={}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            form_urlencoded::byte_serialize(r.id.as_bytes()).collect::<String>(),
            escape(&r.id),
            escape(&r.query),
            escape(&r.expected.join(", ")),
            match last.get(&r.id) {
                Some(l) => {
                    let ranks: Vec<String> = l
                        .ranks
                        .iter()
                        .map(|(id, rank)| match rank {
                            Some(n) => format!("{id} #{n}"),
                            None => format!("{id} -"),
                        })
                        .collect();
                    let text = escape(&format!(
                        "{} · {:.2} · {}",
                        if l.passed {
                            t(es, "pass", "aprueba")
                        } else {
                            t(es, "FAIL", "FALLA")
                        },
                        l.recall,
                        ranks.join(", ")
                    ));
                    let enc = |s: &str| -> String {
                        form_urlencoded::byte_serialize(s.as_bytes()).collect()
                    };
                    format!(
                        "<a href=\"/runs/{}/cases/{}\">{text}</a>",
                        enc(&l.run),
                        enc(&r.id)
                    )
                }
                None => "—".to_owned(),
            }
        ));
    }
    b.push_str("</tbody></table>\n<nav aria-label=\"pages\">");
    if offset > 0 {
        b.push_str(&format!(
            "<a href=\"/golden?offset={}\">{}</a> ",
            offset.saturating_sub(PAGE),
            t(es, "Previous", "Anterior")
        ));
    }
    if end < p.total {
        b.push_str(&format!(
            "<a href=\"/golden?offset={end}\">{}</a>",
            t(es, "Next", "Siguiente")
        ));
    }
    b.push_str("</nav>\n");
    page(es, t(es, "Golden set", "Conjunto dorado"), &b)
}

async fn new_question(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    axum::extract::RawQuery(q): axum::extract::RawQuery,
) -> Response {
    let es = spanish(&headers);
    let q = form(q.unwrap_or_default().as_bytes());
    let (id, query) = (field(&q, "id").to_owned(), field(&q, "query").to_owned());
    let golden = st.config.golden.clone();
    let corpus = st.config.corpus.clone();
    let qq = query.clone();
    let idq = id.clone();
    let state = st.clone();
    let found = tokio::task::spawn_blocking(move || {
        let page = workbench::golden_page(&golden, 0, 0)?;
        let index = match &corpus {
            Some(c) => Some(state.corpus_index(c)?),
            None => None,
        };
        let found = workbench::search_source(
            &state.sources,
            state.search.as_ref().map(|s| &s.settings),
            &state
                .search
                .as_ref()
                .map(|s| s.net.clone())
                .unwrap_or_default(),
            index.as_deref(),
            &qq,
            20,
        );
        let proposed = veredicto_app::golden_edits::drafts(&golden)?
            .into_iter()
            .find(|d| d.id == idq)
            .map(|d| d.expected)
            .unwrap_or_default();
        Ok::<_, veredicto_app::Error>((page.hash, found, proposed))
    })
    .await;
    let (hash, found, proposed) = match found {
        Ok(Ok(x)) => x,
        Ok(Err(e)) => return html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
        Err(e) => return html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    let hits = found.hits;
    let mut b = format!(
        "<p>{} <strong>{}</strong></p>\n<form method=\"post\" action=\"/golden/add\" class=\"span\">\n<input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"hash\" value=\"{}\"><input type=\"hidden\" name=\"id\" value=\"{}\"><input type=\"hidden\" name=\"query\" value=\"{}\">\n<fieldset><legend>{}</legend>\n",
        escape(&id),
        escape(&query),
        st.csrf,
        escape(&hash),
        escape(&id),
        escape(&query),
        t(es, "Pick the chunks that answer it", "Elija los fragmentos que la responden"),
    );
    b.insert_str(0, &searched_line(es, &found.by));
    for (n, c) in proposed
        .iter()
        .filter(|c| !hits.iter().any(|h| &h.id == *c))
        .enumerate()
    {
        b.push_str(&format!(
            "<div class=\"hit\"><input type=\"checkbox\" name=\"expected\" id=\"p{n}\" value=\"{id}\" checked><label for=\"p{n}\">{id} <small>({})</small></label></div>\n",
            t(es, "proposed by the signals", "propuesto por las señales"),
            id = escape(c),
        ));
    }
    if hits.is_empty() && proposed.is_empty() {
        b.push_str(&format!(
            "<p>{}</p>\n",
            t(es, "No chunk found.", "Ningún fragmento encontrado.")
        ));
    }
    for h in &hits {
        let meta: Vec<String> = h
            .metadata
            .iter()
            .map(|(k, v)| {
                format!(
                    "{k}: {}",
                    v.as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| v.to_string())
                )
            })
            .collect();
        b.push_str(&format!(
            "<div class=\"hit\"><input type=\"checkbox\" name=\"expected\" id=\"c{r}\" value=\"{id}\"{checked}><label for=\"c{r}\">{r}. {id} ({score}){prop}</label><p class=\"passage-text\" data-doc=\"{doc}\"{start}>{text}</p><p><small>{meta}</small></p></div>\n",
            r = h.rank,
            doc = escape(h.metadata.get("doc_id").and_then(|v| v.as_str()).unwrap_or("")),
            start = h
                .metadata
                .get("start")
                .and_then(|v| v.as_u64())
                .map(|s| format!(" data-start=\"{s}\""))
                .unwrap_or_default(),
            checked = if proposed.contains(&h.id) { " checked" } else { "" },
            prop = if proposed.contains(&h.id) {
                format!(" <small>{}</small>", t(es, "proposed by the signals", "propuesto por las señales"))
            } else {
                String::new()
            },
            id = escape(&h.id),
            score = h.score.map_or("—".to_owned(), |s| format!("{s:.2}")),
            text = if h.text.is_empty() && h.metadata.is_empty() {
                format!("<em>{}</em>", t(es, "(not in the corpus file)", "(no está en el fichero del corpus)"))
            } else {
                escape(&h.text)
            },
            meta = escape(&meta.join(" · ")),
        ));
    }
    b.push_str("</fieldset>\n");
    b.push_str(&case::span_fields(es, ""));
    b.push_str(&format!(
        "<button type=\"submit\">{}</button>\n</form>\n",
        t(
            es,
            "Save to the golden set",
            "Guardar en el conjunto dorado"
        )
    ));
    page_with(es, t(es, "New question", "Nueva pregunta"), case::HEAD, &b)
}

/// Which source a question's chunks were searched in, as a line of the page.
fn searched_line(es: bool, by: &workbench::SearchedBy) -> String {
    match by {
        workbench::SearchedBy::Source(uri) => format!(
            "<p id=\"searched\">{} <code>{}</code> {}</p>\n",
            t(es, "Searched through the project's source", "Buscado en la fuente del proyecto"),
            escape(uri),
            t(es, "(rank and score as it returned them).", "(posición y puntuación tal como las devolvió)."),
        ),
        workbench::SearchedBy::Words(None) => format!(
            "<p id=\"searched\">{}</p>\n",
            t(es, "Searched the corpus file by shared words (the project names no source to search).", "Buscado en el fichero del corpus por palabras compartidas (el proyecto no nombra ninguna fuente)."),
        ),
        workbench::SearchedBy::Words(Some(why)) => format!(
            "<p id=\"searched\">{}</p>\n<p class=\"error\" role=\"alert\">{}</p>\n",
            t(es, "Searched the corpus file by shared words: the project's source could not be searched.", "Buscado en el fichero del corpus por palabras compartidas: no se pudo buscar en la fuente del proyecto."),
            escape(why),
        ),
    }
}

async fn add_case(State(st): State<Arc<AppState>>, headers: HeaderMap, body: Bytes) -> Response {
    let es = spanish(&headers);
    let f = match posted_form(&st, &body) {
        Ok(f) => f,
        Err(refused) => return refused,
    };
    let Some(who) = reviewer(&st, &headers) else {
        return html_error(
            es,
            StatusCode::FORBIDDEN,
            t(
                es,
                "Say your name first (golden set page).",
                "Indique antes su nombre (página del conjunto dorado).",
            ),
        );
    };
    let case = NewCase {
        id: field(&f, "id").to_owned(),
        query: field(&f, "query").to_owned(),
        expected: f
            .iter()
            .filter(|(k, _)| k == "expected")
            .map(|(_, v)| v.clone())
            .collect(),
        evidence: match case::posted_span(&f) {
            None => Vec::new(),
            Some(Ok(s)) => vec![s],
            Some(Err(e)) => return html_error(es, StatusCode::BAD_REQUEST, &e.to_string()),
        },
    };
    let hash = field(&f, "hash").to_owned();
    let golden = st.config.golden.clone();
    let at = (st.config.clock)();
    let _lock = st.edits.lock().await;
    let saved =
        tokio::task::spawn_blocking(move || workbench::add_case(&golden, &hash, &case, &who, &at))
            .await;
    match saved {
        Ok(Ok(Saved::Written { .. })) => redirect("/golden"),
        Ok(Ok(Saved::Stale { .. })) => stale(es),
        Ok(Err(e)) => html_error(es, StatusCode::BAD_REQUEST, &e.to_string()),
        Err(e) => html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

async fn set_reviewer(State(st): State<Arc<AppState>>, body: Bytes) -> Response {
    let f = match posted_form(&st, &body) {
        Ok(f) => f,
        Err(refused) => return refused,
    };
    let name: String =
        form_urlencoded::byte_serialize(field(&f, "reviewer").trim().as_bytes()).collect();
    // Back to the page that asked, never to another site.
    let back = field(&f, "back");
    let back = if back.starts_with('/') && !back.starts_with("//") && !back.contains('\\') {
        back
    } else {
        "/golden"
    };
    let mut r = redirect(back);
    if let Ok(v) = HeaderValue::from_str(&format!("reviewer={name}; SameSite=Strict; Path=/")) {
        r.headers_mut().append(header::SET_COOKIE, v);
    }
    r
}

/// The language switch: a preference cookie, then back to the golden set.
async fn set_lang(axum::extract::RawQuery(q): axum::extract::RawQuery) -> Response {
    let q = form(q.unwrap_or_default().as_bytes());
    let lang = if field(&q, "to") == "es" { "es" } else { "en" };
    let mut r = redirect("/golden");
    if let Ok(v) = HeaderValue::from_str(&format!("lang={lang}; SameSite=Strict; Path=/")) {
        r.headers_mut().append(header::SET_COOKIE, v);
    }
    r
}

/// The runs area: the newest runs of the history, 200 a page (`?before=RUN`: the older
/// ones), read-only.
async fn runs_page(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    axum::extract::RawQuery(q): axum::extract::RawQuery,
) -> Response {
    let es = spanish(&headers);
    let q = form(q.unwrap_or_default().as_bytes());
    let before = Some(field(&q, "before").trim().to_owned()).filter(|b| !b.is_empty());
    let spec = st.config.history.clone();
    let runs = match tokio::task::spawn_blocking(move || {
        workbench::recent_before(&spec, before.as_deref(), RUNS_PAGE)
    })
    .await
    {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
        Err(e) => return html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    let mut b = format!(
        "<p><a href=\"/runs/trends\" id=\"trends\">{}</a></p>\n<table><thead><tr><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">recall</th><th scope=\"col\">{}</th></tr></thead><tbody>\n",
        t(es, "Trends per configuration", "Tendencias por configuración"),
        t(es, "Run", "Ejecución"),
        t(es, "When", "Cuándo"),
        t(es, "Label", "Etiqueta"),
        t(es, "Verdict", "Veredicto"),
        t(es, "Failing cases", "Casos que fallan"),
        t(es, "Compare", "Comparar"),
    );
    for r in &runs {
        b.push_str(&format!(
            "<tr><td><a href=\"/runs/{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{} / {}</td><td>{:.3}</td><td><a href=\"/runs/compare?new={}\">{}</a></td></tr>\n",
            escape(&r.id),
            escape(&r.id),
            escape(&r.created_at),
            escape(r.label.as_deref().unwrap_or("")),
            match r.verdict {
                veredicto_core::exam::Verdict::Accept => t(es, "ACCEPT", "ACEPTA"),
                veredicto_core::exam::Verdict::Stop => t(es, "STOP", "PARA"),
            },
            r.failing,
            r.cases,
            r.mean_recall,
            escape(&r.id),
            t(es, "with the previous run", "con la anterior"),
        ));
    }
    b.push_str("</tbody></table>\n");
    if let Some(last) = runs.last().filter(|_| runs.len() == RUNS_PAGE) {
        b.push_str(&format!(
            "<nav aria-label=\"pages\"><a href=\"/runs?before={}\">{}</a></nav>\n",
            escape(&last.id),
            t(es, "Older runs", "Ejecuciones anteriores")
        ));
    }
    if runs.is_empty() {
        b.push_str(&format!(
            "<p>{}</p>\n",
            t(
                es,
                "No run recorded yet.",
                "Aún no hay ejecuciones registradas."
            )
        ));
    }
    page(es, t(es, "Runs", "Ejecuciones"), &b)
}

/// One run's report: the HTML report's content, as `veredicto report` renders it.
async fn run_report(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    let es = spanish(&headers);
    let spec = st.config.history.clone();
    let corpus = st.config.corpus.clone();
    let golden = st.config.golden.clone();
    let state = st.clone();
    let built = tokio::task::spawn_blocking(move || {
        workbench::run_report_html(
            &spec,
            &state.reports,
            &state.runs,
            &state.chunks,
            corpus.as_deref(),
            &golden,
            &id,
        )
    })
    .await;
    match built {
        Ok(Ok(html)) => (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (
                    header::CONTENT_SECURITY_POLICY,
                    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
                ),
            ],
            html.as_str().to_owned(),
        )
            .into_response(),
        Ok(Err(e)) => html_error(es, StatusCode::NOT_FOUND, &e.to_string()),
        Err(e) => html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

/// Two runs side by side: `new` (default: the latest) against `base` (default: the run
/// before it with the same golden set and policy), as `veredicto compare` computes and words
/// it (newly failing cases, displaced chunks, significance, the cross-run diagnosis).
async fn compare_page(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    axum::extract::RawQuery(q): axum::extract::RawQuery,
) -> Response {
    let es = spanish(&headers);
    let q = form(q.unwrap_or_default().as_bytes());
    let new = match field(&q, "new").trim() {
        "" => "latest".to_owned(),
        n => n.to_owned(),
    };
    let base = field(&q, "base").trim().to_owned();
    let spec = st.config.history.clone();
    let corpus = st.config.corpus.clone();
    let (new_q, base_q) = (new.clone(), base.clone());
    let state = st.clone();
    let done = tokio::task::spawn_blocking(move || {
        workbench::compare_runs_kept(
            &spec,
            &state.reports,
            &state.runs,
            &state.chunks,
            &veredicto_app::history::CompareRequest {
                run: &new_q,
                baseline: if base_q.is_empty() {
                    veredicto_app::Baseline::Previous
                } else {
                    veredicto_app::Baseline::Run(base_q.clone())
                },
                corpus: corpus.as_deref(),
                documents: None,
                seed: veredicto_core::compare::DEFAULT_SEED,
                permutations: 10_000,
                bootstrap: 10_000,
                window: 20,
            },
        )
    })
    .await;
    let mut b = format!(
        "<form method=\"get\" action=\"/runs/compare\"><label for=\"base\">{}</label><input type=\"text\" id=\"base\" name=\"base\" value=\"{}\"><label for=\"new\">{}</label><input type=\"text\" id=\"new\" name=\"new\" value=\"{}\"><button type=\"submit\">{}</button></form>\n",
        t(es, "Baseline run (empty: the previous one)", "Ejecución base (vacío: la anterior)"),
        escape(&base),
        t(es, "Run", "Ejecución"),
        escape(&new),
        t(es, "Compare", "Comparar"),
    );
    match done {
        Ok(Ok(c)) => {
            b.push_str(&format!(
                "<p><a href=\"/runs/{base}\">{base}</a> → <a href=\"/runs/{new}\">{new}</a></p>\n<pre id=\"comparison\">{}</pre>\n<h2>{}</h2>\n<pre id=\"diagnosis\">{}</pre>\n",
                escape(&veredicto_report::comparison::human(&c.comparison)),
                t(es, "Across the recent runs", "En las ejecuciones recientes"),
                escape(&veredicto_report::comparison::diagnosis_human(&c.diagnosis)),
                base = escape(&c.base.meta.id),
                new = escape(&c.new.meta.id),
            ));
        }
        Ok(Err(e)) => b.push_str(&format!(
            "<p class=\"error\" role=\"alert\">{}</p>\n",
            escape(&e.to_string())
        )),
        Err(e) => return html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
    page(
        es,
        t(
            es,
            "Two runs side by side",
            "Dos ejecuciones frente a frente",
        ),
        &b,
    )
}

/// A case of a recorded run: its ranked list with the expected chunks marked and the
/// outranking chunks' batches; each outranking chunk can be rated (relevant / partly / not),
/// stored beside the golden set.
async fn case_page(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    axum::extract::Path((run, case)): axum::extract::Path<(String, String)>,
) -> Response {
    let es = spanish(&headers);
    let spec = st.config.history.clone();
    let golden = st.config.golden.clone();
    let state = st.clone();
    let found = tokio::task::spawn_blocking(move || {
        let ranking = workbench::case_ranking_in(&spec, &state.runs, &run, &case)?;
        let judged = workbench::judgments(&golden)?;
        Ok::<_, veredicto_app::Error>((ranking, judged))
    })
    .await;
    let (r, judged) = match found {
        Ok(Ok(x)) => x,
        Ok(Err(e)) => return html_error(es, StatusCode::NOT_FOUND, &e.to_string()),
        Err(e) => return html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    let c = &r.case;
    let here = format!(
        "/runs/{}/cases/{}",
        form_urlencoded::byte_serialize(r.run.as_bytes()).collect::<String>(),
        form_urlencoded::byte_serialize(c.id.as_bytes()).collect::<String>()
    );
    let who = reviewer(&st, &headers);
    let mut b = format!(
        "<p><a href=\"/runs/{run}\">{run}</a> · {} <strong>{}</strong> · recall {:.2} · {}</p>\n<p id=\"query\">{}</p>\n",
        t(es, "case", "caso"),
        escape(&c.id),
        c.recall,
        if c.passed {
            t(es, "pass", "aprueba")
        } else {
            t(es, "FAIL", "FALLA")
        },
        escape(&c.query),
        run = escape(&r.run),
    );
    if who.is_none() {
        b.push_str(&reviewer_form(&st, es, &here));
    }
    b.push_str(&format!(
        "<table id=\"ranking\"><thead><tr><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">score</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th></tr></thead><tbody>\n",
        t(es, "Rank", "Posición"),
        t(es, "Chunk", "Fragmento"),
        t(es, "Expected / batch", "Esperado / lote"),
        t(es, "Your rating", "Su valoración"),
    ));
    for row in &r.rows {
        let rating = if row.expected {
            String::new()
        } else {
            let current = judged
                .get(&(c.id.clone(), row.id.clone()))
                .map(|(g, w)| format!("<small>{} ({})</small> ", g.as_str(), escape(w)))
                .unwrap_or_default();
            let mut f = format!(
                "{current}<form method=\"post\" action=\"/judgments\" class=\"rate\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"run\" value=\"{}\"><input type=\"hidden\" name=\"case\" value=\"{}\"><input type=\"hidden\" name=\"chunk\" value=\"{}\">",
                st.csrf,
                escape(&r.run),
                escape(&c.id),
                escape(&row.id),
            );
            for (g, en, sp) in [
                ("relevant", "relevant", "relevante"),
                ("partly", "partly", "en parte"),
                ("not", "not relevant", "no relevante"),
            ] {
                f.push_str(&format!(
                    "<button type=\"submit\" name=\"grade\" value=\"{g}\">{}</button> ",
                    t(es, en, sp)
                ));
            }
            f.push_str("</form>");
            f
        };
        b.push_str(&format!(
            "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{rating}</td></tr>\n",
            if row.expected {
                " class=\"expected\""
            } else {
                ""
            },
            row.rank.map_or("—".to_owned(), |n| n.to_string()),
            escape(&row.id),
            row.score.map_or("—".to_owned(), |s| format!("{s:.3}")),
            if row.expected {
                t(es, "✓ expected", "✓ esperado").to_owned()
            } else {
                escape(row.batch.as_deref().unwrap_or("—"))
            },
        ));
    }
    b.push_str("</tbody></table>\n");
    b.push_str(&format!(
        "<p>{}</p>\n",
        t(
            es,
            "Ratings are stored beside the golden set (GOLDEN.judgments.jsonl), never in it: a chunk rated relevant may mean the golden set is incomplete.",
            "Las valoraciones se guardan junto al conjunto dorado (DORADO.judgments.jsonl), nunca dentro: un fragmento valorado relevante puede indicar que el conjunto está incompleto."
        )
    ));
    page(es, &format!("{} {}", t(es, "Case", "Caso"), c.id), &b)
}

/// Rates a chunk that outranks a case's expected ones (appended beside the golden set).
async fn judge(State(st): State<Arc<AppState>>, headers: HeaderMap, body: Bytes) -> Response {
    let es = spanish(&headers);
    let f = match posted_form(&st, &body) {
        Ok(f) => f,
        Err(refused) => return refused,
    };
    let Some(who) = reviewer(&st, &headers) else {
        return html_error(
            es,
            StatusCode::FORBIDDEN,
            t(es, "Say your name first.", "Indique antes su nombre."),
        );
    };
    let grade: workbench::Grade = match field(&f, "grade").parse() {
        Ok(g) => g,
        Err(e) => return html_error(es, StatusCode::BAD_REQUEST, &e),
    };
    let (run, case, chunk) = (
        field(&f, "run").to_owned(),
        field(&f, "case").to_owned(),
        field(&f, "chunk").to_owned(),
    );
    let back = format!(
        "/runs/{}/cases/{}",
        form_urlencoded::byte_serialize(run.as_bytes()).collect::<String>(),
        form_urlencoded::byte_serialize(case.as_bytes()).collect::<String>()
    );
    let golden = st.config.golden.clone();
    let at = (st.config.clock)();
    let _lock = st.edits.lock().await;
    match tokio::task::spawn_blocking(move || {
        workbench::judge_chunk(&golden, &case, &chunk, grade, &run, &who, &at)
    })
    .await
    {
        Ok(Ok(())) => redirect(&back),
        Ok(Err(e)) => html_error(es, StatusCode::BAD_REQUEST, &e.to_string()),
        Err(e) => html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}
