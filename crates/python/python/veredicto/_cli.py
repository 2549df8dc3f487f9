"""The ``veredicto`` console command: the Rust command line (``veredicto_cli::run``)."""

from __future__ import annotations

import sys

from veredicto import _native


def main() -> None:
    """Run the command line with ``sys.argv`` and exit with its code (0, 1 or 2)."""
    sys.stdout.flush()
    code = _native.run_cli(["veredicto", *sys.argv[1:]])
    sys.exit(code)


if __name__ == "__main__":
    main()
