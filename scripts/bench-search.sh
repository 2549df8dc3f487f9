#!/usr/bin/env bash
# Exact-search benchmark: the embedded index against numpy, side by side (docs/index.md).
# Creates a venv with numpy + threadpoolctl under target/ on first use, then runs
# `bench-search` in release mode. Extra arguments go to bench-search (e.g. --sizes 100000).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/bench-venv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet numpy threadpoolctl
fi
exec cargo run --release -p veredicto-index --bin bench-search -- --python "$venv/bin/python" "$@"
