#!/usr/bin/env bash
# Throw-away vector-search servers on 127.0.0.1, from registry packages, for the retriever
# adapters' tests against the real engines, in the style of scripts/postgres.sh.
#
#   scripts/engines.sh start [ENGINE...]   # starts them (default: all); prints `ENGINE URL` lines,
#                                          # or only the URL when one engine is named
#   scripts/engines.sh url ENGINE          # the URL of a running one
#   scripts/engines.sh stop [ENGINE...]    # stops them by PID and deletes their data folders
#   scripts/engines.sh list                # the engines this script can start
#
#   scripts/engines.sh python ENGINE       # the Python of an engine's packages (milvus: its
#                                          # pymilvus, for loading test collections)
#
#   export VEREDICTO_TEST_CHROMA=$(scripts/engines.sh start chroma)
#
# Engines:
#   chroma   Chroma 1.5.9, the server compiled into the `chromadb` wheel on PyPI (its Rust
#            frontend, HTTP API v2 under /api/v2). The wheel is pinned by version and SHA-256,
#            fetched once with `pip download --no-deps`, and only its `chromadb_rust_bindings`
#            folder is unpacked into the cache: the server needs no other Python package, only
#            `python3` to load it.
#   milvus   Milvus Lite 3.2.2, the gRPC server of the `milvus-lite` package on PyPI (Milvus'
#            gRPC API; Milvus Lite has no REST API), with the packages it imports (pymilvus,
#            grpcio, numpy, pyarrow, faiss-cpu, …), each pinned by version and SHA-256 in
#            scripts/engines-milvus-lite.txt and installed with `pip --require-hashes` into the
#            cache (about 110 MB, once). Its wheels are CPython 3.11's.
#
# What does not run here, and why (checked with the registries this machine reaches: PyPI,
# npm, Debian, crates.io):
#   - LanceDB: the `lancedb` wheel is an embedded library (no server mode; its `remote`
#     module is a client of the hosted LanceDB service).
#   - Qdrant: no registry package ships the server (`qdrant` on crates.io is an empty
#     placeholder; `qdrant-edge-py` is an in-process library without a server).
#   - Weaviate: the client's embedded mode downloads the server from GitHub at run time.
#   - OpenSearch, Elasticsearch: no package ships the server (Debian has neither; the npm and
#     PyPI helpers download the release archive at run time).
#
# Cache: ~/.cache/veredicto/ENGINE-VERSION, or /var/cache/veredicto/ENGINE-VERSION as root. As
# root the servers run as an unprivileged system user `veredicto-engines` (created once). Each
# server's data lives in a temporary folder; the servers have no authentication: for tests only.
# State (URL, PID, data folder per engine) is kept under $VEREDICTO_ENGINES_STATE (default
# ${TMPDIR:-/tmp}/veredicto-engines).
set -euo pipefail

ENGINES="chroma milvus"

CHROMA_VERSION=1.5.9
CHROMA_WHEEL=chromadb-1.5.9-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
CHROMA_SHA256=cc09b3df76e5a5cb386aed2715a2eea152e3949f9e1ba93c7119505377749929

MILVUS_VERSION=3.2.2

RUN_USER=veredicto-engines
STATE_DIR=${VEREDICTO_ENGINES_STATE:-${TMPDIR:-/tmp}/veredicto-engines}

die() { echo "engines.sh: $*" >&2; exit 2; }

cache_root() {
  if [ "$(id -u)" = 0 ]; then
    echo "${VEREDICTO_ENGINES_CACHE:-/var/cache/veredicto}"
  else
    echo "${VEREDICTO_ENGINES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/veredicto}"
  fi
}

as_server_user() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$RUN_USER" -- "$@"
  else
    "$@"
  fi
}

known() { case " $ENGINES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# Downloads WHEEL of PACKAGE==VERSION with pip, checks its SHA-256 and unpacks the members
# under PREFIX into DEST (atomically: DEST appears complete or not at all).
fetch_wheel() {
  local package=$1 version=$2 wheel=$3 sha=$4 prefix=$5 dest=$6
  [ -d "$dest" ] && return 0
  command -v python3 >/dev/null || die "python3 (with pip) is needed to fetch $package"
  local tmp; tmp=$(mktemp -d)
  trap "rm -rf '$tmp'" EXIT
  python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --python-version 3.11 --platform manylinux2014_x86_64 \
    "$package==$version" -d "$tmp" >&2 || die "pip download $package==$version failed"
  [ -f "$tmp/$wheel" ] || die "pip did not fetch $wheel"
  echo "$sha  $tmp/$wheel" | sha256sum -c --quiet - || die "$wheel: SHA-256 differs from the pinned one"
  python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); [z.extract(m, sys.argv[2]) for m in z.namelist() if m.startswith(sys.argv[3])]' \
    "$tmp/$wheel" "$tmp/x" "$prefix"
  chmod -R a+rX "$tmp/x"
  mkdir -p "$(dirname "$dest")"
  chmod a+rx "$(dirname "$dest")"
  rm -rf "$dest.partial"
  mv "$tmp/x" "$dest.partial"
  mv "$dest.partial" "$dest"
  rm -rf "$tmp"
  trap - EXIT
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits until URL answers 200 (at most SECONDS), while PIDFILE's process lives.
wait_http() {
  python3 - "$1" "$2" "$3" <<'EOF'
import sys, time, urllib.request, os
url, seconds, pidfile = sys.argv[1], float(sys.argv[2]), sys.argv[3]
end = time.monotonic() + seconds
while time.monotonic() < end:
    try:
        pid = int(open(pidfile).read().strip())
    except (OSError, ValueError):
        pid = None  # not written yet
    if pid is not None:
        try:
            os.kill(pid, 0)
        except OSError:
            sys.exit(1)  # the server died
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            if r.status == 200:
                sys.exit(0)
    except Exception:
        pass
    time.sleep(0.2)
sys.exit(1)
EOF
}

state_file() { echo "$STATE_DIR/$1.state"; }
state_get() { sed -n "s/^$2=//p" "$(state_file "$1")" 2>/dev/null | head -n1; }

running() {
  local pid; pid=$(state_get "$1" PID)
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# A python3 (3.9 or later) that the server's user can run: as root, root's own (often under
# its private home) may not be, so it is looked up on the system path as that user.
server_python() {
  local py
  py=$(as_server_user env -i PATH=/usr/local/bin:/usr/bin:/bin sh -c 'command -v python3' 2>/dev/null) || true
  [ "$(id -u)" = 0 ] || py=$(command -v python3)
  [ -n "$py" ] && as_server_user "$py" -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null \
    || die "no python3 (3.9 or later) that the user $(as_server_user id -un) can run on /usr/local/bin:/usr/bin:/bin"
  echo "$py"
}

ensure_user() {
  if [ "$(id -u)" = 0 ] && ! id "$RUN_USER" >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin "$RUN_USER" \
      || die "cannot create the system user $RUN_USER"
  fi
}

start_chroma() {
  local cache; cache="$(cache_root)/chroma-$CHROMA_VERSION"
  fetch_wheel chromadb "$CHROMA_VERSION" "$CHROMA_WHEEL" "$CHROMA_SHA256" \
    chromadb_rust_bindings/ "$cache"
  local data port py
  py=$(server_python)
  data=$(mktemp -d "${TMPDIR:-/tmp}/veredicto-chroma.XXXXXX")
  # A start that fails half-way leaves nothing behind (a started server is stopped).
  trap 'if [ -f "$data/pid" ]; then kill -TERM "$(cat "$data/pid")" 2>/dev/null || true; fi; rm -rf "$data"' EXIT
  chmod 700 "$data"
  [ "$(id -u)" = 0 ] && chown "$RUN_USER" "$data"
  port=$(free_port)
  # The child writes its own PID before it becomes the server, so `stop` signals the server
  # itself (not runuser).
  as_server_user env -i PATH=/usr/bin:/bin HOME="$data" PYTHONPATH="$cache" \
    ANONYMIZED_TELEMETRY=False NO_COLOR=1 \
    sh -c 'echo $$ > "$1/pid"; exec "$2" -c "import sys, chromadb_rust_bindings as b; b.cli([\"chroma\", \"run\", \"--path\", sys.argv[1], \"--host\", \"127.0.0.1\", \"--port\", sys.argv[2]])" "$1/db" "$3" >"$1/server.log" 2>&1' \
    sh "$data" "$py" "$port" </dev/null >/dev/null 2>&1 &
  local url="http://127.0.0.1:$port"
  wait_http "$url/api/v2/heartbeat" 60 "$data/pid" \
    || { cat "$data/server.log" >&2 2>/dev/null; die "chroma did not start"; }
  local pid; pid=$(cat "$data/pid")
  printf 'URL=%s\nPID=%s\nDATA=%s\nVERSION=%s\n' "$url" "$pid" "$data" "$CHROMA_VERSION" \
    >"$(state_file chroma).tmp"
  mv "$(state_file chroma).tmp" "$(state_file chroma)"
  trap - EXIT
}

# Installs the pinned packages of scripts/engines-milvus-lite.txt for PYTHON into DEST
# (atomically: DEST appears complete or not at all).
fetch_milvus() {
  local py=$1 dest=$2
  [ -d "$dest" ] && return 0
  local here; here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  "$py" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
    || die "milvus: the pinned wheels are CPython 3.11's; $py is $("$py" -V 2>&1)"
  python3 -m pip --version >/dev/null 2>&1 || die "python3 with pip is needed to fetch milvus-lite"
  local tmp; tmp=$(mktemp -d)
  trap "rm -rf '$tmp'" EXIT
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes \
    --only-binary=:all: --python-version 3.11 --implementation cp \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
    --target "$tmp/x" -r "$here/engines-milvus-lite.txt" >&2 \
    || die "pip install of the pinned milvus-lite packages failed"
  chmod -R a+rX "$tmp/x"
  mkdir -p "$(dirname "$dest")"
  chmod a+rx "$(dirname "$dest")"
  rm -rf "$dest.partial"
  mv "$tmp/x" "$dest.partial"
  mv "$dest.partial" "$dest"
  rm -rf "$tmp"
  trap - EXIT
}

# Waits until HOST:PORT accepts TCP connections (at most SECONDS), while PIDFILE's process lives.
wait_tcp() {
  python3 - "$1" "$2" "$3" "$4" <<'EOF'
import os, socket, sys, time
host, port, seconds, pidfile = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
end = time.monotonic() + seconds
while time.monotonic() < end:
    try:
        os.kill(int(open(pidfile).read().strip()), 0)
    except (OSError, ValueError):
        if os.path.exists(pidfile):
            sys.exit(1)  # the server died
    try:
        socket.create_connection((host, port), timeout=1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.2)
sys.exit(1)
EOF
}

start_milvus() {
  local py cache
  py=$(server_python)
  cache="$(cache_root)/milvus-lite-$MILVUS_VERSION"
  fetch_milvus "$py" "$cache"
  local data port
  data=$(mktemp -d "${TMPDIR:-/tmp}/veredicto-milvus.XXXXXX")
  # A start that fails half-way leaves nothing behind (a started server is stopped).
  trap 'if [ -f "$data/pid" ]; then kill -TERM "$(cat "$data/pid")" 2>/dev/null || true; fi; rm -rf "$data"' EXIT
  chmod 700 "$data"
  [ "$(id -u)" = 0 ] && chown "$RUN_USER" "$data"
  port=$(free_port)
  # The child writes its own PID before it becomes the server, so `stop` signals the server.
  as_server_user env -i PATH=/usr/bin:/bin HOME="$data" PYTHONPATH="$cache" NO_COLOR=1 \
    sh -c 'echo $$ > "$1/pid"; exec "$2" -m milvus_lite server --data-dir "$1/db" --host 127.0.0.1 --port "$3" >"$1/server.log" 2>&1' \
    sh "$data" "$py" "$port" </dev/null >/dev/null 2>&1 &
  wait_tcp 127.0.0.1 "$port" 120 "$data/pid" \
    || { cat "$data/server.log" >&2 2>/dev/null; die "milvus did not start"; }
  local pid; pid=$(cat "$data/pid")
  printf 'URL=%s\nPID=%s\nDATA=%s\nVERSION=%s\nPYTHONPATH=%s\nPYTHON=%s\n' "http://127.0.0.1:$port" \
    "$pid" "$data" "$MILVUS_VERSION" "$cache" "$py" >"$(state_file milvus).tmp"
  mv "$(state_file milvus).tmp" "$(state_file milvus)"
  trap - EXIT
}

start_one() {
  local engine=$1
  known "$engine" || die "unknown engine \`$engine\` (known: $ENGINES)"
  running "$engine" && return 0
  command -v python3 >/dev/null || die "python3 is needed"
  ensure_user
  mkdir -p "$STATE_DIR"
  "start_$engine"
}

stop_one() {
  local engine=$1 f; f=$(state_file "$engine")
  [ -f "$f" ] || return 0
  local pid data
  pid=$(state_get "$engine" PID); data=$(state_get "$engine" DATA)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  fi
  case "$data" in "${TMPDIR:-/tmp}"/veredicto-"$engine".*) rm -rf "$data" ;; esac
  rm -f "$f"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  start)
    if [ $# -eq 1 ]; then start_one "$1"; state_get "$1" URL; exit 0; fi
    for e in ${*:-$ENGINES}; do start_one "$e"; echo "$e $(state_get "$e" URL)"; done ;;
  stop)
    for e in ${*:-$ENGINES}; do known "$e" || die "unknown engine \`$e\` (known: $ENGINES)"; stop_one "$e"; done ;;
  url)
    [ $# -eq 1 ] || die "usage: scripts/engines.sh url ENGINE"
    running "$1" || die "$1 is not running (scripts/engines.sh start $1)"
    state_get "$1" URL ;;
  python)
    [ $# -eq 1 ] || die "usage: scripts/engines.sh python ENGINE"
    running "$1" || die "$1 is not running (scripts/engines.sh start $1)"
    [ -n "$(state_get "$1" PYTHONPATH)" ] || die "$1 has no Python packages"
    # A command line: the interpreter with the engine's packages on its path.
    echo "env PYTHONPATH=$(state_get "$1" PYTHONPATH) $(state_get "$1" PYTHON)" ;;
  list) echo "$ENGINES" ;;
  *) echo "usage: scripts/engines.sh start|stop [ENGINE...] | url ENGINE | python ENGINE | list" >&2; exit 2 ;;
esac
