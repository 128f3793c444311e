"""`python -m collector.cli`: the `scorecar` command."""

from collector.cli import main

main()
