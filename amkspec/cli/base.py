"""The root command group and the shared error handling of the CLI."""

from __future__ import annotations

import functools
import json
import sys
import warnings
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import click

from amkspec import __version__
from amkspec.ir import AmkspecError, FormatError, MegakernelProgram, VersionWarning, load

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_UNUSABLE = 2

F = TypeVar("F", bound=Callable[..., Any])


class OneLineErrors(click.Group):
    """A click group whose usage errors are one line on stderr with exit code 2."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            return super().main(*args, **kwargs)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            fail(f"{exc.format_message()} (see 'amkspec --help')", exc.exit_code)
        except click.Abort:
            fail("aborted", EXIT_REJECTED)


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=__version__, prog_name="amkspec")
def main() -> None:
    """amkspec: load, validate, prove, run and certify AMK megakernel programs."""


def fail(message: str, code: int = EXIT_UNUSABLE) -> NoReturn:
    """Print one line on stderr and exit with ``code``."""
    click.echo(f"amkspec: error: {message}", err=True)
    sys.exit(code)


def clean_errors(func: F) -> F:
    """Turn amkspec's input errors (and unreadable files) into one line and exit 2."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except AmkspecError as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"{getattr(exc, 'filename', '') or ''}: {exc.strerror or exc}".lstrip(": "))

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
    """Print ``data`` as indented JSON on stdout."""
    click.echo(json.dumps(data, indent=2))
