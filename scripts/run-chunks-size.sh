#!/usr/bin/env bash
# Bytes the history keeps per run for `corpus check`'s chunk-level drift, at SciFact's
# 5,183 chunks: two exams of the same corpus (the second stores no second list), then one of
# a corpus with one changed abstract. Prints the stored body of each run's list.
# Usage: bash scripts/run-chunks-size.sh  (uses the debug binary; builds it if needed)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BEIR="$ROOT/../shared/datasets/scifact/beir"
cargo build -q -p veredicto --manifest-path "$ROOT/Cargo.toml"
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/veredicto"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# A run that finds each test query's relevant abstracts (the exam itself is not the point).
awk -F'\t' 'NR > 1 { print $1 " Q0 " $2 " 1 1.0 qrels" }' "$BEIR/qrels/test.tsv" > "$WORK/run.trec"
# The same corpus with one abstract's text changed.
python3 - "$BEIR/corpus.jsonl" "$WORK/changed.jsonl" <<'PY'
import json, sys
with open(sys.argv[1]) as f, open(sys.argv[2], "w") as out:
    for i, line in enumerate(f):
        d = json.loads(line)
        if i == 0:
            d["text"] += " (revised)"
        out.write(json.dumps(d) + "\n")
PY
for corpus in "$BEIR/corpus.jsonl" "$BEIR/corpus.jsonl" "$WORK/changed.jsonl"; do
  (cd "$WORK" && "$BIN" exam --golden "$BEIR" --corpus "$corpus" --run "$WORK/run.trec" \
    --history "$WORK/history.db" > /dev/null 2>&1) || true
done
sqlite3 "$WORK/history.db" \
  "SELECT run, chunks, coalesce(length(body), 0) AS stored_bytes FROM run_chunks ORDER BY seq;"
"$BIN" history check --history "$WORK/history.db" | grep -E "chunk lists|^ok|PROBLEMS"
# For scale: the stored (compressed) exam report of each run.
sqlite3 "$WORK/history.db" "SELECT 'report bytes', length(body) FROM reports ORDER BY run;"
