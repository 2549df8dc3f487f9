//! The one way the CLI prints and exits: data to stdout (a closed pipe ends quietly),
//! everything else (notes, hints, progress) to stderr and silenced by `-q`, colours decided
//! once from `--color` and `NO_COLOR`; one exit status with one meaning per code.
//!
//! The workspace denies `print_stdout`, `print_stderr` and `exit` everywhere else: this
//! module is the one place allowed to write to the process's streams.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::{PoisonError, RwLock};

/// What the process reports to its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// 0: the command did its work; the gate (if any) accepted.
    Success,
    /// 1: the gate said stop (or a regression was found with `--fail-on-regression`).
    Stop,
    /// 2: the command could not do its work (bad input, I/O, a server…).
    Error,
}

impl From<ExitStatus> for ExitCode {
    fn from(s: ExitStatus) -> ExitCode {
        ExitCode::from(s.code())
    }
}

impl ExitStatus {
    /// The process's exit code: 0, 1 or 2.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Stop => 1,
            ExitStatus::Error => 2,
        }
    }

    /// `Stop` when `stop`, else `Success`.
    pub fn stop_if(stop: bool) -> ExitStatus {
        if stop {
            ExitStatus::Stop
        } else {
            ExitStatus::Success
        }
    }
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorArg {
    /// Colour when the output is a terminal and `NO_COLOR` is not set.
    #[default]
    Auto,
    Always,
    Never,
}

/// How chatty stderr is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    Quiet,
    Normal,
    Verbose,
}

/// The output conventions of the command running, set from its global flags.
#[derive(Debug, Clone, Copy)]
pub struct Printer {
    pub verbosity: Verbosity,
    pub color: ColorArg,
}

/// The printer of the command running (each command line sets its own: one process may run
/// several, as the Python package does).
static PRINTER: RwLock<Option<Printer>> = RwLock::new(None);

impl Printer {
    /// Sets the printer of the command that starts now.
    pub fn install(self) {
        *PRINTER.write().unwrap_or_else(PoisonError::into_inner) = Some(self);
    }

    /// Whether text written to stdout may carry ANSI colours.
    pub fn color_stdout(&self) -> bool {
        self.color_for(std::io::stdout().is_terminal())
    }

    /// Whether text written to stderr may carry ANSI colours.
    pub fn color_stderr(&self) -> bool {
        self.color_for(std::io::stderr().is_terminal())
    }

    fn color_for(&self, terminal: bool) -> bool {
        match self.color {
            ColorArg::Always => true,
            ColorArg::Never => false,
            ColorArg::Auto => {
                terminal
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
            }
        }
    }

    /// Whether progress may be shown (not under `-q`).
    pub fn progress(&self) -> bool {
        self.verbosity > Verbosity::Quiet
    }
}

/// The process's printer (the defaults when none was installed, e.g. in unit tests).
pub fn get() -> Printer {
    PRINTER
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .unwrap_or(Printer {
            verbosity: Verbosity::Normal,
            color: ColorArg::Auto,
        })
}

/// Data for stdout; a closed pipe (`| head`) is not an error.
pub fn stdout(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// A note for the user on stderr (`veredicto: …`), silenced by `-q`.
pub fn note(text: &str) {
    if get().verbosity >= Verbosity::Normal {
        eprintln!("veredicto: {text}");
    }
}

/// A detail shown only with `-v`.
pub fn detail(text: &str) {
    if get().verbosity >= Verbosity::Verbose {
        eprintln!("veredicto: {text}");
    }
}

/// A line saying what the command did (`appended … to …`), as it is, silenced by `-q`.
pub fn status(text: &str) {
    if get().verbosity >= Verbosity::Normal {
        eprintln!("{text}");
    }
}

/// One plain progress line (`veredicto: 10/200 chunks embedded …`), silenced by `-q`.
pub fn progress_line(text: &str) {
    if get().progress() {
        eprintln!("veredicto: {text}");
    }
}

/// Text for stderr as it is, shown even under `-q` (the report of a gate that stopped the
/// command).
pub fn stderr_text(text: &str) {
    eprint!("{text}");
}

/// The bar or ticker of the long work in progress, if any.
static PROGRESS: std::sync::Mutex<Option<(&'static str, crate::progress::Progress)>> =
    std::sync::Mutex::new(None);

/// Where the application's messages go: notes, statuses, details and warnings to stderr by
/// the verbosity, progress as a bar or a line every few seconds.
fn sink(message: veredicto_app::Message) {
    use veredicto_app::Message;
    match message {
        Message::Note(t) => note(&t),
        Message::Status(t) => status(&t),
        Message::Detail(t) => detail(&t),
        Message::Warning(t) => warn(&t),
        Message::Progress(p) => {
            let Ok(mut slot) = PROGRESS.lock() else {
                return;
            };
            if p.finished {
                if let Some((_, bar)) = slot.take_if(|(what, _)| *what == p.what) {
                    bar.finish();
                }
                return;
            }
            match slot.as_ref() {
                Some((what, bar)) if *what == p.what => bar.set(p.done),
                _ => {
                    if let Some((_, old)) = slot.take() {
                        old.finish();
                    }
                    let bar = crate::progress::Progress::new(p.what, p.total);
                    bar.set(p.done);
                    *slot = Some((p.what, bar));
                }
            }
        }
    }
}

/// The application's [`veredicto_app::Events`] for this process: messages printed as the
/// flags say (see [`sink`]).
pub fn events() -> veredicto_app::Events<'static> {
    veredicto_app::Events::new(&sink)
}

/// A warning: shown even under `-q` (it changes what the result means).
pub fn warn(text: &str) {
    let p = get();
    if p.color_stderr() {
        let style = anstyle::Style::new().fg_color(Some(anstyle::AnsiColor::Yellow.into()));
        eprintln!("veredicto: {style}warning{style:#}: {text}");
    } else {
        eprintln!("veredicto: warning: {text}");
    }
}

/// The final error line(s), `veredicto: error: …`.
pub fn error(text: &str) {
    if get().color_stderr() {
        let style = anstyle::Style::new()
            .bold()
            .fg_color(Some(anstyle::AnsiColor::Red.into()));
        eprintln!("veredicto: {style}error{style:#}: {text}");
    } else {
        eprintln!("veredicto: error: {text}");
    }
}

/// Output formats. Each command accepts the ones that make sense for it
/// ([`formats`]); `--json` is everywhere an alias of `--format json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Human,
    Json,
    Markdown,
    Junit,
    Html,
}

impl Format {
    /// The format chosen by `--format` and `--json`.
    pub fn or_json(self, json: bool) -> Format {
        if json {
            Format::Json
        } else {
            self
        }
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "human" => Format::Human,
            "json" => Format::Json,
            "markdown" => Format::Markdown,
            "junit" => Format::Junit,
            "html" => Format::Html,
            other => return Err(format!("unknown format `{other}`")),
        })
    }
}

/// A `--format` value parser that offers (and completes) only `allowed`.
pub fn formats(
    allowed: &'static [&'static str],
) -> impl clap::builder::TypedValueParser<Value = Format> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(allowed)
        .map(|s| s.parse::<Format>().unwrap_or(Format::Human))
}

/// Pretty JSON with a final newline.
pub fn json(value: &impl serde::Serialize) -> anyhow::Result<String> {
    let mut s = serde_json::to_string_pretty(value)?;
    s.push('\n');
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_mean_one_thing_each() {
        assert_eq!(ExitCode::from(ExitStatus::Success), ExitCode::from(0));
        assert_eq!(ExitCode::from(ExitStatus::Stop), ExitCode::from(1));
        assert_eq!(ExitCode::from(ExitStatus::Error), ExitCode::from(2));
    }

    #[test]
    fn color_follows_the_flag() {
        let p = |color| Printer {
            verbosity: Verbosity::Normal,
            color,
        };
        assert!(p(ColorArg::Always).color_for(false));
        assert!(!p(ColorArg::Never).color_for(true));
        assert!(!p(ColorArg::Auto).color_for(false));
    }
}
