"""The root command group and the shared error handling of the CLI.

The exit-code contract (docs/guides/robustness.md) is enforced in one place,
:class:`ErrorBoundary`: whatever a command raises becomes one ``amkspec: error:`` line on
stderr and an exit code from :data:`amkspec.exit_codes.EXIT_CODES`; ``amkspec --debug COMMAND ...``
shows the traceback of what reaches it instead (an internal error among them).
"""

from __future__ import annotations

import errno
import functools
import io
import json
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeVar

import click

from amkspec import __version__
from amkspec.exit_codes import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNUSABLE,
    INTERRUPTED,
    error_line,
)
from amkspec.ir import AmkspecError, FormatError, MegakernelProgram, VersionWarning, load
from amkspec.text import escape_line

F = TypeVar("F", bound=Callable[..., Any])


class _ClosedStream(io.TextIOBase):
    """Stands in for a standard stream whose file descriptor was closed (``amkspec schema >&-``):
    any write fails, so a command that prints cannot report success."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")


class _PassThrough(Exception):
    """Carries an exception past click's handlers to the boundary (``original``)."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(original)
        self.original = original


class _StdoutError(Exception):
    """Writing to standard output failed (closed, a broken pipe, a full disk)."""


def _flush_stdout() -> None:
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except (OSError, ValueError) as exc:
        raise _StdoutError(exc) from None


def _silence_stdout() -> None:
    """After a failed write, point fd 1 at /dev/null so the interpreter's final flush cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass
    sys.stdout = _ClosedStream()


_WRITE_ERRNOS = (errno.EPIPE, errno.EBADF, errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG)
"""OSErrors without a file name that mean an output stream could not be written."""

SHORT_USAGE = "usage: amkspec [--debug] [--version] [-h] COMMAND [ARGS]..."


class ErrorBoundary(click.Group):
    """The root group: one error line on stderr and a contract exit code for anything a command
    raises (:data:`amkspec.exit_codes.EXIT_CODES`); ``--debug`` re-raises what reaches it for the
    traceback (errors a command reports itself with :func:`fail` stay one line)."""

    debug = False

    def main(self, args: Sequence[str] | None = None, *rest: Any, **kwargs: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        if sys.stdout is None:
            sys.stdout = _ClosedStream()
        elif isinstance(sys.stdout, io.TextIOWrapper):  # a file name is not always valid UTF-8
            sys.stdout.reconfigure(errors="backslashreplace")
        if not argv:
            click.echo(self.short_help_text(), err=True)
            sys.exit(EXIT_UNUSABLE)
        kwargs["standalone_mode"] = False
        ErrorBoundary.debug = False
        try:
            code = super().main(argv, *rest, **kwargs)
            _flush_stdout()
        except SystemExit as exc:
            _flush_at_exit(exc)
            raise
        except click.exceptions.Exit as exc:
            _flush_stdout_or_fail()
            sys.exit(exc.exit_code)
        except BaseException as caught:  # noqa: BLE001 - the one boundary of the CLI
            error = caught.original if isinstance(caught, _PassThrough) else caught
            if ErrorBoundary.debug and not isinstance(error, click.ClickException):
                raise error from None
            message, code = describe(error)
            if isinstance(error, _StdoutError):
                _silence_stdout()
            fail(message, code)
        sys.exit(code if isinstance(code, int) else EXIT_OK)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; Ctrl-C and OSErrors skip click's own handling (a blank stderr line
        and "Aborted!", or a silent exit 1 on a broken pipe) to reach :meth:`main`."""
        try:
            return super().invoke(ctx)
        except (KeyboardInterrupt, OSError) as exc:
            raise _PassThrough(exc) from exc

    def short_help_text(self) -> str:
        """``usage`` plus the command list, argparse style (printed for a bare ``amkspec``)."""
        names = ", ".join(sorted(self.commands))
        return f"{SHORT_USAGE}\ncommands: {names}\nrun 'amkspec COMMAND --help' for a command's options"


def _flush_stdout_or_fail() -> None:
    try:
        _flush_stdout()
    except _StdoutError as exc:
        _silence_stdout()
        fail(describe(exc)[0], EXIT_UNUSABLE)


def _flush_at_exit(exc: SystemExit) -> None:
    """A command exiting on its own still must not hide a failed write to stdout."""
    try:
        _flush_stdout()
    except _StdoutError as err:
        _silence_stdout()
        code = exc.code if isinstance(exc.code, int) and exc.code != EXIT_OK else EXIT_UNUSABLE
        fail(describe(err)[0], code)


EXTRA_OF_MODULE = {
    "torch": "vm", "numpy": "vm", "safetensors": "vm", "z3": "smt", "matplotlib": "viz",
    "tqdm": "search", "pycuda": "cuda", "ray": "ray", "gguf": "models", "tokenizers": "models",
}
"""The optional extra (pyproject.toml) that provides each third-party module a command may import."""


def missing_extra(exc: BaseException) -> str | None:
    """The extra to install when ``exc`` is the import of a module of an optional extra that
    is not installed (or is blocked), else None."""
    if not isinstance(exc, ImportError) or not exc.name:
        return None
    return EXTRA_OF_MODULE.get(exc.name.split(".", 1)[0])


def describe(exc: BaseException) -> tuple[str, int]:
    """The error line (without the ``amkspec: error:`` prefix) and exit code for ``exc``."""
    extra = missing_extra(exc)
    if extra is not None:
        return f"this command needs the {extra} extra (pip install 'amkspec[{extra}]'): {exc}", EXIT_UNUSABLE
    if isinstance(exc, click.ClickException):  # click lays choices out on lines: one line here
        return f"{' '.join(exc.format_message().split())} (see 'amkspec --help')", exc.exit_code
    if isinstance(exc, (KeyboardInterrupt, click.Abort)):
        return INTERRUPTED, EXIT_INTERRUPTED
    if isinstance(exc, _StdoutError):
        cause = exc.args[0] if exc.args else exc
        reason = getattr(cause, "strerror", None) or str(cause)
        return f"cannot write to standard output: {reason}", EXIT_UNUSABLE
    if isinstance(exc, AmkspecError):
        return str(exc), EXIT_UNUSABLE
    if isinstance(exc, OSError) and not exc.filename and exc.errno in _WRITE_ERRNOS:
        return f"cannot write the output: {exc.strerror or exc}", EXIT_UNUSABLE
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}", EXIT_UNUSABLE
    if isinstance(exc, MemoryError):
        return "out of memory (the input is too large for this machine)", EXIT_UNUSABLE
    if isinstance(exc, RecursionError):
        return "the input is nested too deeply", EXIT_UNUSABLE
    text = str(exc).splitlines()[0] if str(exc) else ""
    return (
        f"internal error: {type(exc).__name__}: {text} "
        "(a bug in amkspec; rerun with --debug for a traceback)",
        EXIT_INTERNAL,
    )


def _set_debug(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    ErrorBoundary.debug = bool(value)


@click.group(cls=ErrorBoundary, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=__version__, prog_name="amkspec")
@click.option("--debug", is_flag=True, is_eager=True, expose_value=False, callback=_set_debug,
              help="Show the Python traceback of an internal error instead of its one-line message.")
def main() -> None:
    """amkspec: load, validate, prove, run and certify AMK megakernel programs."""


def fail(message: str, code: int = EXIT_UNUSABLE) -> NoReturn:
    """Print one line on stderr and exit with ``code``."""
    click.echo(error_line(escape_line(message)), err=True)
    sys.exit(code)


def clean_errors(func: F) -> F:
    """Turn amkspec's input errors (and unreadable files) into one line and exit 2.

    The root group's :class:`ErrorBoundary` does this for every command; the decorator
    keeps the mapping close to commands that are also called directly.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (AmkspecError, OSError) as exc:
            if ErrorBoundary.debug:
                raise
            fail(*describe(exc))

    return wrapper  # type: ignore[return-value]


def read_program(path: str) -> MegakernelProgram:
    """Load a program (raising FormatError/VersionError); a newer-minor-version warning
    becomes one ``warning:`` line on stderr instead of a Python warning."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", VersionWarning)
        prog = load(path)
    for w in caught:
        if issubclass(w.category, VersionWarning):
            click.echo(f"amkspec: warning: {path}: {w.message}", err=True)
    return prog


def load_error(exc: AmkspecError) -> str:
    """Why a file cannot be loaded, in one line (spec §6 FormatError/VersionError); the caller
    prefixes the file name."""
    return exc.reason if isinstance(exc, FormatError) and exc.path == "(root)" else str(exc)


def load_program(path: str) -> MegakernelProgram:
    """:func:`read_program`, exiting with one error line (exit 2) when the file is unusable."""
    try:
        return read_program(path)
    except AmkspecError as exc:
        fail(f"{path}: {load_error(exc)}")


def echo_json(data: Any) -> None:
    """Print ``data`` as indented, strictly valid JSON on stdout: a non-finite number is
    written as ``null`` (JSON has no NaN or Infinity)."""
    try:
        text = json.dumps(data, indent=2, allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(data), indent=2, allow_nan=False)
    click.echo(text)


def _finite(data: Any) -> Any:
    if isinstance(data, float):
        return data if data == data and abs(data) != float("inf") else None
    if isinstance(data, dict):
        return {k: _finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_finite(v) for v in data]
    return data
