"""veredicto.exam over Python retrievers: the same exam as `veredicto exam --run` on the
same results, retrievers of every accepted shape, errors as exceptions, STOP as a value."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import defaultdict

import pytest

import veredicto

AS_OF = "2026-01-01"


def read_run(path):
    """A TREC run as {qid: [(docid, score)]} in rank order."""
    run = defaultdict(list)
    with open(path) as f:
        for line in f:
            qid, _, doc, rank, score, _ = line.split()
            run[qid].append((int(rank), doc, float(score)))
    return {q: [(d, s) for _, d, s in sorted(v)] for q, v in run.items()}


def queries(golden):
    with open(golden) as f:
        return {json.loads(l)["query"]: json.loads(l)["id"] for l in f if l.strip()}


def cli_json(*args):
    out = subprocess.run(
        [sys.executable, "-m", "veredicto", "exam", "--format", "json", "--no-record",
         "--as-of", AS_OF, *args],
        capture_output=True, text=True,
    )
    assert out.returncode in (0, 1), out.stderr
    return out.stdout, out.returncode


@pytest.mark.parametrize("run_name", ["run-stop.trec", "run-accept.trec"])
def test_callable_equals_exam_with_the_run(rack, run_name):
    run = read_run(rack / run_name)
    by_query = queries(rack / "golden.jsonl")

    def retriever(query, k):
        return run[by_query[query]][:k]

    # The run file holds 20 results a query: asked for 20, the callable answers in full (asked
    # for the default 100, the exam would rightly warn that it returned fewer).
    result = veredicto.exam(rack / "golden.jsonl", retriever, corpus=rack / "corpus.jsonl",
                            policy=rack / "policy.toml", notes=rack / "notes.jsonl",
                            as_of=AS_OF, depth=20)
    text, code = cli_json("--golden", str(rack / "golden.jsonl"), "--run", str(rack / run_name),
                          "--corpus", str(rack / "corpus.jsonl"),
                          "--policy", str(rack / "policy.toml"),
                          "--notes", str(rack / "notes.jsonl"))
    ours, theirs = result.to_dict(), json.loads(text)
    # Only the run's name differs: the run file's tag, or the callable's.
    assert ours["run"]["name"] == "python:test_callable_equals_exam_with_the_run.<locals>.retriever"
    ours["run"]["name"] = theirs["run"]["name"]
    assert ours == theirs
    assert result.accepted == (code == 0)
    assert result.verdict == ("accept" if code == 0 else "stop")


def test_run_file_is_byte_identical(rack):
    result = veredicto.exam(rack / "golden.jsonl", str(rack / "run-stop.trec"),
                            corpus=rack / "corpus.jsonl", policy=rack / "policy.toml",
                            as_of=AS_OF)
    text, code = cli_json("--golden", str(rack / "golden.jsonl"),
                          "--run", str(rack / "run-stop.trec"),
                          "--corpus", str(rack / "corpus.jsonl"),
                          "--policy", str(rack / "policy.toml"))
    assert code == 1
    assert result.to_json() == text
    assert not result.accepted and result.verdict == "stop"
    assert result.reasons and result.reasons[0].startswith("mean_quality")
    assert any(l.startswith("q-viaje-internacional: FAIL") and "silver_viajes_014#14" in l
               for l in result.failing_cases)
    assert "STOP" in result.to_html()
    assert "STOP" in result.to_markdown().upper()


class Doc:
    """LangChain's Document shape: page_content and metadata."""

    def __init__(self, id, score):
        self.page_content = "..."
        self.metadata = {"id": id, "score": score}


class Node:
    """LlamaIndex's NodeWithScore shape: .node, .score, .node_id, .metadata."""

    def __init__(self, id, score):
        self.node_id = id
        self.score = score
        self.metadata = {}


@pytest.mark.parametrize("shape", ["pairs", "ids", "dicts", "documents", "nodes", "async", "one-arg"])
def test_result_shapes(rack, shape):
    run = read_run(rack / "run-accept.trec")
    by_query = queries(rack / "golden.jsonl")

    def hits(query, k):
        return run[by_query[query]][:k]

    make = {
        "pairs": lambda q, k: hits(q, k),
        "ids": lambda q, k: [d for d, _ in hits(q, k)],
        "dicts": lambda q, k: [{"id": d, "score": s} for d, s in hits(q, k)],
        "documents": lambda q, k: [Doc(d, s) for d, s in hits(q, k)],
        "nodes": lambda q, k: [Node(d, s) for d, s in hits(q, k)],
    }
    if shape == "async":
        async def retriever(q, k):
            await asyncio.sleep(0)
            return hits(q, k)
    elif shape == "one-arg":
        def retriever(q):
            return hits(q, 100)
    else:
        retriever = make[shape]
    result = veredicto.exam(rack / "golden.jsonl", retriever, corpus=rack / "corpus.jsonl",
                            policy=rack / "policy.toml", as_of=AS_OF)
    assert result.accepted, result.reasons
    assert len(result.cases) == 12


def test_golden_as_dicts(rack):
    with open(rack / "golden.jsonl") as f:
        cases = [json.loads(l) for l in f if l.strip()]
    result = veredicto.exam(cases, str(rack / "run-accept.trec"), corpus=rack / "corpus.jsonl",
                            policy=rack / "policy.toml", as_of=AS_OF)
    assert result.accepted


def test_bad_golden_is_an_input_error(tmp_path):
    golden = tmp_path / "golden.jsonl"
    golden.write_text('{"id": "a", "query": "x", "expected": ["c1"]}\n{"id": "b", "query": 3}\n')
    with pytest.raises(veredicto.InputError) as err:
        veredicto.exam(golden, lambda q, k: [], as_of=AS_OF)
    assert err.value.file == str(golden)
    assert err.value.line == 2
    assert err.value.field
    assert str(golden) in str(err.value)


def test_a_retriever_exception_fails_its_case(rack):
    def retriever(q, k):
        raise RuntimeError("index offline")

    with pytest.raises(veredicto.VeredictoError, match="index offline"):
        veredicto.exam(rack / "golden.jsonl", retriever, as_of=AS_OF)


def test_history_records_the_run(rack, tmp_path):
    history = tmp_path / "h.db"
    result = veredicto.exam(rack / "golden.jsonl", str(rack / "run-accept.trec"),
                            corpus=rack / "corpus.jsonl", policy=rack / "policy.toml",
                            history=history, label="v1", as_of=AS_OF)
    assert result.run_id and history.exists()
    again = veredicto.exam(rack / "golden.jsonl", str(rack / "run-stop.trec"),
                           corpus=rack / "corpus.jsonl", policy=rack / "policy.toml",
                           history=history, baseline="last-accepted",
                           fail_on_regression=True, as_of=AS_OF)
    assert not again.accepted


def test_langchain_retriever(rack):
    core = pytest.importorskip("langchain_core.retrievers")
    from langchain_core.documents import Document

    run = read_run(rack / "run-accept.trec")
    by_query = queries(rack / "golden.jsonl")

    class RunRetriever(core.BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager):
            return [Document(page_content="...", metadata={"id": d, "score": s})
                    for d, s in run[by_query[query]]]

    result = veredicto.exam(rack / "golden.jsonl", RunRetriever(), corpus=rack / "corpus.jsonl",
                            policy=rack / "policy.toml", as_of=AS_OF)
    assert result.accepted


def test_history_runs_show_trends_compare(rack, tmp_path):
    history = tmp_path / "h.db"
    for run in ("run-accept.trec", "run-stop.trec"):
        veredicto.exam(rack / "golden.jsonl", str(rack / run), corpus=rack / "corpus.jsonl",
                       policy=rack / "policy.toml", history=history, as_of=AS_OF)
    h = veredicto.History(history)
    runs = h.runs()
    assert [r["verdict"] for r in runs] == ["stop", "accept"]
    assert h.show("latest")["meta"]["id"] == runs[0]["id"]
    assert [t["verdict"] for t in h.trends()] == ["accept", "stop"]
    c = veredicto.compare(history, "latest", "previous")
    assert c["comparison"]["regression"] is True


def test_own_index_uri_loads_the_query_model_as_the_command_does(rack, tmp_path):
    """`index:DIR` needs query vectors: the exam loads the model as `veredicto exam` does,
    and the JSON is the command's bytes."""
    import pathlib

    model = pathlib.Path(__file__).resolve().parents[3] / "models" / "all-MiniLM-L6-v2"
    assert model.is_dir(), "run scripts/fetch-model.sh first"
    index = tmp_path / "kb"
    out = subprocess.run(
        [sys.executable, "-m", "veredicto", "ingest", "--corpus", str(rack / "corpus.jsonl"),
         "--index", str(index), "--model", str(model), "--time", "2026-01-01T00:00:00Z"],
        capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stderr
    result = veredicto.exam(rack / "golden.jsonl", f"index:{index}",
                            corpus=rack / "corpus.jsonl", policy=rack / "policy.toml",
                            as_of=AS_OF)
    text, code = cli_json("--golden", str(rack / "golden.jsonl"), "--index", str(index),
                          "--corpus", str(rack / "corpus.jsonl"),
                          "--policy", str(rack / "policy.toml"))
    assert result.to_json() == text
    assert result.accepted == (code == 0)
    # A model named explicitly is the one used: the same as the index's here.
    again = veredicto.exam(rack / "golden.jsonl", f"index:{index}", model=str(model),
                           corpus=rack / "corpus.jsonl", policy=rack / "policy.toml",
                           as_of=AS_OF)
    assert again.to_json() == text


def test_arms_given_without_a_fusion_are_refused_as_on_the_command_line(rack):
    with pytest.raises(veredicto.VeredictoError, match="fusion"):
        veredicto.exam(rack / "golden.jsonl", "fusion:rrf?k=60", as_of=AS_OF)
