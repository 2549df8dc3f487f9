#!/usr/bin/env bash
# A throw-away PostgreSQL 16 with pgvector on 127.0.0.1, for the pgvector retriever's tests
# and for trying `--retriever postgres://…` locally.
#
#   scripts/postgres.sh start   # prints the URL, e.g. postgres://veredicto@127.0.0.1:54321/veredicto
#   scripts/postgres.sh url     # prints the URL of the running server
#   scripts/postgres.sh stop    # stops it by its PID and deletes its data folder
#
#   export VEREDICTO_TEST_POSTGRES=$(scripts/postgres.sh start)
#
#   scripts/postgres.sh start --tls DIR   # a server with ssl=on, for the TLS tests
#
# With --tls DIR the script makes a certificate authority for the occasion and writes into
# DIR: ca.crt (the authority), server.crt and server.key (the server's, for the name
# `localhost` only: no IP address), other-ca.crt (an authority that signed nothing here).
# The server accepts TLS and plain connections from 127.0.0.1, except for the role
# `veredicto_tls_only`, which must use TLS. It prints postgres://veredicto@localhost:PORT/veredicto.
# The pgserver wheel's PostgreSQL is built without TLS, so this mode runs Debian's PostgreSQL
# (package `postgresql`, installed with apt-get when missing and run as root), without
# pgvector. Give it its own VEREDICTO_PG_STATE to run it beside the plain server.
#
# The binaries come from the `pgserver` wheel on PyPI (PostgreSQL 16.2 with pgvector 0.6.2),
# pinned by version and SHA-256, fetched once with `pip download --no-deps` and unpacked into
# a cache folder: ~/.cache/veredicto/pgserver-VERSION, or /var/cache/veredicto/pgserver-VERSION
# when run as root (root's home is private, and the server runs as another user).
# `initdb` refuses to run as root: as root the script creates (once) an unprivileged system
# user `veredicto-pg` and runs the server as that user. The cluster lives in a temporary
# folder; the server trusts local connections, so it is for tests only.
# State (URL, PID, data folder) is kept in $VEREDICTO_PG_STATE (default
# ${TMPDIR:-/tmp}/veredicto-postgres/state).
set -euo pipefail

VERSION=0.1.4
WHEEL=pgserver-0.1.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
SHA256=d595789b47624a3d963aa9aa6359da9be31beb7e61f1a45541953242068b8813
RUN_USER=veredicto-pg
DB_USER=veredicto
DB_NAME=veredicto

if [ "$(id -u)" = 0 ]; then
  CACHE=${VEREDICTO_PG_CACHE:-/var/cache/veredicto/pgserver-$VERSION}
else
  CACHE=${VEREDICTO_PG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/veredicto/pgserver-$VERSION}
fi
STATE=${VEREDICTO_PG_STATE:-${TMPDIR:-/tmp}/veredicto-postgres/state}
BIN=$CACHE/pgserver/pginstall/bin

die() { echo "postgres.sh: $*" >&2; exit 2; }

as_server_user() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$RUN_USER" -- "$@"
  else
    "$@"
  fi
}

fetch() {
  [ -x "$BIN/postgres" ] && return 0
  command -v python3 >/dev/null || die "python3 (with pip) is needed to fetch the pgserver wheel"
  local tmp; tmp=$(mktemp -d)
  trap "rm -rf '$tmp'" EXIT
  python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --python-version 3.11 --platform manylinux2014_x86_64 \
    "pgserver==$VERSION" -d "$tmp" >&2 || die "pip download pgserver==$VERSION failed"
  [ -f "$tmp/$WHEEL" ] || die "pip did not fetch $WHEEL"
  echo "$SHA256  $tmp/$WHEEL" | sha256sum -c --quiet - || die "$WHEEL: SHA-256 differs from the pinned one"
  python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); [z.extract(m, sys.argv[2]) for m in z.namelist() if m.startswith(("pgserver/pginstall/", "pgserver.libs/"))]' \
    "$tmp/$WHEEL" "$tmp/x"
  # The binaries find their libraries in ../../../pgserver.libs: keep the wheel's layout.
  rm -rf "$tmp/x/pgserver/"*.py
  chmod -R a+rX "$tmp/x"
  chmod a+x "$tmp"/x/pgserver/pginstall/bin/*
  mkdir -p "$(dirname "$CACHE")"
  rm -rf "$CACHE.partial" "$CACHE"
  mv "$tmp/x" "$CACHE.partial"
  mv "$CACHE.partial" "$CACHE"
  chmod a+rx "$CACHE" "$(dirname "$CACHE")"
  rm -rf "$tmp"
  trap - EXIT
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

state_get() { sed -n "s/^$1=//p" "$STATE" 2>/dev/null | head -n1; }

running() {
  local pid; pid=$(state_get PID)
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# The binaries of Debian's PostgreSQL (built with OpenSSL), installed when missing.
debian_bin() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
  if [ -z "$dir" ] || [ ! -x "$dir/postgres" ]; then
    [ "$(id -u)" = 0 ] || die "--tls needs Debian's PostgreSQL: apt-get install postgresql (as root)"
    apt-get install -y --no-install-recommends postgresql >&2 \
      || { apt-get update >&2 && apt-get install -y --no-install-recommends postgresql >&2; } \
      || die "apt-get install postgresql failed"
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
  fi
  [ -x "$dir/postgres" ] || die "no PostgreSQL binaries under /usr/lib/postgresql"
  echo "$dir"
}

# A certificate authority, the server's certificate for `localhost` and an unrelated
# authority, in $1.
make_certs() {
  local dir=$1
  command -v openssl >/dev/null || die "--tls needs openssl"
  mkdir -p "$dir"
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  for ca in ca other-ca; do
    openssl req -x509 "${ec[@]}" -days 30 -subj "/CN=veredicto test $ca" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      -keyout "$dir/$ca.key" -out "$dir/$ca.crt" 2>/dev/null || die "openssl: cannot make $ca"
  done
  openssl req "${ec[@]}" -subj "/CN=localhost" -keyout "$dir/server.key" -out "$dir/server.csr" \
    2>/dev/null || die "openssl: cannot make the server's key"
  printf 'subjectAltName=DNS:localhost\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' \
    >"$dir/server.ext"
  openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
    -CAcreateserial -days 30 -extfile "$dir/server.ext" -out "$dir/server.crt" 2>/dev/null \
    || die "openssl: cannot sign the server's certificate"
  rm -f "$dir/server.csr" "$dir/server.ext" "$dir/ca.srl" "$dir/other-ca.key"
  chmod 600 "$dir/server.key" "$dir/ca.key"
}

start() {
  local tls_dir=""
  if [ "${1:-}" = --tls ]; then
    [ -n "${2:-}" ] || die "usage: scripts/postgres.sh start --tls DIR"
    tls_dir=$2
  fi
  if running; then state_get URL; return 0; fi
  if [ -n "$tls_dir" ]; then
    BIN=$(debian_bin)
  else
    fetch
  fi
  if [ "$(id -u)" = 0 ] && ! id "$RUN_USER" >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin "$RUN_USER" \
      || die "cannot create the system user $RUN_USER (initdb refuses to run as root)"
  fi
  mkdir -p "$(dirname "$STATE")"
  local data port
  data=$(mktemp -d "${TMPDIR:-/tmp}/veredicto-pg.XXXXXX")
  # A start that fails half-way leaves nothing behind (a started server is stopped).
  trap 'if [ -f "$data/cluster/postmaster.pid" ]; then kill -TERM "$(head -n1 "$data/cluster/postmaster.pid")" 2>/dev/null; sleep 1; fi; rm -rf "$data"' EXIT
  chmod 700 "$data"
  [ "$(id -u)" = 0 ] && chown "$RUN_USER" "$data"
  port=$(free_port)
  as_server_user "$BIN/initdb" -D "$data/cluster" -U "$DB_USER" --auth=trust -E UTF8 \
    --no-sync >"$data/initdb.log" 2>&1 || { cat "$data/initdb.log" >&2; die "initdb failed"; }
  local opts="-c listen_addresses=127.0.0.1 -p $port -k $data -c fsync=off"
  if [ -n "$tls_dir" ]; then
    make_certs "$tls_dir"
    cp "$tls_dir/server.crt" "$tls_dir/server.key" "$data/cluster/"
    [ "$(id -u)" = 0 ] && chown "$RUN_USER" "$data/cluster/server.crt" "$data/cluster/server.key"
    chmod 600 "$data/cluster/server.key"
    opts="$opts -c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key"
    # TLS and plain from the loopback address; the role veredicto_tls_only only over TLS.
    printf '%s\n' \
      'local all all trust' \
      'hostnossl all veredicto_tls_only 127.0.0.1/32 reject' \
      'hostssl all all 127.0.0.1/32 trust' \
      'host all all 127.0.0.1/32 trust' >"$data/cluster/pg_hba.conf"
  fi
  as_server_user "$BIN/pg_ctl" -D "$data/cluster" -l "$data/cluster/server.log" -w -t 60 \
    -o "$opts" start >/dev/null \
    || { cat "$data/cluster/server.log" >&2; die "the server did not start"; }
  local pid; pid=$(head -n1 "$data/cluster/postmaster.pid")
  "$BIN/psql" -X -q -h 127.0.0.1 -p "$port" -U "$DB_USER" -d postgres \
    -c "CREATE DATABASE $DB_NAME" >/dev/null || die "CREATE DATABASE failed"
  local url
  if [ -n "$tls_dir" ]; then
    "$BIN/psql" -X -q -h 127.0.0.1 -p "$port" -U "$DB_USER" -d postgres \
      -c "CREATE ROLE veredicto_tls_only LOGIN" >/dev/null || die "CREATE ROLE failed"
    url="postgres://$DB_USER@localhost:$port/$DB_NAME"
  else
    "$BIN/psql" -X -q -h 127.0.0.1 -p "$port" -U "$DB_USER" -d "$DB_NAME" \
      -c "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null || die "CREATE EXTENSION vector failed"
    url="postgres://$DB_USER@127.0.0.1:$port/$DB_NAME"
  fi
  printf 'URL=%s\nPID=%s\nDATA=%s\nPSQL=%s\n' "$url" "$pid" "$data" "$BIN/psql" >"$STATE.tmp"
  mv "$STATE.tmp" "$STATE"
  trap - EXIT
  echo "$url"
}

stop() {
  [ -f "$STATE" ] || { echo "postgres.sh: not running" >&2; return 0; }
  local pid data
  pid=$(state_get PID); data=$(state_get DATA)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  fi
  case "$data" in "${TMPDIR:-/tmp}"/veredicto-pg.*) rm -rf "$data" ;; esac
  rm -f "$STATE"
}

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) stop ;;
  url) running || die "not running (scripts/postgres.sh start)"; state_get URL ;;
  psql) shift; running || die "not running"; exec "$(state_get PSQL)" -X "$(state_get URL)" "$@" ;;
  *) echo "usage: scripts/postgres.sh start [--tls DIR]|stop|url|psql [ARGS]" >&2; exit 2 ;;
esac
