//! The seeded mutator: byte-level and line-level damage plus a few structure-aware moves
//! (generated JSON lines, deep nesting, huge and non-finite numbers).

use crate::rng::Rng;

/// Inputs never grow beyond this (the harness's contract covers inputs up to 1 MB).
pub const MAX_LEN: usize = 1 << 20;

/// Byte values that often sit on a parser's edges.
const INTERESTING: &[u8] = &[
    0, 1, 0x7f, 0x80, 0xff, b'\n', b'\r', b'\t', b' ', b'"', b'\'', b'\\', b'{', b'}', b'[', b']',
    b':', b',', b'-', b'#', b'=', b'.', b'0', b'9', b'e', b'/',
];

/// Tokens spliced into text: non-finite and extreme numbers, invalid UTF-8, control
/// characters, escapes, YAML/TOML/JSON syntax.
const TOKENS: &[&[u8]] = &[
    b"NaN",
    b"nan",
    b"-inf",
    b"inf",
    b"Infinity",
    b"-Infinity",
    b".nan",
    b".inf",
    b"1e309",
    b"-1e309",
    b"1e-400",
    b"-0",
    b"-0.0",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"4294967296",
    b"99999999999999999999999999999999999999",
    b"0x10",
    b"1_000",
    b"\xff",
    b"\xc3\x28",
    b"\xed\xa0\x80",
    b"\xc0\xaf",
    b"\xf4\x90\x80\x80",
    b"\xef\xbb\xbf",
    b"\x1b[31m",
    b"\x1b]0;title\x07",
    b"\0",
    b"\r",
    b"\x7f",
    b"\xe2\x80\xa8",
    b"\\u0000",
    b"\\ud800",
    b"\\udc00\\ud800",
    b"\\",
    b"\"",
    b"null",
    b"true",
    b"[]",
    b"{}",
    b"\"\"",
    b" ",
    b"\t",
    b"\n",
    b"\r\n",
    b"- ",
    b": ",
    b"&a ",
    b"*a",
    b"!!binary ",
    b"<<: ",
    b"? ",
    b"|",
    b">-",
    b"---\n",
    b"...\n",
    b"[[x]]\n",
    b"[a.b]\n",
    b"key = ",
    b"\"\"\"",
    b"'''",
    b"1979-05-27T07:32:00Z",
    b"2025-99-99",
    b"../../etc/passwd",
    b"/dev/zero",
    b"<img src=x onerror=alert(1)>",
    b"http://user:pass@host/?key=secret",
];

/// One structure-unaware or structure-aware change; the mutator stacks one to eight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    FlipBit,
    SetByte,
    InsertBytes,
    DeleteRange,
    Splice,
    DuplicateRange,
    DuplicateLine,
    DeleteLine,
    SwapLines,
    Truncate,
    HugeValue,
    DeepNesting,
    Token,
    Dictionary,
    Number,
    GeneratedLine,
}

const OPS: &[Op] = &[
    Op::FlipBit,
    Op::SetByte,
    Op::InsertBytes,
    Op::DeleteRange,
    Op::Splice,
    Op::DuplicateRange,
    Op::DuplicateLine,
    Op::DeleteLine,
    Op::SwapLines,
    Op::Truncate,
    Op::HugeValue,
    Op::DeepNesting,
    Op::Token,
    Op::Token,
    Op::Dictionary,
    Op::Dictionary,
    Op::Number,
    Op::Number,
    Op::GeneratedLine,
];

/// What the mutator knows about a target's input.
pub struct Grammar<'a> {
    /// Field names, keywords and values the parser treats specially.
    pub dictionary: &'a [&'a str],
    /// The input is JSON Lines (enables generated object lines).
    pub jsonl: bool,
}

/// Mutates `input` in place with one to eight stacked changes; `others` supplies splices.
pub fn mutate(rng: &mut Rng, input: &mut Vec<u8>, others: &[&[u8]], grammar: &Grammar<'_>) {
    let n = 1 + rng.below(4) + if rng.one_in(3) { rng.below(5) } else { 0 };
    for _ in 0..n {
        let op = *rng.pick(OPS);
        apply(rng, op, input, others, grammar);
        if input.len() > MAX_LEN {
            input.truncate(MAX_LEN);
        }
    }
}

fn pos(rng: &mut Rng, len: usize) -> usize {
    rng.below(len + 1)
}

/// A range inside `len` of at most `max` bytes, biased to short ones.
fn range(rng: &mut Rng, len: usize, max: usize) -> (usize, usize) {
    if len == 0 {
        return (0, 0);
    }
    let start = rng.below(len);
    let cap = (len - start).min(max).max(1);
    let span = if rng.one_in(4) {
        rng.range(1, cap)
    } else {
        rng.range(1, cap.min(16))
    };
    (start, start + span)
}

fn line_spans(input: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (i, &b) in input.iter().enumerate() {
        if b == b'\n' {
            spans.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < input.len() {
        spans.push((start, input.len()));
    }
    spans
}

fn apply(rng: &mut Rng, op: Op, input: &mut Vec<u8>, others: &[&[u8]], grammar: &Grammar<'_>) {
    let len = input.len();
    match op {
        Op::FlipBit => {
            if len > 0 {
                let i = rng.below(len);
                input[i] ^= 1 << rng.below(8);
            }
        }
        Op::SetByte => {
            if len > 0 {
                let i = rng.below(len);
                input[i] = if rng.one_in(2) {
                    *rng.pick(INTERESTING)
                } else {
                    rng.byte()
                };
            }
        }
        Op::InsertBytes => {
            let at = pos(rng, len);
            let n = rng.range(1, 8);
            let bytes: Vec<u8> = (0..n).map(|_| rng.byte()).collect();
            input.splice(at..at, bytes);
        }
        Op::DeleteRange => {
            let (a, b) = range(rng, len, len);
            input.drain(a..b);
        }
        Op::Splice => {
            if others.is_empty() {
                return;
            }
            let other = *rng.pick(others);
            let (a, b) = range(rng, other.len(), 4096);
            let piece = other[a..b].to_vec();
            let at = pos(rng, len);
            if rng.one_in(2) {
                input.splice(at..at, piece);
            } else {
                let end = (at + piece.len()).min(len);
                input.splice(at..end, piece);
            }
        }
        Op::DuplicateRange => {
            let (a, b) = range(rng, len, 256);
            let piece = input[a..b].to_vec();
            let times = if rng.one_in(8) { rng.range(2, 2000) } else { 1 };
            let at = pos(rng, len);
            let mut rep = Vec::with_capacity(piece.len() * times);
            for _ in 0..times {
                if rep.len() + piece.len() > MAX_LEN {
                    break;
                }
                rep.extend_from_slice(&piece);
            }
            input.splice(at..at, rep);
        }
        Op::DuplicateLine => {
            let spans = line_spans(input);
            if spans.is_empty() {
                return;
            }
            let (a, b) = *rng.pick(&spans);
            let mut line = input[a..b].to_vec();
            if line.last() != Some(&b'\n') {
                line.insert(0, b'\n');
            }
            let times = if rng.one_in(10) { rng.range(2, 500) } else { 1 };
            let mut rep = Vec::new();
            for _ in 0..times {
                if input.len() + rep.len() + line.len() > MAX_LEN {
                    break;
                }
                rep.extend_from_slice(&line);
            }
            let at = if rng.one_in(2) { b } else { a };
            input.splice(at..at, rep);
        }
        Op::DeleteLine => {
            let spans = line_spans(input);
            if !spans.is_empty() {
                let (a, b) = *rng.pick(&spans);
                input.drain(a..b);
            }
        }
        Op::SwapLines => {
            let spans = line_spans(input);
            if spans.len() >= 2 {
                let i = rng.below(spans.len());
                let j = rng.below(spans.len());
                let (i, j) = (i.min(j), i.max(j));
                if i != j {
                    let (a0, a1) = spans[i];
                    let (b0, b1) = spans[j];
                    let mut out = input[..a0].to_vec();
                    out.extend_from_slice(&input[b0..b1]);
                    out.extend_from_slice(&input[a1..b0]);
                    out.extend_from_slice(&input[a0..a1]);
                    out.extend_from_slice(&input[b1..]);
                    *input = out;
                }
            }
        }
        Op::Truncate => {
            let at = pos(rng, len);
            input.truncate(at);
        }
        Op::HugeValue => {
            // A long scalar: a repeated character, possibly inside quotes.
            let size = *rng.pick(&[300, 5_000, 70_000, 300_000]);
            let size = size.min(MAX_LEN.saturating_sub(len));
            let fill = *rng.pick(b"a9 \\\xff\x1b\"");
            let mut piece = vec![fill; size];
            if rng.one_in(2) && size >= 2 {
                piece[0] = b'"';
                piece[size - 1] = b'"';
            }
            let at = pos(rng, len);
            if rng.one_in(2) {
                input.splice(at..at, piece);
            } else {
                // Replace the value after a `:` or `=` if there is one.
                let sep = input[at..]
                    .iter()
                    .position(|&b| b == b':' || b == b'=')
                    .map(|p| at + p + 1);
                let at = sep.unwrap_or(at);
                input.splice(at..at, piece);
            }
        }
        Op::DeepNesting => {
            let depth = *rng.pick(&[64, 127, 128, 129, 200, 1_000, 10_000, 100_000]);
            let (open, close): (&[u8], &[u8]) = *rng.pick(&[
                (&b"["[..], &b"]"[..]),
                (b"{\"a\":", b"}"),
                (b"- ", b""),
                (b"a:\n ", b""),
                (b"[", b""),
                (b"{", b""),
                (b"!!map {", b"}"),
            ]);
            let mut piece = Vec::new();
            for _ in 0..depth {
                if len + piece.len() + open.len() + close.len() > MAX_LEN {
                    break;
                }
                piece.extend_from_slice(open);
            }
            let n = piece.len() / open.len().max(1);
            if rng.one_in(2) {
                piece.extend_from_slice(b"1");
                for _ in 0..n {
                    piece.extend_from_slice(close);
                }
            }
            let at = pos(rng, len);
            input.splice(at..at, piece);
        }
        Op::Token => {
            let token = *rng.pick(TOKENS);
            let at = pos(rng, len);
            if rng.one_in(3) && len > 0 {
                let (a, b) = range(rng, len, 8);
                input.splice(a..b, token.iter().copied());
            } else {
                input.splice(at..at, token.iter().copied());
            }
        }
        Op::Dictionary => {
            if grammar.dictionary.is_empty() {
                return;
            }
            let word = rng.pick(grammar.dictionary).as_bytes().to_vec();
            let at = pos(rng, len);
            input.splice(at..at, word);
        }
        Op::Number => {
            // Replace a run of digits with an extreme or non-finite value.
            let digits: Vec<usize> = input
                .iter()
                .enumerate()
                .filter(|(i, b)| b.is_ascii_digit() && (*i == 0 || !input[i - 1].is_ascii_digit()))
                .map(|(i, _)| i)
                .collect();
            if digits.is_empty() {
                return;
            }
            let a = *rng.pick(&digits);
            let mut b = a;
            while b < input.len() && (input[b].is_ascii_digit() || input[b] == b'.') {
                b += 1;
            }
            let token = *rng.pick(&TOKENS[..18]);
            input.splice(a..b, token.iter().copied());
        }
        Op::GeneratedLine => {
            if !grammar.jsonl {
                return apply(rng, Op::Dictionary, input, others, grammar);
            }
            let mut line = Vec::new();
            gen_object(rng, grammar, 0, &mut line);
            line.push(b'\n');
            let spans = line_spans(input);
            if spans.is_empty() || rng.one_in(3) {
                let at = spans.last().map_or(0, |s| s.1);
                input.splice(at..at, line);
            } else {
                let (a, b) = *rng.pick(&spans);
                input.splice(a..b, line);
            }
        }
    }
}

const NUMBERS: &[&[u8]] = &[
    b"0",
    b"1",
    b"-1",
    b"0.5",
    b"1.5",
    b"1e308",
    b"1e-320",
    b"3.4028236e38",
    b"-0",
    b"4294967296",
    b"18446744073709551615",
    b"1e309",
];

/// A JSON object whose keys come mostly from the target's dictionary and whose values are
/// of random type, including wrong ones (structure-aware generation).
fn gen_object(rng: &mut Rng, grammar: &Grammar<'_>, depth: usize, out: &mut Vec<u8>) {
    out.push(b'{');
    let n = rng.below(7);
    for i in 0..n {
        if i > 0 {
            out.push(b',');
        }
        let key = if !grammar.dictionary.is_empty() && !rng.one_in(5) {
            rng.pick(grammar.dictionary).trim_matches('"').to_string()
        } else {
            format!("k{}", rng.below(10))
        };
        out.extend_from_slice(serde_json::to_string(&key).unwrap_or_default().as_bytes());
        out.push(b':');
        gen_value(rng, grammar, depth + 1, out);
    }
    out.push(b'}');
}

fn gen_value(rng: &mut Rng, grammar: &Grammar<'_>, depth: usize, out: &mut Vec<u8>) {
    let choice = if depth > 4 {
        rng.below(6)
    } else {
        rng.below(9)
    };
    match choice {
        0 => out.extend_from_slice(b"null"),
        1 => out.extend_from_slice(if rng.one_in(2) { b"true" } else { b"false" }),
        2 => {
            let n = *rng.pick(NUMBERS);
            out.extend_from_slice(n);
        }
        3 | 4 => {
            let s: String = match rng.below(5) {
                0 => String::new(),
                1 => " ".into(),
                2 if !grammar.dictionary.is_empty() => {
                    rng.pick(grammar.dictionary).trim_matches('"').to_string()
                }
                3 => "\u{1b}[2J\u{0}\u{202e}".into(),
                _ => format!("v{}", rng.below(20)),
            };
            out.extend_from_slice(serde_json::to_string(&s).unwrap_or_default().as_bytes());
        }
        5 => out.extend_from_slice(format!("\"{}\"", "x".repeat(rng.range(1, 3000))).as_bytes()),
        6 | 7 => {
            out.push(b'[');
            let n = rng.below(5);
            for i in 0..n {
                if i > 0 {
                    out.push(b',');
                }
                gen_value(rng, grammar, depth + 1, out);
            }
            out.push(b']');
        }
        _ => gen_object(rng, grammar, depth + 1, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_mutants_and_bounded_size() {
        let g = Grammar {
            dictionary: &["id", "query"],
            jsonl: true,
        };
        let seed = b"{\"id\": \"a\", \"query\": \"b\", \"top_k\": 10}\n".to_vec();
        let run = |s: u64| {
            let mut rng = Rng::new(s);
            (0..300)
                .map(|_| {
                    let mut x = seed.clone();
                    mutate(&mut rng, &mut x, &[&seed], &g);
                    x
                })
                .collect::<Vec<_>>()
        };
        let a = run(7);
        assert_eq!(a, run(7));
        assert_ne!(a, run(8));
        assert!(a.iter().all(|x| x.len() <= MAX_LEN));
    }
}
