//! Retriever URIs: the scheme names the backend. The one place where a URI becomes a
//! retriever; adding a backend adds a row to [`SCHEME_LIST`] (the help of `exam`,
//! `calibrate` and `search` and the error on an unknown scheme are made from it) and a branch
//! here, and nothing in the command line.

use crate::{Options, RetrieveError, Retriever};

/// The backend a URI's scheme selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// veredicto's own index.
    OwnIndex,
    /// A run file (or standard input).
    RunFile,
    /// An HTTP(S) search service.
    Http,
    /// A program spoken to over standard input and output.
    Command,
    /// A pgvector table.
    PgVector,
    /// OpenSearch k-NN.
    OpenSearch,
    /// Elasticsearch kNN.
    Elasticsearch,
    /// Qdrant.
    Qdrant,
    /// The fusion of other retrievers (its arms given apart).
    Fusion,
    /// A Chroma collection.
    Chroma,
    /// A Cloudflare Vectorize index.
    Vectorize,
    /// A Milvus collection (gRPC).
    Milvus,
}

/// One retriever scheme: the prefixes that select it (lower case), the URI's form and what
/// it examines, one line.
#[derive(Debug, Clone, Copy)]
pub struct Scheme {
    /// The backend it opens.
    pub backend: Backend,
    /// The prefixes that select it, lower case.
    pub prefixes: &'static [&'static str],
    /// The URI's form, as the help shows it.
    pub form: &'static str,
    /// What it examines, one line.
    pub about: &'static str,
}

/// Every scheme [`open`] accepts, in the order the help lists them. A URI's scheme is looked
/// up here, so a backend cannot be opened without being listed.
pub const SCHEME_LIST: &[Scheme] = &[
    Scheme {
        backend: Backend::OwnIndex,
        prefixes: &["index:"],
        form: "index:DIR[?mode=vector|bm25|hybrid]",
        about: "veredicto's own exact index (written by `veredicto ingest`); `mode` picks the vector arm (default), the BM25 arm or their fusion",
    },
    Scheme {
        backend: Backend::Fusion,
        prefixes: &["fusion:"],
        form: "fusion:METHOD[?PARAMS]",
        about: "the fusion (rrf, combsum, combmnz, combmax, wsum) of other retrievers, each given with `--arm URI`",
    },
    Scheme {
        backend: Backend::RunFile,
        prefixes: &["run:"],
        form: "run:FILE",
        about: "a TREC or JSONL run file; `run:-` reads standard input",
    },
    Scheme {
        backend: Backend::Http,
        prefixes: &["http://", "https://"],
        form: "http(s)://HOST/PATH",
        about: "your HTTP search service (JSON answers; `--body-template` shapes the request)",
    },
    Scheme {
        backend: Backend::Command,
        prefixes: &["cmd:"],
        form: "cmd:PROGRAM ARGS…",
        about: "a program answering one JSON line per request line, echoing its `id`",
    },
    Scheme {
        backend: Backend::PgVector,
        prefixes: &["postgres://", "postgresql://"],
        form: "postgres://USER@HOST:PORT/DB?table=T&id=COL&vector=COL",
        about: "a pgvector table in PostgreSQL",
    },
    Scheme {
        backend: Backend::OpenSearch,
        // The engine parser words a wrong URL after the `+`.
        prefixes: &["opensearch+"],
        form: "opensearch+http(s)://HOST:9200/INDEX?field=F",
        about: "an OpenSearch k-NN index",
    },
    Scheme {
        backend: Backend::Elasticsearch,
        // The engine parser words a wrong URL after the `+`.
        prefixes: &["elasticsearch+"],
        form: "elasticsearch+http(s)://HOST:9200/INDEX?field=F",
        about: "an Elasticsearch kNN index",
    },
    Scheme {
        backend: Backend::Qdrant,
        // The engine parser words a wrong URL after the `+`.
        prefixes: &["qdrant+"],
        form: "qdrant+http(s)://HOST:6333/COLLECTION",
        about: "a Qdrant collection",
    },
    Scheme {
        backend: Backend::Chroma,
        prefixes: &["chroma+"],
        form: "chroma+http(s)://HOST:8000/COLLECTION",
        about: "a Chroma collection (`?tenant=T&database=D`)",
    },
    Scheme {
        backend: Backend::Vectorize,
        prefixes: &["vectorize://", "vectorize+"],
        form: "vectorize://ACCOUNT_ID/INDEX",
        about: "a Cloudflare Vectorize index, through its REST query API",
    },
    Scheme {
        backend: Backend::Milvus,
        prefixes: &["milvus+"],
        form: "milvus+http(s)://HOST:19530/COLLECTION",
        about: "a Milvus or Milvus Lite collection, through Milvus' gRPC API (`?db=D&vector=FIELD`)",
    },
];

/// The scheme of `uri` and the length of the prefix that selected it (prefixes compared
/// without regard to case), if it is one of [`SCHEME_LIST`].
pub fn scheme_of(uri: &str) -> Option<(&'static Scheme, usize)> {
    SCHEME_LIST.iter().find_map(|s| {
        s.prefixes
            .iter()
            .find(|p| {
                uri.get(..p.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(p))
            })
            .map(|p| (s, p.len()))
    })
}

/// The schemes, one line each (`  FORM  ABOUT`), for the help of the commands that take a
/// retriever.
pub fn schemes_help() -> String {
    let width = SCHEME_LIST
        .iter()
        .map(|s| s.form.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for s in SCHEME_LIST {
        let pad = width - s.form.chars().count();
        out.push_str(&format!("  {}{}  {}\n", s.form, " ".repeat(pad), s.about));
    }
    out
}

fn schemes_inline() -> String {
    let forms: Vec<&str> = SCHEME_LIST.iter().map(|s| s.form).collect();
    forms.join(", ")
}

/// Opens the retriever a URI names. Live retrievers do not connect yet: the first request
/// (or [`Retriever::prepare`]) does.
pub fn open(uri: &str, options: &Options) -> Result<Box<dyn Retriever>, RetrieveError> {
    let bad = |reason: String| RetrieveError::Uri {
        uri: veredicto_core::redact::url(uri),
        reason,
    };
    let Some((scheme, prefix_len)) = scheme_of(uri) else {
        let scheme = match uri.find("://") {
            Some(i) => &uri[..i],
            None => uri.split(':').next().unwrap_or(uri),
        };
        return Err(bad(format!(
            "unknown scheme `{}`; expected one of {}",
            veredicto_core::redact::short(scheme),
            schemes_inline()
        )));
    };
    if options.body_template.is_some() && scheme.backend != Backend::Http {
        return Err(bad(
            "--body-template applies to http:// and https:// retrievers only".into(),
        ));
    }
    // The part after the scheme, for the schemes that name a path or a command.
    let rest = &uri[prefix_len..];
    match scheme.backend {
        Backend::OwnIndex => {
            if rest.is_empty() {
                return Err(bad("expected `index:DIR`".into()));
            }
            let (dir, mode) = crate::own_index::parse_uri(rest).map_err(bad)?;
            Ok(Box::new(crate::own_index::OwnIndex::open_mode(
                std::path::Path::new(dir),
                mode,
            )?))
        }
        Backend::Fusion => Err(bad(
            "a fusion needs its arms, each given on its own (--arm URI, at least two)".into(),
        )),
        Backend::RunFile => {
            if rest.is_empty() {
                return Err(bad("expected `run:FILE` or `run:-`".into()));
            }
            Ok(Box::new(crate::run_file::RunFile::open(rest)?))
        }
        Backend::Http => Ok(Box::new(crate::http::HttpRetriever::new(uri, options)?)),
        Backend::PgVector => Ok(Box::new(crate::pgvector::PgVector::new(uri, options)?)),
        Backend::OpenSearch | Backend::Elasticsearch | Backend::Qdrant => Ok(Box::new(
            crate::engines::EngineRetriever::new(uri, options)?,
        )),
        Backend::Chroma => Ok(Box::new(crate::chroma::ChromaRetriever::new(uri, options)?)),
        Backend::Vectorize => Ok(Box::new(crate::vectorize::VectorizeRetriever::new(
            uri, options,
        )?)),
        Backend::Milvus => Ok(Box::new(crate::milvus::MilvusRetriever::new(uri, options)?)),
        Backend::Command => Ok(Box::new(crate::cmd::CommandRetriever::new(rest, options)?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(uri: &str) -> String {
        match open(uri, &Options::default()) {
            Ok(_) => String::new(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn every_listed_scheme_is_opened_by_its_backend() {
        for s in SCHEME_LIST {
            for p in s.prefixes {
                for uri in [format!("{p}x"), format!("{}x", p.to_ascii_uppercase())] {
                    let e = error_of(&uri);
                    assert!(!e.contains("unknown scheme"), "{uri}: {e}");
                    assert_eq!(scheme_of(&uri).map(|(s, _)| s.backend), Some(s.backend));
                }
            }
        }
    }

    #[test]
    fn an_unknown_scheme_names_every_listed_one() {
        let e = error_of("ftp://example.invalid/x");
        assert!(e.contains("unknown scheme `ftp`"), "{e}");
        for s in SCHEME_LIST {
            assert!(e.contains(s.form), "{} missing from {e}", s.form);
        }
    }

    #[test]
    fn the_help_lists_each_scheme_on_one_line() {
        let help = schemes_help();
        assert_eq!(help.lines().count(), SCHEME_LIST.len());
        for (line, s) in help.lines().zip(SCHEME_LIST) {
            assert!(line.contains(s.form) && line.ends_with(s.about), "{line}");
        }
    }
}
