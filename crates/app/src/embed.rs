//! `veredicto embed`: a corpus' chunks (or a golden set's queries) embedded with veredicto's
//! model and written where a vector store can load them: a JSONL file, a NumPy `.npy` file
//! (with the IDs beside it), a Parquet file, or straight into a pgvector table with `COPY`.
//!
//! Chunks are embedded as passages (their `representation`, else their `text`: the text the
//! own index embeds), golden queries as queries, in the file's order. The same input and
//! model give the same vectors, so a table loaded here passes `--check-vectors` with that
//! model.

use std::path::{Path, PathBuf};

use veredicto_embed::{Embedder, TextKind};

use crate::{Events, Result};

/// What is embedded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbedSource {
    /// A corpus file: its chunks, as passages.
    Corpus(PathBuf),
    /// A golden set: its queries, as queries (the case ID is the row's ID).
    Golden(PathBuf),
}

/// A file format for [`EmbedTarget::File`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    /// `{"id", "vector", "model"}` a line.
    Jsonl,
    /// A `.npy` array `(rows, dim)` of `<f4`, and `FILE.ids.txt` with the IDs a line.
    Npy,
    /// A Parquet file with the JSONL's fields as columns: `id` (string), `vector` (a list of
    /// float32) and `model` (string).
    Parquet,
}

impl FileFormat {
    /// The format a file name asks for: `.npy`, `.parquet`, else JSONL.
    pub fn from_extension(path: &Path) -> FileFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("npy") => FileFormat::Npy,
            Some(e) if e.eq_ignore_ascii_case("parquet") => FileFormat::Parquet,
            _ => FileFormat::Jsonl,
        }
    }
}

/// Where the vectors go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbedTarget {
    /// A file.
    File {
        /// The file.
        path: PathBuf,
        /// Its format.
        format: FileFormat,
    },
    /// A pgvector table: `postgres://…?table=T[&id=COL][&vector=COL]` (columns `id` and
    /// `embedding` by default), created when missing; rows with the same IDs are replaced.
    Postgres(String),
}

/// One `veredicto embed`.
pub struct EmbedRequest<'a> {
    /// What to embed.
    pub source: EmbedSource,
    /// Where to write it.
    pub target: EmbedTarget,
    /// The model.
    pub embedder: &'a dyn Embedder,
    /// Per-statement timeout of the PostgreSQL target.
    pub timeout: std::time::Duration,
    /// Progress.
    pub events: Events<'a>,
}

/// What [`embed`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Embedded {
    /// Rows written.
    pub rows: usize,
    /// Their dimension.
    pub dimension: usize,
    /// The model (its name) and fingerprint hash.
    pub model: String,
    /// The model's fingerprint (`sha256:…`).
    pub model_hash: String,
    /// Where they went, without credentials (a file, ``table `T` at postgres://…``).
    pub written_to: String,
    /// Chunks left out because they have no text.
    pub skipped: Vec<String>,
}

/// IDs and texts, in the file's order; the chunks without a text; how the texts embed.
type Rows = (Vec<(String, String)>, Vec<String>, TextKind);

/// Rows of IDs and texts, in the file's order, and the chunks without a text.
fn rows_of(source: &EmbedSource) -> Result<Rows> {
    match source {
        EmbedSource::Corpus(path) => {
            let mut rows = Vec::new();
            let mut skipped = Vec::new();
            for chunk in veredicto_formats::corpus::read_corpus(path)? {
                match crate::stored_vectors::embedded_text(&chunk) {
                    Some(t) => rows.push((chunk.id.clone(), t.to_owned())),
                    None => skipped.push(chunk.id),
                }
            }
            Ok((rows, skipped, TextKind::Passage))
        }
        EmbedSource::Golden(path) => {
            let cases = veredicto_formats::golden::read_golden(path)?;
            Ok((
                cases.into_iter().map(|c| (c.id, c.query)).collect(),
                Vec::new(),
                TextKind::Query,
            ))
        }
    }
}

/// Texts embedded per call (progress is reported after each).
const BATCH: usize = 64;

/// Embeds the source and writes the vectors to the target.
pub fn embed(request: EmbedRequest<'_>) -> Result<Embedded> {
    let (rows, skipped, kind) = rows_of(&request.source)?;
    crate::ensure!(
        !rows.is_empty(),
        "nothing to embed: {} has no rows with a text",
        match &request.source {
            EmbedSource::Corpus(p) | EmbedSource::Golden(p) => p.display(),
        }
    );
    // The target is checked before the model runs: a bad URI costs no embedding.
    let pg = match &request.target {
        EmbedTarget::Postgres(uri) => Some(PgTable::parse(uri)?),
        EmbedTarget::File { .. } => None,
    };
    let counter =
        crate::events::Counter::start(request.events, "texts embedded", rows.len() as u64);
    let mut vectors: Vec<(String, Vec<f32>)> = Vec::with_capacity(rows.len());
    for batch in rows.chunks(BATCH) {
        if request.events.cancelled() {
            return Err(crate::Error::Cancelled);
        }
        let texts: Vec<&str> = batch.iter().map(|(_, t)| t.as_str()).collect();
        let got = request.embedder.embed(&texts, kind)?;
        vectors.extend(batch.iter().map(|(id, _)| id.clone()).zip(got));
        counter.add(batch.len() as u64);
    }
    drop(counter);
    let fingerprint = request.embedder.fingerprint();
    let model_hash = fingerprint.digest();
    let dimension = request.embedder.dim();
    let written_to = match (&request.target, pg) {
        (EmbedTarget::File { path, format }, _) => {
            write_file(path, *format, &vectors, &model_hash)?;
            path.display().to_string()
        }
        (EmbedTarget::Postgres(_), Some(table)) => {
            table.copy(&vectors, dimension, request.timeout)?;
            table.shown()
        }
        (EmbedTarget::Postgres(_), None) => unreachable!("parsed above"),
    };
    Ok(Embedded {
        rows: vectors.len(),
        dimension,
        model: fingerprint.name.clone(),
        model_hash,
        written_to,
        skipped,
    })
}

/// The IDs file beside an `.npy` file: `FILE.ids.txt`.
pub fn ids_path(npy: &Path) -> PathBuf {
    let mut s = npy.as_os_str().to_owned();
    s.push(".ids.txt");
    PathBuf::from(s)
}

fn write_file(
    path: &Path,
    format: FileFormat,
    rows: &[(String, Vec<f32>)],
    model: &str,
) -> Result<()> {
    let written = match format {
        FileFormat::Jsonl => veredicto_vectors::write_jsonl(path, rows, model),
        FileFormat::Npy => veredicto_vectors::write_npy(path, &ids_path(path), rows),
        FileFormat::Parquet => veredicto_vectors::write_parquet(path, rows, model),
    };
    written.map_err(|e| crate::Error::msg(e.to_string()))
}

/// A pgvector table to load.
struct PgTable {
    target: veredicto_net::PgTarget,
    table: String,
    id: String,
    vector: String,
    /// The table as messages name it.
    name: String,
}

fn identifier(what: &str, value: &str, dotted: bool) -> Result<String> {
    let parts: Vec<&str> = value.split('.').collect();
    let ok = (parts.len() == 1 || (dotted && parts.len() == 2))
        && parts.iter().all(|p| {
            let mut chars = p.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    crate::ensure!(
        ok,
        "--to: `{what}={}` is not a plain identifier (letters, digits and `_`{})",
        veredicto_core::redact::short(value),
        if dotted {
            ", optionally schema.table"
        } else {
            ""
        }
    );
    Ok(parts
        .iter()
        .map(|p| format!("\"{p}\""))
        .collect::<Vec<_>>()
        .join("."))
}

impl PgTable {
    fn parse(uri: &str) -> Result<PgTable> {
        let shown = veredicto_core::redact::url(uri);
        let (target, extras) =
            veredicto_net::PgTarget::parse_with_extras(uri, &veredicto_net::PgEnv::from_process())
                .map_err(|e| crate::Error::msg(format!("--to {shown}: {e}")))?;
        let (mut table, mut id, mut vector) = (None, "id".to_owned(), "embedding".to_owned());
        for (k, v) in extras {
            match k.as_str() {
                "table" => table = Some(v),
                "id" => id = v,
                "vector" => vector = v,
                other => crate::bail!(
                    "--to {shown}: unknown parameter `{}` (table, id and vector are this target's; the others are libpq's)",
                    veredicto_core::redact::short(other)
                ),
            }
        }
        let Some(table) = table else {
            crate::bail!("--to {shown}: give the table: `?table=T` (and `&id=COL&vector=COL`, default `id` and `embedding`)");
        };
        Ok(PgTable {
            name: format!("table `{table}` at {}", target.describe()),
            table: identifier("table", &table, true)?,
            id: identifier("id", &id, false)?,
            vector: identifier("vector", &vector, false)?,
            target,
        })
    }

    fn shown(&self) -> String {
        self.name.clone()
    }

    /// Creates the table when missing (`id text PRIMARY KEY, embedding vector(D)`), checks
    /// the vector column's dimension when it exists, and loads the rows: `COPY` into a
    /// temporary table, then the table's rows with those IDs replaced, in one transaction.
    fn copy(
        &self,
        rows: &[(String, Vec<f32>)],
        dim: usize,
        timeout: std::time::Duration,
    ) -> Result<()> {
        use std::io::Write;
        let fail = |what: &str, e: postgres::Error| {
            let detail = match e.as_db_error() {
                Some(db) => db.message().to_owned(),
                None => veredicto_core::redact::secrets_in_text(&e.to_string()),
            };
            crate::Error::msg(format!(
                "--to {}: {what}: {}",
                self.name,
                veredicto_core::redact::short(&detail)
            ))
        };
        let connector = self
            .target
            .connector()
            .map_err(|e| crate::Error::msg(format!("--to {}: {e}", self.name)))?;
        let mut config = self.target.config(timeout);
        config.connect_timeout(timeout);
        let mut client = connector
            .connect(config)
            .map_err(|e| crate::Error::msg(format!("--to {}: cannot connect: {e}", self.name)))?;
        client
            .batch_execute(&format!(
                "SET statement_timeout = {}",
                timeout.as_millis().max(1)
            ))
            .map_err(|e| fail("setting the timeout", e))?;
        let (id, vector, table) = (&self.id, &self.vector, &self.table);
        let mut tx = client.transaction().map_err(|e| fail("starting", e))?;
        tx.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {table} ({id} text PRIMARY KEY, {vector} vector({dim}))"
        ))
        .map_err(|e| {
            fail(
                "creating the table (is the pgvector extension installed? CREATE EXTENSION vector)",
                e,
            )
        })?;
        // The vector column's declared dimension (atttypmod), when it has one.
        let declared: Option<i32> = tx
            .query_opt(
                "SELECT a.atttypmod FROM pg_attribute a WHERE a.attrelid = to_regclass($1) AND a.attname = $2 AND NOT a.attisdropped",
                &[&table.as_str(), &vector.trim_matches('"')],
            )
            .map_err(|e| fail("reading the vector column", e))?
            .map(|r| r.get(0));
        match declared {
            None => crate::bail!(
                "--to {}: the table has no column `{}`",
                self.name,
                vector.trim_matches('"')
            ),
            Some(d) if d > 0 && d as usize != dim => crate::bail!(
                "--to {}: column `{}` holds dimension {d}, the model's vectors have dimension {dim}",
                self.name,
                vector.trim_matches('"')
            ),
            _ => {}
        }
        tx.batch_execute(
            "CREATE TEMPORARY TABLE veredicto_embed_load (id text, v text) ON COMMIT DROP",
        )
        .map_err(|e| fail("creating the load table", e))?;
        {
            let mut w = tx
                .copy_in("COPY veredicto_embed_load (id, v) FROM STDIN")
                .map_err(|e| fail("COPY", e))?;
            let mut line = String::new();
            for (row_id, v) in rows {
                line.clear();
                copy_text(&mut line, row_id);
                line.push('\t');
                line.push('[');
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        line.push(',');
                    }
                    line.push_str(&x.to_string());
                }
                line.push_str("]\n");
                w.write_all(line.as_bytes())
                    .map_err(|e| crate::Error::msg(format!("--to {}: COPY: {e}", self.name)))?;
            }
            w.finish().map_err(|e| fail("COPY", e))?;
        }
        tx.batch_execute(&format!(
            "DELETE FROM {table} WHERE {id}::text IN (SELECT id FROM veredicto_embed_load);
             INSERT INTO {table} ({id}, {vector}) SELECT id, v::vector FROM veredicto_embed_load"
        ))
        .map_err(|e| fail("loading the rows", e))?;
        tx.commit().map_err(|e| fail("committing", e))?;
        Ok(())
    }
}

/// `value` escaped for COPY's text format (backslash, tab, newline, carriage return).
fn copy_text(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_text_escapes_what_copy_reads_specially() {
        let mut s = String::new();
        copy_text(&mut s, "a\tb\\c\nd");
        assert_eq!(s, "a\\tb\\\\c\\nd");
    }

    #[test]
    fn a_target_without_a_table_or_with_a_bad_identifier_is_refused() {
        let e = PgTable::parse("postgres://u@h:5432/db")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("?table=T"), "{e}");
        let e = PgTable::parse("postgres://u@h:5432/db?table=a;b")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("not a plain identifier"), "{e}");
        let e = PgTable::parse("postgres://u:secret@h:5432/db?table=t&colour=red")
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("unknown parameter `colour`") && !e.contains("secret"),
            "{e}"
        );
    }
}
