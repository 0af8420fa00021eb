"""Z3 witnesses replayed on the ReferenceVM (H3's ``Replay`` policy): the VM observes the race."""

from __future__ import annotations

import pytest

from amkspec.programs.gallery import EXAMPLES
from amkspec.smt.explain import explain
from amkspec.vm.witness import replay_trace


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("partial-join read race", "read-race"),
        ("KV cache read before its append", "kv-race"),
        ("overlapping tiles", "write-race"),
        ("page clobber", "page-clobber"),
        ("read of a never-written buffer", "unwritten-read"),
    ],
)
def test_reference_vm_sees_the_witnessed_race(name: str, kind: str) -> None:
    prog = EXAMPLES[name]()
    [finding] = explain(prog).findings
    assert finding.witness is not None and finding.witness.kind == kind and finding.witness.events
    w = finding.witness
    report = replay_trace(prog, w.to_dict(prog), finish=False).report
    assert not report.clean, report.describe(prog)
    if w.kind in ("read-race", "kv-race"):
        assert any(
            r.reader == w.roles["reader"] and w.roles["writer"] in r.pending for r in report.stale_reads
        )
    elif w.kind == "write-race":
        assert {(c.first, c.second) for c in report.conflicts} & {
            (w.tasks[0], w.tasks[1]),
            (w.tasks[1], w.tasks[0]),
        }
