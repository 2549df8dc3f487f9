"""RelevanceEvaluator against pytrec_eval (pytrec-eval-terrier from PyPI, the oracle) on
random runs with ties and graded judgements; veredicto.evaluate against `veredicto trec`."""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys

import pytest

import veredicto

# The oracle: scripts/test-python.sh installs it (a missing oracle fails, never skips).
import pytrec_eval  # noqa: E402

# trec_eval 10.0 changed interpolated precision; pytrec_eval still computes it as
# trec_eval 9 did (docs/python.md). Every other measure must agree.
DIFFERS = ("iprec_at_recall", "11pt_avg")

MEASURES = [
    "map", "gm_map", "Rprec", "bpref", "recip_rank", "P", "recall", "infAP", "gm_bpref",
    "Rprec_mult", "utility", "binG", "G", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut",
    "relative_P", "success", "set_P", "set_relative_P", "set_recall", "set_map", "set_F",
    "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret", "num_q",
]


def random_case(seed: int):
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(60)]
    qrels, run = {}, {}
    for q in range(rng.randint(1, 12)):
        qid = f"q{q}"
        judged = rng.sample(docs, rng.randint(1, 30))
        # graded levels, some negative (judged, counted as unjudged by trec_eval)
        qrels[qid] = {d: rng.choice([-1, 0, 0, 1, 1, 2, 3]) for d in judged}
        if all(level < 0 for level in qrels[qid].values()):
            # pytrec_eval 0.5.7 crashes (a segmentation fault) on a query whose only
            # judgements are negative, so this comparison leaves such queries out.
            qrels[qid][judged[0]] = 0
        if rng.random() < 0.15:
            continue  # a qrels query the run lacks
        retrieved = rng.sample(docs, rng.randint(1, 50))
        # scores from a few values: many ties, broken by document ID
        run[qid] = {d: float(rng.choice([0.1, 0.25, 0.5, 0.5, 0.75, 1.0, 2.0])) for d in retrieved}
    run["unjudged_query"] = {"d1": 1.0}
    return qrels, run


COUNTS = {"runs": 0, "queries": 0, "values": 0, "differ_iprec": 0}


@pytest.mark.parametrize("seed", range(200))
@pytest.mark.parametrize("level,judged_only", [(1, False), (2, False), (1, True)])
def test_agrees_with_pytrec_eval(seed, level, judged_only):
    qrels, run = random_case(seed)
    ours = veredicto.RelevanceEvaluator(qrels, MEASURES, level, judged_only).evaluate(run)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES), level, judged_only).evaluate(run)
    assert set(ours) == set(theirs)
    COUNTS["runs"] += 1
    for qid, values in theirs.items():
        COUNTS["queries"] += 1
        for name, v in values.items():
            if name in ("runid", "relstring"):
                continue
            assert name in ours[qid], name
            mine = ours[qid][name]
            assert math.isclose(mine, v, rel_tol=1e-9, abs_tol=1e-12), (qid, name, mine, v)
            COUNTS["values"] += 1


@pytest.mark.parametrize("seed", range(50))
def test_interpolated_precision_counted(seed):
    """The measures that differ by design are compared too, and the differences counted."""
    qrels, run = random_case(seed)
    ms = ["iprec_at_recall", "11pt_avg"]
    ours = veredicto.RelevanceEvaluator(qrels, ms).evaluate(run)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(ms)).evaluate(run)
    for qid, values in theirs.items():
        for name, v in values.items():
            if not math.isclose(ours[qid][name], v, rel_tol=1e-9, abs_tol=1e-12):
                COUNTS["differ_iprec"] += 1


def test_zz_counts_reported(capsys):
    out = os.environ.get("VEREDICTO_TEST_COUNTS")
    line = (
        f"pytrec_eval agreement: {COUNTS['runs']} runs, {COUNTS['queries']} queries, "
        f"{COUNTS['values']} values identical; interpolated precision differing in "
        f"{COUNTS['differ_iprec']} values"
    )
    if out:
        with open(out, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    with capsys.disabled():
        print("\n" + line)
    assert COUNTS["runs"] == 600


def test_measure_names_and_parameters():
    qrels = {"q": {"a": 1, "b": 0, "c": 2}}
    run = {"q": {"a": 0.5, "b": 0.9, "c": 0.1, "x": 0.3}}
    got = veredicto.RelevanceEvaluator(qrels, {"P_5", "P.10", "ndcg_cut.3", "recall"}).evaluate(run)
    want = pytrec_eval.RelevanceEvaluator(qrels, {"P_5", "P.10", "ndcg_cut.3", "recall"}).evaluate(run)
    assert got.keys() == want.keys()
    assert all(got[q] == pytest.approx(want[q]) for q in want)
    assert {"P_5", "P_10", "ndcg_cut_3", "recall_5"} <= set(got["q"])
    assert veredicto.supported_measures >= {"map", "P", "ndcg_cut", "recall", "map_cut"}
    assert "official" in veredicto.supported_nicknames


def test_unknown_measure_is_an_error():
    with pytest.raises(veredicto.VeredictoError, match="unknown measure"):
        veredicto.RelevanceEvaluator({"q": {"a": 1}}, ["no_such_measure"])


def test_evaluate_matches_the_trec_command(tmp_path):
    qrels, run = random_case(7)
    qrels_file = tmp_path / "qrels"
    run_file = tmp_path / "run"
    with open(qrels_file, "w") as f:
        for q, docs in qrels.items():
            for d, rel in docs.items():
                f.write(f"{q} 0 {d} {rel}\n")
    with open(run_file, "w") as f:
        for q, docs in run.items():
            for rank, (d, s) in enumerate(docs.items(), 1):
                f.write(f"{q} Q0 {d} {rank} {s} tag\n")
    got = veredicto.evaluate(qrels, run, ["nDCG@10", "R@100", "AP", "P@5"])
    out = subprocess.run(
        [sys.executable, "-m", "veredicto", "trec", "-m", "ndcg_cut.10", "-m", "recall.100",
         "-m", "map", "-m", "P.5", str(qrels_file), str(run_file)],
        capture_output=True, text=True, check=True,
    ).stdout
    cli = {}
    for line in out.splitlines():
        name, qid, value = line.split("\t")
        if qid == "all" and name.strip() != "runid":
            cli[name.strip()] = float(value)
    assert round(got["nDCG@10"], 4) == cli["ndcg_cut_10"]
    assert round(got["R@100"], 4) == cli["recall_100"]
    assert round(got["AP"], 4) == cli["map"]
    assert round(got["P@5"], 4) == cli["P_5"]


def test_dicts_of_other_shapes_are_refused():
    ev = veredicto.RelevanceEvaluator({"q": {"a": 1}}, ["map"])
    with pytest.raises(TypeError):
        ev.evaluate({"q": [("a", 1.0)]})
