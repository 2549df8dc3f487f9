//! The package's exceptions: `VeredictoError` for every error of a pipeline (the command
//! line's exit code 2), `InputError` for a file of the user's that does not parse, with the
//! file, line and field as attributes. A gate that says stop is an outcome, never an error.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use veredicto_formats::FormatError;

create_exception!(
    _native,
    VeredictoError,
    PyException,
    "An error of veredicto (what the command line reports with exit code 2)."
);
create_exception!(
    _native,
    InputError,
    VeredictoError,
    "Input that does not parse: `.file`, `.line` (0: the whole file) and `.field` say where."
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("VeredictoError", py.get_type::<VeredictoError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    Ok(())
}

/// Where an input error is: file, line, field.
struct Location {
    file: String,
    line: usize,
    field: Option<String>,
}

/// The format error inside an application error: directly, or under the contexts that
/// wrap it (a transparent variant forwards `source()` past the format error itself, so the
/// chain of sources alone never shows it).
fn format_error(err: &veredicto_app::Error) -> Option<&FormatError> {
    match err {
        veredicto_app::Error::Format(f) => Some(f),
        veredicto_app::Error::Context { source, .. } => format_error(source),
        _ => None,
    }
}

fn location(err: &(dyn std::error::Error + 'static)) -> Option<Location> {
    let mut e: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(cur) = e {
        let found = cur.downcast_ref::<FormatError>().or_else(|| {
            cur.downcast_ref::<veredicto_app::Error>()
                .and_then(format_error)
        });
        if let Some(f) = found {
            return Some(match f {
                FormatError::Io { path, .. } => Location {
                    file: path.display().to_string(),
                    line: 0,
                    field: None,
                },
                FormatError::Invalid {
                    path, line, field, ..
                } => Location {
                    file: path.display().to_string(),
                    line: *line,
                    field: Some(field.clone()),
                },
                FormatError::Row {
                    path, row, column, ..
                } => Location {
                    file: path.display().to_string(),
                    line: usize::try_from(*row).unwrap_or(0),
                    field: Some(column.clone()),
                },
            });
        }
        e = cur.source();
    }
    None
}

/// The message as the command line prints it: the error, then each cause it wraps.
fn message(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut e = err.source();
    while let Some(cur) = e {
        let s = cur.to_string();
        if !text.contains(&s) {
            text.push_str(": ");
            text.push_str(&s);
        }
        e = cur.source();
    }
    text
}

/// The Python exception for an application error.
pub fn to_py(py: Python<'_>, err: &(dyn std::error::Error + 'static)) -> PyErr {
    let text = message(err);
    match location(err) {
        Some(loc) => input_error(py, text, &loc.file, loc.line, loc.field.as_deref()),
        None => VeredictoError::new_err(text),
    }
}

/// An `InputError` with its location.
pub fn input_error(
    py: Python<'_>,
    text: String,
    file: &str,
    line: usize,
    field: Option<&str>,
) -> PyErr {
    let err = InputError::new_err(text);
    let value = err.value(py);
    let set = || -> PyResult<()> {
        value.setattr("file", file)?;
        value.setattr("line", line)?;
        value.setattr("field", field)?;
        Ok(())
    };
    match set() {
        Ok(()) => err,
        Err(e) => e,
    }
}

/// Maps an application result.
pub fn app<T>(py: Python<'_>, r: veredicto_app::Result<T>) -> PyResult<T> {
    r.map_err(|e| to_py(py, &e))
}
