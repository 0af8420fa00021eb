"""An operand's name for messages is written on first use (spec §7): it is exactly the name the
message format gives its buffer, for every odd id and name a record may hold, and a scratch
operand keeps the name it was given."""

from __future__ import annotations

import copy
from typing import Any

from amkspec.ir import Buffer, BufferKind, DType, MemSpace
from amkspec.proofs.shapes.context import Operand, buffer_operand


class _Label(str):
    def __format__(self, spec: str) -> str:
        return "formatted"


_IDS: list[Any] = [0, 5, True, "x", None, 2**40, 1.0]
_NAMES: list[Any] = ["h0", "", None, 3, _Label("odd"), ["a"]]


def test_a_buffer_operand_is_named_as_messages_name_its_buffer() -> None:
    base = Buffer(
        id=0, name="h", kind=BufferKind.ACTIVATION, dtype=DType.F32, shape=(1, 4), space=MemSpace.HBM
    )
    for buf_id in _IDS:
        for name in _NAMES:
            buf = copy.copy(base)
            object.__setattr__(buf, "id", buf_id)  # past the converters
            object.__setattr__(buf, "name", name)
            for well_formed in (False, True):
                operand = buffer_operand(buf, well_formed)
                assert operand is not None
                label = name if isinstance(name, str) else "?"
                assert operand.name == "buffer " + format(buf_id) + ":" + format(label)
                assert operand.name is operand.name  # written once
                assert operand.buffer == (buf_id if type(buf_id) is int else None)


def test_a_scratch_operand_keeps_its_name() -> None:
    operand = Operand("scratch 2", (2, 3), DType.F32)
    assert operand.name == "scratch 2" and operand.numel == 6 and operand.rows == 2 and operand.rank == 2
    assert repr(operand).startswith("Operand('scratch 2', (2, 3), ")
