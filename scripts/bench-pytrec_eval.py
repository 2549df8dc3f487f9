#!/usr/bin/env python3
"""pytrec_eval peer for bench-trec: evaluates QRELS RUN the way pytrec_eval users do.

Parses both files with pytrec_eval's own parse_qrel/parse_run into dicts (that parsing is part
of what is timed), builds a RelevanceEvaluator for map, P.10, recall.10, ndcg_cut.10 and
recip_rank, evaluates, and prints the per-measure means over the evaluated queries in
trec_eval's `all` format (full float precision) so the work cannot be optimised away and
bench-trec can check the values. Internal timings go to stderr as one `# timing {json}` line.

Usage: bench-pytrec_eval.py QRELS RUN
Needs: pip install pytrec-eval-terrier  (see scripts/bench-peers-setup.sh)
"""
import json
import sys
import time

t_start = time.perf_counter()
import pytrec_eval  # noqa: E402

# pytrec_eval accepts trec_eval's parametrised names ("P.10") and returns them as "P_10".
MEASURES = ["map", "P.10", "recall.10", "ndcg_cut.10", "recip_rank"]
KEYS = ["map", "P_10", "recall_10", "ndcg_cut_10", "recip_rank"]


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    qrels_path, run_path = sys.argv[1], sys.argv[2]
    t_import = time.perf_counter()
    with open(qrels_path) as f:
        qrel = pytrec_eval.parse_qrel(f)
    with open(run_path) as f:
        run = pytrec_eval.parse_run(f)
    t_parse = time.perf_counter()
    evaluator = pytrec_eval.RelevanceEvaluator(qrel, set(MEASURES))
    per_query = evaluator.evaluate(run)
    t_eval = time.perf_counter()
    for key in KEYS:
        values = [scores[key] for scores in per_query.values()]
        mean = pytrec_eval.compute_aggregated_measure(key, values)
        print(f"{key:<22}\tall\t{mean!r}")
    t_end = time.perf_counter()
    timing = {
        "import_s": t_import - t_start,
        "parse_s": t_parse - t_import,
        "evaluate_s": t_eval - t_parse,
        "aggregate_s": t_end - t_eval,
        "queries": len(per_query),
    }
    print("# timing " + json.dumps(timing), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
