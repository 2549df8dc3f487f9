#!/usr/bin/env bash
# Reproduces all-MiniLM-L6-v2's published nDCG@10 on BEIR SciFact (MTEB: 0.645) with
# veredicto's own pipeline: ingest the 5,183 abstracts (title + " " + text, cosine), then run
# the exam over the 300 test queries at K=10. Fails when mean nDCG@10 is outside 0.645 ± 0.005.
#
#   scripts/scifact-check.sh [SHARED_DIR]   (default: ../shared beside the repository)
#
# Takes a few minutes on 2 cores (embedding 5k abstracts); CI does not run it.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SHARED="${1:-$ROOT/../shared}"
BEIR="$SHARED/datasets/scifact/beir"
WORK="${SCIFACT_WORK:-$ROOT/target/scifact}"
mkdir -p "$WORK"

bash "$ROOT/scripts/fetch-model.sh"
cargo build --release -p veredicto --manifest-path "$ROOT/Cargo.toml"
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/veredicto"

"$BIN" ingest --corpus "$BEIR/corpus.jsonl" --index "$WORK/index" \
  --model "$ROOT/models/all-MiniLM-L6-v2" --batch-label scifact --json
"$BIN" exam --index "$WORK/index" --golden "$BEIR" --model "$ROOT/models/all-MiniLM-L6-v2" \
  --no-record --json --timings --save-run "$WORK/run.trec" --out "$WORK/exam.json" || true

python3 - "$WORK/exam.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]
ndcg = s["mean_ndcg"]
print(f"SciFact test: {s['cases']} queries, mean nDCG@10 {ndcg:.4f} (published 0.645), "
      f"mean recall@10 {s['mean_recall']:.4f}, MRR@10 {s['mrr']:.4f}")
for stage, l in sorted(r.get("latency", {}).items()):
    print(f"  latency {stage}: p50 {l['p50_ms']:.2f} ms, p95 {l['p95_ms']:.2f} ms, p99 {l['p99_ms']:.2f} ms")
if abs(ndcg - 0.645) > 0.005:
    sys.exit(f"nDCG@10 {ndcg:.4f} is outside 0.645 ± 0.005")
PY
