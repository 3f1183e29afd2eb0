"""`python -m layerbench.cli`: the same commands as the `layerbench` program."""

from layerbench.cli.app import main

main()
