//! The `veredicto` binary: the command line of [`veredicto_cli::run`].

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(veredicto_cli::run(std::env::args_os()))
}
