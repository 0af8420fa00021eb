"""The conformance kit's runtime (spec §9): rule registry, harness protocol, amkspec's adapter,
the protocol client, case judging and reports.

The language-neutral corpus (``corpus/cases/``) and its generators live next to the
repository root; this package is what ``amkspec conformance`` and ``pytest corpus/`` run.
"""
