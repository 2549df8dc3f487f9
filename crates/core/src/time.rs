//! RFC 3339 times and calendar dates to Unix milliseconds, without a date library: the one
//! parser every command uses for a date or a time, in a flag (`--as-of`, `--time`,
//! `--since`, `--until`) or in a file (`valid_from`, `valid_to`, `valid_at`, a signal's
//! `time`). The history stores the caller's `created_at` string verbatim and, beside it, its
//! instant in UTC milliseconds for ordering and date filters.
//!
//! Dates are proleptic Gregorian: months 01–12, the days each month has (February 29 only in
//! leap years: divisible by 4, except centuries not divisible by 400), years 0000–9999.
//! The `check_*` functions say why a text is refused ([`TimeError`]); the `parse_*` ones are
//! their `Option` forms.

/// Why a text is not a date or a time. Quoted values are cut to about 200 characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    /// Not of the form `YYYY-MM-DD`.
    #[error("expected a calendar date YYYY-MM-DD, got \"{0}\"")]
    NotADate(String),
    /// Not of the form of an RFC 3339 date-time.
    #[error("expected an RFC 3339 time such as 2025-11-14T09:30:00Z, got \"{0}\"")]
    NotATime(String),
    /// Neither a `YYYY-MM-DD` date nor an RFC 3339 date-time.
    #[error(
        "expected a date YYYY-MM-DD or an RFC 3339 time such as 2025-11-14T09:30:00Z, got \"{0}\""
    )]
    NotADateOrTime(String),
    /// The month is not 01–12.
    #[error(
        "\"{text}\" is not a calendar date: there is no month {month:02} (months are 01 to 12)"
    )]
    NoSuchMonth {
        /// The text (cut).
        text: String,
        /// The month given.
        month: i64,
    },
    /// The day is 00 or beyond the month's last day.
    #[error("\"{text}\" is not a calendar date: {year:04}-{month:02} has {days} days, there is no day {day:02}")]
    NoSuchDay {
        /// The text (cut).
        text: String,
        /// The year given.
        year: i64,
        /// The month given.
        month: i64,
        /// The day given.
        day: i64,
        /// How many days that month has.
        days: i64,
    },
    /// An hour, minute, second or offset out of range.
    #[error("\"{text}\" is not a time: there is no {what} {value:02}")]
    NoSuchTime {
        /// The text (cut).
        text: String,
        /// `hour`, `minute`, `second`, `offset hour`, `offset minute`.
        what: &'static str,
        /// The value given.
        value: i64,
    },
}

/// What a text was expected to be, for the shape error.
#[derive(Clone, Copy)]
enum Expected {
    Date,
    Time,
    DateOrTime,
}

impl Expected {
    fn error(self, text: &str) -> TimeError {
        let cut = crate::redact::short(text);
        match self {
            Expected::Date => TimeError::NotADate(cut),
            Expected::Time => TimeError::NotATime(cut),
            Expected::DateOrTime => TimeError::NotADateOrTime(cut),
        }
    }
}

/// A calendar date `YYYY-MM-DD` (month 1–12, a day that exists in that month) to days
/// since 1970-01-01, or why it is not one (`2025-02-30`, `2025-13-01`, `2025-1-1`).
pub fn check_date(text: &str) -> Result<i64, TimeError> {
    date_of(text, text.as_bytes(), Expected::Date)
}

/// Parses an RFC 3339 date-time (`2025-11-14T09:30:00Z`, `2025-11-14T10:30:00.123+01:00`;
/// `t`, `z` and a space separator are accepted, as RFC 3339 allows) to Unix milliseconds,
/// or says why it is not one. Fractions beyond milliseconds are truncated; a leap second
/// (`:60`) counts as `:59.999`.
pub fn check_timestamp(text: &str) -> Result<i64, TimeError> {
    timestamp_of(text, Expected::Time)
}

/// A filter bound: an RFC 3339 time, or a `YYYY-MM-DD` date meaning the start of that day
/// in UTC, or its last millisecond when `end_of_day` (so `until 2025-11-14` includes the
/// whole day). Surrounding blanks are ignored.
pub fn check_bound(text: &str, end_of_day: bool) -> Result<i64, TimeError> {
    let text = text.trim();
    if text.len() == 10 {
        let days = date_of(text, text.as_bytes(), Expected::DateOrTime)?;
        let start = days * 86_400_000;
        return Ok(if end_of_day {
            start + 86_400_000 - 1
        } else {
            start
        });
    }
    timestamp_of(text, Expected::DateOrTime)
}

/// [`check_timestamp`], `None` for anything it refuses.
pub fn parse_timestamp_ms(text: &str) -> Option<i64> {
    check_timestamp(text).ok()
}

/// [`check_bound`], `None` for anything it refuses.
pub fn parse_bound_ms(text: &str, end_of_day: bool) -> Option<i64> {
    check_bound(text, end_of_day).ok()
}

/// [`check_date`], `None` for anything it refuses.
pub fn parse_date_days(text: &str) -> Option<i64> {
    check_date(text).ok()
}

/// True for an RFC 3339 date-time ([`check_timestamp`] reads it).
pub fn is_rfc3339(text: &str) -> bool {
    check_timestamp(text).is_ok()
}

/// Unix milliseconds to RFC 3339 in UTC with milliseconds (`2025-11-17T09:15:40.123Z`), the
/// inverse of [`check_timestamp`] for years 0000–9999; `None` outside them.
pub fn format_timestamp_ms(ms: i64) -> Option<String> {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        return None;
    }
    let secs = in_day / 1000;
    Some(format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60,
        in_day % 1000
    ))
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day) (H. Hinnant's
/// `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn timestamp_of(text: &str, expected: Expected) -> Result<i64, TimeError> {
    let b = text.as_bytes();
    let shape = || expected.error(text);
    if b.len() < 20 {
        return Err(shape());
    }
    if !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' || b[16] != b':' {
        return Err(shape());
    }
    let (hour, minute, mut second) = match (num(&b[11..13]), num(&b[14..16]), num(&b[17..19])) {
        (Some(h), Some(m), Some(s)) => (h, m, s),
        _ => return Err(shape()),
    };
    let mut rest = &b[19..];
    let mut millis = 0i64;
    if rest.first() == Some(&b'.') {
        let digits = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return Err(shape());
        }
        for i in 0..3 {
            millis = millis * 10
                + rest
                    .get(1 + i)
                    .filter(|_| i < digits)
                    .map_or(0, |d| i64::from(d - b'0'));
        }
        rest = &rest[1 + digits..];
    }
    let offset = match rest {
        [b'Z' | b'z'] => None,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            match (num(&[*h1, *h2]), num(&[*m1, *m2])) {
                (Some(h), Some(m)) => Some((*sign, h, m)),
                _ => return Err(shape()),
            }
        }
        _ => return Err(shape()),
    };
    // The shape is right: now the values, date first.
    let days = date_of(text, &b[..10], expected)?;
    let out_of_range = |what, value| TimeError::NoSuchTime {
        text: crate::redact::short(text),
        what,
        value,
    };
    if hour > 23 {
        return Err(out_of_range("hour", hour));
    }
    if minute > 59 {
        return Err(out_of_range("minute", minute));
    }
    if second > 60 {
        return Err(out_of_range("second", second));
    }
    if second == 60 {
        second = 59;
        millis = 999;
    }
    let offset_min = match offset {
        None => 0,
        Some((sign, h, m)) => {
            if h > 23 {
                return Err(out_of_range("offset hour", h));
            }
            if m > 59 {
                return Err(out_of_range("offset minute", m));
            }
            let off = h * 60 + m;
            if sign == b'-' {
                -off
            } else {
                off
            }
        }
    };
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_min * 60;
    Ok(secs * 1000 + millis)
}

/// `YYYY-MM-DD` (the bytes `b` of `text`) to days since 1970-01-01.
fn date_of(text: &str, b: &[u8], expected: Expected) -> Result<i64, TimeError> {
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return Err(expected.error(text));
    }
    let (y, m, d) = match (num(&b[0..4]), num(&b[5..7]), num(&b[8..10])) {
        (Some(y), Some(m), Some(d)) => (y, m, d),
        _ => return Err(expected.error(text)),
    };
    if !(1..=12).contains(&m) {
        return Err(TimeError::NoSuchMonth {
            text: crate::redact::short(text),
            month: m,
        });
    }
    let days = days_in_month(y, m);
    if d < 1 || d > days {
        return Err(TimeError::NoSuchDay {
            text: crate::redact::short(text),
            year: y,
            month: m,
            day: d,
            days,
        });
    }
    Ok(days_from_civil(y, m, d))
}

/// Fixed-width decimal digits.
fn num(b: &[u8]) -> Option<i64> {
    b.iter().try_fold(0i64, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
    })
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatted_instants_read_back() {
        for ms in [
            0,
            1_763_370_940_123,
            951_782_400_000,
            -1,
            253_402_300_799_999,
        ] {
            let text = format_timestamp_ms(ms).unwrap();
            assert_eq!(parse_timestamp_ms(&text), Some(ms), "{text}");
        }
        assert_eq!(
            format_timestamp_ms(1_763_370_940_123).unwrap(),
            "2025-11-17T09:15:40.123Z"
        );
        assert_eq!(format_timestamp_ms(253_402_300_800_000), None);
    }

    #[test]
    fn known_instants() {
        assert_eq!(parse_timestamp_ms("1970-01-01T00:00:00Z"), Some(0));
        // date -u -d 2025-11-14T09:30:00Z +%s
        assert_eq!(
            parse_timestamp_ms("2025-11-14T09:30:00Z"),
            Some(1_763_112_600_000)
        );
        assert_eq!(
            parse_timestamp_ms("2025-11-14T10:30:00.1234+01:00"),
            Some(1_763_112_600_123)
        );
        assert_eq!(
            parse_timestamp_ms("2025-11-14 04:30:00.5-05:00"),
            Some(1_763_112_600_500)
        );
        assert_eq!(
            parse_timestamp_ms("2024-02-29t00:00:00z"),
            Some(1_709_164_800_000)
        );
        assert_eq!(parse_timestamp_ms("1969-12-31T23:59:59Z"), Some(-1000));
        assert_eq!(
            parse_timestamp_ms("2016-12-31T23:59:60Z"),
            Some(1_483_228_799_999)
        );
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "",
            "2025-11-14",
            "2025-11-14T09:30:00",
            "2025-13-14T09:30:00Z",
            "2025-02-29T09:30:00Z",
            "2025-11-14T24:00:00Z",
            "2025-11-14T09:30:00.Z",
            "2025-11-14T09:30:00+0100",
            "2025-11-14T09:30:00Z ",
            "2025-11-14X09:30:00Z",
            "２025-11-14T09:30:00Z",
        ] {
            assert_eq!(parse_timestamp_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn date_bounds_cover_the_whole_day() {
        let start = parse_bound_ms("2025-11-14", false);
        let end = parse_bound_ms("2025-11-14", true);
        assert_eq!(start, Some(1_763_078_400_000));
        assert_eq!(end, Some(1_763_078_400_000 + 86_400_000 - 1));
        assert_eq!(
            parse_bound_ms("2025-11-14T09:30:00Z", true),
            Some(1_763_112_600_000)
        );
        assert_eq!(parse_bound_ms("yesterday", false), None);
    }

    /// `exam --as-of 2025-02-30`, `2025-13-01` and `9999-99-99` were accepted: the exam's
    /// flag checked the shape only. Every date goes through `check_date`, which knows the
    /// calendar and says what is wrong.
    #[test]
    fn impossible_dates_are_refused_with_the_reason() {
        let no_day = |t: &str, year, month, day, days| TimeError::NoSuchDay {
            text: t.into(),
            year,
            month,
            day,
            days,
        };
        assert_eq!(
            check_date("2025-02-30"),
            Err(no_day("2025-02-30", 2025, 2, 30, 28))
        );
        assert_eq!(
            check_date("2025-02-29"),
            Err(no_day("2025-02-29", 2025, 2, 29, 28))
        );
        assert_eq!(
            check_date("1900-02-29"),
            Err(no_day("1900-02-29", 1900, 2, 29, 28))
        );
        assert_eq!(
            check_date("2025-04-31"),
            Err(no_day("2025-04-31", 2025, 4, 31, 30))
        );
        assert_eq!(
            check_date("2025-01-00"),
            Err(no_day("2025-01-00", 2025, 1, 0, 31))
        );
        assert_eq!(
            check_date("2025-13-01"),
            Err(TimeError::NoSuchMonth {
                text: "2025-13-01".into(),
                month: 13
            })
        );
        assert_eq!(
            check_date("9999-99-99").unwrap_err().to_string(),
            "\"9999-99-99\" is not a calendar date: there is no month 99 (months are 01 to 12)"
        );
        assert_eq!(
            check_date("2025-02-30").unwrap_err().to_string(),
            "\"2025-02-30\" is not a calendar date: 2025-02 has 28 days, there is no day 30"
        );
        for shape in [
            "2025-1-01",
            "2025/01/01",
            "20250101",
            "",
            "2025-01-01 ",
            "tomorrow",
        ] {
            assert_eq!(
                check_date(shape),
                Err(TimeError::NotADate(shape.into())),
                "{shape:?}"
            );
        }
        // Leap years: every fourth, except centuries not divisible by 400.
        for leap in ["2024-02-29", "2000-02-29", "1600-02-29", "0000-02-29"] {
            assert!(check_date(leap).is_ok(), "{leap}");
        }
        assert_eq!(check_date("9999-12-31"), Ok(2_932_896));
        assert_eq!(check_date("1970-01-01"), Ok(0));
        // The same calendar inside times and bounds.
        assert!(matches!(
            check_timestamp("2025-02-30T00:00:00Z"),
            Err(TimeError::NoSuchDay { day: 30, .. })
        ));
        assert!(matches!(
            check_bound("2025-13-01", false),
            Err(TimeError::NoSuchMonth { month: 13, .. })
        ));
        assert_eq!(
            check_timestamp("2025-11-14T24:00:00Z")
                .unwrap_err()
                .to_string(),
            "\"2025-11-14T24:00:00Z\" is not a time: there is no hour 24"
        );
        assert!(matches!(
            check_bound("yesterday", true),
            Err(TimeError::NotADateOrTime(_))
        ));
    }

    #[test]
    fn a_huge_value_is_quoted_cut() {
        let huge = "x".repeat(600_000);
        let e = check_date(&huge).unwrap_err().to_string();
        assert!(e.len() < 400, "{} bytes", e.len());
        assert!(e.contains("(600000 characters)"), "{e}");
        let e = check_timestamp(&format!("2025-13-01T00:00:00Z{huge}"))
            .unwrap_err()
            .to_string();
        assert!(e.len() < 400, "{} bytes", e.len());
    }
}
