//! "Run the exam" from the golden-set page: a POST starts the project's exam (the runner
//! `veredicto serve` was given) in a background task; its page refreshes itself with the
//! progress until the verdict, then links to the recorded run.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use veredicto_app::{Events, Message};
use veredicto_report::html::escape;

use crate::{html_error, page, page_with, posted_form, redirect, spanish, t, AppState};

/// One exam started from the page.
#[derive(Default)]
pub(crate) struct Job {
    state: Mutex<JobState>,
}

#[derive(Default, Clone)]
struct JobState {
    done: u64,
    total: u64,
    what: &'static str,
    result: Option<Result<Done, String>>,
}

#[derive(Clone)]
struct Done {
    accepted: bool,
    run: Option<String>,
    failing: usize,
    cases: usize,
    reasons: Vec<String>,
}

fn lock(job: &Job) -> std::sync::MutexGuard<'_, JobState> {
    job.state.lock().unwrap_or_else(|p| p.into_inner())
}

/// The golden page's button (or why there is none).
pub(crate) fn button(st: &AppState, es: bool) -> String {
    if st.config.exam.is_none() {
        return format!(
            "<p>{}</p>\n",
            t(
                es,
                "Running the exam from here needs a source to examine (an index, a retriever or a run file in veredicto.toml).",
                "Ejecutar el examen desde aquí necesita algo que examinar (un índice, un recuperador o un fichero de resultados en veredicto.toml)."
            )
        );
    }
    format!(
        "<form method=\"post\" action=\"/golden/exam\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><button type=\"submit\" id=\"run-exam\">{}</button></form>\n",
        st.csrf,
        t(es, "Run the exam", "Ejecutar el examen"),
    )
}

/// Starts the exam (one at a time: while one runs, its page is shown instead).
pub(crate) async fn start(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let es = spanish(&headers);
    if let Err(refused) = posted_form(&st, &body) {
        return refused;
    }
    let Some(runner) = st.config.exam.clone() else {
        return html_error(
            es,
            StatusCode::NOT_FOUND,
            t(
                es,
                "This project has no source to examine.",
                "Este proyecto no tiene nada que examinar.",
            ),
        );
    };
    let (n, job) = {
        let mut jobs = st.exams.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = jobs.iter().position(|j| lock(j).result.is_none()) {
            return redirect(&format!("/golden/exam/{}", i + 1));
        }
        let job = Arc::new(Job::default());
        jobs.push(job.clone());
        (jobs.len(), job)
    };
    tokio::task::spawn_blocking(move || {
        let sink = |m: Message| {
            if let Message::Progress(p) = m {
                let mut s = lock(&job);
                s.done = p.done;
                s.total = p.total;
                s.what = p.what;
            }
        };
        let outcome = (runner.0)(Events::new(&sink));
        let result = outcome.map(|o| Done {
            accepted: o.accepted(),
            run: o.run_id.clone(),
            failing: o.report.cases.iter().filter(|c| !c.passed).count(),
            cases: o.report.cases.len(),
            reasons: veredicto_report::stop_reasons(&o.report),
        });
        lock(&job).result = Some(result);
    });
    redirect(&format!("/golden/exam/{n}"))
}

/// The exam's progress (refreshing itself each second), then its verdict.
pub(crate) async fn progress(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(n): Path<usize>,
) -> Response {
    let es = spanish(&headers);
    let job = {
        let jobs = st.exams.lock().unwrap_or_else(|p| p.into_inner());
        n.checked_sub(1).and_then(|i| jobs.get(i).cloned())
    };
    let Some(job) = job else {
        return html_error(
            es,
            StatusCode::NOT_FOUND,
            t(es, "No such exam.", "No existe ese examen."),
        );
    };
    let s = lock(&job).clone();
    let title = t(es, "The exam", "El examen");
    match s.result {
        None => page_with(
            es,
            title,
            "<meta http-equiv=\"refresh\" content=\"1\">\n",
            &format!(
                "<p role=\"status\" id=\"exam-status\">{} <progress aria-label=\"{}\" max=\"{}\" value=\"{}\"></progress> {} / {} {}</p>\n",
                t(es, "Running…", "En curso…"),
                t(es, "exam progress", "avance del examen"),
                s.total.max(1),
                s.done,
                s.done,
                s.total,
                escape(s.what),
            ),
        ),
        Some(Err(e)) => html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e),
        Some(Ok(d)) => {
            let mut b = format!(
                "<p id=\"exam-verdict\" class=\"verdict\"><strong>{}</strong> · {} {} / {}</p>\n",
                if d.accepted {
                    t(es, "ACCEPT: the knowledge base may be deployed", "ACEPTA: la base de conocimiento puede desplegarse")
                } else {
                    t(es, "STOP: do not deploy", "PARA: no desplegar")
                },
                t(es, "failing cases:", "casos que fallan:"),
                d.failing,
                d.cases,
            );
            if !d.reasons.is_empty() {
                b.push_str("<ul>");
                for r in &d.reasons {
                    b.push_str(&format!("<li>{}</li>", escape(r)));
                }
                b.push_str("</ul>\n");
            }
            if let Some(run) = &d.run {
                b.push_str(&format!(
                    "<p><a id=\"exam-run\" href=\"/runs/{r}\">{} {r}</a></p>\n",
                    t(es, "The recorded run:", "La ejecución registrada:"),
                    r = escape(run)
                ));
            }
            b.push_str(&format!(
                "<p><a href=\"/golden\">{}</a></p>\n",
                t(es, "Back to the golden set", "Volver al conjunto dorado")
            ));
            page(es, title, &b)
        }
    }
}
