//! veredicto-net's tests: the PostgreSQL target parser (libpq's rules), the HTTP client's
//! retry and deadline rule against a scripted local server (plain and HTTPS), and TLS to a
//! real PostgreSQL started with `ssl=on` (`scripts/postgres.sh start --tls DIR`; its URL in
//! VEREDICTO_TEST_POSTGRES_TLS, DIR in VEREDICTO_TEST_POSTGRES_TLS_DIR, and the plain
//! server's URL in VEREDICTO_TEST_POSTGRES: `scripts/test.sh` sets all three).

mod http;
mod server;
mod target;
mod tls_postgres;
