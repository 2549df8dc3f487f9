#!/bin/sh
# Installs Debian's `chromium` package, which the HTML report test
# (crates/report/tests/report/html_chromium.rs) drives headless, and `chromium-driver`
# (chromedriver), through which the workbench's browser tests (crates/web/tests/web/browser.rs)
# drive it. Idempotent: does nothing when /usr/bin/chromium and /usr/bin/chromedriver already
# exist. Needs root (or sudo) and apt-get; CI calls it before `cargo test`.
set -eu

if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    echo "chromium already installed: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
    echo "chromedriver already installed: $(/usr/bin/chromedriver --version 2>/dev/null || echo /usr/bin/chromedriver)"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-chromium.sh: apt-get not found; install Debian's chromium package by other means" >&2
    exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "install-chromium.sh: run as root (or install sudo)" >&2
        exit 1
    fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends chromium chromium-driver fonts-dejavu-core fonts-liberation
/usr/bin/chromium --version
/usr/bin/chromedriver --version
