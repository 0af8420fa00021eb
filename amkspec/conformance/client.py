"""The kit's side of the harness protocol: one implementation process (spec §9.3).

:class:`Session` starts the command, performs the ``start`` handshake and sends one request at a
time. A crash, a request the implementation does not read or a reply it does not give within the
timeout (the deadline covers writing the request and reading the reply), a closed standard output,
or a reply that is not a JSON object carrying the request's id (rule CONF-REPLY-1, however deeply
nested or badly encoded) raises :class:`ProtocolFailure` with the reason and the tail of the
implementation's stderr; the session then kills the process and starts a fresh one on the next
request, so one bad case never ends a run. An ``--impl`` text that is not a command line is an
:class:`ImplCommandError`, the user's unusable input.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from typing import IO, Any

from amkspec.conformance.protocol import PROTOCOL_VERSION, SCHEMA
from amkspec.ir import AmkspecError


@functools.lru_cache(maxsize=1)
def _reply_validator() -> Any:
    """A validator of replies against the protocol schema, or None where ``jsonschema`` is absent
    (then only the id and ``ok`` are checked)."""
    try:
        import jsonschema
    except ImportError:
        return None
    return jsonschema.Draft202012Validator({**SCHEMA, "oneOf": [{"$ref": "#/$defs/reply"}]})


def schema_problem(reply: dict[str, Any]) -> str:
    """Why ``reply`` is not a protocol reply ('' when the schema accepts it, or cannot be checked)."""
    validator = _reply_validator()
    if validator is None or validator.is_valid(reply):
        return ""
    return "it matches no reply of the protocol schema"


class ProtocolFailure(Exception):
    """The implementation crashed, hung, or answered something that is not a protocol reply."""


class ImplCommandError(AmkspecError):
    """The implementation's command text is empty or not a shell command line (unusable input)."""


EXIT_GRACE_S = 2.0
"""How long an implementation that closed its standard output may take to exit before it is killed."""


def _argv(command: str) -> list[str]:
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ImplCommandError(f"--impl {command!r} is not a command line: {exc}") from None
    if not argv:
        raise ImplCommandError("--impl is empty: give the command that runs the implementation")
    return argv


def _pump(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    """Queue every line the implementation writes, then the end marker however reading ends."""
    try:
        for line in stream:
            lines.put(line)
    except (OSError, ValueError):  # the stream was closed under us by kill()
        pass
    finally:
        lines.put(None)


def _write(stream: IO[str], text: str, errors: list[BaseException], done: threading.Event) -> None:
    """Write one request; a failure is kept for the caller (the process crashed or closed stdin)."""
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError) as exc:
        errors.append(exc)
    finally:
        done.set()


class Session:
    """One running implementation; ``request`` returns its reply or raises :class:`ProtocolFailure`."""

    def __init__(self, command: str, timeout_s: float = 60.0, start_timeout_s: float = 60.0) -> None:
        self.command = command
        self.argv = _argv(command)
        self.timeout_s = timeout_s
        self.start_timeout_s = start_timeout_s
        self.info: dict[str, Any] = {}
        self.restarts = 0
        self._proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: IO[str] | None = None
        self._next_id = 0

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> dict[str, Any]:
        """Start the process and perform the handshake; the ``start`` reply (also kept as ``info``)."""
        if self._stderr is not None:
            self._stderr.close()
        self._stderr = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - lives as long as the process
        try:
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                text=True,
                encoding="utf-8",
                errors="replace",
                bufsize=1,
                start_new_session=True,
            )
        except OSError as exc:
            raise ProtocolFailure(f"cannot run it: {exc.strerror or exc}") from exc
        self._lines = queue.Queue()
        assert self._proc.stdout is not None
        threading.Thread(target=_pump, args=(self._proc.stdout, self._lines), daemon=True).start()
        try:
            reply = self._send({"cmd": "start", "protocol": PROTOCOL_VERSION}, self.start_timeout_s)
        except ProtocolFailure:
            self.kill()  # a late start reply must never be read as the answer to a later request
            raise
        caps = reply.get("capabilities")
        if not isinstance(reply.get("name"), str) or not isinstance(caps, list):
            self.kill()
            raise ProtocolFailure("the start reply lacks name or capabilities (rule CONF-START-1)")
        self.info = reply
        return reply

    @property
    def capabilities(self) -> set[str]:
        return {c for c in self.info.get("capabilities", []) if isinstance(c, str)}

    def ensure(self) -> None:
        """Start (again) if no process is running."""
        if self._proc is None or self._proc.poll() is not None:
            if self._proc is not None:
                self.restarts += 1
                self.kill()
            self.start()

    def kill(self) -> None:
        """End the process (its whole process group) now."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                proc.kill()
        if proc is not None:
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()

    def stop(self) -> None:
        """Send ``stop`` (best effort) and end the process."""
        if self._proc is not None and self._proc.poll() is None:
            try:
                self._send({"cmd": "stop"}, 5.0)
                self._proc.wait(timeout=0.5)
            except (ProtocolFailure, subprocess.TimeoutExpired):
                pass
        self.kill()

    # -- requests ----------------------------------------------------------------------------
    def request(self, message: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        """Send ``message`` (a request without ``id``) and return the reply."""
        try:
            self.ensure()
            return self._send(message, self.timeout_s if timeout_s is None else timeout_s)
        except ProtocolFailure:
            self.kill()
            self.restarts += 1
            raise

    def _send(self, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdin is not None
        self._next_id += 1
        rid = self._next_id
        cmd = message["cmd"]
        deadline = time.monotonic() + timeout_s
        errors: list[BaseException] = []
        written = threading.Event()
        text = json.dumps({"id": rid, **message}) + "\n"
        threading.Thread(target=_write, args=(self._proc.stdin, text, errors, written), daemon=True).start()
        try:
            line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            unread = "" if written.is_set() else " (it did not read the request)"
            raise ProtocolFailure(f"no reply to {cmd!r} within {timeout_s:g} s (timeout){unread}") from None
        if line is None:
            raise ProtocolFailure(self._ended(cmd, errors))
        return self._parse(line, cmd, rid)

    def _ended(self, cmd: str, errors: list[BaseException]) -> str:
        """Why the implementation's standard output ended: it exited, or it closed stdout and lives on."""
        assert self._proc is not None
        try:
            code = self._proc.wait(timeout=EXIT_GRACE_S)
        except subprocess.TimeoutExpired:
            self.kill()
            return f"closed its standard output on {cmd!r} but did not exit{self._stderr_tail()}"
        if errors:
            return f"crashed before {cmd!r} (exit status {code}): {errors[0]}{self._stderr_tail()}"
        return f"crashed on {cmd!r} (exit status {code}){self._stderr_tail()}"

    def _parse(self, line: str, cmd: str, rid: int) -> dict[str, Any]:
        """The reply ``line`` to request ``rid``, or :class:`ProtocolFailure` saying why it is none."""
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError):
            raise ProtocolFailure(f"malformed reply to {cmd!r}: {line.strip()[:120]!r}") from None
        if not isinstance(reply, dict) or reply.get("id") != rid or not isinstance(reply.get("ok"), bool):
            raise ProtocolFailure(
                f"malformed reply to {cmd!r} (not an object with id {rid} and ok): {line.strip()[:120]!r}"
            )
        try:
            problem = schema_problem(reply)
        except RecursionError:
            problem = "it is nested too deeply"
        if problem:
            raise ProtocolFailure(f"malformed reply to {cmd!r} ({problem}): {line.strip()[:120]!r}")
        return reply

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        text = self._stderr.read().strip().splitlines()
        return f"; stderr: {' | '.join(text[-3:])}" if text else ""
