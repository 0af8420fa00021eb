"""amkspec's own implementation of the harness protocol (spec §9.3, §9.5).

``python -m amkspec.conformance.adapter [--vm reference|cpu-kernel|cuda]`` serves the protocol on
stdin/stdout: ``load`` and ``validate`` use :mod:`amkspec.ir` and :func:`amkspec.proofs.validate`;
``run`` uses the chosen VM. ``reference`` is :class:`amkspec.vm.ReferenceVM`; ``cpu-kernel`` and
``cuda`` are the megakernel (``vm_cuda.MegakernelVM``), imported lazily: where it is not importable
(or, for ``cuda``, no GPU is present) the adapter does not advertise ``run``, so run cases are not
applicable rather than failed (rule CONF-START-1).

:class:`Adapter` answers one request at a time; a subclass may override one ``on_<cmd>`` method
(the kit's deliberately broken implementations do).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import IO, Any

from amkspec import __version__
from amkspec.conformance.protocol import PROTOCOL_VERSION
from amkspec.conformance.tensors import NUMPY_DTYPE, TensorError, decode, encode
from amkspec.ir import AmkspecError, FormatError, MegakernelProgram, VersionError, dumps, loads
from amkspec.vms import VM_NAMES, make_vm, megakernel_backend

VMS = VM_NAMES

Runner = Callable[
    [MegakernelProgram, dict[str, Any], dict[str, Any], "dict[str, Any] | None"], dict[str, Any]
]


def _error_path(exc: AmkspecError) -> str | None:
    """The JSON path an error names: FormatError carries it; a VersionError names its field first."""
    if isinstance(exc, FormatError):
        return exc.path
    if isinstance(exc, VersionError):
        return str(exc).split(" ", 1)[0]
    return None


def _error(exc: BaseException) -> dict[str, Any]:
    path = _error_path(exc) if isinstance(exc, AmkspecError) else None
    return {"class": type(exc).__name__, "message": str(exc), "path": path}


def reference_runner() -> Runner:
    """Runs on :class:`amkspec.vm.ReferenceVM` (refuses what ``validate()`` rejects, rule EXEC-REFUSE-1).
    torch is imported on the first ``run``, so ``start`` answers quickly."""

    def run(
        program: MegakernelProgram, weights: dict[str, Any], inputs: dict[str, Any], kv: dict[str, Any] | None
    ) -> dict[str, Any]:
        from amkspec.vm import ReferenceVM

        return ReferenceVM(program).run(weights, inputs, kv)

    return run


def megakernel_runner(vm: str) -> Runner | None:
    """Runs on the megakernel VM ``vm`` (``cpu-kernel`` or ``cuda``); None where it cannot run here."""
    try:
        import vm_cuda  # noqa: F401 - optional: the megakernel may not be installed here
    except ImportError:
        return None
    if megakernel_backend(vm) == "cuda":
        try:
            import torch
        except ImportError:
            return None
        if not torch.cuda.is_available():
            return None

    def run(
        program: MegakernelProgram, weights: dict[str, Any], inputs: dict[str, Any], kv: dict[str, Any] | None
    ) -> dict[str, Any]:
        from amkspec.proofs import validate
        from amkspec.vm import RefusedProgram

        result = validate(program)
        if not result.ok:
            raise RefusedProgram(result, vm=f"MegakernelVM ({vm})")
        out: dict[str, Any] = make_vm(vm, program, timeout_s=60.0).run(weights, inputs, kv)
        return out

    return run


class Adapter:
    """Answers protocol requests for one VM (``runner`` None: ``run`` is not a capability)."""

    name = "amkspec"

    def __init__(self, runner: Runner | None, vm: str = "reference") -> None:
        self.runner = runner
        self.vm = vm

    def capabilities(self) -> list[str]:
        caps = ["load", "validate"]
        if self.runner is not None:
            caps += ["run", *(f"dtype:{d}" for d in NUMPY_DTYPE)]
        return caps

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """The reply to one request (``ok: false`` with the reason for anything unusable)."""
        cmd = request.get("cmd")
        method = (
            getattr(self, f"on_{cmd}", None) if cmd in ("start", "load", "validate", "run", "stop") else None
        )
        if method is None:
            return {"ok": False, "error": {"class": "ProtocolError", "message": f"unknown command {cmd!r}"}}
        try:
            reply: dict[str, Any] = method(request)
        except (AmkspecError, TensorError, KeyError, TypeError, ValueError) as exc:
            return {"ok": False, "error": _error(exc)}
        return {"ok": True, **reply}

    def on_start(self, request: dict[str, Any]) -> dict[str, Any]:
        return {
            "name": f"{self.name} ({self.vm} VM)",
            "version": __version__,
            "protocol": PROTOCOL_VERSION,
            "capabilities": self.capabilities(),
        }

    def on_load(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            prog = loads(request["document"])
        except (FormatError, VersionError) as exc:
            return {"status": "refused", "error": _error(exc)}
        return {"status": "loaded", "document": dumps(prog)}

    def on_validate(self, request: dict[str, Any]) -> dict[str, Any]:
        from amkspec.proofs import validate

        try:
            prog = loads(request["document"])
        except (FormatError, VersionError):
            return {"verdict": "unusable", "codes": []}
        result = validate(prog)
        return {"verdict": "accepted" if result.ok else "rejected", "codes": list(result.codes)}

    def on_run(self, request: dict[str, Any]) -> dict[str, Any]:
        from amkspec.vm import ExecutionError, RefusedProgram

        if self.runner is None:
            return {
                "status": "error",
                "error": {"class": "Unsupported", "message": "run is not a capability"},
            }
        prog = loads(request["program"])
        weights = {k: decode(v) for k, v in request["weights"].items()}
        inputs = {k: decode(v) for k, v in request["inputs"].items()}
        kv = {k: decode(v) for k, v in request["kv"].items()} if request.get("kv") else None
        try:
            out = self.runner(prog, weights, inputs, kv)
        except RefusedProgram as exc:
            return {"status": "refused", "codes": list(exc.result.codes), "error": _error(exc)}
        except ExecutionError as exc:
            return {"status": "error", "error": _error(exc)}
        dtypes = {b.name: b.dtype.name for b in prog.buffers}
        return {"status": "ran", "outputs": {k: encode(v, dtypes[k]) for k, v in out.items()}}

    def on_stop(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"stopped": True}


def serve(adapter: Adapter, stdin: IO[str], stdout: IO[str]) -> None:
    """Answer requests line by line until ``stop`` or end of input."""
    for line in stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError as exc:
            reply: dict[str, Any] = {
                "id": None,
                "ok": False,
                "error": {"class": "ProtocolError", "message": f"not JSON: {exc}"},
            }
        else:
            if not isinstance(request, dict):
                request = {}
            reply = {"id": request.get("id"), **adapter.handle(request)}
        stdout.write(json.dumps(reply) + "\n")
        stdout.flush()
        if reply.get("stopped"):
            return


def make_adapter(vm: str) -> Adapter:
    """The adapter for ``vm`` (see the module docstring)."""
    runner = (
        reference_runner()
        if vm == "reference"
        else megakernel_runner(vm)
    )
    return Adapter(runner, vm)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m amkspec.conformance.adapter", description=__doc__)
    parser.add_argument("--vm", choices=VMS, default="reference")
    args = parser.parse_args(argv)
    serve(make_adapter(args.vm), sys.stdin, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
