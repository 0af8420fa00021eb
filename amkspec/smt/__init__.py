"""Z3 discharge of the proof obligations (spec §3): witnesses, per-program proofs, theorems.

Needs the ``smt`` extra (z3-solver). Nothing in :mod:`amkspec.ir` or
:mod:`amkspec.proofs` imports this package.
"""

from amkspec.smt.queries import Prover, QueryResult
from amkspec.smt.view import Unencodable, build_view
from amkspec.smt.witness import Witness, render_dot, render_text

__all__ = ["Prover", "QueryResult", "Unencodable", "Witness", "build_view", "render_dot", "render_text"]
