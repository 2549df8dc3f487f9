#!/usr/bin/env bash
# The Python package's tests: builds the wheel (scripts/build-wheel.sh), installs it into a
# fresh virtual environment with pytest and the oracle (pytrec-eval-terrier from PyPI, with
# numpy, which it imports but does not declare), and
# runs crates/python/tests. langchain-core is installed too when PyPI gives it within a
# minute (then the LangChain test uses the real BaseRetriever; otherwise it is skipped and
# the stand-in shapes of the other tests remain).
#
#   bash scripts/test-python.sh [--profile dev|wheel] [PYTEST ARGS...]
#
# The default profile is `dev`: the wheel reuses what `cargo test` built, so CI compiles
# only the extension crate; the timed wheel is built by scripts/build-wheel.sh's default.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
PROFILE=dev
if [ "${1:-}" = "--profile" ]; then PROFILE="$2"; shift 2; fi
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
start=$(date +%s)
bash scripts/build-wheel.sh --profile "$PROFILE"
built=$(date +%s)
VENV="$TARGET/python-test-venv"
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
WHEEL="$(ls "$TARGET"/wheels/veredicto-*.whl | head -1)"
t0=$(date +%s.%N)
"$VENV/bin/python" -m pip install --quiet "$WHEEL"
t1=$(date +%s.%N)
echo "test-python.sh: wheel $(basename "$WHEEL"), $(du -k "$WHEEL" | cut -f1) KiB, installed in $(python3 -c "print(round($t1 - $t0, 1))") s"
"$VENV/bin/python" -m pip install --quiet 'pytest>=7' 'pytrec-eval-terrier==0.5.7' numpy
if timeout 60 "$VENV/bin/python" -m pip install --quiet 'langchain-core>=0.2'; then
    echo "test-python.sh: langchain-core installed: the LangChain test uses the real BaseRetriever"
else
    echo "test-python.sh: langchain-core did not install within a minute: its test is skipped"
fi
# Tests run outside the source tree, so that `import veredicto` is the installed wheel.
cd "$TARGET"
PATH="$VENV/bin:$PATH" "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
    --rootdir "$ROOT/crates/python/tests" "$ROOT/crates/python/tests" "$@"
echo "test-python.sh: wheel built in $((built - start)) s, all in $(( $(date +%s) - start )) s"
