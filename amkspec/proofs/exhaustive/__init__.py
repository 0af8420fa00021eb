"""The exhaustive small-scope check of ``validate()`` against the explicit-state model checker.

- :mod:`~amkspec.proofs.exhaustive.domain`: the bounded domain, its symmetry classes, ranks;
- :mod:`~amkspec.proofs.exhaustive.agreement`: when the two agree on one program;
- :mod:`~amkspec.proofs.exhaustive.check`: the run, sharded and checkpointed, on any executor.
"""
