//! Escaping and the small text formats of the HTML report (the shared number formats are in
//! `crate::fmt`).

use crate::fmt;

/// HTML-escapes `s` for text content and double- or single-quoted attribute values:
/// `&`, `<`, `>`, `"` and `'` become character references.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A `sha256:…` fingerprint shortened to its first 12 hex digits, with the full value in a
/// tooltip: `<code title="sha256:…">sha256:1a2b3c4d5e6f</code>`.
pub fn fingerprint(fp: &str) -> String {
    let short = match fp.split_once(':') {
        Some((algo, hex)) => format!("{algo}:{}", prefix(hex, 12)),
        None => prefix(fp, 12).to_owned(),
    };
    format!(
        "<code class=\"fp\" title=\"{}\">{}</code>",
        escape(fp),
        escape(&short)
    )
}

/// The first `n` characters of `s`.
pub fn prefix(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// `s` cut to `n` characters, with `…` when cut.
pub fn truncate(s: &str, n: usize) -> String {
    let p = prefix(s, n);
    if p.len() < s.len() {
        format!("{p}…")
    } else {
        p.to_owned()
    }
}

/// A signed difference with three decimals: `+0.083`, `−0.083`, `0.000`.
pub fn signed_f3(d: f64) -> String {
    signed(d, 3, "")
}

/// A signed difference of fractions in percentage points: `+8.3 pp`.
pub fn signed_pp(d: f64) -> String {
    signed(d * 100.0, 1, " pp")
}

/// A signed Quality Score difference (0..100 scale), one decimal, `.0` dropped: `+50`.
pub fn signed_qs(d: f64) -> String {
    let s = signed(d, 1, "");
    s.strip_suffix(".0").map(str::to_owned).unwrap_or(s)
}

fn signed(d: f64, decimals: usize, unit: &str) -> String {
    let body = format!("{:.*}", decimals, d.abs());
    let zero = body.chars().all(|c| c == '0' || c == '.');
    if zero {
        format!("{body}{unit}")
    } else if d > 0.0 {
        format!("+{body}{unit}")
    } else {
        format!("\u{2212}{body}{unit}")
    }
}

/// A p-value: four decimals, `< 0.0001` below that.
pub fn p_value(p: f64) -> String {
    if p < 0.0001 {
        "&lt; 0.0001".to_owned()
    } else {
        format!("{p:.4}")
    }
}

/// A retrieval score as recorded (four decimals at most, trailing zeros dropped).
pub fn score(s: f64) -> String {
    let t = format!("{s:.4}");
    let t = t.trim_end_matches('0');
    t.strip_suffix('.').unwrap_or(t).to_owned()
}

/// A value used as a sort key in `data-v` attributes (finite; plain decimal).
pub fn key(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "0".to_owned()
    }
}

/// `1 case` / `3 cases`.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

/// IDs as `<code>` items joined by commas, at most `max` shown (`… and 3 more`).
pub fn id_list(ids: &[&str], max: usize) -> String {
    let mut parts: Vec<String> = ids
        .iter()
        .take(max)
        .map(|id| format!("<code>{}</code>", escape(id)))
        .collect();
    if ids.len() > max {
        parts.push(format!("… and {} more", ids.len() - max));
    }
    parts.join(", ")
}

/// A fraction as a percentage (shared format).
pub fn pct(v: f64) -> String {
    fmt::pct(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape(r#"<b>"Días" & 'más'</b>"#),
            "&lt;b&gt;&quot;Días&quot; &amp; &#39;más&#39;&lt;/b&gt;"
        );
        assert_eq!(escape("¿Cómo se calcula?"), "¿Cómo se calcula?");
    }

    #[test]
    fn signed_numbers() {
        assert_eq!(signed_f3(0.0833), "+0.083");
        assert_eq!(signed_f3(-0.0833), "\u{2212}0.083");
        assert_eq!(signed_f3(-0.0001), "0.000");
        assert_eq!(signed_pp(-0.0694), "\u{2212}6.9 pp");
        assert_eq!(signed_qs(-16.6667), "\u{2212}16.7");
        assert_eq!(signed_qs(50.0), "+50");
    }

    #[test]
    fn shortens_fingerprints_and_text() {
        assert_eq!(
            fingerprint("sha256:0123456789abcdef0123"),
            "<code class=\"fp\" title=\"sha256:0123456789abcdef0123\">sha256:0123456789ab</code>"
        );
        assert_eq!(truncate("añadido", 3), "aña…");
        assert_eq!(truncate("año", 3), "año");
        assert_eq!(score(0.8431), "0.8431");
        assert_eq!(score(0.5), "0.5");
        assert_eq!(p_value(0.00001), "&lt; 0.0001");
    }
}
