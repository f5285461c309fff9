"""`python -m chaos` is the same as the `chaos` console script."""

from chaos.cli import main

main()
