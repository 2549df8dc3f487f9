//! `search --documents`: each result shows where it sits in its document, from the
//! retriever's answer, the chunk's offsets (a corpus, or the index's records) or its text.

use crate::common;
use common::*;

const DOCS: &str = concat!(
    "{\"id\":\"D1\",\"text\":\"The fee is computed monthly. It is 5 % of the net income. Payment is due on the first day.\"}\n",
    "{\"id\":\"D2\",\"text\":\"Holidays last 22 working days. Extra days need approval.\"}\n",
);

fn json(o: &std::process::Output) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    serde_json::from_str(&stdout(o)).unwrap()
}

#[test]
fn search_over_a_command_shows_each_results_span() {
    let dir = tempfile::tempdir().unwrap();
    let docs = write(dir.path(), "docs.jsonl", DOCS);
    // `a` says where it sits; `b` does not, and the corpus (with the documents) locates it
    // by its text; `z` is
    // nowhere.
    let corpus = write(
        dir.path(),
        "corpus.jsonl",
        "{\"id\":\"b\",\"doc_id\":\"D2\",\"text\":\"Extra days need approval.\"}\n",
    );
    let script = write(
        dir.path(),
        "search.sh",
        r#"while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/^{"id":\([0-9]*\),.*/\1/p')
  printf '{"id": %s, "results": [{"id": "a", "score": 0.9, "doc_id": "D1", "start": 29, "end": 57}, {"id": "b", "score": 0.5}, {"id": "z", "score": 0.1}]}\n' "$id"
done
"#,
    );
    let uri = format!("cmd:sh {script}");
    let base = ["search", "--retriever", &uri, "fee", "-k", "3"];
    let mut args = base.to_vec();
    args.extend(["--documents", &docs, "--corpus", &corpus, "--json"]);
    let v = json(&veredicto_in(dir.path(), &args));
    let r = &v["results"];
    assert_eq!(
        r[0]["span"],
        serde_json::json!({"doc_id": "D1", "start": 29, "end": 57, "from": "retriever"})
    );
    assert_eq!(
        r[1]["span"],
        serde_json::json!({"doc_id": "D2", "start": 31, "end": 56, "from": "corpus"})
    );
    assert!(r[2]["span"].is_null());
    // The human format: one column more.
    let mut args = base.to_vec();
    args.extend(["--documents", &docs, "--corpus", &corpus]);
    let o = veredicto_in(dir.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("a  D1:29-57"), "{text}");
    assert!(text.contains("b  D2:31-56"), "{text}");
    assert!(text.contains("z  (not located)"), "{text}");
    // Without --documents nothing changes.
    let v = json(&veredicto_in(
        dir.path(),
        &[&base[..], &["--json"]].concat(),
    ));
    assert!(v["results"][0].get("span").is_none());
    // A span beyond its document is an error naming the result.
    let short = write(
        dir.path(),
        "short.jsonl",
        "{\"id\":\"D1\",\"text\":\"The fee.\"}\n",
    );
    let mut args = base.to_vec();
    args.extend(["--documents", &short]);
    let o = veredicto_in(dir.path(), &args);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("result 1 (`a`): its span 29..57 (retriever) does not fit document `D1` of 8 characters"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn search_over_an_index_shows_the_spans_its_records_keep() {
    let dir = tempfile::tempdir().unwrap();
    let docs = write(dir.path(), "docs.jsonl", DOCS);
    let corpus = dir.path().join("corpus.jsonl");
    let o = veredicto(&[
        "chunk",
        "--documents",
        &docs,
        "--out",
        corpus.to_str().unwrap(),
        "--size",
        "40",
        "--split",
        "sentences",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let model = workspace().join("models/all-MiniLM-L6-v2");
    let index = dir.path().join("idx");
    let o = veredicto(&[
        "ingest",
        "--corpus",
        corpus.to_str().unwrap(),
        "--index",
        index.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&veredicto(&[
        "search",
        "--index",
        index.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
        "--documents",
        &docs,
        "how many holidays",
        "-k",
        "5",
        "--json",
    ]));
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 5);
    for r in results {
        // Each chunk's ID is DOC:START-END; its span says the same, from its record.
        let id = r["id"].as_str().unwrap();
        let span = &r["span"];
        assert_eq!(
            format!(
                "{}:{}-{}",
                span["doc_id"].as_str().unwrap(),
                span["start"],
                span["end"]
            ),
            id
        );
        assert_eq!(span["from"], "corpus");
    }
    assert_eq!(results[0]["id"], "D2:0-31", "{v}");
}
