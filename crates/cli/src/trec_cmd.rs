//! `veredicto trec`: the trec_eval-compatible command.

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct TrecArgs {}

pub fn run(_args: TrecArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
