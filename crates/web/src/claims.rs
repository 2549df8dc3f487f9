//! The claims area: the queue, a claim's card with the four verdicts (keys 1–4 through the
//! server's own script), the append, the blind second-review switch, progress and the
//! agreement panel. Everything it knows comes from `veredicto_app::claims` and
//! `veredicto_app::audit`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use veredicto_app::audit::{self, AuditTarget};
use veredicto_app::claims::{self, Show};
use veredicto_grounding::{self as g, Support};
use veredicto_report::html::escape;

use crate::{
    cookie, field, form, html_error, page, page_with, posted_form, redirect, reviewer,
    reviewer_form, spanish, t, AppState,
};

/// The keyboard script of the claim card (served from the server itself: the pages'
/// Content-Security-Policy allows `script-src 'self'` and no inline script).
const SCRIPT: &str = include_str!("review.js");

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

fn verdict_name(es: bool, s: Support) -> &'static str {
    match s {
        Support::Supported => t(es, "supported", "respaldada"),
        Support::PartiallySupported => t(es, "partially supported", "parcialmente respaldada"),
        Support::Unsupported => t(es, "unsupported", "no respaldada"),
        Support::NotEvaluable => t(es, "not evaluable", "no evaluable"),
    }
}

fn relevance_name(es: bool, r: g::Relevance) -> &'static str {
    match r {
        g::Relevance::Addresses => t(es, "addresses the question", "responde a la pregunta"),
        g::Relevance::Partly => t(es, "partly addresses it", "responde en parte"),
        g::Relevance::OffTopic => t(es, "off topic", "fuera de tema"),
    }
}

fn blind(headers: &HeaderMap) -> bool {
    cookie(headers, "blind") == Some("1")
}

/// Opens the configured audit target (fresh on every request: the logs may have grown).
async fn open(st: &Arc<AppState>, es: bool) -> Result<AuditTarget, Response> {
    let Some(arg) = st.config.audit.clone() else {
        return Err(html_error(
            es,
            StatusCode::NOT_FOUND,
            t(
                es,
                "No audit to review: start the workbench with --audit CASES (a case file) or --audit RUN (an audit run in the history).",
                "No hay auditoría que revisar: arranque el banco de trabajo con --audit CASOS (un fichero de casos) o --audit EJECUCIÓN (una ejecución de auditoría del historial).",
            ),
        ));
    };
    let history = st.config.history.clone();
    match tokio::task::spawn_blocking(move || {
        audit::open(&arg, &history, veredicto_app::Events::silent())
    })
    .await
    {
        Ok(Ok(t)) => Ok(t),
        Ok(Err(e)) => Err(html_error(
            es,
            StatusCode::INTERNAL_SERVER_ERROR,
            &e.to_string(),
        )),
        Err(e) => Err(html_error(
            es,
            StatusCode::INTERNAL_SERVER_ERROR,
            &e.to_string(),
        )),
    }
}

fn progress_line(es: bool, q: &claims::Queue) -> String {
    format!(
        "<p id=\"progress\"><progress aria-label=\"{}\" max=\"{}\" value=\"{}\"></progress> {} {} / {} · {} {} · <span id=\"answers-judged\">{} {} / {}</span></p>\n",
        t(es, "review progress", "avance de la revisión"),
        q.claims.max(1),
        q.decided,
        t(es, "claims with a verdict:", "afirmaciones con veredicto:"),
        q.decided,
        q.claims,
        q.disagreements,
        t(es, "in disagreement", "en desacuerdo"),
        t(
            es,
            "answers judged for relevance:",
            "respuestas juzgadas por pertinencia:"
        ),
        q.answers_judged,
        q.answers,
    )
}

/// The claims judged against cited evidence that has since changed (when the workbench was
/// given the current sources).
async fn reopened_section(st: &Arc<AppState>, es: bool, target: AuditTarget) -> String {
    let Some(path) = st.audit_sources.clone() else {
        return String::new();
    };
    let shown = path.display().to_string();
    let found = tokio::task::spawn_blocking(move || {
        g::load_sources(&path).map(|current| claims::reopened(&target, &current))
    })
    .await;
    let mut b = format!(
        "<section aria-labelledby=\"h-reopened\" id=\"reopened\"><h2 id=\"h-reopened\">{}</h2>\n<p>{} <code>{}</code></p>\n",
        t(
            es,
            "Reopened by a source change",
            "Reabiertas por un cambio de fuente"
        ),
        t(
            es,
            "Claims whose verdict was given against a cited passage that has changed in",
            "Afirmaciones cuyo veredicto se dio frente a un pasaje citado que ha cambiado en"
        ),
        escape(&shown),
    );
    match found {
        Ok(Ok(list)) if list.is_empty() => b.push_str(&format!(
            "<p>{}</p>\n",
            t(
                es,
                "None: every verdict was given against the current text.",
                "Ninguna: todos los veredictos se dieron frente al texto actual."
            )
        )),
        Ok(Ok(list)) => {
            b.push_str(&format!(
                "<table id=\"reopened-claims\"><thead><tr><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th></tr></thead><tbody>\n",
                t(es, "Claim", "Afirmación"),
                t(es, "Text", "Texto"),
                t(es, "Verdict given", "Veredicto dado"),
                t(es, "What changed", "Qué cambió"),
            ));
            for r in &list {
                b.push_str(&format!(
                    "<tr><td><a href=\"/claims/{id}\">{id}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                    escape(&r.text),
                    verdict_name(es, r.verdict),
                    r.changes
                        .iter()
                        .map(|c| escape(c))
                        .collect::<Vec<_>>()
                        .join("<br>"),
                    id = escape(&r.claim),
                ));
            }
            b.push_str("</tbody></table>\n");
        }
        Ok(Err(e)) => b.push_str(&format!(
            "<p role=\"alert\">{}</p>\n",
            escape(&e.to_string())
        )),
        Err(e) => b.push_str(&format!(
            "<p role=\"alert\">{}</p>\n",
            escape(&e.to_string())
        )),
    }
    b.push_str("</section>\n");
    b
}

fn blind_switch(es: bool, on: bool, back: &str) -> String {
    let back: String = form_urlencoded::byte_serialize(back.as_bytes()).collect();
    if on {
        format!(
            "<p class=\"blind\">{} <a href=\"/claims/blind?on=0&amp;back={back}\">{}</a></p>\n",
            t(
                es,
                "Blind second review: verdicts in force and suggestions are hidden.",
                "Segunda revisión a ciegas: se ocultan los veredictos vigentes y las sugerencias."
            ),
            t(es, "Show them", "Mostrarlos"),
        )
    } else {
        format!(
            "<p><a href=\"/claims/blind?on=1&amp;back={back}\">{}</a></p>\n",
            t(
                es,
                "Start a blind second review (hide the verdicts in force)",
                "Empezar una segunda revisión a ciegas (ocultar los veredictos vigentes)"
            ),
        )
    }
}

fn agreement_panel(es: bool, title: &str, a: &g::Agreement, id: &str) -> String {
    let f = |v: Option<f64>| v.map_or("—".to_owned(), |x| format!("{x:.3}"));
    let mut s = format!(
        "<section aria-labelledby=\"{id}\"><h3 id=\"{id}\">{}</h3>\n<p>{} {} · p<sub>o</sub> {} · p<sub>e</sub> {} · κ <strong class=\"kappa\">{}</strong></p>\n",
        escape(title),
        t(es, "pairs:", "pares:"),
        a.pairs,
        f(a.observed),
        f(a.expected),
        f(a.kappa),
    );
    s.push_str(&format!(
        "<table class=\"matrix\"><caption>{}</caption><thead><tr><th scope=\"col\"></th>",
        t(
            es,
            "Rows: the verdict in force; columns: the second opinion.",
            "Filas: el veredicto vigente; columnas: la segunda opinión."
        )
    ));
    for v in g::VERDICTS {
        s.push_str(&format!("<th scope=\"col\">{}</th>", verdict_name(es, v)));
    }
    s.push_str("</tr></thead><tbody>\n");
    for (i, v) in g::VERDICTS.iter().enumerate() {
        s.push_str(&format!(
            "<tr><th scope=\"row\">{}</th>",
            verdict_name(es, *v)
        ));
        for n in a.matrix[i] {
            s.push_str(&format!("<td>{n}</td>"));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table></section>\n");
    s
}

/// The queue, progress and the agreement panel.
pub(crate) async fn queue_page(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let es = spanish(&headers);
    let q = form(q.unwrap_or_default().as_bytes());
    let show: Show = field(&q, "show").parse().unwrap_or(Show::Waiting);
    let target = match open(&st, es).await {
        Ok(t) => t,
        Err(r) => return r,
    };
    let who = reviewer(&st, &headers);
    let blind_on = blind(&headers) && who.is_some();
    let queue = claims::queue(&target, show, who.as_deref().filter(|_| blind_on));
    let mut b = format!(
        "<p>{} <strong>{}</strong></p>\n",
        t(es, "Audit:", "Auditoría:"),
        escape(&target.origin)
    );
    match &who {
        Some(name) => b.push_str(&format!(
            "<p>{} <strong>{}</strong></p>\n",
            t(es, "Reviewer:", "Revisor:"),
            escape(name)
        )),
        None => b.push_str(&reviewer_form(&st, es, "/claims")),
    }
    b.push_str(&progress_line(es, &queue));
    b.push_str(&blind_switch(es, blind_on, "/claims"));
    if !blind_on {
        b.push_str("<nav aria-label=\"queue\"><ul class=\"tabs\">");
        for (s, en, sp) in [
            ("waiting", "Waiting for a verdict", "Esperan veredicto"),
            ("disagreements", "Disagreements", "Desacuerdos"),
            ("all", "All claims", "Todas"),
        ] {
            let current = s.parse::<Show>().ok() == Some(show);
            b.push_str(&format!(
                "<li><a href=\"/claims?show={s}\"{}>{}</a></li>",
                if current {
                    " aria-current=\"page\""
                } else {
                    ""
                },
                t(es, en, sp)
            ));
        }
        b.push_str("</ul></nav>\n");
    }
    b.push_str(&format!(
        "<table id=\"queue\"><thead><tr><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th>{}</tr></thead><tbody>\n",
        t(es, "Claim", "Afirmación"),
        t(es, "Case · answer", "Caso · respuesta"),
        t(es, "Text", "Texto"),
        if blind_on {
            String::new()
        } else {
            format!(
                "<th scope=\"col\">{}</th><th scope=\"col\">{}</th>",
                t(es, "Verdict in force", "Veredicto vigente"),
                t(es, "Reviews", "Revisiones")
            )
        },
    ));
    for r in &queue.rows {
        b.push_str(&format!(
            "<tr><td><a href=\"/claims/{id}\">{id}</a></td><td>{} · {}</td><td>{}</td>",
            escape(&r.case),
            escape(&r.answer),
            escape(&r.text),
            id = escape(&r.claim),
        ));
        if !blind_on {
            b.push_str(&format!(
                "<td>{}{}</td><td>{}</td>",
                r.verdict.map_or("—", |v| verdict_name(es, v)),
                if r.disagreement {
                    t(es, " (disagreement)", " (desacuerdo)")
                } else {
                    ""
                },
                r.reviews
            ));
        }
        b.push_str("</tr>\n");
    }
    b.push_str("</tbody></table>\n");
    if queue.rows.is_empty() {
        b.push_str(&format!(
            "<p>{}</p>\n",
            t(
                es,
                "No claim in this list.",
                "Ninguna afirmación en esta lista."
            )
        ));
    }
    if !blind_on {
        let agreement_reviewers = audit::agreement(&target, false);
        let agreement_model = audit::agreement(&target, true);
        b.push_str(&reopened_section(&st, es, target).await);
        b.push_str(&format!("<h2>{}</h2>\n", t(es, "Agreement", "Acuerdo")));
        b.push_str(&agreement_panel(
            es,
            t(
                es,
                "Between reviewers (the verdict in force against each annex by another reviewer)",
                "Entre revisores (el veredicto vigente frente a cada anexo de otro revisor)",
            ),
            &agreement_reviewers,
            "agreement-reviewers",
        ));
        b.push_str(&agreement_panel(
            es,
            t(
                es,
                "Verdicts in force against the model's latest suggestions",
                "Veredictos vigentes frente a las últimas sugerencias del modelo",
            ),
            &agreement_model,
            "agreement-model",
        ));
    }
    page(es, t(es, "Claims", "Afirmaciones"), &b)
}

/// On the card of a claim reopened by a source change (the workbench given the current
/// sources): what changed and each cited passage as the current sources hold it, so that
/// the reviewer judges the claim against the text in force. Empty otherwise. The verdict
/// given before is not shown here (the blind mode hides it elsewhere too).
fn changed_section(st: &AppState, es: bool, target: &AuditTarget, claim: &str) -> String {
    let Some(path) = st.audit_sources.as_deref() else {
        return String::new();
    };
    // Reading the sources file blocks: let the runtime move other tasks off this thread.
    let found = tokio::task::block_in_place(|| {
        g::load_sources(path).map(|current| {
            claims::reopened(target, &current)
                .into_iter()
                .find(|r| r.claim == claim)
        })
    });
    let r = match found {
        Ok(Some(r)) => r,
        Ok(None) => return String::new(),
        Err(e) => {
            return format!(
                "<p role=\"alert\" id=\"changed-error\">{}</p>\n",
                escape(&e.to_string())
            )
        }
    };
    let mut b = format!(
        "<section aria-labelledby=\"h-changed\" id=\"changed\"><h2 id=\"h-changed\">{}</h2>\n<ul>",
        t(
            es,
            "Changed since the verdict was given",
            "Cambió desde que se dio el veredicto"
        )
    );
    for c in &r.changes {
        b.push_str(&format!("<li>{}</li>", escape(c)));
    }
    b.push_str("</ul>\n");
    for p in &r.now {
        b.push_str(&format!(
            "<figure class=\"passage\"><figcaption>{} {}</figcaption><blockquote>{}</blockquote></figure>\n",
            t(es, "Now:", "Ahora:"),
            escape(&p.reference),
            match &p.text {
                Some(x) => escape(x),
                None => t(
                    es,
                    "(the sources file gives only this passage's hash)",
                    "(el fichero de fuentes solo da el hash de este pasaje)"
                )
                .to_owned(),
            }
        ));
    }
    b.push_str("</section>\n");
    b
}

/// One claim's card and its verdict form.
pub(crate) async fn card_page(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> Response {
    let es = spanish(&headers);
    let q = form(q.unwrap_or_default().as_bytes());
    let target = match open(&st, es).await {
        Ok(t) => t,
        Err(r) => return r,
    };
    let Some(card) = claims::card(&target, &id) else {
        return html_error(
            es,
            StatusCode::NOT_FOUND,
            &format!(
                "{} {id}",
                t(es, "No such claim:", "No existe la afirmación:")
            ),
        );
    };
    let who = reviewer(&st, &headers);
    let blind_on = blind(&headers) && who.is_some();
    let queue = claims::queue(&target, Show::Waiting, who.as_deref().filter(|_| blind_on));
    let here = format!("/claims/{}", card.claim);
    let mut b = String::new();
    let appended = field(&q, "appended");
    if !appended.is_empty() {
        if let Some(done) = claims::card(&target, appended) {
            if let Some(last) = done.verdicts.last() {
                let kind = match done.verdicts.len() {
                    0 | 1 => t(es, "the original verdict", "el veredicto original").to_owned(),
                    _ if done.verdicts[0].support == last.support => format!(
                        "{} ({})",
                        t(es, "an annex that agrees", "un anexo conforme"),
                        verdict_name(es, done.verdicts[0].support)
                    ),
                    _ => format!(
                        "{} ({})",
                        t(es, "an annex that disagrees", "un anexo discrepante"),
                        verdict_name(es, done.verdicts[0].support)
                    ),
                };
                let shown = if blind_on {
                    String::new()
                } else {
                    format!(": {kind}")
                };
                b.push_str(&format!(
                    "<p role=\"status\" id=\"appended\">{} {} · {}{}</p>\n",
                    t(es, "Appended on", "Añadido en"),
                    escape(&done.claim),
                    verdict_name(es, last.support),
                    escape(&shown),
                ));
            }
        }
    }
    if field(&q, "relevance") == "appended" {
        if let Some(last) = card.relevance.last() {
            let kind = match card.relevance.len() {
                0 | 1 => t(es, "the original verdict", "el veredicto original").to_owned(),
                _ if card.relevance[0].relevance == last.relevance => format!(
                    "{} ({})",
                    t(es, "an annex that agrees", "un anexo conforme"),
                    relevance_name(es, card.relevance[0].relevance)
                ),
                _ => format!(
                    "{} ({})",
                    t(es, "an annex that disagrees", "un anexo discrepante"),
                    relevance_name(es, card.relevance[0].relevance)
                ),
            };
            b.push_str(&format!(
                "<p role=\"status\" id=\"relevance-appended\">{} {} · {}{}</p>\n",
                t(
                    es,
                    "Relevance appended on answer",
                    "Pertinencia añadida en la respuesta"
                ),
                escape(&card.answer),
                relevance_name(es, last.relevance),
                if blind_on {
                    String::new()
                } else {
                    format!(": {}", escape(&kind))
                },
            ));
        }
    }
    match &who {
        Some(name) => b.push_str(&format!(
            "<p>{} <strong>{}</strong></p>\n",
            t(es, "Reviewer:", "Revisor:"),
            escape(name)
        )),
        None => b.push_str(&reviewer_form(&st, es, &here)),
    }
    b.push_str(&progress_line(es, &queue));
    b.push_str(&blind_switch(es, blind_on, &here));
    b.push_str(&format!(
        "<section aria-labelledby=\"h-query\"><h2 id=\"h-query\">{}</h2><p id=\"query\">{}</p></section>\n",
        t(es, "Question", "Pregunta"),
        escape(&card.query)
    ));
    let answer = match card.highlight {
        Some((x, y)) => format!(
            "{}<mark>{}</mark>{}",
            escape(&card.answer_text[..x]),
            escape(&card.answer_text[x..y]),
            escape(&card.answer_text[y..])
        ),
        None => escape(&card.answer_text),
    };
    b.push_str(&format!(
        "<section aria-labelledby=\"h-answer\"><h2 id=\"h-answer\">{} {}</h2><blockquote id=\"answer\">{answer}</blockquote>\n<p>{} <strong id=\"claim\">{}</strong></p></section>\n",
        t(es, "Answer", "Respuesta"),
        escape(&card.answer),
        t(es, "Claim:", "Afirmación:"),
        escape(&card.text),
    ));
    b.push_str(&relevance_section(es, &card, blind_on, &st.csrf));
    b.push_str(&format!(
        "<section aria-labelledby=\"h-passages\"><h2 id=\"h-passages\">{}</h2>\n",
        t(es, "Cited passages", "Pasajes citados")
    ));
    if card.passages.is_empty() {
        b.push_str(&format!(
            "<p>{}</p>\n",
            t(
                es,
                "The claim cites nothing.",
                "La afirmación no cita nada."
            )
        ));
    }
    for p in &card.passages {
        b.push_str(&format!(
            "<figure class=\"passage\"><figcaption>[{}] {} · {}</figcaption><blockquote>{}</blockquote></figure>\n",
            escape(&p.citation),
            escape(&p.reference()),
            match p.position {
                Some(n) => format!("{} {n}", t(es, "returned at position", "devuelto en la posición")),
                None => t(es, "not in the retrieved list", "no está en la lista recuperada").to_owned(),
            },
            match &p.text {
                Some(x) => escape(x),
                None => t(es, "(the case gives no text for this passage)", "(el caso no da el texto de este pasaje)").to_owned(),
            }
        ));
    }
    b.push_str("</section>\n");
    b.push_str(&marks_section(es, &target, &card, blind_on, &st.csrf));
    b.push_str(&changed_section(&st, es, &target, &card.claim));
    b.push_str(&format!(
        "<section aria-labelledby=\"h-facts\"><h2 id=\"h-facts\">{}</h2><ul>",
        t(
            es,
            "Required facts it maps to",
            "Hechos requeridos que expresa"
        )
    ));
    for (id, text) in &card.facts {
        b.push_str(&format!("<li>{}: {}</li>", escape(id), escape(text)));
    }
    if card.facts.is_empty() {
        b.push_str(&format!("<li>{}</li>", t(es, "none", "ninguno")));
    }
    b.push_str("</ul></section>\n");
    if !blind_on {
        b.push_str(&format!(
            "<section aria-labelledby=\"h-verdicts\"><h2 id=\"h-verdicts\">{}</h2>\n",
            t(es, "Verdicts", "Veredictos")
        ));
        if card.verdicts.is_empty() {
            b.push_str(&format!(
                "<p>{}</p>\n",
                t(es, "No verdict yet.", "Aún sin veredicto.")
            ));
        } else {
            b.push_str(&verdict_list(
                es,
                "verdicts",
                card.verdicts.iter().map(|v| {
                    (
                        verdict_name(es, v.support),
                        v.reason.as_str(),
                        v.reviewer.as_str(),
                        v.time.as_str(),
                    )
                }),
            ));
        }
        b.push_str("</section>\n");
        if let Some(s) = &card.suggestion {
            b.push_str(&format!(
                "<details id=\"suggestion\"><summary>{}</summary><p>{} · {} · {}{}</p></details>\n",
                t(
                    es,
                    "The model's suggestion (hidden so that it does not anchor you)",
                    "La sugerencia del modelo (oculta para que no le condicione)"
                ),
                verdict_name(es, s.suggestion),
                escape(&s.label),
                escape(&s.model),
                s.reason
                    .as_deref()
                    .map(|r| format!(" — {}", escape(r)))
                    .unwrap_or_default(),
            ));
        }
    }
    b.push_str(&format!(
        "<form id=\"verdict\" method=\"post\" action=\"/claims/{}/review\">\n<input type=\"hidden\" name=\"csrf\" value=\"{}\">\n<fieldset><legend>{}</legend>\n",
        escape(&card.claim),
        st.csrf,
        t(es, "Your verdict (keys 1–4)", "Su veredicto (teclas 1–4)"),
    ));
    for (i, v) in g::VERDICTS.iter().enumerate() {
        let hint = if *v == Support::NotEvaluable {
            t(
                es,
                "Say what is missing to evaluate it",
                "Diga qué falta para evaluarla",
            )
        } else {
            t(
                es,
                "Why (the passage and what it says)",
                "Por qué (el pasaje y lo que dice)",
            )
        };
        b.push_str(&format!(
            "<div class=\"choice\"><input type=\"radio\" name=\"support\" id=\"v{k}\" value=\"{}\" data-key=\"{k}\" data-hint=\"{}\" required><label for=\"v{k}\"><kbd>{k}</kbd> {}</label></div>\n",
            v.as_str(),
            escape(hint),
            verdict_name(es, *v),
            k = i + 1,
        ));
    }
    b.push_str(&format!(
        "</fieldset>\n<label for=\"reason\">{}</label><textarea id=\"reason\" name=\"reason\" rows=\"3\" required placeholder=\"{}\"></textarea>\n<button type=\"submit\">{}</button> <small>{}</small>\n</form>\n",
        t(es, "Reason (required; for “not evaluable”, what is missing)", "Motivo (obligatorio; para «no evaluable», qué falta)"),
        escape(t(es, "Why (the passage and what it says)", "Por qué (el pasaje y lo que dice)")),
        t(es, "Append the verdict", "Añadir el veredicto"),
        t(es, "Ctrl+Enter in the reason appends it too.", "Ctrl+Intro en el motivo también lo añade."),
    ));
    if let Some(next) = &card.next {
        b.push_str(&format!(
            "<p><a href=\"/claims/{n}\">{} {n}</a></p>\n",
            t(es, "Next claim:", "Siguiente afirmación:"),
            n = escape(next)
        ));
    }
    page_with(
        es,
        &format!("{} {}", t(es, "Claim", "Afirmación"), card.claim),
        "<script src=\"/assets/review.js\" defer></script>\n",
        &b,
    )
}

/// The verdict in force, then its annexes: `(verdict, reason, reviewer, time)` in log order,
/// as an ordered list with the id `id`.
fn verdict_list<'a, V: AsRef<str>>(
    es: bool,
    id: &str,
    verdicts: impl Iterator<Item = (V, &'a str, &'a str, &'a str)>,
) -> String {
    let mut b = format!("<ol id=\"{id}\">");
    for (i, (verdict, reason, reviewer, time)) in verdicts.enumerate() {
        if i == 1 {
            b.push_str(&format!(
                "<li class=\"annexes\">{}</li>",
                t(es, "Annexes:", "Anexos:")
            ));
        }
        b.push_str(&format!(
            "<li><strong>{}</strong> — {} <small>({}{}{})</small></li>",
            verdict.as_ref(),
            escape(reason),
            escape(reviewer),
            if time.is_empty() { "" } else { ", " },
            escape(time),
        ));
    }
    b.push_str("</ol>\n");
    b
}

/// The claim's citations, each to be marked necessary, redundant (the others already
/// support the claim) or irrelevant (it supports nothing of it): the mark in force and its
/// annexes (hidden in a blind second review), and one form per citation with a required
/// reason. Shown when the claim cites at least one passage.
fn marks_section(
    es: bool,
    target: &AuditTarget,
    card: &claims::Card,
    blind_on: bool,
    csrf: &str,
) -> String {
    if card.passages.is_empty() {
        return String::new();
    }
    let mut b = format!(
        "<section aria-labelledby=\"h-marks\" id=\"marks\"><h2 id=\"h-marks\">{}</h2>\n<p class=\"small\">{}</p>\n",
        t(es, "Is each citation needed?", "¿Hace falta cada cita?"),
        t(
            es,
            "Necessary: without it the others do not support the claim. Redundant: the others already support it. Irrelevant: it supports nothing of the claim.",
            "Necesaria: sin ella las demás no respaldan la afirmación. Redundante: las demás ya la respaldan. Irrelevante: no respalda nada de la afirmación."
        )
    );
    for p in &card.passages {
        let cit = escape(&p.citation);
        b.push_str(&format!(
            "<fieldset class=\"mark\" id=\"mark-{cit}\"><legend>[{cit}] {}</legend>\n",
            escape(&p.reference())
        ));
        if !blind_on {
            let given: Vec<&g::CitationMarkRecord> = target
                .citation_marks
                .iter()
                .filter(|m| m.claim == card.claim && m.citation == p.citation)
                .collect();
            if !given.is_empty() {
                b.push_str(&verdict_list(
                    es,
                    &format!("marks-{cit}"),
                    given.iter().map(|m| {
                        (
                            mark_name(es, m.mark),
                            m.reason.as_str(),
                            m.reviewer.as_str(),
                            m.time.as_str(),
                        )
                    }),
                ));
            }
        }
        b.push_str(&format!(
            "<form method=\"post\" action=\"/claims/{}/citation\">\n<input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"citation\" value=\"{cit}\">\n<label for=\"mark-reason-{cit}\">{}</label><textarea id=\"mark-reason-{cit}\" name=\"reason\" rows=\"1\" required></textarea>\n<div class=\"mark-buttons\">",
            escape(&card.claim),
            csrf,
            t(es, "Reason (required)", "Motivo (obligatorio)"),
        ));
        for m in g::CITATION_MARKS {
            b.push_str(&format!(
                "<button type=\"submit\" name=\"mark\" value=\"{v}\" id=\"mark-{cit}-{v}\">{}</button> ",
                mark_name(es, m),
                v = m.as_str(),
            ));
        }
        b.push_str("</div>\n</form>\n</fieldset>\n");
    }
    b.push_str("</section>\n");
    b
}

fn mark_name(es: bool, m: g::CitationMark) -> &'static str {
    match m {
        g::CitationMark::Necessary => t(es, "necessary", "necesaria"),
        g::CitationMark::Redundant => t(es, "redundant", "redundante"),
        g::CitationMark::Irrelevant => t(es, "irrelevant", "irrelevante"),
    }
}

/// Appends a reviewer's mark of one of claim `id`'s citations, exactly as `veredicto audit
/// review --claim ID --citation CIT --mark M` does, then shows the card again.
pub(crate) async fn submit_mark(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let es = spanish(&headers);
    let (f, who) = match posted_review(&st, &headers, &body, es) {
        Ok(posted) => posted,
        Err(refused) => return refused,
    };
    let mark: g::CitationMark = match field(&f, "mark").parse() {
        Ok(m) => m,
        Err(e) => return html_error(es, StatusCode::BAD_REQUEST, &e),
    };
    let citation = field(&f, "citation").to_owned();
    let reason = field(&f, "reason").to_owned();
    let claim = id.clone();
    append_review(&st, es, move |open, at| {
        audit::record::review_citation(
            &open()?,
            &audit::record::CitationReview {
                claim: &claim,
                citation: &citation,
                mark,
                reason: &reason,
                reviewer: &who,
                time: at,
            },
        )?;
        Ok(format!("/claims/{}?mark=appended#marks", enc(&claim)))
    })
    .await
}

/// The answer's relevance: the verdict in force and its annexes (hidden in a blind second
/// review), and the form with three buttons and a required reason.
fn relevance_section(es: bool, card: &claims::Card, blind_on: bool, csrf: &str) -> String {
    let mut b = format!(
        "<section aria-labelledby=\"h-relevance\" id=\"relevance\"><h2 id=\"h-relevance\">{} {}{}</h2>\n",
        t(es, "Does answer", "¿Responde la respuesta"),
        escape(&card.answer),
        t(es, " address the question?", " a la pregunta?"),
    );
    if !blind_on {
        if card.relevance.is_empty() {
            b.push_str(&format!(
                "<p id=\"relevance-verdicts\">{}</p>\n",
                t(
                    es,
                    "No relevance verdict yet.",
                    "Aún sin veredicto de pertinencia."
                )
            ));
        } else {
            b.push_str(&verdict_list(
                es,
                "relevance-verdicts",
                card.relevance.iter().map(|v| {
                    (
                        relevance_name(es, v.relevance),
                        v.reason.as_str(),
                        v.reviewer.as_str(),
                        v.time.as_str(),
                    )
                }),
            ));
        }
    }
    b.push_str(&format!(
        "<form id=\"relevance-form\" method=\"post\" action=\"/claims/{}/relevance\">\n<input type=\"hidden\" name=\"csrf\" value=\"{}\">\n<label for=\"relevance-reason\">{}</label><textarea id=\"relevance-reason\" name=\"reason\" rows=\"2\" required placeholder=\"{}\"></textarea>\n<div class=\"relevance-buttons\">",
        escape(&card.claim),
        csrf,
        t(
            es,
            "Reason (required: what was asked, and what the answer addresses)",
            "Motivo (obligatorio: qué se preguntó y a qué responde la respuesta)"
        ),
        escape(t(
            es,
            "What was asked, and what the answer addresses",
            "Qué se preguntó y a qué responde la respuesta"
        )),
    ));
    for v in g::RELEVANCE_VERDICTS {
        b.push_str(&format!(
            "<button type=\"submit\" name=\"relevance\" value=\"{}\" id=\"relevance-{}\">{}</button> ",
            v.as_str(),
            v.as_str(),
            relevance_name(es, v)
        ));
    }
    b.push_str("</div>\n</form>\n</section>\n");
    b
}

/// Appends an answer-relevance verdict for the answer of claim `id`'s card, exactly as
/// `veredicto audit review --answer ID --relevance V` does, then shows the card again.
pub(crate) async fn submit_relevance(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let es = spanish(&headers);
    let (f, who) = match posted_review(&st, &headers, &body, es) {
        Ok(posted) => posted,
        Err(refused) => return refused,
    };
    let relevance: g::Relevance = match field(&f, "relevance").parse() {
        Ok(s) => s,
        Err(e) => return html_error(es, StatusCode::BAD_REQUEST, &e),
    };
    let reason = field(&f, "reason").to_owned();
    let claim = id.clone();
    append_review(&st, es, move |open, at| {
        let target = open()?;
        let Some(card) = claims::card(&target, &claim) else {
            return Err(veredicto_app::Error::msg(format!("no such claim: {claim}")));
        };
        audit::record::review_relevance(
            &target,
            &audit::record::RelevanceReview {
                case: Some(&card.case),
                answer: &card.answer,
                relevance,
                reason: &reason,
                reviewer: &who,
                time: at,
            },
        )?;
        Ok(format!("/claims/{}?relevance=appended", enc(&claim)))
    })
    .await
}

/// Appends a verdict, exactly as `veredicto audit review` does, then moves to the next
/// claim waiting (or back to this one).
pub(crate) async fn submit(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let es = spanish(&headers);
    let (f, who) = match posted_review(&st, &headers, &body, es) {
        Ok(posted) => posted,
        Err(refused) => return refused,
    };
    let support: Support = match field(&f, "support").parse() {
        Ok(s) => s,
        Err(e) => return html_error(es, StatusCode::BAD_REQUEST, &e),
    };
    let reason = field(&f, "reason").to_owned();
    let blind_for = blind(&headers).then(|| who.clone());
    let claim = id.clone();
    append_review(&st, es, move |open, at| {
        audit::record::review(
            &open()?,
            &audit::record::Review {
                claim: &claim,
                support,
                reason: &reason,
                reviewer: &who,
                diagnosis: None,
                time: at,
            },
        )?;
        let queue = claims::queue(&open()?, Show::Waiting, blind_for.as_deref());
        let next = claims::next_in(&queue, &claim);
        Ok(format!(
            "/claims/{}?appended={}",
            enc(next.as_deref().unwrap_or(&claim)),
            enc(&claim)
        ))
    })
    .await
}

/// What every review form posts first: its CSRF check (see `posted_form`) and the reviewer's
/// name; the fields, or the refusal to send back.
// The refusal is the response the handler returns as it is, as `posted_form`'s.
#[allow(clippy::result_large_err)]
fn posted_review(
    st: &AppState,
    headers: &HeaderMap,
    body: &[u8],
    es: bool,
) -> Result<(Vec<(String, String)>, String), Response> {
    let f = posted_form(st, body)?;
    let Some(who) = reviewer(st, headers) else {
        return Err(html_error(
            es,
            StatusCode::FORBIDDEN,
            t(
                es,
                "Say your name first (claims page).",
                "Indique antes su nombre (página de afirmaciones).",
            ),
        ));
    };
    Ok((f, who))
}

/// Appends one review to the audit the workbench serves: one writer at a time, `append` run
/// off the async runtime with a way to open the audit as it is on disk (again after the
/// append, to see it) and the time of the append; then a redirect to the page `append`
/// names, or its error (400) shown.
async fn append_review(
    st: &AppState,
    es: bool,
    append: impl FnOnce(
            &dyn Fn() -> veredicto_app::Result<AuditTarget>,
            &str,
        ) -> veredicto_app::Result<String>
        + Send
        + 'static,
) -> Response {
    let Some(arg) = st.config.audit.clone() else {
        return html_error(es, StatusCode::NOT_FOUND, "no audit configured");
    };
    let history = st.config.history.clone();
    let at = (st.config.clock)();
    let _lock = st.reviews.lock().await;
    let done = tokio::task::spawn_blocking(move || {
        append(
            &|| audit::open(&arg, &history, veredicto_app::Events::silent()),
            &at,
        )
    })
    .await;
    match done {
        Ok(Ok(to)) => redirect(&to),
        Ok(Err(e)) => html_error(es, StatusCode::BAD_REQUEST, &e.to_string()),
        Err(e) => html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

/// `s` for a URL's path or query.
fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The blind second-review switch: a cookie, then back where it was asked.
pub(crate) async fn set_blind(RawQuery(q): RawQuery) -> Response {
    let q = form(q.unwrap_or_default().as_bytes());
    let on = field(&q, "on") == "1";
    let back = field(&q, "back");
    let back = if back.starts_with("/claims") && !back.contains("//") {
        back
    } else {
        "/claims"
    };
    let mut r = redirect(back);
    if let Ok(v) = HeaderValue::from_str(&format!(
        "blind={}; SameSite=Strict; Path=/",
        if on { "1" } else { "0" }
    )) {
        r.headers_mut().append(header::SET_COOKIE, v);
    }
    r
}
