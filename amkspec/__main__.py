"""``python -m amkspec`` runs the command line (:mod:`amkspec.launch`)."""

from amkspec.launch import main

main()
