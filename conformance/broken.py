"""Deliberately broken implementations, for the kit's tests of itself (spec §9.7).

``python -m conformance.broken NAME`` serves the harness protocol like amkspec's adapter, except:

``accept-everything``  loads every document verbatim, accepts every program, runs every program
                       (even rejected ones) on the ReferenceVM without validating it
``reject-everything``  refuses every document with a FormatError at the root, rejects every
                       program, refuses every run
``loose-tolerance``    scales every floating-point result by 1.003 (inside the F16/BF16 tolerance,
                       outside the F32 one)
``crash-on-rope``      exits (status 3) on a ``run`` of a task labelled ``rope`` (the one-task ROPE cases)
``hang-on-unknown``    never answers a ``load`` of a document with a field named ``x_vendor``
``malformed-reply``    answers ``validate`` of a program with a KV_CACHE buffer with verdict ``maybe``
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from amkspec.conformance.adapter import Adapter, reference_runner, serve
from amkspec.conformance.tensors import decode, encode
from amkspec.ir import loads

LOOSE = 1.003


class AcceptEverything(Adapter):
    name = "accept-everything"

    def on_load(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"status": "loaded", "document": request["document"]}

    def on_validate(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"verdict": "accepted", "codes": []}

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


BROKEN: dict[str, type[Adapter]] = {
    "accept-everything": AcceptEverything,
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
