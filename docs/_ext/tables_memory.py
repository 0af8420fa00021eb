"""Tables of the memory-safety chapter, generated from :data:`amkspec.proofs.memory.SHAPE_RULES`."""

from __future__ import annotations

import re

from amkspec.conformance.rules import rule_id_for_code
from amkspec.proofs.diagnostics import CODES, Family
from amkspec.proofs.memory import SHAPE_RULES

Table = tuple[list[str], list[list[str]]]
_LITERAL = re.compile(r"(?<!`)`([^`]+)`(?!`)")


def _rst(text: str) -> str:
    """Rule texts mark code with single backticks (Markdown style); reST wants double."""
    return _LITERAL.sub(r"``\1``", text)


def shape_rules() -> Table:
    """Every opcode's shape/dtype rules, in the order they are checked, with the code enforcing each."""
    rows = []
    for op, rules in sorted(SHAPE_RULES.items()):
        if not rules:
            rows.append([f"``{op.name}`` ({int(op)})", "—", "reads and writes nothing"])
        for i, rule in enumerate(rules):
            name = f"``{op.name}`` ({int(op)})" if i == 0 else ""
            rows.append([name, rule.code, _rst(rule.text)])
    return ["Opcode", "Code", "Rule"], rows


def memory_codes() -> Table:
    """The M4xx codes (clause §3.4) with the rule each witnesses, summary and the opcodes whose rules
    use them."""
    users: dict[str, list[str]] = {}
    for op, rules in sorted(SHAPE_RULES.items()):
        for rule in rules:
            if op.name not in users.setdefault(rule.code, []):
                users[rule.code].append(op.name)
    rows = [
        [code, rule_id_for_code(code), info.severity.value, _escape(info.summary),
         ", ".join(f"``{name}``" for name in users.get(code, []))]
        for code, info in CODES.items()
        if info.family is Family.MEMORY
    ]
    return ["Code", "Rule", "Severity", "Summary", "Opcodes"], rows


def _escape(text: str) -> str:
    """Plain text for reST: backslash the characters that would start markup."""
    return re.sub(r"([*_`|\\])", r"\\\1", text)
