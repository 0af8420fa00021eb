"""The kit's side of the protocol recovers from a slow start (spec §9.3): a ``start`` reply that
arrives after the timeout is never read as the answer to a later request."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from amkspec.conformance.client import ProtocolFailure, Session

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
