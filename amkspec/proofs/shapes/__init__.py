"""Per-opcode shape and dtype rules of the memory-safety obligation family (spec §7).

:mod:`amkspec.proofs.memory` is the entry point; this package holds the codes
(:mod:`.codes`), the operand view the rules work on (:mod:`.context`), one
module per opcode family and the table tying opcodes to their rules
(:mod:`.registry`).
"""
