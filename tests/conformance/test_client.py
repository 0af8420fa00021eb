"""The kit's side of the protocol (spec §9.3) judges a misbehaving implementation and never hangs:
a slow start, a reply nested too deeply or not UTF-8, a closed stdout, a request left unread each
fail with their reason within the timeout; a ``start`` reply that arrives after the timeout is never
read as the answer to a later request."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import pytest

from amkspec.conformance.cases import default_cases_dir
from amkspec.conformance.client import ImplCommandError, ProtocolFailure, Session
from amkspec.conformance.kit import ImplStartError, run_kit

SLOW_FIRST_START = """
import pathlib, sys, time
marker = pathlib.Path(sys.argv[1])
if not marker.exists():
    marker.write_text("started once")
    time.sleep(3)
from amkspec.conformance.adapter import main
sys.exit(main(["--vm", "reference"]))
"""


def test_a_start_past_the_timeout_fails_and_the_next_request_gets_its_own_reply(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    command = shlex.join([sys.executable, "-c", SLOW_FIRST_START, str(marker)])
    session = Session(command, timeout_s=60.0, start_timeout_s=1.0)
    try:
        with pytest.raises(ProtocolFailure, match="no reply to 'start'"):
            session.request({"cmd": "validate", "program": "{}"})
        session.start_timeout_s = 60.0
        reply = session.request({"cmd": "stop"})
        assert reply["ok"] is True and "name" not in reply
        assert session.restarts == 1
    finally:
        session.kill()


MISBEHAVING = """
import json, os, sys, time
mode = sys.argv[1]
for line in sys.stdin:
    req = json.loads(line)
    rid, cmd = req["id"], req["cmd"]
    if cmd == "start":
        if mode == "slow-start":
            time.sleep(30)
        reply = {"id": rid, "ok": True, "name": "m", "version": "0", "protocol": "1.0",
                 "capabilities": ["validate", "run"]}
        sys.stdout.write(json.dumps(reply) + "\\n"); sys.stdout.flush()
        if mode == "deaf":
            time.sleep(30)
        continue
    if cmd == "stop":
        sys.stdout.write(json.dumps({"id": rid, "ok": True}) + "\\n"); sys.stdout.flush()
        break
    if mode == "deep":
        sys.stdout.write('{"id": %d, "ok": true, "x": %s%s}\\n' % (rid, "[" * 100000, "]" * 100000))
    elif mode == "bad-utf8":
        sys.stdout.buffer.write(b'{"id": %d, "ok": true, "verdict": "accepted", "codes": ["\\xff"]}\\n' % rid)
    elif mode == "close-stdout":
        os.close(1)
        time.sleep(30)
    sys.stdout.flush()
"""
"""An implementation misbehaving in the way ``argv[1]`` names; it never imports amkspec (fast start)."""


def _session(mode: str, timeout_s: float = 5.0) -> Session:
    command = shlex.join([sys.executable, "-c", MISBEHAVING, mode])
    return Session(command, timeout_s=timeout_s, start_timeout_s=timeout_s)


def _fails(session: Session, message: dict, match: str) -> float:  # type: ignore[type-arg]
    """Send ``message``, expect a ProtocolFailure matching ``match``; the seconds it took."""
    t0 = time.monotonic()
    try:
        with pytest.raises(ProtocolFailure, match=match):
            session.request(message)
    finally:
        session.kill()
    assert session._proc is None
    return time.monotonic() - t0


def test_a_deeply_nested_reply_is_a_protocol_failure() -> None:
    _fails(_session("deep"), {"cmd": "validate", "document": "{}"}, "malformed reply to 'validate'")


def test_undecodable_bytes_are_replaced_and_judged_at_once_not_a_timeout() -> None:
    session = _session("bad-utf8", 30.0)
    try:
        t0 = time.monotonic()
        reply = session.request({"cmd": "validate", "document": "{}"})
        assert reply["codes"] == ["\ufffd"] and time.monotonic() - t0 < 20
    finally:
        session.kill()


def test_an_implementation_that_closes_stdout_and_lives_on_is_killed() -> None:
    request = {"cmd": "validate", "document": "{}"}
    seconds = _fails(_session("close-stdout", 30.0), request, "closed its standard output")
    assert seconds < 20


def test_a_request_it_does_not_read_times_out() -> None:
    big = {"cmd": "validate", "document": "x" * (4 << 20)}  # far over any pipe buffer
    _fails(_session("deaf", 1.0), big, r"within 1 s \(timeout\) \(it did not read the request\)")


def test_the_kits_timeout_bounds_the_start_handshake() -> None:
    """A start that does not complete is unusable input, reported before any case is judged."""
    command = shlex.join([sys.executable, "-c", MISBEHAVING, "slow-start"])
    t0 = time.monotonic()
    select = "structure/S101_duplicate_counter_id_ok"
    with pytest.raises(ImplStartError, match=r"did not start: no reply to 'start' within 1 s"):
        run_kit(command, default_cases_dir(), select=select, timeout_s=1.0)
    assert time.monotonic() - t0 < 15


@pytest.mark.parametrize("command", ["", "   ", 'python3 "x'])
def test_a_command_that_is_not_a_command_line_is_unusable_input(command: str) -> None:
    with pytest.raises(ImplCommandError):
        Session(command)
