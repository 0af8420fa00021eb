"""The harness protocol between the kit and an implementation under test (spec §9.3).

The implementation is a command. The kit writes one JSON object per line to its stdin and reads
exactly one JSON object per line from its stdout for each request (rule CONF-REPLY-1); anything on
stderr is kept for failure messages. Requests carry an ``id`` that the reply repeats. Commands:

* ``start`` → ``name``, ``version``, ``capabilities`` (rule CONF-START-1);
* ``load``: a document's text → ``loaded`` with the re-serialised text, or ``refused`` with the
  error class and, optionally, the JSON path (rules FMT-…);
* ``validate``: a document's text → verdict and, optionally, diagnostic codes (rules VAL-…);
* ``run``: a program's text, weights, inputs and optional prior KV → outputs, or ``refused``
  (rules EXEC-…, OP-…);
* ``stop`` → ``stopped``, then the process exits.

Tensors travel as ``{"dtype": <IR dtype name>, "shape": [...], "data": [...]}`` (values flattened
in row-major order, storage layout: packed I4 is ``U8``-valued with a halved last dim) or, from the
kit only, ``{"dtype", "shape", "npy": <absolute path>}`` (a case file's path is relative to the case
file; the kit resolves it, spec §9.2). :data:`SCHEMA` is the JSON Schema
(2020-12) of every message; the kit ships it as ``corpus/protocol.schema.json``.
"""

from __future__ import annotations

from typing import Any

PROTOCOL_VERSION = "1.0"

CAPABILITIES = ("load", "validate", "run")
"""Capabilities a case may require; ``dtype:<NAME>`` (e.g. ``dtype:BF16``) narrows ``run``."""

COMMANDS = ("start", "load", "validate", "run", "stop")

_DTYPES = ["F32", "F16", "BF16", "F8E4M3", "F8E5M2", "I32", "I8", "I4", "U8", "BOOL"]

_TENSOR: dict[str, Any] = {
    "type": "object",
    "required": ["dtype", "shape"],
    "properties": {
        "dtype": {"enum": _DTYPES},
        "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "data": {"type": "array", "items": {"type": ["number", "boolean"]}},
        "npy": {
            "type": "string",
            "description": "an absolute path to a .npy file (sent by the kit only; a case file's "
            "path is relative to the case file, and the kit resolves it before sending, since the "
            "implementation runs in its own working directory)",
        },
    },
    "oneOf": [{"required": ["data"]}, {"required": ["npy"]}],
}

_TENSORS: dict[str, Any] = {"type": "object", "additionalProperties": {"$ref": "#/$defs/tensor"}}

_ERROR: dict[str, Any] = {
    "type": "object",
    "required": ["class", "message"],
    "properties": {
        "class": {"type": "string"},
        "message": {"type": "string"},
        "path": {
            "type": ["string", "null"],
            "description": "optional: the JSON path of the problem, as tasks[1].waits[0] or as the "
            "RFC 6901 JSON Pointer /tasks/1/waits/0",
        },
    },
}


def _request(cmd: str, required: list[str], props: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["id", "cmd", *required],
        "properties": {"id": {"type": "integer"}, "cmd": {"const": cmd}, **props},
    }


def _reply(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["id", "ok", *required],
        "properties": {"id": {"type": "integer"}, "ok": {"const": True}, **props},
    }


SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://amkspec.example/conformance/protocol.schema.json",
    "title": f"AMK conformance harness protocol {PROTOCOL_VERSION}",
    "description": "One JSON object per line; see spec §9.3.",
    "$defs": {
        "tensor": _TENSOR,
        "tensors": _TENSORS,
        "error": _ERROR,
        "request": {
            "oneOf": [
                _request("start", ["protocol"], {"protocol": {"type": "string"}}),
                _request("load", ["document"], {"document": {"type": "string"}}),
                _request("validate", ["document"], {"document": {"type": "string"}}),
                _request(
                    "run",
                    ["program", "weights", "inputs"],
                    {
                        "program": {"type": "string"},
                        "weights": {"$ref": "#/$defs/tensors"},
                        "inputs": {"$ref": "#/$defs/tensors"},
                        "kv": {"anyOf": [{"$ref": "#/$defs/tensors"}, {"type": "null"}]},
                    },
                ),
                _request("stop", [], {}),
            ]
        },
        "reply": {
            "oneOf": [
                _reply(
                    {
                        "name": {"type": "string"},
                        "version": {"type": "string"},
                        "protocol": {"type": "string"},
                        "capabilities": {"type": "array", "items": {"type": "string"}},
                    },
                    ["name", "version", "capabilities"],
                ),
                _reply(
                    {"status": {"const": "loaded"}, "document": {"type": "string"}}, ["status", "document"]
                ),
                _reply(
                    {
                        "status": {"const": "refused"},
                        "error": {"$ref": "#/$defs/error"},
                        "codes": {"type": "array", "items": {"type": "string"}},
                    },
                    ["status"],
                ),
                _reply(
                    {
                        "verdict": {"enum": ["accepted", "rejected", "unusable"]},
                        "codes": {"type": "array", "items": {"type": "string"}},
                    },
                    ["verdict"],
                ),
                _reply(
                    {"status": {"const": "ran"}, "outputs": {"$ref": "#/$defs/tensors"}},
                    ["status", "outputs"],
                ),
                _reply(
                    {"status": {"const": "error"}, "error": {"$ref": "#/$defs/error"}}, ["status", "error"]
                ),
                _reply({"stopped": {"const": True}}, ["stopped"]),
                {
                    "type": "object",
                    "required": ["id", "ok", "error"],
                    "properties": {
                        "id": {"type": ["integer", "null"]},
                        "ok": {"const": False},
                        "error": {"$ref": "#/$defs/error"},
                    },
                },
            ]
        },
    },
    "oneOf": [{"$ref": "#/$defs/request"}, {"$ref": "#/$defs/reply"}],
}
"""The JSON Schema of every protocol message (a request or a reply)."""
