"""Example programs, one public home (the tests, benchmarks, docs, tools and ``examples/`` draw from it).

- :mod:`amkspec.programs.gallery`: small programs with one synchronisation bug each (the witness
  gallery), scalable layered ones, and a race witness for them;
- :mod:`amkspec.programs.families`: sized program families the benchmarks measure;
- :mod:`amkspec.programs.small`: small hand-written programs, each showing one thing a VM must do;
- :mod:`amkspec.programs.bundled`: the bundled examples of ``examples/``;
- :mod:`amkspec.programs.parts`: buffer specs and one-task programs (conformance generators, tests);
- :mod:`amkspec.programs.strategies`: hypothesis strategies (valid, arbitrary, synchronisation-heavy
  and mutated programs; JSON documents).

This module imports nothing, so only :mod:`amkspec.programs.strategies` needs ``hypothesis``.
"""
