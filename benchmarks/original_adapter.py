"""The original AMK implementation behind the conformance harness protocol (spec §9.3).

Run: ``python3 benchmarks/original_adapter.py [--original PATH]`` (default:
``../shared/third_party/AutoMegaKernel``) and give that command to ``amkspec conformance --impl``.

Every answer comes from the original's own code: ``MegakernelProgram.from_json`` / ``to_json``
(``load``), its ``validate()`` (``validate``) and its ``ReferenceVM`` (``run``). Nothing of amkspec
is imported (``baseline`` is the benchmarks' own helper, for the default path only); this file only
frames the protocol with plain ``json`` and turns tensor objects into
torch tensors of the dtype the original's ReferenceVM maps each buffer to (its ``torch_dtype``).
The reply's ``error.class`` is the class of the exception the original raised; it names no JSON
path and reports no diagnostic codes (the original has none), which the protocol allows.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from baseline import DEFAULT_BASELINE

NUMPY = {
    "F32": np.float32,
    "F16": np.float16,
    "BF16": np.float32,
    "F8E4M3": np.float32,
    "F8E5M2": np.float32,
    "I32": np.int32,
    "I8": np.int8,
    "I4": np.uint8,
    "U8": np.uint8,
    "BOOL": np.bool_,
}
"""How the protocol carries each dtype (spec §9.2): BF16 and F8 values as exact float32 decimals,
packed I4 as its bytes."""


class Original:
    """The original's modules, imported from ``path``."""

    def __init__(self, path: Path) -> None:
        if not (path / "schedule" / "ir.py").is_file():
            raise SystemExit(f"original_adapter: no original implementation at {path}")
        sys.path.insert(0, str(path))
        import torch
        from schedule import ir
        from vm import reference_vm

        self.torch, self.ir, self.vm = torch, ir, reference_vm

    def capabilities(self) -> list[str]:
        """``run`` for every dtype of the original's ``DType``: its ReferenceVM runs any program its
        ``validate()`` accepts."""
        return ["load", "validate", "run", *(f"dtype:{d.name}" for d in self.ir.DType)]

    def tensor(self, obj: dict[str, Any], dtype: Any) -> Any:
        """A protocol tensor object as a torch tensor of the original's dtype for the buffer."""
        kind = NUMPY[obj["dtype"]]
        array = np.load(obj["npy"]) if "npy" in obj else np.asarray(obj["data"], dtype=kind)
        array = np.ascontiguousarray(array.astype(kind).reshape(obj["shape"]))
        return self.torch.from_numpy(array).to(self.vm.torch_dtype(dtype))

    def encode(self, value: Any, dtype: str) -> dict[str, Any]:
        kind = NUMPY[dtype]
        if np.issubdtype(kind, np.floating):
            array = value.detach().float().numpy().astype(np.float64)
        else:
            array = value.detach().numpy()
        return {"dtype": dtype, "shape": list(array.shape), "data": array.reshape(-1).tolist()}


def answer(original: Original, request: dict[str, Any]) -> dict[str, Any]:
    """The reply body for one request."""
    cmd = request.get("cmd")
    ir = original.ir
    if cmd == "start":
        return {"name": "AutoMegaKernel (original)", "version": ir.IR_VERSION, "protocol": "1.0",
                "capabilities": original.capabilities()}
    if cmd == "stop":
        return {"stopped": True}
    if cmd not in ("load", "validate", "run"):
        return {"ok": False, "error": {"class": "ProtocolError", "message": f"unknown command {cmd!r}"}}
    text = request["program"] if cmd == "run" else request["document"]
    try:
        prog = ir.MegakernelProgram.from_json(text)
    except Exception as exc:  # noqa: BLE001 - whatever the original's reader raises is its refusal
        error = {"class": type(exc).__name__, "message": str(exc)}
        return {"status": "refused", "error": error} if cmd != "validate" else {
            "verdict": "unusable", "codes": []}
    if cmd == "load":
        return {"status": "loaded", "document": prog.to_json()}
    if cmd == "validate":
        result = ir.validate(prog)
        return {"verdict": "accepted" if result.ok else "rejected", "codes": []}
    return run(original, prog, request)


def run(original: Original, prog: Any, request: dict[str, Any]) -> dict[str, Any]:
    """One launch on the original's ReferenceVM (which refuses what its ``validate()`` rejects)."""
    by_key = {(b.source or b.name): b.dtype for b in prog.buffers}
    by_name = {b.name: b.dtype for b in prog.buffers}
    weights = {k: original.tensor(v, by_key[k]) for k, v in request["weights"].items() if k in by_key}
    inputs = {k: original.tensor(v, by_name[k]) for k, v in request["inputs"].items() if k in by_name}
    kv = {k: original.tensor(v, by_name[k]) for k, v in (request.get("kv") or {}).items() if k in by_name}
    try:
        vm = original.vm.ReferenceVM(prog, weights)
    except ValueError as exc:
        return {"status": "refused", "error": {"class": type(exc).__name__, "message": str(exc)}}
    try:
        out = vm.run(inputs, kv)
    except Exception as exc:  # noqa: BLE001 - a failing launch is the original's answer
        return {"status": "error", "error": {"class": type(exc).__name__, "message": str(exc)[:2000]}}
    return {"status": "ran", "outputs": {k: original.encode(v, by_name[k].name) for k, v in out.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--original", type=Path, default=DEFAULT_BASELINE)
    args = parser.parse_args(argv)
    original = Original(args.original)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            body = answer(original, request)
        except Exception as exc:  # noqa: BLE001 - the request could not be handled at all
            body = {"ok": False, "error": {"class": type(exc).__name__, "message": str(exc)[:2000]}}
        reply = {"id": request.get("id"), "ok": True, **body}
        print(json.dumps(reply), flush=True)
        if body.get("stopped"):
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
