//! A golden set kept in a table of a SQLite database, read directly: `sqlite:FILE?table=T`.
//!
//! Cloudflare D1 databases are SQLite: the local copy that `wrangler d1` keeps (under
//! `.wrangler/state/`) is read the same way.
//!
//! Each row is a case; its columns are the golden set's fields, by the same names (`id`,
//! `query`, `expected`, `top_k`, `domain`, `tags`, `gold`, `filters`, `query_vector`), or by
//! the names the spec maps them to: `sqlite:golden.db?table=cases&id=case_id&expected=chunk_ids`.
//! Column values:
//! - `id`: text or an integer; `query`, `domain`: text;
//! - `expected`, `tags`: a JSON array (`["a","b"]`) or a comma-separated list (`a, b`);
//! - `top_k`: an integer (or its digits as text); `gold`: 0 or 1 (or `true` / `false`);
//! - `filters`: a JSON object as text; `query_vector`: a JSON array as text, or a blob of
//!   little-endian 32-bit floats.
//!
//! NULL is an absent field; other columns are ignored. Rows are read in rowid order (a
//! view: in the order it gives). Errors name the file, the table, the row (its rowid; a view's: its position) and
//! the column as the table spells it; no cell may exceed [`MAX_CELL_BYTES`].

use crate::error::{FormatError, Result};
use crate::jsonl::{self, ObjectLine, SeenIds};
use rusqlite::types::ValueRef;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use veredicto_core::case::Case;

/// The golden set's fields, in the order they are looked up.
pub const FIELDS: &[&str] = &[
    "id",
    "query",
    "expected",
    "top_k",
    "domain",
    "tags",
    "gold",
    "filters",
    "query_vector",
];

const REQUIRED: &[&str] = &["id", "query", "expected"];

/// The longest cell read: 1 MiB (a query vector of 8,192 dimensions as JSON is about
/// 100 KB).
pub const MAX_CELL_BYTES: usize = 1 << 20;

/// A parsed `sqlite:FILE?table=T&FIELD=COLUMN...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub file: PathBuf,
    pub table: String,
    /// Field → column, for every field of [`FIELDS`] (unmapped: the field's own name).
    pub columns: Vec<(&'static str, String)>,
}

/// The `sqlite:` spec a golden-set path spells, if it spells one.
pub fn spec_of(path: &Path) -> Option<&str> {
    path.to_str().filter(|s| s.starts_with("sqlite:"))
}

/// Parses `sqlite:FILE?table=T&FIELD=COLUMN...`.
pub fn parse(spec: &str) -> Result<Spec> {
    let bad = |message: String| FormatError::invalid(Path::new(spec), 0, "-", message);
    let rest = spec
        .strip_prefix("sqlite:")
        .ok_or_else(|| bad("expected sqlite:FILE?table=TABLE".into()))?;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let (file, query) = rest
        .rsplit_once('?')
        .ok_or_else(|| bad("no table: write sqlite:FILE?table=TABLE".into()))?;
    if file.is_empty() {
        return Err(bad("no file: write sqlite:FILE?table=TABLE".into()));
    }
    let mut table = None;
    let mut columns: Vec<(&'static str, String)> =
        FIELDS.iter().map(|f| (*f, (*f).to_owned())).collect();
    let mut mapped = std::collections::HashSet::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| bad(format!("`{pair}`: expected KEY=VALUE")))?;
        if value.is_empty() {
            return Err(bad(format!("`{key}=`: the value is empty")));
        }
        if key == "table" {
            if table.replace(value.to_owned()).is_some() {
                return Err(bad("`table` is given twice".into()));
            }
            continue;
        }
        let Some(slot) = columns.iter_mut().find(|(f, _)| *f == key) else {
            return Err(bad(format!(
                "unknown key `{}` (known: table, {})",
                veredicto_core::redact::short(key),
                FIELDS.join(", ")
            )));
        };
        if !mapped.insert(key.to_owned()) {
            return Err(bad(format!("`{key}` is mapped twice")));
        }
        slot.1 = value.to_owned();
    }
    let table = table.ok_or_else(|| bad("no table: write sqlite:FILE?table=TABLE".into()))?;
    Ok(Spec {
        file: PathBuf::from(file),
        table,
        columns,
    })
}

fn row_error(spec: &Spec, row: i64, column: &str, message: impl Into<String>) -> FormatError {
    FormatError::Row {
        path: spec.file.clone(),
        table: spec.table.clone(),
        row,
        column: column.to_owned(),
        message: message.into(),
    }
}

fn db_error(spec: &Spec, e: rusqlite::Error) -> FormatError {
    FormatError::invalid(&spec.file, 0, "-", format!("table `{}`: {e}", spec.table))
}

fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Reads the cases of `sqlite:FILE?table=T...`.
pub fn read(spec: &str) -> Result<Vec<Case>> {
    let spec = parse(spec)?;
    if !spec.file.is_file() {
        return Err(FormatError::io(
            &spec.file,
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
        ));
    }
    let conn = rusqlite::Connection::open_with_flags(
        &spec.file,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| db_error(&spec, e))?;
    // The table's columns (a view's too).
    let mut present = Vec::new();
    {
        let mut stmt = conn
            .prepare(&format!("PRAGMA table_info({})", quoted(&spec.table)))
            .map_err(|e| db_error(&spec, e))?;
        let mut rows = stmt.query([]).map_err(|e| db_error(&spec, e))?;
        while let Some(r) = rows.next().map_err(|e| db_error(&spec, e))? {
            present.push(r.get::<_, String>(1).map_err(|e| db_error(&spec, e))?);
        }
    }
    if present.is_empty() {
        return Err(FormatError::invalid(
            &spec.file,
            0,
            "-",
            format!(
                "no table or view `{}` in this database",
                veredicto_core::redact::short(&spec.table)
            ),
        ));
    }
    let mut wanted: Vec<(&'static str, String)> = Vec::new();
    for (field, column) in &spec.columns {
        if present.iter().any(|c| c == column) {
            wanted.push((field, column.clone()));
        } else if REQUIRED.contains(field) {
            return Err(row_error(
                &spec,
                0,
                column,
                format!(
                    "the table has no such column (its columns: {}){}",
                    present.join(", "),
                    if field == column {
                        format!("; name the column that holds `{field}` with &{field}=COLUMN")
                    } else {
                        String::new()
                    }
                ),
            ));
        }
    }
    let list = wanted
        .iter()
        .map(|(_, c)| quoted(c))
        .collect::<Vec<_>>()
        .join(", ");
    let table = quoted(&spec.table);
    // Tables are read by rowid; a view (or a table without rowid) in its own order.
    let (mut stmt, has_rowid) =
        match conn.prepare(&format!("SELECT rowid, {list} FROM {table} ORDER BY rowid")) {
            Ok(s) => (s, true),
            Err(_) => (
                conn.prepare(&format!("SELECT {list} FROM {table}"))
                    .map_err(|e| db_error(&spec, e))?,
                false,
            ),
        };
    let mut rows = stmt.query([]).map_err(|e| db_error(&spec, e))?;
    let mut seen = SeenIds::default();
    let mut cases = Vec::new();
    let mut position = 0i64;
    let display = PathBuf::from(format!("{}?table={}", spec.file.display(), spec.table));
    while let Some(r) = rows.next().map_err(|e| db_error(&spec, e))? {
        position += 1;
        let offset = usize::from(has_rowid);
        let row: i64 = if has_rowid {
            r.get(0).map_err(|e| db_error(&spec, e))?
        } else {
            position
        };
        let mut object = Map::new();
        for (i, (field, column)) in wanted.iter().enumerate() {
            let cell = r.get_ref(i + offset).map_err(|e| db_error(&spec, e))?;
            if let Some(v) =
                cell_value(field, cell).map_err(|m| row_error(&spec, row, column, m))?
            {
                object.insert((*field).to_owned(), v);
            }
        }
        let line = ObjectLine {
            path: &display,
            line: usize::try_from(row).unwrap_or(0),
            object,
        };
        let case = crate::golden::case_of(&line, &mut seen).map_err(|e| match e {
            FormatError::Invalid { field, message, .. } => {
                let (base, rest) = split_field(&field);
                let column = wanted
                    .iter()
                    .find(|(f, _)| *f == base)
                    .map_or(base.to_owned(), |(_, c)| c.clone());
                let message = message.replace("(first on line ", "(first in row ");
                row_error(&spec, row, &format!("{column}{rest}"), message)
            }
            other => other,
        })?;
        cases.push(case);
    }
    if cases.is_empty() {
        return Err(FormatError::invalid(
            &spec.file,
            0,
            "-",
            format!(
                "table `{}` has no rows: the golden set has no cases",
                spec.table
            ),
        ));
    }
    Ok(cases)
}

/// `expected[2]` → (`expected`, `[2]`); `filters.domain` → (`filters`, `.domain`).
fn split_field(field: &str) -> (&str, &str) {
    let cut = field.find(['[', '.']).unwrap_or(field.len());
    field.split_at(cut)
}

fn cell_value(field: &str, cell: ValueRef<'_>) -> std::result::Result<Option<Value>, String> {
    let text = |bytes: &[u8]| -> std::result::Result<String, String> {
        if bytes.len() > MAX_CELL_BYTES {
            return Err(format!(
                "a cell longer than {} MiB ({} bytes)",
                MAX_CELL_BYTES >> 20,
                bytes.len()
            ));
        }
        String::from_utf8(bytes.to_vec()).map_err(|_| "not valid UTF-8 text".to_owned())
    };
    let kind = match cell {
        ValueRef::Null => return Ok(None),
        ValueRef::Integer(_) => "an integer",
        ValueRef::Real(_) => "a real number",
        ValueRef::Text(_) => "text",
        ValueRef::Blob(_) => "a blob",
    };
    let expected = |what: &str| format!("expected {what}, found {kind}");
    Ok(Some(match (field, cell) {
        ("id", ValueRef::Integer(i)) => Value::from(i),
        ("id" | "query" | "domain", ValueRef::Text(t)) => Value::String(text(t)?),
        ("id", _) => return Err(expected("text or an integer")),
        ("query" | "domain", _) => return Err(expected("text")),
        ("expected" | "tags", ValueRef::Text(t)) => list(&text(t)?)?,
        ("expected" | "tags", _) => {
            return Err(expected("a JSON array or a comma-separated list, as text"))
        }
        ("top_k", ValueRef::Integer(i)) => Value::from(i),
        ("top_k", ValueRef::Text(t)) => {
            let t = text(t)?;
            match t.trim().parse::<i64>() {
                Ok(i) => Value::from(i),
                Err(_) => {
                    return Err(format!(
                        "expected a positive integer, found `{}`",
                        veredicto_core::redact::short(&t)
                    ))
                }
            }
        }
        ("top_k", _) => return Err(expected("a positive integer")),
        ("gold", ValueRef::Integer(0)) => Value::Bool(false),
        ("gold", ValueRef::Integer(1)) => Value::Bool(true),
        ("gold", ValueRef::Text(t)) => match text(t)?.trim().to_ascii_lowercase().as_str() {
            "true" | "1" => Value::Bool(true),
            "false" | "0" => Value::Bool(false),
            other => {
                return Err(format!(
                    "expected 0, 1, true or false, found `{}`",
                    veredicto_core::redact::short(other)
                ))
            }
        },
        ("gold", _) => return Err(expected("0 or 1")),
        ("filters", ValueRef::Text(t)) => {
            let t = text(t)?;
            crate::json::value_from_str(&t).map_err(|e| format!("malformed JSON: {e}"))?
        }
        ("filters", _) => return Err(expected("a JSON object as text")),
        ("query_vector", ValueRef::Text(t)) => {
            let t = text(t)?;
            crate::json::value_from_str(&t).map_err(|e| format!("malformed JSON: {e}"))?
        }
        ("query_vector", ValueRef::Blob(b)) => {
            if b.len() > MAX_CELL_BYTES || b.is_empty() || b.len() % 4 != 0 {
                return Err(format!(
                    "a blob of {} bytes is not a vector of 32-bit floats",
                    b.len()
                ));
            }
            Value::Array(
                b.chunks_exact(4)
                    .map(|c| {
                        let x = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                        serde_json::Number::from_f64(f64::from(x))
                            .map_or(Value::Null, Value::Number)
                    })
                    .collect(),
            )
        }
        ("query_vector", _) => return Err(expected("a JSON array as text, or a blob of floats")),
        _ => return Ok(None),
    }))
}

/// A JSON array, or a comma-separated list (blanks around items ignored, no empty items).
fn list(text: &str) -> std::result::Result<Value, String> {
    let t = text.trim();
    if t.starts_with('[') {
        let v = crate::json::value_from_str(t).map_err(|e| format!("malformed JSON: {e}"))?;
        return match v {
            Value::Array(_) => Ok(v),
            other => Err(format!(
                "expected a JSON array, found {}",
                jsonl::kind(&other)
            )),
        };
    }
    if t.is_empty() {
        return Ok(Value::Array(Vec::new()));
    }
    let mut out = Vec::new();
    for (i, item) in t.split(',').enumerate() {
        let item = item.trim();
        if item.is_empty() {
            return Err(format!(
                "item {} of the comma-separated list is empty",
                i + 1
            ));
        }
        out.push(Value::String(item.to_owned()));
    }
    Ok(Value::Array(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(sql: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("golden.db");
        let conn = rusqlite::Connection::open(&p).unwrap();
        conn.execute_batch(sql).unwrap();
        (dir, p)
    }

    fn read_at(p: &Path, rest: &str) -> Result<Vec<Case>> {
        crate::golden::read_golden(Path::new(&format!("sqlite:{}?{rest}", p.display())))
    }

    fn message(p: &Path, e: FormatError) -> String {
        e.to_string().replace(&p.display().to_string(), "golden.db")
    }

    #[test]
    fn a_golden_table_reads_as_the_same_cases_as_its_jsonl() {
        let (_d, p) = db(r#"
            CREATE TABLE cases (id TEXT, query TEXT, expected TEXT, top_k INTEGER, domain TEXT,
                                tags TEXT, gold INTEGER, filters TEXT, note TEXT);
            INSERT INTO cases VALUES
              ('c1', '¿Cuántos días de vacaciones?', '["gold_002","silver_art_011"]', 5, 'laboral',
               'numeric, vacaciones', 1, '{"domain":"laboral","valid_at":"2025-01-01"}', 'x'),
              ('c2', 'retención del 7 %', 'gold_001 , silver_legal_045', NULL, NULL, NULL, 0, NULL, NULL);
            "#);
        let cases = read_at(&p, "table=cases").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let jsonl = dir.path().join("golden.jsonl");
        std::fs::write(
            &jsonl,
            r#"{"id":"c1","query":"¿Cuántos días de vacaciones?","expected":["gold_002","silver_art_011"],"top_k":5,"domain":"laboral","tags":["numeric","vacaciones"],"gold":true,"filters":{"domain":"laboral","valid_at":"2025-01-01"}}
{"id":"c2","query":"retención del 7 %","expected":["gold_001","silver_legal_045"]}
"#,
        )
        .unwrap();
        assert_eq!(cases, crate::golden::read_golden(&jsonl).unwrap());
        // The fingerprint of the cases, hence of a run, is the same.
        assert_eq!(
            veredicto_core::fingerprint::sha256_json(&cases),
            veredicto_core::fingerprint::sha256_json(&crate::golden::read_golden(&jsonl).unwrap())
        );
    }

    #[test]
    fn columns_with_other_names_are_mapped_and_vectors_read_from_blobs() {
        let (_d, p) = db(r#"
            CREATE TABLE golden (case_id INTEGER, question TEXT, chunk_ids TEXT, k TEXT, vec BLOB);
            INSERT INTO golden VALUES (7, 'q', 'a,b', '3', X'0000803F000000C0');
            "#);
        let cases = read_at(
            &p,
            "table=golden&id=case_id&query=question&expected=chunk_ids&top_k=k&query_vector=vec",
        )
        .unwrap();
        assert_eq!(cases[0].id, "7");
        assert_eq!(cases[0].expected, ["a", "b"]);
        assert_eq!(cases[0].top_k, Some(3));
        assert_eq!(cases[0].query_vector, Some(vec![1.0, -2.0]));
    }

    #[test]
    fn bad_cells_name_file_table_rowid_and_column() {
        let (_d, p) = db(r#"
            CREATE TABLE golden (case_id TEXT, query TEXT, chunk_ids TEXT, top_k INTEGER, filters TEXT);
            INSERT INTO golden VALUES ('a', 'q', 'x', 1, NULL);
            INSERT INTO golden VALUES ('b', 'q', 'x, y, x', 1, NULL);
            INSERT INTO golden VALUES ('c', 'q', 'x,,y', 1, NULL);
            INSERT INTO golden VALUES ('d', 'q', 'x', 0, NULL);
            INSERT INTO golden VALUES ('a', 'q', 'x', 1, NULL);
            INSERT INTO golden VALUES ('f', 'q', 'x', 1, '{"valid_at":"someday"}');
            INSERT INTO golden VALUES ('g', 'q', '[1', 1, NULL);
            INSERT INTO golden VALUES ('h', 'q', '', 1, NULL);
            INSERT INTO golden VALUES ('i', NULL, 'x', 1, NULL);
            "#);
        let conn = rusqlite::Connection::open(&p).unwrap();
        let spec = "table=golden&id=case_id&expected=chunk_ids";
        let expect = |rowid: i64, column: &str, words: &str| {
            // Keep only that row and the first one.
            let _ = conn.execute("DROP TABLE IF EXISTS g2", []);
            conn.execute(
                "CREATE TABLE g2 AS SELECT * FROM golden WHERE rowid IN (1, ?1) ORDER BY rowid",
                [rowid],
            )
            .unwrap();
            let e = message(&p, read_at(&p, &spec.replace("golden", "g2")).unwrap_err());
            let row = if rowid == 1 { 1 } else { 2 };
            let head = format!("golden.db: table `g2`, row {row}, column `{column}`: ");
            assert!(e.starts_with(&head) && e.contains(words), "{e}");
        };
        expect(2, "chunk_ids[2]", "chunk `x` is listed twice");
        expect(
            3,
            "chunk_ids",
            "item 2 of the comma-separated list is empty",
        );
        expect(4, "top_k", "must be a positive integer, got 0");
        expect(5, "case_id", "duplicate case ID `a` (first in row 1)");
        expect(6, "filters.valid_at", "someday");
        expect(7, "chunk_ids", "malformed JSON");
        expect(
            8,
            "chunk_ids",
            "empty: a case needs at least one expected chunk",
        );
        expect(9, "query", "missing");
        let e = message(&p, read_at(&p, "table=golden").unwrap_err());
        assert!(
            e.starts_with("golden.db: table `golden`, row 0, column `id`: the table has no such column (its columns: case_id, query, chunk_ids, top_k, filters); name the column that holds `id` with &id=COLUMN"),
            "{e}"
        );
        let e = message(&p, read_at(&p, "table=nope").unwrap_err());
        assert_eq!(
            e,
            "golden.db:0: field `-`: no table or view `nope` in this database"
        );
        let e = read_at(&p, "table=golden&colour=x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown key `colour`"), "{e}");
        let e = crate::golden::read_golden(Path::new("sqlite:golden.db"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no table"), "{e}");
        let e = read_at(Path::new("/nonexistent/g.db"), "table=t")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/nonexistent/g.db: "), "{e}");
        conn.execute_batch("CREATE TABLE empty (id TEXT, query TEXT, expected TEXT)")
            .unwrap();
        let e = read_at(&p, "table=empty").unwrap_err().to_string();
        assert!(e.contains("has no rows"), "{e}");
    }

    #[test]
    fn a_view_is_read_in_its_order_with_positions_for_rows() {
        let (_d, p) = db(r#"
            CREATE TABLE t (id TEXT, query TEXT, expected TEXT);
            INSERT INTO t VALUES ('b', 'q2', 'y'), ('a', 'q1', 'x'), ('c', 'q3', '');
            CREATE VIEW v AS SELECT * FROM t ORDER BY id;
            "#);
        let e = message(&p, read_at(&p, "table=v").unwrap_err());
        assert!(
            e.starts_with("golden.db: table `v`, row 3, column `expected`"),
            "{e}"
        );
    }
}
