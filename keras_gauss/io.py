"""Writing run and export directories so that none is ever left half-written.

Every output (a run, an export version, a projector directory, a word2vec
file) is written into a hidden sibling `.NAME.tmp-*` and renamed onto
`NAME` when complete. Replacing an existing `NAME` (`overwrite=True`) is
allowed only when it holds an output of ours (`run.json`, an export's
`assets.extra/keras_gauss_export.json`, a projector's
`projector_config.pbtxt`) or nothing; the old one is renamed to
`.NAME.old-*` and deleted after the new one is in place. The replace runs
under an exclusive lock on the parent directory (`flock`), and every start
first repairs what a killed writer left: an old run whose replacement never
arrived is put back, and temporary directories or files whose writer is
dead (each writer holds a lock on its own) are deleted.
"""

import contextlib
import fcntl
import os
import shutil
import tempfile
from pathlib import Path

# Files that mark a directory as an output of ours (any one of them); the
# last is the checkpoint of a run being trained (`keras_gauss.checkpoint`).
MARKERS = ("run.json", "assets.extra/keras_gauss_export.json", "projector_config.pbtxt",
           ".checkpoint/state.npz")
# Free space asked for before training when the caller has no estimate.
MIN_FREE_BYTES = 1 << 20


class OutputExistsError(FileExistsError):
    """The output path holds something that may not be replaced."""


class OutputNotWritableError(OSError):
    """The output cannot be created there (permissions, read-only, space)."""


def _absolute(path):
    return Path(os.path.abspath(os.fspath(path)))


def _is_ours(path):
    return any((path / marker).is_file() for marker in MARKERS)


def _describe(path):
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return f"{len(names)} entr{'y' if len(names) == 1 else 'ies'}: {shown}"


def _check_replaceable(path, overwrite):
    if path.exists() and not path.is_dir():
        raise OutputExistsError(f"{path} exists and is not a directory.")
    if not path.is_dir() or not any(path.iterdir()):
        return
    if not _is_ours(path):
        raise OutputExistsError(
            f"{path} is not a keras-gauss run or export (no run.json), so it is "
            f"never replaced, not even with --overwrite; it holds {_describe(path)}. "
            "Choose another directory, or empty this one yourself.")
    if not overwrite:
        raise OutputExistsError(
            f"{path} already holds a run; pass --overwrite to replace it.")


def check_writable(path, need_bytes=MIN_FREE_BYTES):
    """Raises `OutputNotWritableError` unless a file can be created where `path` will go.

    Probes the nearest existing ancestor of `path` (a temporary file is
    created and removed) and compares its free space with `need_bytes`.
    """
    path = _absolute(path)
    ancestor = path.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputNotWritableError(f"{path}: {ancestor} is not a directory.")
    try:
        fd, probe = tempfile.mkstemp(prefix=".keras-gauss-probe-", dir=ancestor)
        os.close(fd)
        os.unlink(probe)
    except OSError as error:
        raise OutputNotWritableError(
            f"{path}: cannot write in {ancestor} ({error.strerror or error})") from None
    free = shutil.disk_usage(ancestor).free
    if free < need_bytes:
        raise OutputNotWritableError(
            f"{path}: {ancestor} has {free / 2**20:.1f} MiB free, about "
            f"{need_bytes / 2**20:.1f} MiB needed")


def check_output_dir(path, overwrite=False, need_bytes=MIN_FREE_BYTES):
    """Checks, before any work, that an output directory may be written.

    Args:
        path: the output directory.
        overwrite: allow replacing an existing run or export of ours.
        need_bytes: free space asked for (a rough estimate).

    First repairs what killed writers left at `path` (`recover`).

    Returns:
        The absolute path as a `Path`.

    Raises:
        OutputExistsError: `path` is a file, holds something that is not a
            run or export of ours (never replaced), holds one and
            `overwrite` is False, or is the working directory or above it.
        OutputNotWritableError: its parent cannot be written or lacks the
            space.
    """
    path = _absolute(path)
    if path.parent == path:
        raise OutputExistsError(f"{path} is the root directory.")
    cwd = Path(os.getcwd())
    if path.exists() and (cwd == path or path in cwd.parents):
        raise OutputExistsError(
            f"{path} is the working directory (or holds it); give a new "
            "sub-directory, e.g. --out runs/NAME.")
    if path.parent.is_dir():
        # Under the lock writers replace under: never a half-swapped directory.
        with _parent_lock(path.parent):
            with contextlib.suppress(OSError):
                recover(path)  # (an unwritable parent is reported below)
            _check_replaceable(path, overwrite)
    else:
        _check_replaceable(path, overwrite)
    check_writable(path, need_bytes)
    return path


@contextlib.contextmanager
def _parent_lock(parent):
    fd = os.open(parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _owner_dead(leftover):
    """True when no live writer holds the lock of a temporary path."""
    try:
        fd = os.open(leftover, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _remove(path):
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _mtime(path):
    try:
        return path.stat().st_mtime
    except FileNotFoundError:  # being deleted by the writer that made it
        return 0.0


def recover(path):
    """Repairs what writers killed while writing `path` left behind.

    Call with the parent directory locked. An old output moved aside by a
    replace that never finished is put back; other `.NAME.old-*` and
    `.NAME.tmp-*` leftovers whose writer is dead are deleted.
    """
    parent, name = path.parent, path.name
    if not parent.is_dir():
        return
    olds = sorted(parent.glob(f".{name}.old-*"), key=_mtime)
    if olds and not os.path.lexists(path):
        last = olds.pop()
        inner = last / name
        with contextlib.suppress(FileNotFoundError):
            os.replace(inner, path)  # the old run, moved aside, is restored
        olds.append(last)
    for old in olds:
        _remove(old)
    for tmp in parent.glob(f".{name}.tmp-*"):
        if _owner_dead(tmp):
            _remove(tmp)


def _locked_temp(path, directory):
    """Creates the temporary sibling of `path`, locked for this process."""
    with _parent_lock(path.parent):
        recover(path)
        if directory:
            tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
            fd = os.open(tmp, os.O_RDONLY)
        else:
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
            tmp = Path(tmp)
        fcntl.flock(fd, fcntl.LOCK_EX)
    return tmp, fd


@contextlib.contextmanager
def atomic_directory(path, overwrite=False):
    """Yields a temporary directory that replaces `path` only on success.

    Everything is written into a sibling temporary directory; when the block
    ends without an exception it is renamed to `path` (an old run of ours in
    `path` is moved aside first and deleted after), otherwise it is deleted.
    A reader never sees a half-written `path`, a crash at any point leaves
    the old run in place or restored at the next start, and concurrent
    writers take turns (see the module docstring).

    Args:
        path: the final directory.
        overwrite: allow replacing an existing run or export of ours.

    Example:

    >>> with atomic_directory("runs/demo") as tmp:
    ...     _ = (tmp / "metrics.json").write_text("{}")
    >>> sorted(os.listdir("runs/demo"))
    ['metrics.json']
    """
    path = check_output_dir(path, overwrite)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp, fd = _locked_temp(path, directory=True)
    try:
        # mkdtemp's 0700 would hide the result from other users (a model server).
        os.chmod(tmp, 0o777 & ~_umask())
        try:
            yield tmp
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        old = None
        try:
            with _parent_lock(path.parent):
                recover(path)
                _check_replaceable(path, overwrite)
                if path.exists():
                    old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-",
                                                dir=path.parent))
                    os.replace(path, old / path.name)
                    # a crash here leaves `path` missing: `recover` restores it
                os.replace(tmp, path)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        os.close(fd)


def check_output_file(path, overwrite=False):
    """Refuses an existing output file unless `overwrite`; never a directory.

    Raises:
        OutputExistsError: `path` is a directory, or exists and `overwrite`
            is False.
        OutputNotWritableError: its directory cannot be written.
    """
    path = _absolute(path)
    if path.is_dir():
        raise OutputExistsError(f"{path} is a directory; give a file name.")
    if path.exists() and not overwrite:
        raise OutputExistsError(f"{path} exists; pass --overwrite to replace it.")
    check_writable(path)
    return path


@contextlib.contextmanager
def atomic_file(path, overwrite=False, mode="w"):
    """Yields a file object whose contents replace `path` only on success.

    The data go to a temporary sibling that is renamed onto `path` when the
    block ends without an exception, and is deleted otherwise (or, after a
    kill, at the next write of `path`).

    Example:

    >>> with atomic_file("means.txt") as handle:
    ...     _ = handle.write("cat 0.5\\n")
    >>> open("means.txt").read()
    'cat 0.5\\n'
    """
    path = check_output_file(path, overwrite)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp, fd = _locked_temp(path, directory=False)
    try:
        kwargs = {"encoding": "utf-8", "newline": "\n"} if "b" not in mode else {}
        with os.fdopen(os.dup(fd), mode, **kwargs) as handle:
            yield handle
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would be surprising
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    finally:
        os.close(fd)


def _umask():
    umask = os.umask(0)
    os.umask(umask)
    return umask
