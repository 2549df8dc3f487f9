#!/usr/bin/env python3
"""Benchmarks of the Python package (docs/benchmarks.md):

1. veredicto.RelevanceEvaluator against pytrec_eval's on the same Python dicts, in the
   MS MARCO dev shape (6,980 queries x 1,000 results, synthetic: about 1.07 judged relevant
   passages per query, scores with ties), conversion from the dicts included: the
   evaluator built once, then `evaluate(run)` timed (best of N), values compared;
2. the exam over a Python callable on the rack example: the exam's own time beside the
   callable's (a retriever that takes a fixed time per query), i.e. what veredicto adds.

    python scripts/bench-python.py [--queries 6980] [--depth 1000] [--repeat 3]

Needs `veredicto` (the wheel) and `pytrec_eval` (pytrec-eval-terrier) importable.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import time
from collections import defaultdict

import veredicto

MEASURES = ["map", "recip_rank", "ndcg_cut.10", "recall.100", "recall.1000", "P.10"]


def msmarco_shape(n_queries: int, depth: int, seed: int = 42):
    rng = random.Random(seed)
    qrels, run = {}, {}
    n_docs = 8_841_823
    for q in range(n_queries):
        qid = str(1_000_000 + q)
        rel = [str(rng.randrange(n_docs)) for _ in range(1 if rng.random() < 0.94 else 2)]
        qrels[qid] = {d: 1 for d in rel}
        docs = {str(rng.randrange(n_docs)): round(rng.random() * 30, 2) for _ in range(depth)}
        # the relevant passage somewhere in the list most of the time
        if rng.random() < 0.8:
            docs[rel[0]] = round(rng.random() * 30, 2)
        run[qid] = docs
    return qrels, run


def best_of(repeat, f):
    times = []
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


def bench_evaluator(args):
    import pytrec_eval

    qrels, run = msmarco_shape(args.queries, args.depth)
    n = sum(len(v) for v in run.values())
    print(f"MS MARCO dev shape: {len(run)} queries, {n} results, measures {MEASURES}")
    t_build_v, ours_ev = best_of(1, lambda: veredicto.RelevanceEvaluator(qrels, MEASURES))
    t_build_p, theirs_ev = best_of(1, lambda: pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES)))
    t_v, ours = best_of(args.repeat, lambda: ours_ev.evaluate(run))
    t_p, theirs = best_of(args.repeat, lambda: theirs_ev.evaluate(run))
    differ = 0
    values = 0
    for qid, row in theirs.items():
        for name, v in row.items():
            values += 1
            if not math.isclose(ours[qid][name], v, rel_tol=1e-9, abs_tol=1e-12):
                differ += 1
    print(f"  pytrec_eval  evaluate: {t_p:8.3f} s  (evaluator built in {t_build_p:.3f} s)")
    print(f"  veredicto    evaluate: {t_v:8.3f} s  (evaluator built in {t_build_v:.3f} s)")
    print(f"  ratio: {t_p / t_v:.1f}x faster; {values} values compared, {differ} differ")
    return {"pytrec_eval_s": t_p, "veredicto_s": t_v, "ratio": t_p / t_v, "values": values,
            "differ": differ, "cpus": os.cpu_count()}


def bench_exam(args):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "rack")
    run = defaultdict(list)
    with open(os.path.join(root, "run-stop.trec")) as f:
        for line in f:
            qid, _, doc, rank, score, _ = line.split()
            run[qid].append((doc, float(score)))
    by_query = {}
    with open(os.path.join(root, "golden.jsonl")) as f:
        for line in f:
            if line.strip():
                c = json.loads(line)
                by_query[c["query"]] = c["id"]
    spent = []

    def retriever(query, k):
        t = time.perf_counter()
        end = t + args.callable_ms / 1000
        while time.perf_counter() < end:  # a retriever busy for callable_ms
            pass
        hits = run[by_query[query]][:k]
        spent.append(time.perf_counter() - t)
        return hits

    def one():
        spent.clear()
        t = time.perf_counter()
        veredicto.exam(os.path.join(root, "golden.jsonl"), retriever,
                       corpus=os.path.join(root, "corpus.jsonl"),
                       policy=os.path.join(root, "policy.toml"), concurrency=1)
        return time.perf_counter() - t, sum(spent)

    results = [one() for _ in range(args.repeat + 2)]
    total, own = min(results)
    overhead = (total - own) / own * 100
    instant = min(
        (lambda t: (veredicto.exam(os.path.join(root, "golden.jsonl"), lambda q, k: run[by_query[q]][:k],
                                   corpus=os.path.join(root, "corpus.jsonl"),
                                   policy=os.path.join(root, "policy.toml")),
                    time.perf_counter() - t)[1])(time.perf_counter())
        for _ in range(args.repeat + 2)
    )
    print(f"rack exam over a callable busy {args.callable_ms} ms per query (12 cases, concurrency 1):")
    print(f"  callable {own * 1000:.1f} ms, whole exam {total * 1000:.1f} ms: veredicto adds {overhead:.2f}%")
    print(f"  the whole exam over an instant callable: {instant * 1000:.1f} ms")
    return {"callable_ms": own * 1000, "exam_ms": total * 1000, "overhead_pct": overhead,
            "instant_exam_ms": instant * 1000}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--queries", type=int, default=6980)
    p.add_argument("--depth", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--callable-ms", type=float, default=20.0)
    p.add_argument("--skip-evaluator", action="store_true")
    args = p.parse_args()
    out = {}
    if not args.skip_evaluator:
        out["evaluator"] = bench_evaluator(args)
    out["exam"] = bench_exam(args)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
