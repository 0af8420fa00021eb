"""``python -m amkspec`` runs the command line."""

from amkspec.cli import main

main()
