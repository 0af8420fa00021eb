"""The schedule cache: verdicts keyed by ``schedule_id``, trusted only for the same program.

An entry stores the verdict, the SHA-256 of the lowered program and the evaluation context (model,
target, VM identity, probe token: :attr:`Evaluator.context <amkspec.search.evaluate.Evaluator.context>`;
a plugged-in runner is identified by :func:`~amkspec.search.evaluate.runner_identity`).
:meth:`ScheduleCache.lookup` returns it only when the program lowered
*now* hashes the same and the context matches: change the lowering (or the VM) and every old
entry is ignored and replaced, never trusted (the value-identity guard of a hash-keyed cache).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from amkspec.search.files import atomic_write
from amkspec.search.verdict import Verdict

VERSION = 1
UNCACHED_FAILURES = ("error", "vm-unavailable")
"""Failures of the environment rather than of the schedule: evaluated again next time."""


class ScheduleCache:
    """A JSON file of ``{schedule_id: {program_sha256, context, verdict}}`` (None: in memory only)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.entries: dict[str, dict[str, Any]] = {}
        self.hits = self.stale = 0
        if self.path is not None and self.path.exists():
            self._load(self.path)

    def _load(self, path: Path) -> None:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return  # an unreadable cache is an empty one: entries are re-evaluated, never guessed
        if isinstance(doc, dict) and doc.get("version") == VERSION and isinstance(doc.get("entries"), dict):
            self.entries = {k: v for k, v in doc["entries"].items() if isinstance(v, dict)}

    def lookup(self, schedule_id: str, sha256: str, context: str) -> Verdict | None:
        """The cached verdict of this exact program in this context, or None (stale entries count)."""
        entry = self.entries.get(schedule_id)
        if entry is None:
            return None
        if entry.get("program_sha256") != sha256 or entry.get("context") != context:
            self.stale += 1
            return None
        try:
            verdict = Verdict.from_dict(entry["verdict"])
        except (KeyError, TypeError, ValueError, AttributeError):
            self.stale += 1
            return None
        self.hits += 1
        return verdict

    def store(self, verdict: Verdict, context: str) -> None:
        """Remember ``verdict`` (of a lowered program) and write the file."""
        if self._put(verdict, context):
            self._write()

    def restore(self, verdicts: Iterable[Verdict], context: str) -> None:
        """Store, in order, the verdicts a resumed search already decided whose entries are missing
        or differ (the run stopped after saving its state, before writing this file); one write."""
        changed = [self._put(v, context) for v in verdicts]
        if any(changed):
            self._write()

    def _put(self, verdict: Verdict, context: str) -> bool:
        """Set the entry of ``verdict``; whether that changed the cache."""
        if verdict.program_sha256 is None or verdict.failure in UNCACHED_FAILURES:
            return False
        entry = {"program_sha256": verdict.program_sha256, "context": context, "verdict": verdict.to_dict()}
        if self.entries.get(verdict.schedule_id) == entry:
            return False
        self.entries[verdict.schedule_id] = entry
        return True

    def _write(self) -> None:
        if self.path is not None:
            doc = {"version": VERSION, "entries": self.entries}
            atomic_write(self.path, json.dumps(doc, indent=1) + "\n")
