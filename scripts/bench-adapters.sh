#!/usr/bin/env bash
# The live adapters against the engines that run here, on the same vectors: the rack example's
# corpus embedded once by all-MiniLM-L6-v2 (`veredicto embed`), loaded into veredicto's own
# index, a pgvector table, a Chroma collection and Milvus Lite collections (FLAT and HNSW),
# and the golden set examined through each with the same query vectors. Prints, per adapter,
# the cases whose ranks (the whole list down to --depth, and the top 10) are identical to the
# own index's, and the largest score difference; then `--check-vectors` on each store with
# the model that embedded it and with the other one (multilingual-e5-small).
#
#   bash scripts/bench-adapters.sh [CORPUS GOLDEN]   (default: examples/rack/)
#
# Starts PostgreSQL, Chroma and Milvus Lite on free loopback ports (scripts/postgres.sh,
# scripts/engines.sh) and stops them when it ends. Needs the models (scripts/fetch-model.sh,
# scripts/fetch-e5.sh) and builds the release binary (or takes $VEREDICTO_BIN).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
CORPUS="${1:-examples/rack/corpus.jsonl}"
GOLDEN="${2:-examples/rack/golden.jsonl}"
MINILM="$ROOT/models/all-MiniLM-L6-v2"
E5="$ROOT/models/multilingual-e5-small"
[ -d "$MINILM" ] || bash scripts/fetch-model.sh
[ -d "$E5" ] || bash scripts/fetch-e5.sh
if [ -z "${VEREDICTO_BIN:-}" ]; then
  cargo build --release -q -p veredicto
  VEREDICTO_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/veredicto"
fi
BIN="$VEREDICTO_BIN"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/veredicto-adapters.XXXXXX")"
export VEREDICTO_PG_STATE="$WORK/pg" VEREDICTO_ENGINES_STATE="$WORK/engines"
stop_all() {
  bash scripts/engines.sh stop || true
  bash scripts/postgres.sh stop || true
  rm -rf "$WORK"
}
trap stop_all EXIT
PG="$(bash scripts/postgres.sh start)"
CHROMA="$(bash scripts/engines.sh start chroma)"
MILVUS="$(bash scripts/engines.sh start milvus)"
MILVUS_PY="$(bash scripts/engines.sh python milvus)"

# The vectors, once: the corpus as passages, the golden queries as queries.
"$BIN" embed --corpus "$CORPUS" --out "$WORK/chunks.jsonl" --model "$MINILM" >/dev/null
"$BIN" embed --golden "$GOLDEN" --out "$WORK/queries.jsonl" --model "$MINILM" >/dev/null
"$BIN" embed --corpus "$CORPUS" --model "$MINILM" --to "$PG?table=adapters_minilm" >/dev/null
"$BIN" ingest --corpus "$CORPUS" --index "$WORK/index" --model "$MINILM" >/dev/null 2>&1

# The golden set with each case's query vector, so that every adapter gets the same vectors.
python3 - "$GOLDEN" "$WORK/queries.jsonl" "$WORK/golden.jsonl" <<'EOF'
import json, sys
vectors = {r["id"]: r["vector"] for r in map(json.loads, open(sys.argv[2]))}
with open(sys.argv[3], "w") as out:
    for line in open(sys.argv[1]):
        if line.strip():
            case = json.loads(line)
            case["query_vector"] = vectors[case["id"]]
            out.write(json.dumps(case, ensure_ascii=False) + "\n")
EOF

# Chroma (cosine) through its HTTP API; Milvus Lite (COSINE, FLAT and HNSW) with pymilvus.
python3 - "$CHROMA" "$WORK/chunks.jsonl" <<'EOF'
import json, sys, urllib.request
base = sys.argv[1] + "/api/v2/tenants/default_tenant/databases/default_database/collections"
def post(url, body):
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=30))
rows = [json.loads(l) for l in open(sys.argv[2])]
made = post(base, {"name": "adapters-minilm", "configuration": {"hnsw": {"space": "cosine"}}})
for i in range(0, len(rows), 100):
    batch = rows[i:i + 100]
    post(f"{base}/{made['id']}/add", {"ids": [r["id"] for r in batch], "embeddings": [r["vector"] for r in batch]})
EOF
for index in FLAT HNSW; do
  python3 - "$MILVUS" "$WORK/chunks.jsonl" "$index" <<'EOF' | $MILVUS_PY crates/retrieve/tests/retrieve/milvus/load.py >/dev/null
import json, sys
rows = [json.loads(l) for l in open(sys.argv[2])]
print(json.dumps({"uri": sys.argv[1], "name": f"adapters_{sys.argv[3].lower()}", "dim": len(rows[0]["vector"]),
                  "metric": "COSINE", "index": sys.argv[3],
                  "rows": [{"id": r["id"], "vector": r["vector"], "domain": "", "labels": []} for r in rows]}))
EOF
done

declare -A URIS=(
  [own]="index:$WORK/index"
  [pgvector]="$PG?table=adapters_minilm&id=id&vector=embedding"
  [chroma]="chroma+$CHROMA/adapters-minilm"
  [milvus-flat]="milvus+$MILVUS/adapters_flat"
  [milvus-hnsw]="milvus+$MILVUS/adapters_hnsw"
)
for name in own pgvector chroma milvus-flat milvus-hnsw; do
  "$BIN" exam --golden "$WORK/golden.jsonl" --retriever "${URIS[$name]}" --depth 100 \
    --no-record --json --save-run "$WORK/run-$name.jsonl" >/dev/null || true
done
python3 - "$WORK" <<'EOF'
import json, sys
work = sys.argv[1]
def run(name):
    return {r["query_id"]: r["results"] for r in map(json.loads, open(f"{work}/run-{name}.jsonl"))}
own = run("own")
print(f"{'adapter':<12} {'cases':>5} {'identical ranks':>16} {'identical top 10':>17} {'max |score diff|':>17}")
for name in ["own", "pgvector", "chroma", "milvus-flat", "milvus-hnsw"]:
    r = run(name)
    same = sum(1 for q in own if [h["id"] for h in r.get(q, [])] == [h["id"] for h in own[q]])
    top = sum(1 for q in own if [h["id"] for h in r.get(q, [])][:10] == [h["id"] for h in own[q]][:10])
    diff = max((abs(a["score"] - b["score"]) for q in own for a, b in zip(r.get(q, []), own[q])
                if a["id"] == b["id"] and a.get("score") is not None), default=0.0)
    print(f"{name:<12} {len(own):>5} {same:>10} of {len(own):<3} {top:>11} of {len(own):<3} {diff:>17.2e}")
EOF

# --check-vectors: each store was embedded by MiniLM; checked with MiniLM and with e5.
for name in pgvector chroma milvus-flat; do
  for model in "$MINILM" "$E5"; do
    "$BIN" exam --golden "$WORK/golden.jsonl" --retriever "${URIS[$name]}" --corpus "$CORPUS" \
      --model "$model" --check-vectors 20 --no-record --json --out "$WORK/check.json" >/dev/null 2>&1 || true
    python3 - "$WORK/check.json" "$name" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))["stored_vectors"]
low = s.get("lowest") or {}
print(f"--check-vectors 20 on {sys.argv[2]:<11} with {s['query_model']:<22}: mean cosine {s['mean_cosine']:.3f}, "
      f"lowest {low.get('cosine', float('nan')):.3f}, {s['below']} of {s['compared']} below {s['threshold']}, "
      f"{'another model' if s['other_model'] else 'the query model'}")
EOF
  done
done
