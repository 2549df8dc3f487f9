//! `veredicto exam`: the golden-set acceptance exam.

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ExamArgs {}

pub fn run(_args: ExamArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
