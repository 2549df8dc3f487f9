//! `veredicto serve`: the workbench, a local web app over the project's golden set.

use crate::printer::ExitStatus;

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The address to listen on. Another than the loopback one needs --token.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The port (0: a free one).
    #[arg(long, default_value_t = 8765)]
    pub port: u16,
    /// A token every request must carry (default: `VEREDICTO_SERVE_TOKEN`).
    #[arg(long, value_name = "T")]
    pub token: Option<String>,
    /// A header a reverse proxy sets with the reviewer's name (instead of asking it).
    #[arg(long, value_name = "H")]
    pub identity_header: Option<String>,
    /// What the claims area reviews: a case file, or an audit run (ID, unique prefix or
    /// `latest`) in the history.
    #[arg(long, value_name = "CASES|RUN")]
    pub audit: Option<String>,
    /// The current sources (as `veredicto audit impact --sources` reads them): the claims
    /// queue lists the claims judged against a cited passage that has since changed.
    #[arg(long, value_name = "NEW_SOURCES", requires = "audit")]
    pub audit_sources: Option<std::path::PathBuf>,
    /// The production signals file the candidates are proposed from (as `veredicto signals
    /// candidates` reads it).
    #[arg(long, value_name = "FILE", default_value = veredicto_app::signals::DEFAULT_SIGNALS)]
    pub signals: std::path::PathBuf,
    /// The documents evidence spans point into (their text is shown to select a passage).
    #[arg(long, value_name = "FILE")]
    pub documents: Option<std::path::PathBuf>,
}

pub fn run(args: ServeArgs, settings: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    let golden = settings.golden.clone().ok_or_else(|| {
        anyhow::anyhow!("serve needs a golden set: set `golden` in veredicto.toml (veredicto init)")
    })?;
    let token = args
        .token
        .or_else(|| settings.env.get("VEREDICTO_SERVE_TOKEN"))
        .filter(|t| !t.is_empty());
    let audit_sources = args.audit_sources.map(|p| settings.cwd.join(p));
    let bound = veredicto_web::bind(
        &args.host,
        args.port,
        veredicto_web::Config {
            golden,
            corpus: settings.corpus.clone(),
            documents: args.documents.map(|d| settings.cwd.join(d)),
            signals: Some(settings.cwd.join(&args.signals)),
            token,
            identity_header: args.identity_header,
            history: settings.history.clone(),
            clock: crate::clock::now_rfc3339,
            audit: args.audit,
            exam: settings.source.is_some().then(|| {
                let settings = settings.clone();
                veredicto_web::ExamRunner(std::sync::Arc::new(
                    move |events: veredicto_app::Events<'_>| {
                        // What `veredicto exam` runs in the project with no flag given.
                        veredicto_app::exam_job::ExamJob::from_settings(&settings)
                            .and_then(|job| {
                                veredicto_app::exam_job::run(
                                    &job,
                                    &settings,
                                    &crate::clock::SystemClock,
                                    events,
                                )
                            })
                            .map_err(|e| format!("{:#}", anyhow::Error::from(e)))
                    },
                ))
            }),
        },
    )
    .map_err(anyhow::Error::msg)?
    .with_audit_sources(audit_sources);
    // New questions are searched through the project's source, as `veredicto search` does.
    let bound = match settings.source {
        Some(_) => bound.search_through(veredicto_web::SearchSource {
            settings: settings.clone(),
            net: veredicto_app::source::Net::default(),
        }),
        None => bound,
    };
    crate::printer::stdout(&format!("{}\n", bound.url()))?;
    bound.serve()?;
    Ok(ExitStatus::Success)
}
