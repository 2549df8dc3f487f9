#!/usr/bin/env bash
# Builds the Python wheel (the `veredicto` command and `import veredicto` in one wheel, abi3
# for CPython >= 3.9) into target/wheels/ with maturin (installed from PyPI into a virtual
# environment under the target folder when it is not on PATH).
#
#   bash scripts/build-wheel.sh [--profile wheel|release|dev]
#
# The default profile `wheel` is the release profile without link-time optimisation
# (Cargo.toml); `dev` reuses what `cargo test` built (the workspace's own crates
# unoptimised: for CI, where the wheel is tested, not timed). The wheel is tagged manylinux
# after maturin's auditwheel check (see below).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
PROFILE=wheel
while [ $# -gt 0 ]; do
    case "$1" in
        --profile) PROFILE="$2"; shift 2 ;;
        --profile=*) PROFILE="${1#--profile=}"; shift ;;
        *) echo "build-wheel.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
MATURIN="$(command -v maturin || true)"
if [ -z "$MATURIN" ]; then
    VENV="$TARGET/maturin-venv"
    if [ ! -x "$VENV/bin/maturin" ]; then
        python3 -m venv "$VENV"
        "$VENV/bin/python" -m pip install --quiet 'maturin>=1.7,<2'
    fi
    MATURIN="$VENV/bin/maturin"
fi
OUT="$TARGET/wheels"
mkdir -p "$OUT"
rm -f "$OUT"/veredicto-*.whl
# manylinux2014 (glibc 2.17) when this machine's C library allows it; else the manylinux tag
# maturin's check finds for the symbols the extension uses (e.g. manylinux_2_34 on Debian 12);
# else a plain linux tag.
build() {
    "$MATURIN" build --manifest-path crates/python/Cargo.toml --profile "$PROFILE" --out "$OUT" "$@"
}
build --compatibility manylinux2014 --auditwheel check 2>&1 \
    || build --auditwheel check 2>&1 \
    || build --compatibility linux
ls -l "$OUT"/veredicto-*.whl
