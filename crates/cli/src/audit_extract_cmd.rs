//! `veredicto audit extract`: recorded answers split into suggested material claims by a
//! chat model, written to their own file (never into the case file).

use crate::printer::ExitStatus;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct ExtractArgs {
    /// Case file (YAML, or JSON by extension), or an audit run in the history: ID, unique
    /// prefix or `latest`.
    pub target: String,
    /// Where the suggested claims are written (JSONL, one answer a line, replaced).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    #[command(flatten)]
    pub chat: crate::chat_args::ChatArgs,
}

pub fn run(a: ExtractArgs, s: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    let t = crate::audit_target::open(&a.target, &s.history)?;
    let asker = veredicto_app::chat::Asker::new(a.chat.settings(s)?)?;
    let out = veredicto_app::audit::extract::extract(&t, &asker, &a.out, crate::printer::events())?;
    crate::printer::status(&format!(
        "wrote {}: {} claim(s) suggested for {} answer(s) of {}; the case file is unchanged: copy the claims you accept into it",
        a.out.display(),
        out.claims,
        out.records.len(),
        t.origin
    ));
    crate::printer::status(&out.tally.to_string());
    if let Some(first) = out.failures.first() {
        anyhow::bail!(
            "the chat model's reply for {first}{}; the {} readable record(s) were written to {}",
            if out.failures.len() > 1 {
                format!(" (and {} more)", out.failures.len() - 1)
            } else {
                String::new()
            },
            out.records.len(),
            a.out.display()
        );
    }
    Ok(ExitStatus::Success)
}
