#!/usr/bin/env bash
# Two chunkings of SciFact's abstracts examined with one evidence golden set and an
# embedding model: the experts' rationale sentences of the dev claims are the evidence
# (character spans of the abstracts, which are the documents: every abstract of the corpus,
# its sentences joined by one space). veredicto cuts the abstracts twice (one sentence per
# chunk; windows of 300 characters overlapping 60, which cut sentences), ingests each
# corpus with the model, examines both indexes with the same golden set, compares the two
# runs (per-case deltas, significance) and runs `golden check` on each chunking. Times
# every step (wall clock and peak memory).
#
#   bash scripts/scifact-chunkings.sh [VEREDICTO] [OUT] [MODEL]
#
# VEREDICTO: the binary (default target/release/veredicto); OUT: the work folder (default
# .bench/scifact-chunkings, replaced); MODEL: the model folder (default
# models/all-MiniLM-L6-v2). The data: tests/data/scifact/original (or
# $VEREDICTO_TEST_DATA/scifact/original).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${1:-$ROOT/target/release/veredicto}"
OUT="${2:-$ROOT/.bench/scifact-chunkings}"
MODEL="${3:-$ROOT/models/all-MiniLM-L6-v2}"
DATA="${VEREDICTO_TEST_DATA:-$ROOT/tests/data}/scifact/original"
rm -rf "$OUT"
mkdir -p "$OUT"
cd "$OUT"

python3 - "$DATA" <<'PY'
import json, sys
data = sys.argv[1]
spans = {}
with open(f"{data}/corpus.jsonl") as f, open("documents.jsonl", "w") as out:
    for line in f:
        v = json.loads(line)
        text, sp = "", []
        for s in v["abstract"]:
            s = s.strip()
            if text:
                text += " "
            start = len(text)
            text += s
            sp.append((start, start + len(s)))
        spans[str(v["doc_id"])] = sp
        out.write(json.dumps({"id": str(v["doc_id"]), "text": text}, ensure_ascii=False) + "\n")
cases = 0
with open(f"{data}/claims_dev.jsonl") as f, open("golden.jsonl", "w") as out:
    for line in f:
        v = json.loads(line)
        items = set()
        for doc, sets in v["evidence"].items():
            if doc not in spans:
                continue
            for s in sets:
                for i in s["sentences"]:
                    a, b = spans[doc][i]
                    items.add((doc, a, b))
        if not items:
            continue
        ev = [{"doc_id": d, "start": a, "end": b} for d, a, b in sorted(items)]
        out.write(json.dumps({"id": f"c{v['id']}", "query": v["claim"], "evidence": ev}, ensure_ascii=False) + "\n")
        cases += 1
print(f"{len(spans)} documents, {cases} cases", file=sys.stderr)
PY
printf 'require_notes = false\ntop_k = 10\n' > policy.toml

step() {
    local name="$1"
    shift
    /usr/bin/time -f "$name: %e s wall, %M KB peak" -a -o times.txt "$@"
}

for c in sentences windows; do
    case $c in
    sentences) flags=(--size 2000 --split sentences) ;;
    windows) flags=(--size 300 --overlap 60) ;;
    esac
    step "chunk $c" "$BIN" chunk --documents documents.jsonl --out "$c.jsonl" "${flags[@]}"
    step "ingest $c" "$BIN" ingest --corpus "$c.jsonl" --index "idx-$c" --model "$MODEL" \
        --time 2025-01-01T00:00:00Z --json > "ingest-$c.json"
    set +e
    step "exam $c" "$BIN" exam --golden golden.jsonl --policy policy.toml --index "idx-$c" \
        --model "$MODEL" --documents documents.jsonl --corpus "$c.jsonl" --label "$c" \
        --history history.db --json > "exam-$c.json"
    "$BIN" golden check --golden golden.jsonl --corpus "$c.jsonl" --documents documents.jsonl \
        --json > "check-$c.json"
    set -e
done
set +e
"$BIN" compare --history history.db --json > compare.json
"$BIN" compare --history history.db > compare.txt
set -e
cat times.txt
python3 - <<'PY'
import json
for c in ["sentences", "windows"]:
    e = json.load(open(f"exam-{c}.json"))
    s = e["summary"]
    k = json.load(open(f"check-{c}.json"))
    n = sum(1 for _ in open(f"{c}.jsonl"))
    print(f"{c}: {n} chunks; recall@10 {s['mean_recall']:.4f}, nDCG@10 {s['mean_ndcg']:.4f}, "
          f"MRR {s['mrr']:.4f}, QS {s['mean_quality']:.1f}, failing {s['failing']}/{s['cases']}; "
          f"golden check: {k['items']} items, {k['whole']} whole, {k['split']} split, "
          f"{k['dropped']} not covered")
PY
cat compare.txt
