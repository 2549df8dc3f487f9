//! Questions in bulk and from the production signals: a paste of many questions, the
//! candidates `signals candidates` proposes (accepted or rejected with a reason), and the
//! questions waiting for their chunks (drafts). Logic in `veredicto_app::golden_edits`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use veredicto_app::golden_edits::{self, SignalsSource};
use veredicto_app::workbench::Saved;
use veredicto_report::html::escape;

use crate::{
    field, html_error, page, posted_form, redirect, reviewer, reviewer_form, spanish, t, AppState,
};

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The golden page's section: the paste form, the drafts waiting, the candidates' link.
pub(crate) fn section(
    st: &AppState,
    es: bool,
    hash: &str,
    drafts: &[golden_edits::Draft],
) -> String {
    let mut b = format!(
        "<h2>{}</h2>\n<form method=\"post\" action=\"/golden/paste\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"hash\" value=\"{}\"><label for=\"questions\">{}</label><textarea id=\"questions\" name=\"questions\" rows=\"4\" required></textarea><button type=\"submit\" id=\"paste\">{}</button></form>\n<p><a href=\"/golden/candidates\" id=\"candidates-link\">{}</a></p>\n",
        t(es, "Paste many questions", "Pegar muchas preguntas"),
        st.csrf,
        escape(hash),
        t(es, "One question a line (blank lines are ignored; questions the golden set already asks are reported, not added)", "Una pregunta por línea (las líneas en blanco se ignoran; las que el conjunto ya pregunta se indican, no se añaden)"),
        t(es, "Add the questions", "Añadir las preguntas"),
        t(es, "Candidates from the production signals", "Candidatas de las señales de producción"),
    );
    if !drafts.is_empty() {
        b.push_str(&format!(
            "<h2>{} ({})</h2>\n<p>{}</p>\n<ul id=\"drafts\">\n",
            t(es, "Questions to complete", "Preguntas por completar"),
            drafts.len(),
            t(es, "Each waits for the chunks (or evidence spans) that answer it; it joins the golden set when you save them.", "Cada una espera los fragmentos (o tramos de evidencia) que la responden; entra en el conjunto dorado al guardarlos."),
        ));
        for d in drafts {
            b.push_str(&format!(
                "<li><a href=\"/golden/new?id={}&amp;query={}\">{}</a> <small>{} · {}</small></li>\n",
                enc(&d.id),
                enc(&d.query),
                escape(&d.query),
                escape(&d.id),
                if d.from == "signals" {
                    t(es, "from the signals", "de las señales")
                } else {
                    t(es, "pasted", "pegada")
                },
            ));
        }
        b.push_str("</ul>\n");
    }
    b
}

/// Adds the pasted questions as drafts; the page says what was added and what was not.
pub(crate) async fn paste(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
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
    let (hash, text) = (
        field(&f, "hash").to_owned(),
        field(&f, "questions").to_owned(),
    );
    let golden = st.config.golden.clone();
    let at = (st.config.clock)();
    let _lock = st.edits.lock().await;
    let done = tokio::task::spawn_blocking(move || {
        golden_edits::paste_questions(&golden, &hash, &text, &who, &at)
    })
    .await;
    let p = match done {
        Ok(Ok(Ok(p))) => p,
        Ok(Ok(Err(Saved::Stale { .. } | Saved::Written { .. }))) => {
            return crate::stale(es);
        }
        Ok(Err(e)) => return html_error(es, StatusCode::BAD_REQUEST, &e.to_string()),
        Err(e) => return html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    let mut b = format!(
        "<p id=\"paste-result\">{} {} · {} {}</p>\n<ul id=\"added\">\n",
        t(es, "Added:", "Añadidas:"),
        p.added.len(),
        t(es, "not added:", "no añadidas:"),
        p.duplicates.len(),
    );
    for (id, q) in &p.added {
        b.push_str(&format!(
            "<li><a href=\"/golden/new?id={}&amp;query={}\">{}</a> <small>{}</small></li>\n",
            enc(id),
            enc(q),
            escape(q),
            escape(id)
        ));
    }
    b.push_str("</ul>\n<ul id=\"duplicates\">\n");
    for d in &p.duplicates {
        let why = match &d.existing {
            Some(id) => format!(
                "{} {}",
                t(es, "already asked by", "ya la pregunta"),
                escape(id)
            ),
            None => t(es, "pasted twice", "pegada dos veces").to_owned(),
        };
        b.push_str(&format!(
            "<li>{} <small>({why})</small></li>\n",
            escape(&d.query)
        ));
    }
    b.push_str(&format!(
        "</ul>\n<p><a href=\"/golden\">{}</a></p>\n",
        t(es, "Back to the golden set", "Volver al conjunto dorado")
    ));
    page(es, t(es, "Pasted questions", "Preguntas pegadas"), &b)
}

fn source(st: &AppState) -> Option<(std::path::PathBuf, Option<std::path::PathBuf>)> {
    st.config
        .signals
        .clone()
        .map(|s| (s, st.config.corpus.clone()))
}

/// The candidates proposed from the signals file, each with accept and reject.
pub(crate) async fn candidates_page(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
) -> Response {
    let es = spanish(&headers);
    let title = t(
        es,
        "Candidates from the production signals",
        "Candidatas de las señales de producción",
    );
    let Some((signals, corpus)) = source(&st) else {
        return page(
            es,
            title,
            &format!(
                "<p>{}</p>\n",
                t(es, "No signals file is set.", "No hay fichero de señales.")
            ),
        );
    };
    let golden = st.config.golden.clone();
    let shown = signals.display().to_string();
    let found = tokio::task::spawn_blocking(move || {
        golden_edits::open_candidates(
            &golden,
            SignalsSource {
                signals: &signals,
                corpus: corpus.as_deref(),
            },
        )
    })
    .await;
    let list = match found {
        Ok(Ok(l)) => l,
        Ok(Err(e)) => {
            return page(
                es,
                title,
                &format!(
                    "<p class=\"error\" role=\"alert\">{}</p>\n",
                    escape(&e.to_string())
                ),
            )
        }
        Err(e) => return html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    let mut b = format!(
        "<p>{} <code>{}</code> ({}). {}</p>\n",
        t(es, "Proposed from", "Propuestas a partir de"),
        escape(&shown),
        t(es, "as `veredicto signals candidates` proposes them, merging by text", "como las propone `veredicto signals candidates`, agrupando por texto"),
        t(es, "Accepting one makes it a question to complete with its proposed chunks; rejecting it keeps it off this list. Both need a reason, written to the golden set's log.", "Aceptar una la convierte en pregunta por completar con sus fragmentos propuestos; rechazarla la quita de esta lista. Ambas cosas piden un motivo, que queda en el registro del conjunto dorado."),
    );
    if st.config.signals.is_some() && reviewer(&st, &headers).is_none() {
        b.push_str(&reviewer_form(&st, es, "/golden/candidates"));
    }
    if list.is_empty() {
        b.push_str(&format!(
            "<p id=\"no-candidates\">{}</p>\n",
            t(es, "No candidate waiting.", "Ninguna candidata pendiente.")
        ));
    }
    for (n, c) in list.iter().enumerate() {
        b.push_str(&format!(
            "<section class=\"candidate\" id=\"cand-{n}\"><h2>{}</h2><p><small>{} · {} {} · {} {}</small></p><p>{} {}</p>\n<form method=\"post\" action=\"/golden/candidates/decide\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"candidate\" value=\"{}\"><label for=\"reason-{n}\">{}</label><input type=\"text\" id=\"reason-{n}\" name=\"reason\" required><button type=\"submit\" name=\"decision\" value=\"accept\">{}</button> <button type=\"submit\" name=\"decision\" value=\"reject\">{}</button></form></section>\n",
            escape(&c.query),
            escape(&c.id),
            c.support.events,
            t(es, "supporting events", "eventos que la apoyan"),
            t(es, "tags:", "etiquetas:"),
            escape(&c.tags.join(", ")),
            t(es, "Proposed chunks:", "Fragmentos propuestos:"),
            escape(&c.expected.join(", ")),
            st.csrf,
            escape(&c.id),
            t(es, "Reason (required)", "Motivo (obligatorio)"),
            t(es, "Accept", "Aceptar"),
            t(es, "Reject", "Rechazar"),
        ));
    }
    page(es, title, &b)
}

/// Accepts or rejects a candidate with its reason.
pub(crate) async fn decide(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
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
    let Some((signals, corpus)) = source(&st) else {
        return html_error(es, StatusCode::NOT_FOUND, "no signals file");
    };
    let accept = match field(&f, "decision") {
        "accept" => true,
        "reject" => false,
        other => {
            return html_error(
                es,
                StatusCode::BAD_REQUEST,
                &format!("`{other}` is not a decision (accept, reject)"),
            )
        }
    };
    if field(&f, "reason").trim().is_empty() {
        return html_error(
            es,
            StatusCode::BAD_REQUEST,
            t(
                es,
                "A decision needs a reason: nothing was written.",
                "Una decisión necesita un motivo: no se escribió nada.",
            ),
        );
    }
    let (id, reason) = (
        field(&f, "candidate").to_owned(),
        field(&f, "reason").to_owned(),
    );
    let golden = st.config.golden.clone();
    let at = (st.config.clock)();
    let _lock = st.edits.lock().await;
    let done = tokio::task::spawn_blocking(move || {
        golden_edits::decide_candidate(
            &golden,
            SignalsSource {
                signals: &signals,
                corpus: corpus.as_deref(),
            },
            &id,
            accept,
            &reason,
            &who,
            &at,
        )
    })
    .await;
    match done {
        Ok(Ok(())) => redirect("/golden/candidates"),
        Ok(Err(e)) => html_error(es, StatusCode::BAD_REQUEST, &e.to_string()),
        Err(e) => html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}
