#!/usr/bin/env python3
"""ranx peer for bench-trec: evaluates QRELS RUN the way ranx users do.

Loads both files with ranx's own Qrels.from_file/Run.from_file (TREC format; that parsing is
part of what is timed) and calls ranx.evaluate for map, precision@10, recall@10, ndcg@10 and
mrr, printing the means in trec_eval's `all` format under trec_eval's names (map, P_10,
recall_10, ndcg_cut_10, recip_rank) with full float precision.

ranx's metrics are numba functions, JIT-compiled on first use and cached on disk
(@njit(cache=True), in NUMBA_CACHE_DIR if set). With --evals N the evaluation is repeated N
times in the same process: the first call pays compilation (or cache loading), the later ones
are the warm evaluation time. Internal timings go to stderr as one `# timing {json}` line.

Usage: bench-ranx.py [--evals N] QRELS RUN
Needs: pip install ranx  (see scripts/bench-peers-setup.sh)
"""
import json
import sys
import time

t_start = time.perf_counter()
from ranx import Qrels, Run, evaluate  # noqa: E402

METRICS = ["map", "precision@10", "recall@10", "ndcg@10", "mrr"]
TREC_NAMES = {
    "map": "map",
    "precision@10": "P_10",
    "recall@10": "recall_10",
    "ndcg@10": "ndcg_cut_10",
    "mrr": "recip_rank",
}


def main() -> int:
    args = sys.argv[1:]
    evals = 1
    if len(args) >= 2 and args[0] == "--evals":
        evals = int(args[1])
        args = args[2:]
    if len(args) != 2 or evals < 1:
        print(__doc__, file=sys.stderr)
        return 2
    qrels_path, run_path = args
    t_import = time.perf_counter()
    qrels = Qrels.from_file(qrels_path, kind="trec")
    run = Run.from_file(run_path, kind="trec")
    t_parse = time.perf_counter()
    eval_s = []
    means = {}
    for _ in range(evals):
        t0 = time.perf_counter()
        means = evaluate(qrels, run, METRICS)
        eval_s.append(time.perf_counter() - t0)
    for metric in METRICS:
        print(f"{TREC_NAMES[metric]:<22}\tall\t{float(means[metric])!r}")
    timing = {
        "import_s": t_import - t_start,
        "parse_s": t_parse - t_import,
        "evaluate_s": eval_s,
        "queries": len(qrels),
    }
    print("# timing " + json.dumps(timing), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
