//! A case's fields from the page: `gold`, `top_k`, `domain`, `tags`, and evidence spans
//! typed (offsets or a quote) or selected inside a document's text (`/assets/select.js`
//! fills the fields from the selection; without it they are typed). Each save rewrites the
//! case's one line (logic in `veredicto_app::golden_edits`).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use veredicto_app::golden_edits::{self, Fields, Span};
use veredicto_app::workbench::{self, Saved};
use veredicto_report::html::escape;

use crate::{
    field, form, html_error, page_with, posted_form, redirect, reviewer, reviewer_form, spanish,
    stale, t, AppState,
};

/// The script that turns a selection inside a passage into an evidence span.
const SCRIPT: &str = include_str!("select.js");

pub(crate) async fn script() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        SCRIPT,
    )
        .into_response()
}

pub(crate) const HEAD: &str = "<script src=\"/assets/select.js\" defer></script>\n";

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The evidence span's fields (in a form of class `span`: the script fills them).
pub(crate) fn span_fields(es: bool, doc: &str) -> String {
    format!(
        "<fieldset class=\"span-fields\"><legend>{}</legend><p><small>{}</small></p><label for=\"doc_id\">doc_id</label><input type=\"text\" id=\"doc_id\" name=\"doc_id\" value=\"{}\"><label for=\"start\">start</label><input type=\"text\" id=\"start\" name=\"start\" inputmode=\"numeric\"><label for=\"end\">end</label><input type=\"text\" id=\"end\" name=\"end\" inputmode=\"numeric\"><label for=\"quote\">{}</label><input type=\"text\" id=\"quote\" name=\"quote\"></fieldset>\n",
        t(es, "An evidence span", "Un tramo de evidencia"),
        t(es, "Select a passage in a text below, or type the document's ID with start and end (characters, end exclusive) or a quote of its text.", "Seleccione un pasaje en un texto de abajo, o escriba el ID del documento con inicio y fin (caracteres, fin excluido) o una cita de su texto."),
        escape(doc),
        t(es, "quote (instead of start and end)", "cita (en lugar de inicio y fin)"),
    )
}

/// The span typed or selected in a posted form; `None` when no field was filled.
pub(crate) fn posted_span(f: &[(String, String)]) -> Option<veredicto_app::Result<Span>> {
    let (doc, start, end, quote) = (
        field(f, "doc_id"),
        field(f, "start"),
        field(f, "end"),
        field(f, "quote"),
    );
    if [start, end, quote].iter().all(|s| s.trim().is_empty()) {
        return None;
    }
    Some(Span::parse(doc, start, end, quote))
}

/// A case's page: its line, the fields form, the evidence form, a document to open.
pub(crate) async fn case_page(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    axum::extract::RawQuery(q): axum::extract::RawQuery,
) -> Response {
    let es = spanish(&headers);
    let q = form(q.unwrap_or_default().as_bytes());
    let id = field(&q, "id").to_owned();
    let golden = st.config.golden.clone();
    let idq = id.clone();
    let found = tokio::task::spawn_blocking(move || {
        let hash = workbench::golden_page(&golden, 0, 0)?.hash;
        Ok::<_, veredicto_app::Error>((hash, golden_edits::case(&golden, &idq)?))
    })
    .await;
    let (hash, c) = match found {
        Ok(Ok(x)) => x,
        Ok(Err(e)) => return html_error(es, StatusCode::NOT_FOUND, &e.to_string()),
        Err(e) => return html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    let here = format!("/golden/case?id={}", enc(&id));
    let mut b = String::new();
    if reviewer(&st, &headers).is_none() {
        b.push_str(&reviewer_form(&st, es, &here));
    }
    b.push_str(&format!(
        "<p id=\"query\">{}</p>\n<pre id=\"line\">{}</pre>\n",
        escape(c.get("query").and_then(Value::as_str).unwrap_or("")),
        escape(&serde_json::to_string(&c).unwrap_or_default()),
    ));
    let hidden = format!(
        "<input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"hash\" value=\"{}\"><input type=\"hidden\" name=\"id\" value=\"{}\">",
        st.csrf,
        escape(&hash),
        escape(&id)
    );
    let tags: Vec<&str> = c
        .get("tags")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    b.push_str(&format!(
        "<h2>{}</h2>\n<form method=\"post\" action=\"/golden/case/fields\" id=\"fields\">{hidden}<div class=\"choice\"><input type=\"checkbox\" id=\"gold\" name=\"gold\" value=\"true\"{}><label for=\"gold\">{}</label></div><label for=\"top_k\">top_k</label><input type=\"text\" id=\"top_k\" name=\"top_k\" inputmode=\"numeric\" value=\"{}\"><label for=\"domain\">{}</label><input type=\"text\" id=\"domain\" name=\"domain\" value=\"{}\"><label for=\"tags\">{}</label><input type=\"text\" id=\"tags\" name=\"tags\" value=\"{}\"><button type=\"submit\">{}</button></form>\n",
        t(es, "Fields", "Campos"),
        if c.get("gold").and_then(Value::as_bool) == Some(true) { " checked" } else { "" },
        t(es, "gold (checked by a person)", "gold (revisado por una persona)"),
        c.get("top_k").map(|v| v.to_string()).unwrap_or_default(),
        t(es, "domain", "dominio"),
        escape(c.get("domain").and_then(Value::as_str).unwrap_or("")),
        t(es, "tags (separated by commas)", "etiquetas (separadas por comas)"),
        escape(&tags.join(", ")),
        t(es, "Save the fields", "Guardar los campos"),
    ));
    b.push_str(&format!(
        "<h2>{}</h2>\n",
        t(es, "Evidence spans", "Tramos de evidencia")
    ));
    if c.get("expected").is_some_and(|v| !v.is_null()) {
        b.push_str(&format!(
            "<p>{}</p>\n",
            t(es, "This case names chunk IDs (expected); a case gives chunk IDs or evidence spans, not both.", "Este caso nombra fragmentos (expected); un caso da fragmentos o tramos de evidencia, no ambos."),
        ));
    } else {
        b.push_str(&format!(
            "<form method=\"post\" action=\"/golden/case/evidence\" class=\"span\">{hidden}{}<button type=\"submit\">{}</button></form>\n",
            span_fields(es, ""),
            t(es, "Add the span", "Añadir el tramo"),
        ));
        if st.config.documents.is_some() {
            b.push_str(&format!(
                "<form method=\"get\" action=\"/golden/document\"><input type=\"hidden\" name=\"case\" value=\"{}\"><label for=\"doc\">{}</label><input type=\"text\" id=\"doc\" name=\"id\" required><button type=\"submit\">{}</button></form>\n",
                escape(&id),
                t(es, "A document's ID, to select a passage in its text", "El ID de un documento, para seleccionar un pasaje de su texto"),
                t(es, "Open the document", "Abrir el documento"),
            ));
        }
    }
    page_with(es, &format!("{} {id}", t(es, "Case", "Caso")), HEAD, &b)
}

/// A document's text, to select a passage of it as an evidence span of a case.
pub(crate) async fn document_page(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    axum::extract::RawQuery(q): axum::extract::RawQuery,
) -> Response {
    let es = spanish(&headers);
    let q = form(q.unwrap_or_default().as_bytes());
    let (case, doc) = (field(&q, "case").to_owned(), field(&q, "id").to_owned());
    let Some(documents) = st.config.documents.clone() else {
        return html_error(
            es,
            StatusCode::NOT_FOUND,
            "no documents file is set (--documents)",
        );
    };
    let golden = st.config.golden.clone();
    let d = doc.clone();
    let found = tokio::task::spawn_blocking(move || {
        let hash = workbench::golden_page(&golden, 0, 0)?.hash;
        let docs = veredicto_formats::documents::read_documents(&documents)?;
        let text = docs
            .get(&d)
            .map(|x| x.text.as_str().to_owned())
            .ok_or_else(|| {
                veredicto_app::Error::Message(format!("{}: no document `{d}`", documents.display()))
            })?;
        Ok::<_, veredicto_app::Error>((hash, text))
    })
    .await;
    let (hash, text) = match found {
        Ok(Ok(x)) => x,
        Ok(Err(e)) => return html_error(es, StatusCode::NOT_FOUND, &e.to_string()),
        Err(e) => return html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    let b = format!(
        "<p><a href=\"/golden/case?id={}\">{} {}</a></p>\n<form method=\"post\" action=\"/golden/case/evidence\" class=\"span\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"hash\" value=\"{}\"><input type=\"hidden\" name=\"id\" value=\"{}\">{}<button type=\"submit\">{}</button></form>\n<pre class=\"passage-text\" id=\"document\" data-doc=\"{}\" data-start=\"0\">{}</pre>\n",
        enc(&case),
        t(es, "Case", "Caso"),
        escape(&case),
        st.csrf,
        escape(&hash),
        escape(&case),
        span_fields(es, &doc),
        t(es, "Add the span", "Añadir el tramo"),
        escape(&doc),
        escape(&text),
    );
    page_with(
        es,
        &format!("{} {doc}", t(es, "Document", "Documento")),
        HEAD,
        &b,
    )
}

fn case_back(id: &str) -> String {
    format!("/golden/case?id={}", enc(id))
}

async fn edit(
    st: Arc<AppState>,
    es: bool,
    who: String,
    id: String,
    run: impl FnOnce(&std::path::Path, &str, &str) -> veredicto_app::Result<Saved> + Send + 'static,
) -> Response {
    let golden = st.config.golden.clone();
    let at = (st.config.clock)();
    let _lock = st.edits.lock().await;
    let back = case_back(&id);
    match tokio::task::spawn_blocking(move || run(&golden, &who, &at)).await {
        Ok(Ok(Saved::Written { .. })) => redirect(&back),
        Ok(Ok(Saved::Stale { .. })) => stale(es),
        Ok(Err(e)) => html_error(es, StatusCode::BAD_REQUEST, &e.to_string()),
        Err(e) => html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

// The refusal is the response the handler returns as it is, once per request.
#[allow(clippy::result_large_err)]
fn name_or_refuse(st: &AppState, headers: &HeaderMap, es: bool) -> Result<String, Response> {
    reviewer(st, headers).ok_or_else(|| {
        html_error(
            es,
            StatusCode::FORBIDDEN,
            t(es, "Say your name first.", "Indique antes su nombre."),
        )
    })
}

/// Sets a case's `gold`, `top_k`, `domain`, `tags`.
pub(crate) async fn set_fields(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let es = spanish(&headers);
    let f = match posted_form(&st, &body) {
        Ok(f) => f,
        Err(refused) => return refused,
    };
    let who = match name_or_refuse(&st, &headers, es) {
        Ok(w) => w,
        Err(r) => return r,
    };
    let top_k = match field(&f, "top_k").trim() {
        "" => None,
        k => match k.parse::<u32>() {
            Ok(k) => Some(k),
            Err(_) => {
                return html_error(
                    es,
                    StatusCode::BAD_REQUEST,
                    &format!("top_k: {k:?} is not a whole number of at least 1"),
                )
            }
        },
    };
    let fields = Fields {
        gold: field(&f, "gold") == "true",
        top_k,
        domain: Some(field(&f, "domain").to_owned()),
        tags: field(&f, "tags").split(',').map(str::to_owned).collect(),
    };
    let (id, hash) = (field(&f, "id").to_owned(), field(&f, "hash").to_owned());
    let idc = id.clone();
    edit(st, es, who, id, move |g, who, at| {
        golden_edits::set_fields(g, &hash, &idc, &fields, who, at)
    })
    .await
}

/// Adds an evidence span to a case (checked against the documents when they are set).
pub(crate) async fn add_evidence(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let es = spanish(&headers);
    let f = match posted_form(&st, &body) {
        Ok(f) => f,
        Err(refused) => return refused,
    };
    let who = match name_or_refuse(&st, &headers, es) {
        Ok(w) => w,
        Err(r) => return r,
    };
    let span = match posted_span(&f) {
        Some(Ok(s)) => s,
        Some(Err(e)) => return html_error(es, StatusCode::BAD_REQUEST, &e.to_string()),
        None => {
            return html_error(
                es,
                StatusCode::BAD_REQUEST,
                "an evidence span needs `start` and `end`, or a `quote`",
            )
        }
    };
    let (id, hash) = (field(&f, "id").to_owned(), field(&f, "hash").to_owned());
    let documents = st.config.documents.clone();
    let idc = id.clone();
    edit(st, es, who, id, move |g, who, at| {
        if let Some(d) = documents {
            span.check(&veredicto_formats::documents::read_documents(&d)?)?;
        }
        golden_edits::add_evidence(g, &hash, &idc, &span, who, at)
    })
    .await
}
