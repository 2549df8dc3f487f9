//! RFC 3339 times and calendar dates to Unix milliseconds, without a date library: the
//! history stores the caller's `created_at` string verbatim and, beside it, its instant in
//! UTC milliseconds for ordering and date filters; `ingest --time` and `valid_at` filters
//! are checked with the same rules.

/// Parses an RFC 3339 date-time (`2025-11-14T09:30:00Z`, `2025-11-14T10:30:00.123+01:00`;
/// `t`, `z` and a space separator are accepted, as RFC 3339 allows) to Unix milliseconds.
/// Fractions beyond milliseconds are truncated; a leap second (`:60`) counts as `:59.999`.
pub fn parse_timestamp_ms(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let days = parse_date(&b[..10])?;
    if !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let hour = num(&b[11..13])?;
    let minute = num(&b[14..16])?;
    let mut second = num(&b[17..19])?;
    if b[13] != b':' || b[16] != b':' || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &b[19..];
    let mut millis = 0i64;
    if rest.first() == Some(&b'.') {
        let digits = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
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
    if second == 60 {
        second = 59;
        millis = 999;
    }
    let offset_min = match rest {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let h = num(&[*h1, *h2])?;
            let m = num(&[*m1, *m2])?;
            if h > 23 || m > 59 {
                return None;
            }
            let off = h * 60 + m;
            if *sign == b'-' {
                -off
            } else {
                off
            }
        }
        _ => return None,
    };
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_min * 60;
    Some(secs * 1000 + millis)
}

/// A filter bound: an RFC 3339 time, or a `YYYY-MM-DD` date meaning the start of that day
/// in UTC, or its last millisecond when `end_of_day` (so `until 2025-11-14` includes the
/// whole day).
pub fn parse_bound_ms(text: &str, end_of_day: bool) -> Option<i64> {
    let text = text.trim();
    if text.len() == 10 {
        let days = parse_date(text.as_bytes())?;
        let start = days * 86_400_000;
        return Some(if end_of_day {
            start + 86_400_000 - 1
        } else {
            start
        });
    }
    parse_timestamp_ms(text)
}

/// A calendar date `YYYY-MM-DD` (month 1–12, a day that exists in that month) to days
/// since 1970-01-01; `None` for anything else (`2025-99-99`, `2025-02-29`, `2025-1-1`).
pub fn parse_date_days(text: &str) -> Option<i64> {
    parse_date(text.as_bytes())
}

/// True for an RFC 3339 date-time ([`parse_timestamp_ms`] reads it).
pub fn is_rfc3339(text: &str) -> bool {
    parse_timestamp_ms(text).is_some()
}

/// `YYYY-MM-DD` to days since 1970-01-01.
fn parse_date(b: &[u8]) -> Option<i64> {
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let y = num(&b[0..4])?;
    let m = num(&b[5..7])?;
    let d = num(&b[8..10])?;
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return None;
    }
    Some(days_from_civil(y, m, d))
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
}
