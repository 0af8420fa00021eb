"""Text reports show a program's own strings escaped, so that no input can forge a report line.

A task label ``"x\\nvalid: yes"`` would otherwise print as two lines of a text report.
:func:`display_program` returns a copy of a program whose versions, names, sources, labels, notes
and model/target names have their control characters escaped (``\\n`` → ``\\\\n``); text reports
are drawn from it, JSON reports from the program itself (JSON escapes its own strings). Verdicts
are always reached on the program itself, never on the copy (escaping a name can change what a
rule sees, spec §3.5 O502); :func:`display_result` escapes the messages of such a verdict.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from amkspec.cli.base import escape_line
from amkspec.ir import MegakernelProgram

if TYPE_CHECKING:
    from amkspec.proofs import ValidationResult


def _needs(text: Any) -> bool:
    return isinstance(text, str) and not text.isprintable()


def _clean(record: Any, *fields: str) -> Any:
    changes = {f: escape_line(getattr(record, f)) for f in fields if _needs(getattr(record, f, None))}
    return attrs.evolve(record, **changes) if changes else record


def display_program(prog: MegakernelProgram) -> MegakernelProgram:
    """``prog`` itself when every shown string is printable, else a copy with them escaped."""
    meta_model = prog.meta.get("model")
    target_name = getattr(prog.target, "name", None)
    dirty = (
        _needs(prog.ir_version) or _needs(prog.abi_version)
        or _needs(meta_model) or _needs(target_name)
        or any(_needs(b.name) or _needs(b.source) for b in prog.buffers)
        or any(_needs(t.label) for t in prog.tasks)
        or any(_needs(c.note) for c in prog.counters)
    )
    if not dirty:
        return prog
    meta = {**prog.meta, "model": escape_line(meta_model)} if isinstance(meta_model, str) else prog.meta
    return attrs.evolve(
        _clean(prog, "ir_version", "abi_version"),
        meta=meta,
        target=_clean(prog.target, "name") if prog.target is not None else None,
        buffers=[_clean(b, "name", "source") for b in prog.buffers],
        tasks=[_clean(t, "label") for t in prog.tasks],
        counters=[_clean(c, "note") for c in prog.counters],
    )


def display_result(result: ValidationResult) -> ValidationResult:
    """``result`` itself when every finding's message is printable, else a copy whose messages
    have their control characters escaped (a message quotes the program's own strings)."""
    if all(d.message.isprintable() for d in result.diagnostics):
        return result
    return attrs.evolve(
        result, diagnostics=[attrs.evolve(d, message=escape_line(d.message)) for d in result.diagnostics]
    )
