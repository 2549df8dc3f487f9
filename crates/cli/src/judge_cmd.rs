//! `veredicto judge`: a chat model's relevance suggestions for the chunks that outrank the
//! expected ones in a recorded run's failing cases, stored beside (never among) people's
//! judgments, and their agreement with those judgments.

use crate::printer::{ExitStatus, Format};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct JudgeArgs {
    /// The recorded run (ID, unique prefix, `latest`).
    #[arg(long, default_value = "latest")]
    pub run: String,
    /// The golden file the suggestions are stored beside (default: the project's).
    #[arg(long, value_name = "FILE")]
    pub golden: Option<PathBuf>,
    /// The corpus the chunks' texts are read from (default: the project's).
    #[arg(long, value_name = "FILE")]
    pub corpus: Option<PathBuf>,
    /// Only the agreement of the stored suggestions with people's judgments (Cohen's
    /// kappa); nothing is asked.
    #[arg(long)]
    pub agreement: bool,
    /// Time recorded with the suggestions (RFC 3339; default: now, UTC).
    #[arg(long, value_name = "TIME", value_parser = crate::date_args::timestamp)]
    pub time: Option<String>,
    /// Output format.
    #[arg(long, value_parser = crate::printer::formats(&["human", "json"]), default_value = "human")]
    pub format: Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub chat: crate::chat_args::ChatArgs,
    #[command(flatten)]
    pub history: crate::history_args::HistoryArgs,
}

impl JudgeArgs {
    pub fn overrides(&self) -> veredicto_app::Overrides {
        self.history.overrides()
    }
}

pub fn run(args: JudgeArgs, settings: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    let Some(golden) = args.golden.clone().or_else(|| settings.golden.clone()) else {
        anyhow::bail!("give --golden FILE, or `golden` in veredicto.toml");
    };
    let json = matches!(args.format.or_json(args.json), Format::Json);
    if args.agreement {
        let ag = veredicto_app::relevance::agreement(&golden)?;
        let text = if json {
            veredicto_report::relevance::agreement_json(&ag)
        } else {
            veredicto_report::relevance::agreement_human(&ag)
        };
        crate::printer::stdout(&text)?;
        return Ok(ExitStatus::Success);
    }
    let Some(corpus) = args.corpus.clone().or_else(|| settings.corpus.clone()) else {
        anyhow::bail!("give --corpus FILE (the chunks' texts), or `corpus` in veredicto.toml");
    };
    let asker = veredicto_app::chat::Asker::new(args.chat.settings(settings)?)?;
    let at = args.time.clone().unwrap_or_else(crate::clock::now_rfc3339);
    let out = veredicto_app::relevance::judge(&veredicto_app::relevance::JudgeRequest {
        history: &settings.history,
        run: &args.run,
        golden: &golden,
        corpus: &corpus,
        asker: &asker,
        at: &at,
        events: crate::printer::events(),
    })?;
    let file = out.file.display().to_string();
    let prompt = veredicto_app::chat::RELEVANCE.fingerprint();
    let view = veredicto_report::relevance::View {
        run: &out.run,
        rows: out
            .suggestions
            .iter()
            .map(|s| veredicto_report::relevance::Row {
                case: &s.case,
                chunk: &s.chunk,
                rank: s.rank,
                grade: s.grade.as_str(),
                reason: &s.reason,
            })
            .collect(),
        missing: out.missing.len(),
        file: &file,
        agreement: &out.agreement,
        prompt: &prompt,
    };
    let text = if json {
        veredicto_report::relevance::json(&view)
    } else {
        veredicto_report::relevance::human(&view)
    };
    crate::printer::stdout(&text)?;
    crate::printer::status(&out.tally.to_string());
    if let Some(first) = out.failures.first() {
        anyhow::bail!(
            "the chat model's reply for {first}{}; the {} readable suggestion(s) were stored in {file}",
            if out.failures.len() > 1 {
                format!(" (and {} more)", out.failures.len() - 1)
            } else {
                String::new()
            },
            out.suggestions.len()
        );
    }
    Ok(ExitStatus::Success)
}
