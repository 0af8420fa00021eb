"""Proof obligations of spec §3 and their algorithmic discharge (no torch, no z3).

``validate(prog) -> ValidationResult`` runs every obligation; each finding is a
:class:`Diagnostic` with a stable code registered in :data:`CODES`.
"""

from amkspec.proofs.diagnostics import CODES, Diagnostic, Family, Severity
from amkspec.proofs.result import ValidationResult
from amkspec.proofs.validate import validate, validated

__all__ = ["CODES", "Diagnostic", "Family", "Severity", "ValidationResult", "validate", "validated"]
