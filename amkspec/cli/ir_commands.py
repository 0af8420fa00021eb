"""``amkspec info``, ``fmt`` and ``schema``: the IR-level commands (spec §1, §6)."""

from __future__ import annotations
