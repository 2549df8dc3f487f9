"""The pytest plugin's pass and fail paths, run with pytester."""

from __future__ import annotations

import os

TEST_FILE = '''
import json
from collections import defaultdict
import pytest

RACK = {rack!r}

def read_run(name):
    run = defaultdict(list)
    with open(f"{{RACK}}/{{name}}") as f:
        for line in f:
            qid, _, doc, rank, score, _ = line.split()
            run[qid].append((doc, float(score)))
    by_query = {{}}
    with open(f"{{RACK}}/golden.jsonl") as f:
        for l in f:
            if l.strip():
                c = json.loads(l)
                by_query[c["query"]] = c["id"]
    return lambda q, k: run[by_query[q]][:k]

@pytest.mark.veredicto(golden=f"{{RACK}}/golden.jsonl", corpus=f"{{RACK}}/corpus.jsonl",
                       policy=f"{{RACK}}/policy.toml", notes=f"{{RACK}}/notes.jsonl",
                       as_of="2026-01-01")
def test_{name}(veredicto_exam):
    exam = veredicto_exam(retriever=read_run("{run}"))
    assert exam.accepted
'''


def write(pytester, rack, name, run, file=None):
    text = TEST_FILE.format(rack=str(rack), name=name, run=run)
    pytester.makepyfile(**{file or f"test_{name}": text})


def test_accepting_exam_passes(pytester, rack):
    write(pytester, rack, "accept", "run-accept.trec")
    junit = pytester.path / "reports" / "exam.xml"
    html = pytester.path / "reports" / "exam.html"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--veredicto-junit={junit}",
                                f"--veredicto-html={html}")
    result.assert_outcomes(passed=1)
    assert "<testsuite" in junit.read_text()
    assert "ACCEPT" in html.read_text()


def test_stopping_exam_fails_with_reasons_and_cases(pytester, rack):
    write(pytester, rack, "stop", "run-stop.trec")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*veredicto exam: STOP*",
        "*- mean_quality: mean Quality Score 83.3 < 95*",
        "*failing cases (4):*",
        "*q-viaje-internacional: FAIL recall,structural_noise*silver_viajes_014#14*",
    ])
    dump = os.environ.get("VEREDICTO_PLUGIN_OUTPUT")
    if dump:
        with open(dump, "w", encoding="utf-8") as f:
            f.write(out)


def test_baseline_regression_fails(pytester, rack):
    history = pytester.path / "h.db"
    write(pytester, rack, "accept", "run-accept.trec", file="test_kb")
    args = ["-p", "no:cacheprovider", f"--veredicto-history={history}"]
    pytester.runpytest(*args).assert_outcomes(passed=1)
    # the same suite again against the accepted baseline: no regression, passes
    pytester.runpytest(*args, "--veredicto-baseline=last-accepted").assert_outcomes(passed=1)
    # the knowledge base after the bad ingest: a regression against the accepted run
    write(pytester, rack, "stop", "run-stop.trec", file="test_kb")
    result = pytester.runpytest(*args, "--veredicto-baseline=last-accepted")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*veredicto exam: STOP*", "*regression against the baseline*"])
