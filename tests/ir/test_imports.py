"""``amkspec.ir``, ``amkspec.footprint``, ``amkspec.proofs`` and ``amkspec.evidence`` need neither
torch nor z3 (a laptop can read and check programs)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

PROBE = """
import sys
import amkspec, amkspec.ir, amkspec.ir.schema, amkspec.ir.summary
import amkspec.footprint, amkspec.proofs
import amkspec.evidence.certificate, amkspec.evidence.certificate_check, amkspec.evidence.model_check
import amkspec.evidence.replay, amkspec.evidence.exhaustive.check
prog = amkspec.load("examples/decoder_layer.json")
amkspec.ir.schema.program_schema()
assert amkspec.proofs.validate(prog).ok
amkspec.evidence.certificate_check.check_certificate(prog, amkspec.evidence.certificate.certify(prog))
heavy = sorted(m for m in ("torch", "z3", "hypothesis") if m in sys.modules)
print(",".join(heavy))
"""


def test_the_ir_and_proofs_import_no_heavy_dependency() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
