//! One fuzz target per parser: how its input is laid out on disk, which public function
//! reads it, and the valid files its mutants start from.

use crate::bundle;
use std::path::{Path, PathBuf};
use veredicto_grounding as grounding;
use veredicto_index as index;

/// How a target's input bytes reach the parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Written to one file with this name.
    File(&'static str),
    /// A [`bundle`] unpacked into a folder.
    Folder,
    /// An uncompressed tar archive, gzip-compressed by the harness into this file (so that
    /// mutations reach the tar headers rather than the deflate stream).
    Gzipped(&'static str),
}

/// A parser under test.
pub struct Target {
    pub name: &'static str,
    pub layout: Layout,
    /// Reads the input at `path`; `Err` carries the error's message.
    pub run: fn(&Path) -> Result<(), String>,
    /// Field names, keywords and values the mutator splices in.
    pub dictionary: &'static [&'static str],
    /// The input is JSON Lines (the mutator may generate object lines).
    pub jsonl: bool,
}

fn msg<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

fn golden(p: &Path) -> Result<(), String> {
    veredicto_formats::golden::read_golden(p)
        .map(drop)
        .map_err(msg)
}
fn corpus(p: &Path) -> Result<(), String> {
    veredicto_formats::corpus::read_corpus_lines(p)
        .map(drop)
        .map_err(msg)
}
fn run(p: &Path) -> Result<(), String> {
    veredicto_formats::run::read_run(p).map(drop).map_err(msg)
}
fn qrels(p: &Path) -> Result<(), String> {
    veredicto_formats::trec::read_qrels(p)
        .map(drop)
        .map_err(msg)
}
fn policy(p: &Path) -> Result<(), String> {
    veredicto_formats::policy::read_policy(p)
        .map(drop)
        .map_err(msg)
}
fn notes(p: &Path) -> Result<(), String> {
    veredicto_formats::notes::read_notes(p)
        .map(drop)
        .map_err(msg)
}
fn cases(p: &Path) -> Result<(), String> {
    grounding::load_cases(p).map(drop).map_err(msg)
}
fn reviews(p: &Path) -> Result<(), String> {
    grounding::read_reviews(p).map(drop).map_err(msg)
}
fn suggestions(p: &Path) -> Result<(), String> {
    grounding::read_suggestions(p).map(drop).map_err(msg)
}
fn grounding_policy(p: &Path) -> Result<(), String> {
    grounding::load_policy(p).map(drop).map_err(msg)
}
fn sources(p: &Path) -> Result<(), String> {
    grounding::load_sources(p).map(drop).map_err(msg)
}

/// Opens the index, then does what commands do with an opened index: hash every file,
/// rehydrate every record and run one search.
fn index_open(p: &Path) -> Result<(), String> {
    let idx = index::Index::open(p).map_err(msg)?;
    idx.verify().map_err(msg)?;
    for c in idx.chunks() {
        c.record().map_err(msg)?;
    }
    let dim = idx.dimension();
    if dim > 1 << 16 {
        // A query of that many components would be the harness's allocation, not the index's.
        return Ok(());
    }
    let mut q = vec![0.0f32; dim];
    if let Some(x) = q.first_mut() {
        *x = 1.0;
    }
    idx.search(&q, 5, None).map(drop).map_err(msg)
}

/// Reads the package, then checks it against its manifest (what `audit verify` does).
fn package(p: &Path) -> Result<(), String> {
    let files = grounding::read_package(p).map_err(msg)?;
    let _differences = grounding::verify_files(&files);
    Ok(())
}

const GOLDEN_WORDS: &[&str] = &[
    "\"id\"",
    "\"query\"",
    "\"expected\"",
    "\"top_k\"",
    "\"domain\"",
    "\"tags\"",
    "\"gold\"",
    "\"query_vector\"",
    "\"filters\"",
    "id",
    "query",
    "expected",
    "top_k",
    "domain",
    "tags",
    "gold",
    "query_vector",
];
const BEIR_WORDS: &[&str] = &[
    "\"_id\"",
    "\"text\"",
    "\"title\"",
    "query-id\tcorpus-id\tscore",
    "\t",
    "\t1",
    "\t-1",
    "_id",
    "text",
    "queries.jsonl",
    "qrels/test.tsv",
];
const CORPUS_WORDS: &[&str] = &[
    "\"id\"",
    "\"_id\"",
    "\"doc_id\"",
    "\"text\"",
    "\"title\"",
    "\"representation\"",
    "\"domain\"",
    "\"labels\"",
    "\"facets\"",
    "\"valid_from\"",
    "\"valid_to\"",
    "\"ingest_batch\"",
    "\"vector\"",
    "id",
    "doc_id",
    "text",
    "representation",
    "labels",
    "facets",
    "valid_from",
    "valid_to",
    "ingest_batch",
    "vector",
];
const TREC_WORDS: &[&str] = &[
    " Q0 ", "\tQ0\t", " 1 ", " 0 ", " -1 ", "STANDARD", "#", "\t", " ", "1e10", "-0.0",
];
const RUN_JSONL_WORDS: &[&str] = &[
    "\"query_id\"",
    "\"results\"",
    "\"id\"",
    "\"score\"",
    "query_id",
    "results",
    "id",
    "score",
];
const POLICY_WORDS: &[&str] = &[
    "top_k",
    "recall_floor",
    "noise_ceiling",
    "measures",
    "[domains.x]\n",
    "[grounding]\n",
    "[[a]]\n",
    " = ",
    "\"nDCG@10\"",
    "\"R@100\"",
    "\"rbp.p=1.5\"",
    "quality_floor",
    "gold_floor",
    "min_cases",
    "min_citation_presence",
    "min_support",
    "min_coverage",
    "min_document_recall",
    "recall_k",
];
const NOTES_WORDS: &[&str] = &["\"id\"", "\"note\"", "id", "note"];
const CASE_WORDS: &[&str] = &[
    "schema",
    "veredicto-grounding/1",
    "cases",
    "id",
    "query",
    "snapshot",
    "sources",
    "version",
    "uri",
    "passages",
    "text",
    "valid_sources",
    "retrieval",
    "position",
    "source",
    "passage",
    "required_facts",
    "unanswerable",
    "answers",
    "citations",
    "claims",
    "facts",
    "association",
    "verdict",
    "reason",
    "support",
    "diagnosis",
    "reviewer",
    "attached",
    "supported",
    "partially_supported",
    "unsupported",
    "not_evaluable",
    "sha256:",
];
const REVIEW_WORDS: &[&str] = &[
    "\"case\"",
    "\"answer\"",
    "\"claim\"",
    "\"support\"",
    "\"reason\"",
    "\"reviewer\"",
    "\"time\"",
    "\"diagnosis\"",
    "\"suggestion\"",
    "\"label\"",
    "\"probabilities\"",
    "\"confidence\"",
    "\"method\"",
    "supported",
    "unsupported",
    "partially_supported",
    "not_evaluable",
    "entailment",
    "neutral",
    "contradiction",
];
const INDEX_WORDS: &[&str] = &[
    "\"format\"",
    "\"format_version\"",
    "\"count\"",
    "\"dimension\"",
    "\"batches\"",
    "\"files\"",
    "\"bytes\"",
    "\"sha256\"",
    "\"model\"",
    "\"text_hash\"",
    "\"batch\"",
    "\"record\"",
    "\"metric\"",
    "\"dtype\"",
    "\"row_order\"",
    "sha256:",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "vectors.f32",
    "chunks.jsonl",
    "chunks.bin",
    "records.jsonl",
    "manifest.json",
    "\u{0}\u{0}\u{c0}\u{7f}",
];
const PACKAGE_WORDS: &[&str] = &[
    "manifest.json",
    "manifest.sha256",
    "\"files\"",
    "\"path\"",
    "\"bytes\"",
    "\"sha256\"",
    "\"missing\"",
    "veredicto-audit-package/1",
    "../",
    "/dev/zero",
    "ustar",
    "ustar  ",
    "././@LongLink",
    "cases/",
];

/// Every target, in the order they are run and reported.
pub const TARGETS: &[Target] = &[
    Target {
        name: "golden-jsonl",
        layout: Layout::File("golden.jsonl"),
        run: golden,
        dictionary: GOLDEN_WORDS,
        jsonl: true,
    },
    Target {
        name: "golden-beir",
        layout: Layout::Folder,
        run: golden,
        dictionary: BEIR_WORDS,
        jsonl: true,
    },
    Target {
        name: "corpus",
        layout: Layout::File("corpus.jsonl"),
        run: corpus,
        dictionary: CORPUS_WORDS,
        jsonl: true,
    },
    Target {
        name: "run-trec",
        layout: Layout::File("run.trec"),
        run,
        dictionary: TREC_WORDS,
        jsonl: false,
    },
    Target {
        name: "run-jsonl",
        layout: Layout::File("run.jsonl"),
        run,
        dictionary: RUN_JSONL_WORDS,
        jsonl: true,
    },
    Target {
        name: "qrels",
        layout: Layout::File("qrels.txt"),
        run: qrels,
        dictionary: TREC_WORDS,
        jsonl: false,
    },
    Target {
        name: "policy",
        layout: Layout::File("policy.toml"),
        run: policy,
        dictionary: POLICY_WORDS,
        jsonl: false,
    },
    Target {
        name: "notes",
        layout: Layout::File("notes.jsonl"),
        run: notes,
        dictionary: NOTES_WORDS,
        jsonl: true,
    },
    Target {
        name: "cases-yaml",
        layout: Layout::File("cases.yaml"),
        run: cases,
        dictionary: CASE_WORDS,
        jsonl: false,
    },
    Target {
        name: "cases-json",
        layout: Layout::File("cases.json"),
        run: cases,
        dictionary: CASE_WORDS,
        jsonl: false,
    },
    Target {
        name: "review-log",
        layout: Layout::File("cases.yaml.reviews.jsonl"),
        run: reviews,
        dictionary: REVIEW_WORDS,
        jsonl: true,
    },
    Target {
        name: "suggestion-log",
        layout: Layout::File("cases.yaml.suggestions.jsonl"),
        run: suggestions,
        dictionary: REVIEW_WORDS,
        jsonl: true,
    },
    Target {
        name: "grounding-policy",
        layout: Layout::File("policy.toml"),
        run: grounding_policy,
        dictionary: POLICY_WORDS,
        jsonl: false,
    },
    Target {
        name: "sources",
        layout: Layout::File("sources.yaml"),
        run: sources,
        dictionary: CASE_WORDS,
        jsonl: false,
    },
    Target {
        name: "index",
        layout: Layout::Folder,
        run: index_open,
        dictionary: INDEX_WORDS,
        jsonl: false,
    },
    Target {
        name: "package-targz",
        layout: Layout::File("package.tar.gz"),
        run: package,
        dictionary: PACKAGE_WORDS,
        jsonl: false,
    },
    Target {
        name: "package-tar",
        layout: Layout::Gzipped("package.tar.gz"),
        run: package,
        dictionary: PACKAGE_WORDS,
        jsonl: false,
    },
    Target {
        name: "package-dir",
        layout: Layout::Folder,
        run: package,
        dictionary: PACKAGE_WORDS,
        jsonl: false,
    },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// Writes `input` where `target` reads it, inside `work` (an existing, private folder), and
/// returns the path to give the parser.
pub fn place(target: &Target, input: &[u8], work: &Path) -> std::io::Result<PathBuf> {
    match target.layout {
        Layout::File(name) => {
            let path = work.join(name);
            std::fs::write(&path, input)?;
            Ok(path)
        }
        Layout::Gzipped(name) => {
            let path = work.join(name);
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            std::io::Write::write_all(&mut gz, input)?;
            std::fs::write(&path, gz.finish()?)?;
            Ok(path)
        }
        Layout::Folder => {
            let dir = work.join("in");
            if dir.exists() {
                std::fs::remove_dir_all(&dir)?;
            }
            std::fs::create_dir(&dir)?;
            bundle::unpack(&bundle::decode(input), &dir)?;
            Ok(dir)
        }
    }
}

/// The repository root (seed files are read from `examples/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(rel: &str) -> Vec<u8> {
    let path = repo_root().join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("seed file {}: {e}", path.display()))
}

fn seed_file(rel: &str) -> Vec<u8> {
    read(&format!("crates/fuzz/seeds/{rel}"))
}

/// Valid inputs for `target`: files from `examples/`, excerpts of the shared datasets kept
/// in `crates/fuzz/seeds/`, and (for indexes, packages, logs) files built with the
/// libraries' own writers from those examples. Deterministic.
pub fn seeds(target: &Target) -> Vec<Vec<u8>> {
    match target.name {
        "golden-jsonl" => vec![
            read("examples/rack/golden.jsonl"),
            b"{\"id\": 1, \"query\": \"q\", \"expected\": [\"a\", 2], \"top_k\": 3, \"gold\": true, \"query_vector\": [0.5, -1e-3]}\n".to_vec(),
        ],
        "golden-beir" => vec![bundle::encode(&[
            ("queries.jsonl".into(), seed_file("beir/queries.jsonl")),
            ("qrels/test.tsv".into(), seed_file("beir/qrels/test.tsv")),
        ])],
        "corpus" => vec![
            read("examples/rack/corpus.jsonl"),
            seed_file("beir-corpus.jsonl"),
            b"{\"id\": \"c1\", \"text\": \"t\", \"vector\": [0.1, 0.2, -0.3], \"facets\": {\"k\": 1}, \"valid_from\": \"2024-01-01\", \"labels\": [\"L\"]}\n".to_vec(),
        ],
        "run-trec" => vec![
            read("examples/rack/run-accept.trec"),
            seed_file("results.test"),
        ],
        "run-jsonl" => vec![run_jsonl_seed()],
        "qrels" => vec![seed_file("qrels.test"), seed_file("qrels.comment.test")],
        "policy" => vec![read("examples/rack/policy.toml")],
        "notes" => vec![read("examples/rack/notes.jsonl")],
        "cases-yaml" => vec![
            read("examples/grounding/q017.yaml"),
            read("examples/grounding/p7.yaml"),
            read("examples/grounding/q017-replay.yaml"),
        ],
        "cases-json" => vec![cases_json_seed("examples/grounding/q017.yaml")],
        "review-log" => vec![review_seed()],
        "suggestion-log" => vec![suggestion_seed()],
        "grounding-policy" => vec![
            read("examples/grounding/policy.toml"),
            read("examples/rack/policy.toml"),
        ],
        "sources" => vec![read("examples/grounding/q017-sources-v5.yaml")],
        "index" => vec![index_seed()],
        "package-targz" => vec![package_targz_seed()],
        "package-tar" => vec![gunzip(&package_targz_seed())],
        "package-dir" => {
            let files = package_seed();
            vec![bundle::encode(
                &files.into_iter().collect::<Vec<(String, Vec<u8>)>>(),
            )]
        }
        other => panic!("no seeds for target {other}"),
    }
}

fn run_jsonl_seed() -> Vec<u8> {
    let run = veredicto_formats::trec::parse_run(
        &read("examples/rack/run-accept.trec"),
        Path::new("run-accept.trec"),
    )
    .expect("example run parses");
    let mut out = String::new();
    for q in run.queries.iter().take(4) {
        let results: Vec<serde_json::Value> = q
            .docs
            .iter()
            .take(10)
            .map(|d| serde_json::json!({"id": d.docno, "score": d.score}))
            .collect();
        out.push_str(&serde_json::json!({"query_id": q.qid, "results": results}).to_string());
        out.push('\n');
    }
    out.push_str(
        "{\"query_id\": 7, \"results\": [{\"id\": 3}, {\"id\": \"x\", \"score\": null}]}\n",
    );
    out.into_bytes()
}

fn cases_json_seed(rel: &str) -> Vec<u8> {
    let path = repo_root().join(rel);
    let (set, _) = grounding::load_cases(&path).expect("example cases load");
    let mut b = serde_json::to_vec_pretty(&set).expect("cases serialise");
    b.push(b'\n');
    b
}

fn example_cases() -> (grounding::CaseSet, Vec<u8>) {
    grounding::load_cases(&repo_root().join("examples/grounding/q017.yaml"))
        .expect("example cases load")
}

fn review_records() -> Vec<grounding::ReviewRecord> {
    let (set, _) = example_cases();
    let verdicts = [
        grounding::Support::Supported,
        grounding::Support::Unsupported,
        grounding::Support::PartiallySupported,
        grounding::Support::NotEvaluable,
    ];
    let mut out = Vec::new();
    for (i, claim) in set.cases[0].answers[0].claims.iter().enumerate() {
        let r = grounding::new_review(
            &set,
            &claim.id,
            verdicts[i % verdicts.len()],
            "checked against the cited passage",
            "fuzz-seed",
            "2025-01-02T03:04:05Z",
            (i % 2 == 0).then(|| "evidence use".to_string()),
        )
        .expect("example claim");
        out.push(r);
    }
    out
}

fn review_seed() -> Vec<u8> {
    let mut out = Vec::new();
    for r in review_records() {
        out.extend_from_slice(serde_json::to_string(&r).expect("record").as_bytes());
        out.push(b'\n');
    }
    out
}

fn suggestion_seed() -> Vec<u8> {
    let (set, _) = example_cases();
    let mut out = String::new();
    for (i, claim) in set.cases[0].answers[0].claims.iter().enumerate() {
        let label = ["entailment", "neutral", "contradiction"][i % 3];
        let line = serde_json::json!({
            "case": set.cases[0].id,
            "answer": set.cases[0].answers[0].id,
            "claim": claim.id,
            "suggestion": grounding::label_to_support(label).map(|s| s.as_str()),
            "label": label,
            "probabilities": {"entailment": 0.7, "neutral": 0.2, "contradiction": 0.1},
            "model": "fuzz-seed",
            "method": grounding::NLI_METHOD,
            "time": "2025-01-02T03:04:05Z",
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out.into_bytes()
}

fn package_seed() -> grounding::Files {
    let (set, cases_bytes) = example_cases();
    let reviews = review_records();
    let reviews_bytes = review_seed();
    grounding::build_package(&grounding::PackageInputs {
        cases_name: "q017.yaml",
        cases_bytes: &cases_bytes,
        set: &set,
        reviews_bytes: Some(&reviews_bytes),
        reviews: &reviews,
        relevance: &[],
        citation_marks: &[],
        relevance_suggestions: &[],
        suggestions_bytes: None,
        suggestions: &[],
        run: None,
        notes: None,
        tool_version: "0.0.0-fuzz",
        created: Some("2025-01-02T03:04:05Z"),
        comparison: None,
    })
    .expect("example package builds")
}

fn package_targz_seed() -> Vec<u8> {
    grounding::tar_gz(&package_seed()).expect("package archives")
}

fn gunzip(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(b), &mut out).expect("gunzip");
    out
}

fn sha256(b: &[u8]) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(b);
    d.iter().map(|x| format!("{x:02x}")).collect()
}

/// A small real index (12 chunks of the rack example, dimension 8) written by the index's
/// own ingest, as a bundle of its four files.
fn index_seed() -> Vec<u8> {
    let corpus = veredicto_formats::corpus::read_corpus_lines(
        &repo_root().join("examples/rack/corpus.jsonl"),
    )
    .expect("example corpus");
    let dim = 8;
    let chunks: Vec<index::ChunkInput> = corpus
        .iter()
        .take(12)
        .map(|l| index::ChunkInput {
            id: l.chunk.id.clone(),
            text: l.chunk.text.clone().unwrap_or_default(),
            meta: index::ChunkMeta {
                domain: l.chunk.domain.clone(),
                labels: l.chunk.labels.clone(),
                facets: l.chunk.facets.clone().into_iter().collect(),
                valid_from: l.chunk.valid_from.clone(),
                valid_to: l.chunk.valid_to.clone(),
            },
            record: Some(serde_json::Value::Object(l.raw.clone())),
        })
        .collect();
    let model = serde_json::json!({"name": "fuzz-seed", "dimension": dim});
    let settings = index::IngestSettings {
        model: index::ModelFingerprint {
            hash: format!("sha256:{}", sha256(model.to_string().as_bytes())),
            value: model,
        },
        dimension: dim,
        field: index::EmbeddedField::Text,
        full_rebuild: false,
    };
    let plan = index::Plan::new(None, chunks, settings).expect("seed plan");
    let vectors: Vec<Vec<f32>> = (0..plan.embed_count())
        .map(|i| {
            (0..dim)
                .map(|j| ((i * 7 + j * 3) % 11) as f32 - 5.0 + 0.5)
                .collect()
        })
        .collect();
    let dir = std::env::temp_dir().join(format!("veredicto-fuzz-seed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let batch = index::BatchInfo {
        name: "seed".into(),
        time: "2025-01-02T03:04:05Z".into(),
        corpus_hash: format!("sha256:{}", "cc".repeat(32)),
    };
    plan.apply(&vectors, &batch, &dir).expect("seed index");
    let mut files = Vec::new();
    for name in [
        "manifest.json",
        "chunks.bin",
        "records.jsonl",
        "vectors.f32",
    ] {
        files.push((
            name.to_string(),
            std::fs::read(dir.join(name)).expect("index file"),
        ));
    }
    let _ = std::fs::remove_dir_all(&dir);
    bundle::encode(&files)
}
