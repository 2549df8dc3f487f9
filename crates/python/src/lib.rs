//! `veredicto._native`: the extension module behind the `veredicto` Python package. A thin
//! binding: it converts Python objects into the application's types, calls `veredicto-app`
//! (or the command line, `veredicto_cli::run`), releases the GIL while the work runs, and maps
//! errors to the package's exception classes. The Python package (`python/veredicto`) adds
//! typing and conveniences only.

use pyo3::prelude::*;

mod errors;
mod exam;
mod history;
mod retriever;
mod trec;

/// Runs the `veredicto` command line with `args` (the program name first) and returns its
/// exit code: 0 accept/ok, 1 the gate said stop, 2 error. The same code as the Rust binary.
#[pyfunction]
fn run_cli(py: Python<'_>, args: Vec<String>) -> u8 {
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    py.detach(move || veredicto_cli::run(args))
}

/// The version of the Rust crates the module was built from.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    errors::register(m)?;
    trec::register(m)?;
    exam::register(m)?;
    history::register(m)?;
    Ok(())
}
