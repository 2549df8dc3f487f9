#!/usr/bin/env bash
# Creates .venv-bench/ with the Python peers that `bench-trec` times:
# pytrec_eval (PyPI package `pytrec-eval-terrier`) and ranx.
#
# Developer-only: CI never runs this script and nothing in the test suite
# needs the venv. Everything comes from PyPI through pip.
#
# Usage: scripts/bench-peers-setup.sh [VENV_DIR]   (default .venv-bench at the repo root)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$root/.venv-bench}"
python="${PYTHON:-python3}"

if [[ ! -x "$venv/bin/python" ]]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet pytrec-eval-terrier ranx

"$venv/bin/python" - <<'PY'
import importlib.metadata as md
for name in ("pytrec-eval-terrier", "ranx", "numba", "numpy"):
    try:
        print(f"{name} {md.version(name)}")
    except md.PackageNotFoundError:
        print(f"{name} (not installed)")
PY
echo "venv ready: $venv (pass --python $venv/bin/python to bench-trec, or leave the default)"
