"""`python -m memhtml.cli` runs the CLI."""

from memhtml.cli.main import main

main()
