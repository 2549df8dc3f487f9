//! The value parsers of every flag that takes a date or a time: each one goes through the
//! core's calendar ([`veredicto_core::time`]), so that `--as-of 2025-02-30` is refused by
//! every command alike (clap names the flag; exit 2), and the value is kept as given.

use veredicto_core::time::{self, TimeError};

/// `--as-of`: a calendar date `YYYY-MM-DD`.
pub fn date(text: &str) -> Result<String, String> {
    time::check_date(text)
        .map(|_| text.to_owned())
        .map_err(|e| message(e, "a calendar date YYYY-MM-DD"))
}

/// `--time`, `--created`: an RFC 3339 date-time (`2025-11-14T09:30:00Z`).
pub fn timestamp(text: &str) -> Result<String, String> {
    time::check_timestamp(text)
        .map(|_| text.to_owned())
        .map_err(|e| message(e, "an RFC 3339 time such as 2025-11-14T09:30:00Z"))
}

/// `--since`, `--until`: a date `YYYY-MM-DD` or an RFC 3339 date-time.
pub fn bound(text: &str) -> Result<String, String> {
    time::check_bound(text, false)
        .map(|_| text.to_owned())
        .map_err(|e| {
            message(
                e,
                "a date YYYY-MM-DD or an RFC 3339 time such as 2025-11-14T09:30:00Z",
            )
        })
}

/// The error, with what the flag takes when the error itself does not say it.
fn message(e: TimeError, form: &str) -> String {
    match e {
        TimeError::NotADate(_) | TimeError::NotATime(_) | TimeError::NotADateOrTime(_) => {
            e.to_string()
        }
        _ => format!("{e}; expected {form}"),
    }
}
