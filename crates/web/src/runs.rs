//! The runs area's trends per configuration: the history's runs grouped by golden set and
//! policy (the runs a comparison with the previous run treats as comparable), each group
//! with its newest runs' Quality Score, recall and verdict, drawn as inline SVG (no asset)
//! and listed; paged. Grouping in `veredicto_app::workbench::trends`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use veredicto_app::workbench;
use veredicto_core::exam::Verdict;
use veredicto_core::history::short_fingerprint;
use veredicto_report::html::{escape, sparkline};

use crate::{field, form, html_error, spanish, t, AppState};

/// Configurations per page.
pub const GROUPS: usize = 10;
/// Newest runs shown per configuration.
pub const PER_GROUP: usize = 20;
/// Newest runs of the history read to group.
pub const SCAN: usize = 10_000;

const STYLE: &str = "<style>svg.spark{width:180px;height:40px;display:block}svg.spark .grid{stroke:#e5e7eb;stroke-width:1}.trend h2{font-size:1.1rem}</style>\n";

pub(crate) async fn trends_page(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    axum::extract::RawQuery(q): axum::extract::RawQuery,
) -> Response {
    let es = spanish(&headers);
    let q = form(q.unwrap_or_default().as_bytes());
    let offset: usize = field(&q, "offset").parse().unwrap_or(0);
    let spec = st.config.history.clone();
    let p = match tokio::task::spawn_blocking(move || {
        workbench::trends(&spec, offset, GROUPS, PER_GROUP, SCAN)
    })
    .await
    {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => return html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
        Err(e) => return html_error(es, StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    let mut b = format!(
        "<p><a href=\"/runs\">{}</a></p>\n<p id=\"trends-count\">{} {}–{} / {} · {} {}{}</p>\n",
        t(es, "All runs", "Todas las ejecuciones"),
        t(
            es,
            "Configurations (golden set and policy)",
            "Configuraciones (conjunto dorado y política)"
        ),
        if p.total_groups == 0 { 0 } else { offset + 1 },
        (offset + p.groups.len()).min(p.total_groups),
        p.total_groups,
        p.runs_read,
        t(es, "runs", "ejecuciones"),
        if p.more_runs {
            t(
                es,
                " (the newest; older runs are not grouped)",
                " (las más recientes; las anteriores no se agrupan)",
            )
        } else {
            ""
        },
    );
    for (n, g) in p.groups.iter().enumerate() {
        let tips: Vec<String> = g
            .runs
            .iter()
            .map(|r| format!("{} {}", r.created_at, r.label.as_deref().unwrap_or("")))
            .collect();
        let qs: Vec<Option<f64>> = g.runs.iter().map(|r| Some(r.mean_quality)).collect();
        let recall: Vec<Option<f64>> = g.runs.iter().map(|r| Some(r.mean_recall)).collect();
        let newest = g.runs.last();
        b.push_str(&format!(
            "<section class=\"trend\" id=\"config-{}\"><h2>{} <code>{}</code> · {} <code>{}</code></h2>\n<p>{} {} · {} {}</p>\n<table><tbody><tr><th scope=\"row\">{}</th><td>{}</td><td>{}</td></tr><tr><th scope=\"row\">recall</th><td>{}</td><td>{}</td></tr></tbody></table>\n",
            offset + n + 1,
            t(es, "golden set", "conjunto dorado"),
            escape(short_fingerprint(&g.golden_fingerprint)),
            t(es, "policy", "política"),
            escape(short_fingerprint(&g.policy_fingerprint)),
            g.total,
            t(es, "runs; the newest:", "ejecuciones; las más recientes:"),
            g.runs.len(),
            t(es, "shown, oldest first", "mostradas, de la más antigua a la más reciente"),
            t(es, "mean Quality Score", "Quality Score medio"),
            sparkline("mean Quality Score", &qs, &tips, (0.0, 100.0), &|v| format!("{v:.1}")),
            newest.map_or(String::new(), |r| format!("{:.1}", r.mean_quality)),
            sparkline("mean recall", &recall, &tips, (0.0, 1.0), &|v| format!("{v:.3}")),
            newest.map_or(String::new(), |r| format!("{:.3}", r.mean_recall)),
        ));
        b.push_str(&format!(
            "<table><thead><tr><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">QS</th><th scope=\"col\">recall</th><th scope=\"col\">{}</th></tr></thead><tbody>\n",
            t(es, "Run", "Ejecución"),
            t(es, "When", "Cuándo"),
            t(es, "Label", "Etiqueta"),
            t(es, "Verdict", "Veredicto"),
        ));
        for r in g.runs.iter().rev() {
            b.push_str(&format!(
                "<tr><td><a href=\"/runs/{id}\">{id}</a></td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.3}</td><td>{}</td></tr>\n",
                escape(&r.created_at),
                escape(r.label.as_deref().unwrap_or("")),
                r.mean_quality,
                r.mean_recall,
                match r.verdict {
                    Verdict::Accept => t(es, "ACCEPT", "ACEPTA"),
                    Verdict::Stop => t(es, "STOP", "PARA"),
                },
                id = escape(&r.id),
            ));
        }
        b.push_str("</tbody></table></section>\n");
    }
    if p.total_groups == 0 {
        b.push_str(&format!(
            "<p>{}</p>\n",
            t(
                es,
                "No run recorded yet.",
                "Aún no hay ejecuciones registradas."
            )
        ));
    }
    b.push_str("<nav aria-label=\"pages\">");
    if offset > 0 {
        b.push_str(&format!(
            "<a href=\"/runs/trends?offset={}\">{}</a> ",
            offset.saturating_sub(GROUPS),
            t(es, "Previous", "Anterior")
        ));
    }
    if offset + p.groups.len() < p.total_groups {
        b.push_str(&format!(
            "<a href=\"/runs/trends?offset={}\">{}</a>",
            offset + p.groups.len(),
            t(es, "Next", "Siguiente")
        ));
    }
    b.push_str("</nav>\n");
    crate::page_with(
        es,
        t(
            es,
            "Trends per configuration",
            "Tendencias por configuración",
        ),
        STYLE,
        &b,
    )
}
