"""The exhaustive small-scope check of ``validate()`` against the explicit-state model checker.

- :mod:`~amkspec.evidence.exhaustive.domain`: the bounded domain, its symmetry classes, ranks;
- :mod:`~amkspec.evidence.exhaustive.agreement`: when the two agree on one program;
- :mod:`~amkspec.evidence.exhaustive.check`: the run, sharded and checkpointed, on any executor.
"""
