#!/usr/bin/env bash
# XQuAD retrieval through veredicto's own pipeline (ingest the 240 paragraphs, exam the 1,190
# questions at K=10), in Spanish and English, for a model. Prints mean nDCG@10; with
# `--expect X` fails when the Spanish figure is more than 0.01 below X.
#
#   scripts/xquad-check.sh [MODEL] [--expect 0.958]     (MODEL: a known name or a folder;
#                                                        default multilingual-e5-small)
#
# The model must be fetched (`veredicto models fetch NAME`). Builds the release binary unless
# VEREDICTO_BIN names one. Takes several minutes on 2 cores; CI does not run it.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODEL="${1:-multilingual-e5-small}"
EXPECT=""
if [ "${2:-}" = "--expect" ]; then EXPECT="${3:?--expect needs a value}"; fi
SHARED="${SHARED:-$ROOT/../shared}"
WORK="${XQUAD_WORK:-$ROOT/target/xquad}/$(basename "$MODEL")"
mkdir -p "$WORK"
if [ -z "${VEREDICTO_BIN:-}" ]; then
  cargo build --release -p veredicto --manifest-path "$ROOT/Cargo.toml"
  VEREDICTO_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/veredicto"
fi

for LANG in es en; do
  BEIR="$SHARED/datasets/xquad-es/beir-$LANG"
  rm -rf "$WORK/index-$LANG"
  "$VEREDICTO_BIN" ingest --corpus "$BEIR/corpus.jsonl" --index "$WORK/index-$LANG" \
    --model "$MODEL" --batch-label "xquad-$LANG" >&2
  # No --model: the index's own model is reused.
  "$VEREDICTO_BIN" exam --index "$WORK/index-$LANG" --golden "$BEIR" \
    --no-record --json --out "$WORK/exam-$LANG.json" >/dev/null || true
done

python3 - "$WORK" "$MODEL" "$EXPECT" <<'PY'
import json, sys
work, model, expect = sys.argv[1], sys.argv[2], sys.argv[3]
nd = {}
for lang in ("es", "en"):
    s = json.load(open(f"{work}/exam-{lang}.json"))["summary"]
    nd[lang] = s["mean_ndcg"]
    print(f"XQuAD-{lang} {model}: {s['cases']} questions, nDCG@10 {s['mean_ndcg']:.4f}, "
          f"recall@10 {s['mean_recall']:.4f}, MRR@10 {s['mrr']:.4f}")
if expect and nd["es"] < float(expect) - 0.01:
    sys.exit(f"Spanish nDCG@10 {nd['es']:.4f} is more than 0.01 below {expect}")
PY
