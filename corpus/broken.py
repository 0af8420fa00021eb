"""Deliberately broken implementations, for the kit's tests of itself (spec §9.7).

``python -m corpus.broken NAME`` serves the harness protocol like amkspec's adapter, except:

``accept-everything``  loads every document verbatim and accepts every program (``load`` and
                       ``validate`` only)
``run-everything``     amkspec's loader and validator, but a VM that runs every program (even one
                       its validator rejects) on the ReferenceVM without validating it
``reject-everything``  refuses every document with a FormatError at the root, rejects every
                       program, refuses every run
``loose-tolerance``    scales every floating-point result by 1.003 (inside the F16/BF16 tolerance,
                       outside the F32 one)
``crash-on-rope``      exits (status 3) on a ``run`` of a task labelled ``rope`` (the one-task ROPE cases)
``hang-on-unknown``    never answers a ``load`` of a document with a field named ``x_vendor``
``malformed-reply``    answers ``validate`` of a program with a KV_CACHE buffer with verdict ``maybe``
``spec-minimal``       amkspec, speaking only what the original specification requires: it drops
                       unknown fields on load (spec §6), reads a duplicate key as JSON readers do
                       (the last one wins), refuses with a plain ``ValueError`` naming no path and
                       reports no diagnostic codes; it conforms at ``core`` and not at ``strict``
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import attrs

from amkspec.conformance.adapter import Adapter, reference_runner, serve
from amkspec.conformance.tensors import decode, encode
from amkspec.ir import AmkspecError, MegakernelProgram, dumps, loads
from amkspec.proofs import validate

LOOSE = 1.003


class AcceptEverything(Adapter):
    name = "accept-everything"

    def capabilities(self) -> list[str]:
        return ["load", "validate"]

    def on_load(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"status": "loaded", "document": request["document"]}

    def on_validate(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"verdict": "accepted", "codes": []}


class RunEverything(Adapter):
    name = "run-everything"

    def on_run(self, request: dict[str, Any]) -> dict[str, Any]:
        from amkspec.vm import ReferenceVM

        try:
            prog = loads(request["program"])
            vm = ReferenceVM(prog, _unsafe_skip_validation=True)
            out = vm.run(
                {k: decode(v) for k, v in request["weights"].items()},
                {k: decode(v) for k, v in request["inputs"].items()},
                {k: decode(v) for k, v in (request.get("kv") or {}).items()},
            )
        except Exception as exc:  # noqa: BLE001 - a broken VM reports whatever went wrong
            return {"status": "error", "error": {"class": type(exc).__name__, "message": str(exc)}}
        dtypes = {b.name: b.dtype.name for b in prog.buffers}
        return {"status": "ran", "outputs": {k: encode(v, dtypes[k]) for k, v in out.items()}}


class RejectEverything(Adapter):
    name = "reject-everything"

    def on_load(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"status": "refused", "error": {"class": "FormatError", "message": "no", "path": "(root)"}}

    def on_validate(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"verdict": "rejected", "codes": []}

    def on_run(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"status": "refused", "codes": []}


class LooseTolerance(Adapter):
    name = "loose-tolerance"

    def on_run(self, request: dict[str, Any]) -> dict[str, Any]:
        reply = super().on_run(request)
        for tensor in reply.get("outputs", {}).values():
            if tensor["dtype"] in ("F32", "F16", "BF16"):
                tensor["data"] = [v * LOOSE for v in tensor["data"]]
        return reply


class CrashOnRope(Adapter):
    name = "crash-on-rope"

    def on_run(self, request: dict[str, Any]) -> dict[str, Any]:
        if '"label": "rope"' in request["program"]:
            sys.stderr.write("crash-on-rope: giving up\n")
            sys.stderr.flush()
            os._exit(3)
        return super().on_run(request)


class HangOnUnknown(Adapter):
    name = "hang-on-unknown"

    def on_load(self, request: dict[str, Any]) -> dict[str, Any]:
        if '"x_vendor"' in request["document"]:
            time.sleep(3600)
        return super().on_load(request)


class MalformedReply(Adapter):
    name = "malformed-reply"

    def on_validate(self, request: dict[str, Any]) -> dict[str, Any]:
        if '"KV_CACHE"' in request["document"]:
            return {"verdict": "maybe", "codes": []}
        return super().on_validate(request)


class SpecMinimal(Adapter):
    name = "spec-minimal"

    def _program(self, text: str) -> MegakernelProgram:
        program = loads(json.dumps(json.loads(text)))
        _drop_unknown_fields(program)
        return program

    def on_load(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            program = self._program(request["document"])
        except (AmkspecError, ValueError) as exc:
            return {"status": "refused", "error": {"class": "ValueError", "message": str(exc)}}
        return {"status": "loaded", "document": dumps(program)}

    def on_validate(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            program = self._program(request["document"])
        except (AmkspecError, ValueError):
            return {"verdict": "unusable"}
        return {"verdict": "accepted" if validate(program).ok else "rejected"}


def _drop_unknown_fields(record: Any) -> None:
    """Forget every unknown field of ``record`` and of the records it holds, as the original does."""
    if isinstance(record, list):
        for item in record:
            _drop_unknown_fields(item)
    elif attrs.has(type(record)):
        if hasattr(record, "extra"):
            record.extra = {}
        for field in attrs.fields(type(record)):
            _drop_unknown_fields(getattr(record, field.name))


BROKEN: dict[str, type[Adapter]] = {
    "accept-everything": AcceptEverything,
    "run-everything": RunEverything,
    "spec-minimal": SpecMinimal,
    "reject-everything": RejectEverything,
    "loose-tolerance": LooseTolerance,
    "crash-on-rope": CrashOnRope,
    "hang-on-unknown": HangOnUnknown,
    "malformed-reply": MalformedReply,
}


def main() -> int:
    cls = BROKEN[sys.argv[1]]
    serve(cls(reference_runner()), sys.stdin, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
