//! A new question's chunks searched through the project's source: an own index built from
//! the rack example with the MiniLM model (kept open between searches), a source that cannot
//! be opened (the word search answers, with the error line), and no source at all.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::golden::{enc, request};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn minilm() -> PathBuf {
    let m = workspace().join("models/all-MiniLM-L6-v2");
    assert!(
        m.join("config.json").is_file(),
        "{} missing: run scripts/fetch-model.sh",
        m.display()
    );
    m
}

/// The rack example's golden set and corpus in `dir`.
fn rack(dir: &Path) {
    for f in ["golden.jsonl", "corpus.jsonl"] {
        std::fs::copy(workspace().join("examples/rack").join(f), dir.join(f)).unwrap();
    }
}

/// The rack corpus ingested into `dir/kb` with MiniLM, as `veredicto ingest` does.
pub(crate) fn index(dir: &Path) -> PathBuf {
    let kb = dir.join("kb");
    let model = minilm();
    let embedder = veredicto_app::models::load_embedder(
        &veredicto_app::models::EmbedderSpec {
            model: Some(model.display().to_string()),
            ..Default::default()
        },
        veredicto_app::models::ModelPlaces {
            env: &veredicto_app::Env::default(),
            model: None,
        },
        None,
        None,
        None,
    )
    .unwrap();
    let prepared = veredicto_app::ingest::prepare(veredicto_app::ingest::IngestRequest {
        corpus: dir.join("corpus.jsonl"),
        index: kb.clone(),
        time: "2026-01-01T00:00:00Z".into(),
        ..Default::default()
    })
    .unwrap();
    veredicto_app::ingest::ingest(
        prepared,
        Some(embedder.as_ref()),
        veredicto_app::Events::silent(),
    )
    .unwrap();
    kb
}

/// The settings of a project in `dir` whose source is `source`.
pub(crate) fn settings(
    dir: &Path,
    source: Option<veredicto_formats::config::Source>,
) -> veredicto_app::Settings {
    veredicto_app::Settings::resolve(
        &veredicto_app::Overrides {
            golden: Some(dir.join("golden.jsonl")),
            corpus: Some(dir.join("corpus.jsonl")),
            source,
            history: Some(dir.join("history.sqlite").display().to_string()),
            ..Default::default()
        },
        None,
        veredicto_app::Env::default(),
        dir,
    )
}

fn serve(dir: &Path, source: Option<veredicto_formats::config::Source>) -> String {
    let bound = veredicto_web::bind(
        "127.0.0.1",
        0,
        veredicto_web::Config {
            golden: dir.join("golden.jsonl"),
            corpus: Some(dir.join("corpus.jsonl")),
            token: None,
            identity_header: Some("x-reviewer".into()),
            documents: None,
            signals: None,
            clock: || "2026-01-01T00:00:00Z".to_owned(),
            history: veredicto_app::HistorySpec::default_at(
                dir.join("history.sqlite").display().to_string(),
            ),
            audit: None,
            exam: None,
        },
    )
    .unwrap();
    let bound = match source {
        Some(s) => bound.search_through(veredicto_web::SearchSource {
            settings: settings(dir, Some(s)),
            net: veredicto_app::source::Net::default(),
        }),
        None => bound,
    };
    let url = bound.url().to_owned();
    std::thread::spawn(move || bound.serve());
    url.trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned()
}

fn text_of(page: &str, id: &str) -> String {
    let key = format!("id=\"{id}\">");
    let at = page
        .find(&key)
        .unwrap_or_else(|| panic!("no #{id} in {page}"))
        + key.len();
    page[at..at + page[at..].find("</p>").unwrap()].to_owned()
}

#[test]
fn a_question_is_searched_through_the_own_index_with_the_model_loaded_once() {
    let dir = tempfile::tempdir().unwrap();
    rack(dir.path());
    let kb = index(dir.path());
    let addr = serve(
        dir.path(),
        Some(veredicto_formats::config::Source::Index(kb.clone())),
    );
    let question = "¿Cuántos días de asuntos propios corresponden?";
    let path = format!("/golden/new?id=n1&query={}", enc(question));
    let t = Instant::now();
    let (st, first) = request(&addr, "GET", &path, &[], "");
    let first_ms = t.elapsed().as_secs_f64() * 1e3;
    assert_eq!(st, 200, "{first}");
    let searched = text_of(&first, "searched");
    assert!(
        searched.contains("Searched through the project&#39;s source")
            || searched.contains("Searched through the project's source"),
        "{searched}"
    );
    assert!(searched.contains("index:"), "{searched}");
    // The case's expected chunks are among the index's 20 best, each with its rank, its
    // cosine score and its fields from the corpus file.
    for id in ["silver_art_012", "gold_003"] {
        assert!(first.contains(&format!("value=\"{id}\"")), "{id}: {first}");
    }
    assert!(first.contains("<label for=\"c1\">1. "), "{first}");
    assert!(first.contains("domain: laboral"), "{first}");
    assert!(!first.contains("not in the corpus file"), "{first}");
    // The same order as `veredicto search` gives: the index searched with the query model.
    let t = Instant::now();
    let (st, again) = request(&addr, "GET", &path, &[], "");
    let again_ms = t.elapsed().as_secs_f64() * 1e3;
    assert_eq!(st, 200);
    let hits = |page: &str| -> Vec<String> {
        page.match_indices("name=\"expected\" id=\"c")
            .map(|(at, _)| {
                let v = &page[at..];
                let v = &v[v.find("value=\"").unwrap() + 7..];
                v[..v.find('"').unwrap()].to_owned()
            })
            .collect()
    };
    assert_eq!(hits(&first), hits(&again));
    assert_eq!(hits(&first).len(), 20);
    eprintln!(
        "search through the index (rack, MiniLM): first {first_ms:.0} ms (opens the index, loads the model), then {again_ms:.0} ms"
    );
    assert!(
        again_ms < first_ms,
        "the second search reuses the model: {again_ms:.0} ms vs {first_ms:.0} ms"
    );
}

#[test]
fn a_source_that_cannot_be_opened_or_none_falls_back_to_the_word_search_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    rack(dir.path());
    let missing = dir.path().join("no-such-index");
    let addr = serve(
        dir.path(),
        Some(veredicto_formats::config::Source::Index(missing)),
    );
    let path = format!("/golden/new?id=n1&query={}", enc("días de asuntos propios"));
    let (st, page) = request(&addr, "GET", &path, &[], "");
    assert_eq!(st, 200, "{page}");
    assert!(
        text_of(&page, "searched").contains("the project&#39;s source could not be searched")
            || text_of(&page, "searched").contains("the project's source could not be searched"),
        "{page}"
    );
    assert!(page.contains("role=\"alert\">"), "{page}");
    assert!(
        page.contains("no-such-index"),
        "the error line names it: {page}"
    );
    assert!(page.contains("value=\"silver_art_012\""), "{page}");
    // A run file answers only its own questions: the word search, saying why.
    let run = dir.path().join("run.trec");
    std::fs::copy(workspace().join("examples/rack/run-accept.trec"), &run).unwrap();
    let addr = serve(
        dir.path(),
        Some(veredicto_formats::config::Source::Run(run)),
    );
    let (_, page) = request(&addr, "GET", &path, &[], "");
    assert!(
        page.contains("answers only the questions it holds"),
        "{page}"
    );
    // No source: the word search.
    let addr = serve(dir.path(), None);
    let (_, page) = request(&addr, "GET", &path, &[], "");
    assert!(
        text_of(&page, "searched").contains("the project names no source"),
        "{page}"
    );
    assert!(page.contains("value=\"silver_art_012\""), "{page}");
}
