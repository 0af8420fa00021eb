"""A complete harness adapter in ~30 lines (spec §9.5): replace the three marked calls with your
implementation's loader, writer and validator. It advertises ``load`` and ``validate``; add
``run`` (and ``dtype:F32``…) once your VM can answer ``run`` requests."""

import json
import sys

from amkspec.ir import AmkspecError, dumps, loads  # ← your loader and writer
from amkspec.proofs import validate  # ← your validator


def answer(request: dict) -> dict:
    cmd = request["cmd"]
    if cmd == "start":
        return {"name": "my-validator", "version": "1.0", "capabilities": ["load", "validate"]}
    if cmd == "stop":
        return {"stopped": True}
    try:
        program = loads(request["document"])
    except AmkspecError as exc:  # your loader's error: its class name and the JSON path
        error = {
            "class": type(exc).__name__,
            "message": str(exc),
            "path": getattr(exc, "path", str(exc).split(" ", 1)[0]),
        }
        return (
            {"status": "refused", "error": error} if cmd == "load" else {"verdict": "unusable", "codes": []}
        )
    if cmd == "load":
        return {"status": "loaded", "document": dumps(program)}
    result = validate(program)
    return {"verdict": "accepted" if result.ok else "rejected", "codes": list(result.codes)}


for line in sys.stdin:
    request = json.loads(line)
    reply = {"id": request["id"], "ok": True, **answer(request)}
    print(json.dumps(reply), flush=True)
    if request["cmd"] == "stop":
        break
