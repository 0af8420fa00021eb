"""Writing a file so that it is either fully written or untouched (spec §6 files on disk).

Every file amkspec writes goes through :func:`atomic_path`: the data goes to a temporary
file in the destination's directory, is flushed and fsynced, and only then renamed over the
destination. A full disk, an exception or Ctrl-C midway leaves the old file (or no file) and no
temporary behind; a process killed outright (SIGKILL) leaves the old file (or no file), never
a partial one, but may leave its ``.NAME.*.tmp`` temporary. :func:`refuse_overwrite` keeps a
command from replacing one of its inputs.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterable, Iterator

from amkspec.ir.errors import AmkspecError


class OverwriteError(AmkspecError, ValueError):
    """The output file is one of the command's input files."""


def refuse_overwrite(
    output: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str] | None]
) -> None:
    """Raise :class:`OverwriteError` when ``output`` names the same file as any of ``inputs``."""
    for item in inputs:
        if item is None:
            continue
        try:
            same = os.path.samefile(output, item)
        except OSError:  # one of them does not exist (yet): not the same file
            same = False
        if same:
            raise OverwriteError(
                f"{os.fspath(output)}: refusing to overwrite the input file {os.fspath(item)}"
            )


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[str]:
    """A temporary file name beside ``path``; on a clean exit it is fsynced and renamed to ``path``.

    On any exception (Ctrl-C included) the temporary file is removed and ``path`` is untouched.
    """
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise _about(exc, target, directory) from None
    os.close(fd)
    try:
        yield tmp
        _fsync(tmp)
        mode = _mode_of(target)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and tmp in (exc.filename, exc.filename2):
            raise _about(exc, target, directory) from None
        raise
    _fsync_dir(directory)


def _about(exc: OSError, target: str, directory: str) -> OSError:
    """``exc`` naming the destination, not the temporary file the user never asked for."""
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.ENOENT, errno.ENOTDIR) and not os.path.isdir(directory):
        reason = f"{reason} (its directory {directory} does not exist)"
    return OSError(exc.errno, reason, target)


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` atomically (see :func:`atomic_path`)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(raw)


def _fsync(name: str) -> None:
    fd = os.open(name, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(directory: str) -> None:
    with contextlib.suppress(OSError):  # not every platform can open a directory
        _fsync(directory)


def _mode_of(target: str) -> int:
    """The existing file's permission bits, else the default for a new file (0o666 less the umask)."""
    try:
        return os.stat(target).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
