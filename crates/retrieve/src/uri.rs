//! Retriever URIs: the scheme names the backend. The one place where a URI becomes a
//! retriever; adding a backend adds a line here and nothing in the command line.

use crate::{Options, RetrieveError, Retriever};

/// The schemes [`open`] knows, for the error on an unknown one.
pub const SCHEMES: &str =
    "index:DIR, run:FILE (run:- for standard input), http://…, https://…, cmd:PROGRAM ARGS…, postgres://USER@HOST:PORT/DB?table=T&id=COL&vector=COL, opensearch+http(s)://HOST:9200/INDEX?field=F, elasticsearch+http(s)://HOST:9200/INDEX?field=F, qdrant+http(s)://HOST:6333/COLLECTION, chroma+http(s)://HOST:8000/COLLECTION, vectorize://ACCOUNT_ID/INDEX";

/// Opens the retriever a URI names. Live retrievers do not connect yet: the first request
/// (or [`Retriever::prepare`]) does.
pub fn open(uri: &str, options: &Options) -> Result<Box<dyn Retriever>, RetrieveError> {
    let bad = |reason: String| RetrieveError::Uri {
        uri: veredicto_core::redact::url(uri),
        reason,
    };
    let lower = uri.to_ascii_lowercase();
    let http = lower.starts_with("http://") || lower.starts_with("https://");
    if options.body_template.is_some() && !http {
        return Err(bad(
            "--body-template applies to http:// and https:// retrievers only".into(),
        ));
    }
    if let Some(dir) = uri.strip_prefix("index:") {
        if dir.is_empty() {
            return Err(bad("expected `index:DIR`".into()));
        }
        return Ok(Box::new(crate::own_index::OwnIndex::open(
            std::path::Path::new(dir),
        )?));
    }
    if let Some(path) = uri.strip_prefix("run:") {
        if path.is_empty() {
            return Err(bad("expected `run:FILE` or `run:-`".into()));
        }
        return Ok(Box::new(crate::run_file::RunFile::open(path)?));
    }
    if http {
        return Ok(Box::new(crate::http::HttpRetriever::new(uri, options)?));
    }
    if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
        return Ok(Box::new(crate::pgvector::PgVector::new(uri, options)?));
    }
    if ["opensearch+", "elasticsearch+", "qdrant+"]
        .iter()
        .any(|p| lower.starts_with(p))
    {
        return Ok(Box::new(crate::engines::EngineRetriever::new(
            uri, options,
        )?));
    }
    if lower.starts_with("vectorize://") || lower.starts_with("vectorize+") {
        return Ok(Box::new(crate::vectorize::VectorizeRetriever::new(
            uri, options,
        )?));
    }
    if lower.starts_with("chroma+") {
        return Ok(Box::new(crate::chroma::ChromaRetriever::new(uri, options)?));
    }
    if let Some(command) = uri.strip_prefix("cmd:") {
        return Ok(Box::new(crate::cmd::CommandRetriever::new(
            command, options,
        )?));
    }
    let scheme = match uri.find("://") {
        Some(i) => &uri[..i],
        None => uri.split(':').next().unwrap_or(uri),
    };
    Err(bad(format!(
        "unknown scheme `{}`; expected one of {SCHEMES}",
        veredicto_core::redact::short(scheme)
    )))
}
