//! Keeping secrets and hostile bytes out of what veredicto stores and prints.
//!
//! Pure string functions, shared by every crate that stores or prints something that came
//! from a user or a server:
//! - [`url`]: a URL or retriever URI without credentials (userinfo, secret query parameters),
//!   for the history, sheets, packages and messages;
//! - [`secrets_in_text`]: an error body from a server with bearer tokens, `Authorization`
//!   headers and `api_key`-like values replaced by `[redacted]`;
//! - [`excerpt`]: a value cut to a length fit for a one-line error, saying how long it was;
//! - [`escape_control`]: control characters (ESC, BEL, CR…) shown as `\u{1b}` escapes so that
//!   data cannot drive the terminal.

/// What replaces a removed secret.
pub const REDACTED: &str = "[redacted]";

/// How many characters of a value [`excerpt`] keeps by default.
pub const EXCERPT_CHARS: usize = 200;

/// Query-string parameter names whose values are secrets (compared case-insensitively,
/// ignoring `-` and `_`): anything whose normalised name contains one of these words.
const SECRET_PARAM_WORDS: &[&str] = &[
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "pwd",
    "auth",
    "signature",
    "sig",
    "credential",
    "session",
];

fn is_secret_param(name: &str) -> bool {
    let norm: String = name
        .chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    // Counts and people, not secrets: `max_tokens`, `prompt_tokens`, `author`.
    if norm.ends_with("tokens") || (norm.contains("author") && !norm.contains("authoriz")) {
        return false;
    }
    SECRET_PARAM_WORDS.iter().any(|w| {
        if *w == "sig" {
            norm == "sig"
        } else {
            norm.contains(w)
        }
    })
}

/// A URL (or a veredicto retriever URI such as `postgres://…`, `qdrant+http://…`) with its
/// credentials removed: the userinfo (`user:pass@`) goes entirely, and the value of every
/// query parameter whose name looks like a secret (`key`, `api_key`, `token`, `password`,
/// `sig`, …) becomes `[redacted]`. Other parameters (`table=`, `field=`) are kept, so that
/// the stored URI still says what was examined. A fragment is dropped. Text that is not a
/// URL is returned as is.
pub fn url(raw: &str) -> String {
    let Some(scheme_end) = raw.find("://") else {
        // `cmd:PROGRAM ARGS` or a bare path: nothing URL-shaped to strip.
        return raw.to_owned();
    };
    let (scheme, rest) = (&raw[..scheme_end], &raw[scheme_end + 3..]);
    let rest = rest.split('#').next().unwrap_or("");
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    // The last `@` ends the userinfo (a password may itself contain `@`).
    let host = match authority.rfind('@') {
        Some(at) => &authority[at + 1..],
        None => authority,
    };
    let (path, query) = match tail.find('?') {
        Some(q) => (&tail[..q], Some(&tail[q + 1..])),
        None => (tail, None),
    };
    let mut out = format!("{scheme}://{host}{path}");
    if let Some(query) = query {
        let params: Vec<String> = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let name = p.split('=').next().unwrap_or(p);
                if is_secret_param(name) {
                    format!("{name}={REDACTED}")
                } else {
                    p.to_owned()
                }
            })
            .collect();
        if !params.is_empty() {
            out.push('?');
            out.push_str(&params.join("&"));
        }
    }
    out
}

/// What replaces a credential in [`url_masked`].
pub const MASK: &str = "***";

/// True when `raw` carries a credential: a password in its userinfo (`user:pass@`), any
/// userinfo of a scheme other than PostgreSQL's (an HTTP server takes a token there:
/// `https://TOKEN@host/`), or a query parameter whose name looks like a secret. A PostgreSQL
/// user name alone (`postgres://ci@db/veredicto`) is not a credential.
pub fn url_has_credentials(raw: &str) -> bool {
    masked(raw).1
}

/// `raw` with each credential (as [`url_has_credentials`] finds them) replaced by `***` in
/// place, everything else kept: `postgres://ana:***@db/rag`, `https://***@host/v1`,
/// `http://host/q?api_key=***&model=m`. For messages that must show which part of what the
/// user typed is the secret; the history stores [`url`] instead.
pub fn url_masked(raw: &str) -> String {
    masked(raw).0
}

fn masked(raw: &str) -> (String, bool) {
    let Some(scheme_end) = raw.find("://") else {
        return (raw.to_owned(), false);
    };
    let (scheme, rest) = (&raw[..scheme_end], &raw[scheme_end + 3..]);
    let postgres = ["postgres", "postgresql"]
        .iter()
        .any(|s| scheme.eq_ignore_ascii_case(s));
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let mut found = false;
    let mut out = format!("{scheme}://");
    // The last `@` ends the userinfo (a password may itself contain `@`).
    match authority.rfind('@') {
        Some(at) => {
            let userinfo = &authority[..at];
            match userinfo.split_once(':') {
                Some((user, _)) => {
                    out.push_str(&format!("{user}:{MASK}"));
                    found = true;
                }
                None if postgres => out.push_str(userinfo),
                None => {
                    out.push_str(MASK);
                    found = true;
                }
            }
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    let (before_fragment, fragment) = match tail.find('#') {
        Some(h) => tail.split_at(h),
        None => (tail, ""),
    };
    match before_fragment.split_once('?') {
        Some((path, query)) => {
            out.push_str(path);
            out.push('?');
            let params: Vec<String> = query
                .split('&')
                .map(|p| {
                    let name = p.split('=').next().unwrap_or(p);
                    if is_secret_param(name) {
                        found = true;
                        format!("{name}={MASK}")
                    } else {
                        p.to_owned()
                    }
                })
                .collect();
            out.push_str(&params.join("&"));
        }
        None => out.push_str(before_fragment),
    }
    out.push_str(fragment);
    (out, found)
}

/// Replaces secrets that a server may echo in an error body: `Bearer <token>`,
/// `Authorization: <value>` header lines (and `"authorization": "…"` JSON members),
/// `api_key`/`token`/`password`-like `name=value` and `"name": "value"` pairs, and URLs with
/// credentials. The rest of the text is kept.
pub fn secrets_in_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        // `Bearer TOKEN` / `Basic TOKEN` (case-insensitive), token = the next run of non-space,
        // non-quote characters.
        if let Some(skip) = starts_with_word(&chars, i, &["bearer ", "basic "]) {
            out.extend(&chars[i..i + skip]);
            i += skip;
            let start = i;
            while i < chars.len() && !chars[i].is_whitespace() && !matches!(chars[i], '"' | '\'') {
                i += 1;
            }
            if i > start {
                out.push_str(REDACTED);
            }
            continue;
        }
        // `name=value` / `name: value` / `"name": "value"` where name looks like a secret.
        if chars[i].is_alphanumeric() && (i == 0 || !is_name_char(chars[i - 1])) {
            let start = i;
            let mut j = i;
            while j < chars.len() && is_name_char(chars[j]) {
                j += 1;
            }
            let name: String = chars[start..j].iter().collect();
            let secret = is_secret_param(&name) || name.eq_ignore_ascii_case("authorization");
            // Separator: optional closing quote, spaces, `=` or `:`, spaces, optional quote.
            let mut k = j;
            if k < chars.len() && matches!(chars[k], '"' | '\'') {
                k += 1;
            }
            while k < chars.len() && chars[k] == ' ' {
                k += 1;
            }
            if secret && k < chars.len() && matches!(chars[k], '=' | ':') {
                k += 1;
                while k < chars.len() && chars[k] == ' ' {
                    k += 1;
                }
                let quote = if k < chars.len() && matches!(chars[k], '"' | '\'') {
                    k += 1;
                    Some(chars[k - 1])
                } else {
                    None
                };
                let value_start = k;
                while k < chars.len() {
                    let c = chars[k];
                    let end = match quote {
                        Some(q) => c == q,
                        // An `Authorization:` header value runs to the end of the line.
                        None if name.eq_ignore_ascii_case("authorization") => c == '\n',
                        None => c.is_whitespace() || matches!(c, '&' | ',' | ';' | '}' | ')'),
                    };
                    if end {
                        break;
                    }
                    k += 1;
                }
                if k > value_start {
                    out.extend(&chars[start..value_start]);
                    out.push_str(REDACTED);
                    i = k;
                    continue;
                }
            }
            out.extend(&chars[start..j]);
            i = j;
            continue;
        }
        // URLs with userinfo.
        if chars[i..].starts_with(&[':', '/', '/']) {
            // Walk back over the scheme already copied, then strip userinfo ahead.
            let mut k = i + 3;
            let start_auth = k;
            while k < chars.len() && !chars[k].is_whitespace() && !matches!(chars[k], '/' | '"') {
                k += 1;
            }
            let authority: String = chars[start_auth..k].iter().collect();
            out.push_str("://");
            match authority.rfind('@') {
                Some(at) => out.push_str(&authority[at + 1..]),
                None => out.push_str(&authority),
            }
            i = k;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

fn starts_with_word(chars: &[char], i: usize, words: &[&str]) -> Option<usize> {
    if i > 0 && is_name_char(chars[i - 1]) {
        return None;
    }
    words.iter().find_map(|w| {
        let n = w.chars().count();
        (chars.len() >= i + n
            && chars[i..i + n]
                .iter()
                .zip(w.chars())
                .all(|(a, b)| a.to_ascii_lowercase() == b))
        .then_some(n)
    })
}

/// `value` cut to at most `max_chars` characters for a one-line message: when cut, it ends
/// with `… (N characters)` so that the reader knows how long the original was. Control
/// characters are escaped ([`escape_control`]).
pub fn excerpt(value: &str, max_chars: usize) -> String {
    let total = value.chars().count();
    if total <= max_chars {
        return escape_control(value);
    }
    let head: String = value.chars().take(max_chars).collect();
    format!("{}… ({total} characters)", escape_control(&head))
}

/// [`excerpt`] with the default length ([`EXCERPT_CHARS`]).
pub fn short(value: &str) -> String {
    excerpt(value, EXCERPT_CHARS)
}

/// How long a whole message may be before [`message`] cuts its middle: room for a list of
/// choices (the known measures), far below a quoted multi-megabyte value.
pub const MESSAGE_CHARS: usize = 2000;

/// A message (an error from a parser, which may quote an offending value whole) made fit for
/// one line: control characters escaped and, when longer than [`MESSAGE_CHARS`], its middle
/// replaced by `… (N characters cut) …` so that both the start (what went wrong) and the end
/// (where: `at line L column C`) stay.
pub fn message(text: &str) -> String {
    let total = text.chars().count();
    if total <= MESSAGE_CHARS {
        return escape_control(text);
    }
    let head: String = text.chars().take(EXCERPT_CHARS).collect();
    let tail: String = text.chars().skip(total - EXCERPT_CHARS / 2).collect();
    let cut = total - EXCERPT_CHARS - EXCERPT_CHARS / 2;
    format!(
        "{}… ({cut} characters cut) …{}",
        escape_control(&head),
        escape_control(&tail)
    )
}

/// Control characters (C0 except tab, DEL, C1) replaced by `\u{…}` escapes; newlines become
/// `\n` so that a value stays on one line. Everything else, including non-ASCII letters,
/// is kept.
pub fn escape_control(value: &str) -> String {
    if !value.chars().any(needs_escape) {
        return value.to_owned();
    }
    let mut out = String::with_capacity(value.len() + 8);
    for c in value.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// [`escape_control`] on each line of `text`, keeping its line breaks: for a whole rendered
/// report whose only intended control character is the newline.
pub fn escape_lines(text: &str) -> String {
    if !text.chars().any(|c| c != '\n' && needs_escape(c)) {
        return text.to_owned();
    }
    text.split('\n')
        .map(escape_control)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Text from data made inert in Markdown (a pull-request comment, a table cell): HTML is
/// escaped (`<img src=…>` shows as text, loads nothing), Markdown punctuation that could make
/// links, images, emphasis or code is backslash-escaped, `|` cannot end a table cell, and a
/// newline becomes a space so that the text stays in its cell or list item. Control
/// characters are escaped ([`escape_control`]).
pub fn markdown_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in escape_control(&text.replace(['\n', '\r'], " ")).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '!' | '|' | '~' | '#' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Text from data as a Markdown code span, backticks included: the fence is one backtick
/// longer than the longest run of backticks inside, `|` is escaped for table cells and
/// newlines become spaces. Inside a code span nothing else is interpreted (no HTML, links).
pub fn markdown_code(text: &str) -> String {
    let body = escape_control(&text.replace(['\n', '\r'], " ")).replace('|', "\\|");
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    if longest == 0 {
        format!("{fence}{body}{fence}")
    } else {
        format!("{fence} {body} {fence}")
    }
}

fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\t')
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_and_secret_parameters_go() {
        assert_eq!(
            url("postgres://alice:s3cr%40t@db.example:5432/rag?table=chunks&id=id&password=x"),
            "postgres://db.example:5432/rag?table=chunks&id=id&password=[redacted]"
        );
        assert_eq!(
            url("https://u:p@host/v1?api_key=abc&model=m#frag"),
            "https://host/v1?api_key=[redacted]&model=m"
        );
        assert_eq!(url("http://host:9200/idx"), "http://host:9200/idx");
        assert_eq!(url("cmd:python3 search.py"), "cmd:python3 search.py");
        assert_eq!(
            url("qdrant+http://h:6333/c?X-Api-Key=1&sig=2&design=3"),
            "qdrant+http://h:6333/c?X-Api-Key=[redacted]&sig=[redacted]&design=3"
        );
        assert!(url_has_credentials("http://a:b@h/"));
        assert!(url_has_credentials("http://h/?token=1"));
        assert!(!url_has_credentials("http://h/?table=t"));
    }

    /// Regression: `init --retriever postgres://user@host/db` was refused as carrying
    /// credentials, and the message removed the user instead of showing what was wrong.
    #[test]
    fn a_user_name_is_not_a_credential_and_secrets_are_masked_in_place() {
        assert!(!url_has_credentials("postgres://ci@db.example/veredicto"));
        assert!(!url_has_credentials(
            "postgresql://reader@127.0.0.1:5432/rag?table=chunks&id=id"
        ));
        assert_eq!(
            url_masked("postgres://ci@db.example/veredicto"),
            "postgres://ci@db.example/veredicto"
        );
        assert!(url_has_credentials("postgres://user:pw@host/db"));
        assert_eq!(
            url_masked("postgres://user:s3cr%40t@host:5432/db?table=t"),
            "postgres://user:***@host:5432/db?table=t"
        );
        // An HTTP server takes a token as the user name.
        assert!(url_has_credentials("https://ghp_abc@host/v1"));
        assert_eq!(
            url_masked("https://ghp_abc@host/v1?api_key=k&model=m#f"),
            "https://***@host/v1?api_key=***&model=m#f"
        );
        assert_eq!(url_masked("cmd:python3 s.py"), "cmd:python3 s.py");
        assert_eq!(url_masked("http://h:9/s"), "http://h:9/s");
    }

    #[test]
    fn echoed_secrets_are_redacted() {
        let body = "{\"error\":\"bad\",\"headers\":{\"authorization\":\"Bearer sk-123\"},\"api_key\": \"sk-456\"}\nAuthorization: Bearer sk-789 more\nkey=abc&q=1 see http://u:p@h/x";
        let r = secrets_in_text(body);
        for s in ["sk-123", "sk-456", "sk-789", "abc", "u:p@"] {
            assert!(!r.contains(s), "{s} survived in {r}");
        }
        assert!(r.contains("\"error\":\"bad\""));
        assert!(r.contains("q=1"));
        assert!(r.contains("http://h/x"));
        assert_eq!(secrets_in_text("monkey business"), "monkey business");
        // Counts of tokens and authors are kept; an access token is not.
        assert_eq!(
            secrets_in_text(
                "{\"max_tokens\": 512, \"author\": \"ana\", \"access_token\": \"t0k\"}"
            ),
            "{\"max_tokens\": 512, \"author\": \"ana\", \"access_token\": \"[redacted]\"}"
        );
    }

    #[test]
    fn excerpts_say_how_long_and_escape() {
        let long = "a".repeat(10_000);
        let e = short(&long);
        assert!(e.ends_with("… (10000 characters)"));
        assert_eq!(
            e.chars().count(),
            200 + "… (10000 characters)".chars().count()
        );
        assert_eq!(short("año"), "año");
        assert_eq!(escape_control("a\u{1b}[31mb\nc\td"), "a\\u{1b}[31mb\\nc\td");
    }

    #[test]
    fn markdown_from_data_is_inert() {
        assert_eq!(
            markdown_text("<img src=x onerror=alert(1)> [a](javascript:b) **c** | d\ne"),
            "&lt;img src=x onerror=alert\\(1\\)&gt; \\[a\\]\\(javascript:b\\) \\*\\*c\\*\\* \\| d e"
        );
        assert_eq!(markdown_code("case_1"), "`case_1`");
        assert_eq!(markdown_code("a`b|c"), "`` a`b\\|c ``");
        assert_eq!(escape_lines("a\u{1b}b\nc"), "a\\u{1b}b\nc");
    }

    #[test]
    fn long_messages_keep_their_start_and_end() {
        let msg = format!(
            "invalid type: string \"{}\", expected u32 at line 3 column 9",
            "x".repeat(10_000_000)
        );
        let m = message(&msg);
        assert!(m.len() < 400, "{}", m.len());
        assert!(m.starts_with("invalid type: string \"xx"));
        assert!(m.ends_with("expected u32 at line 3 column 9"));
        assert!(m.contains("characters cut"));
        assert_eq!(message("short \u{1b}[2J"), "short \\u{1b}[2J");
    }
}
