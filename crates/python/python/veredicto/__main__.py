"""``python -m veredicto``: the same command line as ``veredicto``."""

from veredicto._cli import main

main()
