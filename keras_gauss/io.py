"""Outputs of keras-gauss: written whole, replaced only when ours, one writer at a time.

**Ownership** (`keras_gauss.ownership`). An output is ours only by a marker
of ours: `.keras-gauss` inside a directory (a run, an interrupted run, a
serving or projector export), written last and recording the files written
with it; `.NAME.keras-gauss` beside a file export (word2vec), recording its
size and SHA-256. `overwrite` replaces only an output of ours of the same
content (a run or an interrupted run by a run, a projector export by a
projector export, ...) holding no file keras-gauss did not write, never a
directory because a common file name is in it, and nothing is ever written
into a run or an export (`--out RUN/x`). Outputs written before the marker
existed are recognised by their whole set of files and their own
description file: a run holds only the files a run holds and a `run.json`
with `"format": 1` and a kind, energy, table and vocabulary of ours; a
serving export only SavedModel files and its
`assets.extra/keras_gauss_export.json`; a projector export only its three
files, its `projector_config.pbtxt` as we write it; an interrupted run only
`.checkpoint/` with a checkpoint of ours. A word2vec file without its
marker is never replaced.

**Atomic writes.** Every output is written into a hidden sibling
`.NAME.tmp-*` and renamed onto `NAME` when complete; the marker is its last
file. A replaced output is renamed to `.NAME.old-*` and deleted after the
new one is in place, under an exclusive lock on the parent directory
(`flock`). A write that fails for want of space (or any other error of the
file system) leaves the previous output as it was and raises
`OutputNotWritableError` naming the path and the reason.

**One writer at a time.** A job (a training command, an export) holds the
lock `.NAME.keras-gauss-lock` beside its output from its start to its end
(`OutputClaim`); a second writer of the same output, or of a path inside
it, is refused at once (`OutputBusyError`), `atomic_directory` and
`atomic_file` called on their own wait their turn (for the same output).
Every start first repairs what a killed writer left:
an old output whose replacement never arrived is put back; temporary files
and directories, stale locks and half-written checkpoints whose writer is
dead (each writer holds a lock on its own) are deleted.
"""

import contextlib
import errno
import fcntl
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

from keras_gauss.ownership import CHECKPOINT
from keras_gauss.ownership import MARKER
from keras_gauss.ownership import PROJECTOR
from keras_gauss.ownership import REPLACES
from keras_gauss.ownership import RUN
from keras_gauss.ownership import RUN_IN_PROGRESS
from keras_gauss.ownership import SERVING
from keras_gauss.ownership import WORD2VEC
from keras_gauss.ownership import file_digest
from keras_gauss.ownership import marker_content
from keras_gauss.ownership import entry_names
from keras_gauss.ownership import file_content
from keras_gauss.ownership import file_marker
from keras_gauss.ownership import foreign_files
from keras_gauss.ownership import output_content
from keras_gauss.ownership import write_file_marker
from keras_gauss.ownership import write_marker

__all__ = ["PROJECTOR", "RUN", "RUN_IN_PROGRESS", "SERVING", "WORD2VEC", "OutputBusyError",
           "OutputClaim", "OutputExistsError", "OutputLock", "OutputNotWritableError",
           "atomic_directory", "atomic_file", "check_output_dir", "check_output_file",
           "check_writable", "file_content", "not_writable", "output_content", "recover",
           "write_error", "write_marker"]

LOCK_SUFFIX = ".keras-gauss-lock"
# Free space asked for before training when the caller has no estimate.
MIN_FREE_BYTES = 1 << 20
# errno values of a file system that cannot take the data.
DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO)

class OutputExistsError(FileExistsError):
    """The output path holds something that may not be replaced."""


class OutputBusyError(OutputExistsError):
    """Another process is writing the output now."""


class OutputNotWritableError(OSError):
    """The output cannot be written there (permissions, read-only, space)."""


def _absolute(path):
    try:
        return Path(os.path.abspath(os.fspath(path)))
    except FileNotFoundError:  # os.getcwd() of a deleted working directory
        raise OutputNotWritableError(
            f"{path}: a relative path, and the working directory no longer exists; give an "
            "absolute path, or cd into an existing directory.") from None


def _replace_file(tmp, path, overwrite, content):
    """Puts the complete `tmp` in the place of the export `path`: its marker first
    (naming the new file and the old one), then the rename, then the marker
    of the new file alone. A failure or a kill at any point leaves `path`
    and a marker that names it."""
    with _parent_lock(path.parent):
        previous = None
        if _check_replaceable_file(path, overwrite, content) is not None:
            previous = {"size": os.path.getsize(path), "sha256": file_digest(path)}
        write_file_marker(path, content, data=tmp, previous=previous)
        os.replace(tmp, path)
    with contextlib.suppress(OSError):  # (the marker above names the new file already)
        write_file_marker(path, content)


# ------------------------------------------------------------------ checks


def _describe(path):
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return f"{len(names)} entr{'y' if len(names) == 1 else 'ies'}: {shown}"


def _article(content):
    return "an" if content[0] in "aeiou" else "a"


def _first_above(path, probe, below_root=False):
    """`(directory, what probe says)` of the nearest directory above `path`
    for which `probe(directory)` is not None (with `below_root`, never the
    root itself, `/` or `.`), else `(None, None)`."""
    for ancestor in path.parents:
        if below_root and ancestor.parent == ancestor:
            break
        found = probe(ancestor)
        if found is not None:
            return ancestor, found
    return None, None


def check_not_inside_an_output(path):
    """Outputs are never written into a run or an export of ours.

    Args:
        path: an absolute path that is to be written.

    Raises:
        OutputExistsError: a directory above `path` is a run or an export of
            ours, named in the message.

    Example: `check_not_inside_an_output(Path("/tmp/runs/a/curves.png"))`
    raises when `/tmp/runs/a` is a run.
    """
    ancestor, found = _first_above(path, output_content)
    if ancestor is not None:
        raise OutputExistsError(
            f"{path} is inside the keras-gauss {found} {ancestor}: nothing is written "
            "into a run or an export; choose a path outside it.")


def _is_empty(path):
    return not any(path.iterdir())


def _check_replaceable(path, overwrite, content=RUN):
    """Checks that the directory `path` may be written as `content`; returns
    what it holds now (None: nothing)."""
    if os.path.islink(path):  # the rename into place would replace the link, not follow it
        raise OutputExistsError(
            f"{path} is a symbolic link (to {os.readlink(path)}): a link of yours is never "
            f"replaced; give the directory itself, {os.path.realpath(path)}.")
    if os.path.lexists(path) and not path.is_dir():
        raise OutputExistsError(f"{path} exists and is not a directory.")
    check_not_inside_an_output(path)
    if not path.is_dir() or _is_empty(path):
        return None
    found = output_content(path)
    if found == RUN_IN_PROGRESS and not (path / CHECKPOINT).is_file():
        return None  # killed before its first checkpoint: nothing to keep
    if found is None:
        raise OutputExistsError(
            f"{path} is not a keras-gauss {content} (it has no {MARKER} marker of ours), so "
            f"it is never replaced, not even with --overwrite; it holds {_describe(path)}. "
            "Choose another directory, or empty this one yourself.")
    if found not in REPLACES[content]:
        raise OutputExistsError(
            f"{path} holds a keras-gauss {found}, which {_article(content)} {content} never "
            "replaces; choose another path.")
    if not overwrite:
        raise OutputExistsError(
            f"{path} already holds {_article(found)} {found}; pass --overwrite to replace it.")
    foreign = foreign_files(path) if os.path.lexists(path / MARKER) else []
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more"
                                          if len(foreign) > 5 else "")
        raise OutputExistsError(
            f"{path} holds {_article(found)} keras-gauss {found} and files keras-gauss did not "
            f"write ({shown}), so it is never replaced, not even with --overwrite; move them "
            "out first.")
    return found


def check_writable(path, need_bytes=MIN_FREE_BYTES):
    """Raises `OutputNotWritableError` unless a file can be created where `path` will go.

    Probes the nearest existing ancestor of `path` (a temporary file is
    created and removed) and compares its free space with `need_bytes`.
    """
    path = _absolute(path)
    ancestor = path.parent
    while not os.path.lexists(ancestor):  # a link to nothing is no missing directory to make
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        what = ("a symbolic link that leads to no directory" if ancestor.is_symlink()
                else "not a directory")
        raise OutputNotWritableError(f"{path}: {ancestor} is {what}.")
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


def _check_name_length(path, beside):
    """Raises `OutputNotWritableError` when the file system cannot hold a name
    of the output `path` that is not there yet, or the longest name
    keras-gauss makes beside it (its lock, its marker's temporary file):
    `beside`, a template of `NAME` (`path`'s name)."""
    ancestor = path.parent
    while not os.path.isdir(ancestor) and ancestor.parent != ancestor:
        ancestor = ancestor.parent
    try:
        limit = os.pathconf(ancestor, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    if limit is None:
        return
    limits = f"{ancestor} takes names of at most {limit} bytes; choose a shorter name."
    for part in path.relative_to(ancestor).parts[:-1]:
        if len(os.fsencode(part)) > limit:
            raise OutputNotWritableError(
                f"{path}: a directory name in it is {len(os.fsencode(part))} bytes, and {limits}")
    size = len(os.fsencode(beside.replace("NAME", path.name)))
    if size > limit:
        raise OutputNotWritableError(
            f"{path}: the name is too long: keras-gauss writes {beside} beside it, "
            f"{size} bytes here, and {limits}")


def _check_location(path):
    path = _absolute(path)
    _check_name_length(path, f".NAME{LOCK_SUFFIX}")
    if path.parent == path:
        raise OutputExistsError(f"{path} is the root directory.")
    try:
        cwd = Path(os.getcwd())
    except FileNotFoundError:  # deleted: nothing of it can be under `path`
        cwd = None
    if cwd is not None and os.path.lexists(path) and (cwd == path or path in cwd.parents):
        raise OutputExistsError(
            f"{path} is the working directory (or holds it); give a new "
            "sub-directory, e.g. --out runs/NAME.")
    return path


def check_output_dir(path, overwrite=False, need_bytes=MIN_FREE_BYTES, content=RUN):
    """Checks, before any work, that an output directory may be written.

    Args:
        path: the output directory.
        overwrite: allow replacing an existing output of ours of the same
            content.
        need_bytes: free space asked for (a rough estimate).
        content: what will be written (`RUN`, `SERVING`, `PROJECTOR`).

    First repairs what killed writers left at `path` (`recover`).

    Returns:
        The absolute path as a `Path`.

    Raises:
        OutputBusyError: another process is writing `path` now.
        OutputExistsError: `path` is a file, holds something that is not an
            output of ours of that content (never replaced), holds one and
            `overwrite` is False, lies inside a run or an export, or is the
            working directory or above it.
        OutputNotWritableError: its parent cannot be written or lacks the
            space.
    """
    path = _check_location(path)
    _check_free(path)
    if path.parent.is_dir():
        # Under the lock writers replace under: never a half-swapped directory.
        with _parent_lock(path.parent):
            with contextlib.suppress(OSError):
                recover(path)  # (an unwritable parent is reported below)
            _check_replaceable(path, overwrite, content)
    else:
        _check_replaceable(path, overwrite, content)
    check_writable(path, need_bytes)
    return path


# ------------------------------------------------------------------- locks

# The locks this process holds: {absolute output path: OutputLock}.
_HELD = {}


def _lock_path(path):
    return path.parent / f".{path.name}{LOCK_SUFFIX}"


def _holder(fd):
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 64).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return f" (process {text})" if text.isdigit() else ""


def _busy(path, holder=""):
    return OutputBusyError(
        f"{path} is being written by another keras-gauss process{holder}; wait for it to "
        "finish, or choose another path.")


class OutputLock:
    """The exclusive lock of an output path, `.NAME.keras-gauss-lock` beside it.

    Held from a job's start to its end; released (and the file removed) by
    `release` or when the process dies. Re-entrant within a process.
    Directories made to hold it are removed again when the release finds
    them empty.

    Example:

    >>> lock = OutputLock("runs/locked").acquire()
    >>> lock.release()
    """

    def __init__(self, path):
        self.path = _absolute(path)
        self.file = _lock_path(self.path)
        self.fd = None
        self.count = 0
        self.made = []

    def _open(self):
        flags = os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(self.file, os.O_RDWR | os.O_CREAT | flags, 0o666)
        except PermissionError as error:
            try:  # a lock file someone else made
                fd = os.open(self.file, os.O_RDONLY | flags)
            except FileNotFoundError:  # none, and none can be made here: say why
                raise error from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OutputExistsError(f"{self.file} (the lock of {self.path}) is not a regular "
                                    "file; remove it.")
        return fd

    def acquire(self, wait=False):
        """Takes the lock; `OutputBusyError` when another process holds it
        (or, with `wait`, waits for it)."""
        held = _HELD.get(self.path)
        if held is not None:
            held.count += 1
            return held
        _check_ancestors_free(self.path)  # before making the directories the lock goes in
        missing = self.path.parent
        while not missing.exists() and missing.parent != missing:
            self.made.append(missing)
            missing = missing.parent
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            while True:
                fd = self._open()
                try:
                    self._flock(fd, wait)
                except BlockingIOError:
                    holder = _holder(fd)
                    os.close(fd)
                    raise _busy(self.path, holder) from None
                try:
                    same = os.stat(self.file).st_ino == os.fstat(fd).st_ino
                except FileNotFoundError:
                    same = False
                if same:
                    break
                os.close(fd)  # removed by its last holder meanwhile: take the new one
        except BaseException:
            self._remove_made()
            raise
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode("ascii"))
        self.fd, self.count = fd, 1
        _HELD[self.path] = self
        try:
            _check_ancestors_free(self.path)  # a writer above that started meanwhile
        except BaseException:
            self.release()
            raise
        return self

    @staticmethod
    def _flock(fd, wait):
        if wait:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return
        for attempt in range(5):  # a moment: another start's probe (`_check_free`) passes
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if attempt == 4:
                    raise
                time.sleep(0.02)

    def _remove_made(self):
        for directory in self.made:  # deepest first
            try:
                directory.rmdir()
            except OSError:
                break
        self.made = []

    def release(self):
        """Releases the lock (the outermost release removes its file)."""
        self.count -= 1
        if self.count > 0 or self.fd is None:
            return
        _HELD.pop(self.path, None)
        with contextlib.suppress(OSError):
            if os.stat(self.file).st_ino == os.fstat(self.fd).st_ino:
                os.unlink(self.file)
        os.close(self.fd)
        self.fd = None
        self._remove_made()

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


def _held_elsewhere(path):
    """`" (process N)"` or `""` when another process holds `path`'s lock, else None."""
    if path in _HELD:
        return None
    file = _lock_path(path)
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _holder(fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    return None


def _check_ancestors_free(path):
    """Raises `OutputBusyError` when another process writes a directory that
    holds `path`: a job's lock covers its whole output tree."""
    ancestor, holder = _first_above(path, _held_elsewhere, below_root=True)
    if ancestor is not None:
        raise OutputBusyError(
            f"{path} is inside {ancestor}, which another keras-gauss process{holder} is "
            "writing; choose a path outside it.")


def _check_free(path):
    """Raises `OutputBusyError` when another process holds `path`'s lock, or
    the lock of a directory above it."""
    holder = _held_elsewhere(path)
    if holder is not None:
        raise _busy(path, holder)
    _check_ancestors_free(path)


class OutputClaim:
    """An output held by this process for a whole job: locked, repaired and checked.

    `with OutputClaim(path) as claim:` takes the lock (`OutputBusyError`
    when another process writes `path`), repairs a killed writer's
    leftovers and leaves the checks to `claim.check(...)`; the lock goes
    when the block ends.

    Args:
        path: the output (a directory, or a file with `directory=False`).
        content: what will be written (`RUN`, `SERVING`, `PROJECTOR`,
            `WORD2VEC`).
        directory: whether the output is a directory.

    Example:

    >>> with OutputClaim("runs/claimed") as claim:
    ...     _ = claim.check(overwrite=False)
    ...     with atomic_directory(claim.path) as tmp:
    ...         _ = (tmp / "metrics.json").write_text("{}")
    """

    def __init__(self, path, content=RUN, directory=True):
        self.path = _check_location(path)
        self.content = content
        self.directory = directory
        self.lock = OutputLock(self.path)

    def __enter__(self):
        check_writable(self.path)  # before making the directories the lock goes in
        try:
            self.lock.acquire()
        except OSError as error:
            if isinstance(error, (OutputExistsError, OutputNotWritableError)):
                raise
            raise OutputNotWritableError(
                f"{self.path}: cannot take its lock {self.lock.file} "
                f"({error.strerror or error})") from None
        try:
            with _parent_lock(self.path.parent):
                recover(self.path)
        except BaseException:
            self.lock.release()
            raise
        return self

    def __exit__(self, *exc):
        self.lock.release()

    def check(self, overwrite=False, need_bytes=MIN_FREE_BYTES):
        """Checks that the output may be written (see `check_output_dir`);
        returns what it holds now (None: nothing)."""
        if self.directory:
            found = _check_replaceable(self.path, overwrite, self.content)
        else:
            found = _check_replaceable_file(self.path, overwrite, self.content)
        check_writable(self.path, need_bytes)
        return found


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
        fd = os.open(leftover, os.O_RDONLY | os.O_NONBLOCK)
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


def _remove_stale_lock(path):
    file = _lock_path(path)
    if path in _HELD or not os.path.lexists(file):
        return
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.stat(file).st_ino == os.fstat(fd).st_ino:
            os.unlink(file)
    except OSError:
        pass  # held by a live writer, or gone
    finally:
        os.close(fd)


def _recover_inside(path):
    """Removes a killed writer's leftovers inside an output of ours: half-written
    checkpoints and markers (an interrupted run's `.checkpoint/` left empty too)."""
    if not path.is_dir() or path.is_symlink():
        return
    names = entry_names(path) or set()
    ours = os.path.lexists(path / MARKER) and marker_content(path / MARKER) is not None
    leftovers = {name for name in names if name.startswith(f"{MARKER}.tmp-")}
    if not ours and names - leftovers - {".checkpoint"} and output_content(path) is None:
        return
    for name in leftovers:
        if _owner_dead(path / name):
            _remove(path / name)
    checkpoints = path / CHECKPOINT.parent
    if checkpoints.is_dir() and not checkpoints.is_symlink():
        for tmp in checkpoints.glob(f".{CHECKPOINT.name}.tmp-*"):
            if _owner_dead(tmp):
                _remove(tmp)
        with contextlib.suppress(OSError):
            checkpoints.rmdir()  # only when empty


def recover(path):
    """Repairs what writers killed while writing `path` left behind.

    Call with the parent directory locked. An old output moved aside by a
    replace that never finished is put back; other `.NAME.old-*` and
    `.NAME.tmp-*` leftovers, stale locks, half-written checkpoints and
    markers inside `path` whose writer is dead are deleted.
    """
    path = _absolute(path)
    parent, name = path.parent, path.name
    if not parent.is_dir():
        return
    olds = sorted(parent.glob(f".{name}.old-*"), key=_mtime)
    if olds and not os.path.lexists(path):
        last = olds.pop()
        inner = last / name
        with contextlib.suppress(FileNotFoundError):
            os.replace(inner, path)  # the old output, moved aside, is restored
        olds.append(last)
    for old in olds:
        _remove(old)
    for tmp in parent.glob(f".{name}.tmp-*"):
        if _owner_dead(tmp):
            _remove(tmp)
    marker = file_marker(path)
    for tmp in parent.glob(f"{marker.name}.tmp-*"):
        if _owner_dead(tmp):
            _remove(tmp)
    _remove_stale_lock(path)
    _recover_inside(path)


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


# ------------------------------------------------------------ write errors


def write_error(error):
    """The reason (`strerror`) when `error` or an exception in its chain is the
    file system refusing a write (no space, quota, read-only, permissions,
    I/O: an `OSError` with an errno), else None. Libraries that wrap such an
    error (h5py, TensorFlow) keep it in the chain or in their message.

    Example:

    >>> write_error(OSError(errno.ENOSPC, "No space left on device"))
    'No space left on device'
    """
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno is not None:
            return error.strerror or os.strerror(error.errno)
        text = str(error)
        for code in DISK_ERRORS:
            if os.strerror(code) in text:
                return os.strerror(code)
        error = error.__cause__ or error.__context__
    return None


def not_writable(path, error, what, kept):
    """`OutputNotWritableError` for a write of `what` to `path` that failed with
    `error`, saying what was kept; None when `error` is no refusal of the
    file system (`write_error`), such as a word UTF-8 cannot encode."""
    # The reason of a refusal reported already (a checkpoint's atomic_file); other
    # exceptions' `reason` (a UnicodeError's: "surrogates not allowed") is none.
    reason = getattr(error, "reason", None) if isinstance(error, OutputNotWritableError) else None
    reason = reason or write_error(error)
    if reason is None:
        return None
    refused = OutputNotWritableError(
        f"{path}: cannot write {what} ({reason[0].lower() + reason[1:]}); {kept}.")
    refused.reason = reason
    return refused


# ----------------------------------------------------------- atomic writes


@contextlib.contextmanager
def _held(path, wait=True):
    """Holds `path`'s lock for the block (at once if this process holds it)."""
    lock = OutputLock(path).acquire(wait=wait)
    try:
        yield
    finally:
        lock.release()


@contextlib.contextmanager
def atomic_directory(path, overwrite=False, content=RUN):
    """Yields a temporary directory that replaces `path` only on success.

    Everything is written into a sibling temporary directory; when the block
    ends without an exception the marker of `content` is written into it
    last and it is renamed to `path` (an old output of ours in `path` is
    moved aside first and deleted after), otherwise it is deleted. A reader
    never sees a half-written `path`, a crash at any point leaves the old
    output in place or restored at the next start, and concurrent writers
    take turns (see the module docstring).

    Args:
        path: the final directory.
        overwrite: allow replacing an existing output of ours of the same
            content.
        content: what the directory holds (`RUN`, `SERVING`, `PROJECTOR`).

    Raises:
        OutputNotWritableError: the file system refused the data (no space,
            ...): `path` is left as it was.

    Example:

    >>> with atomic_directory("runs/demo") as tmp:
    ...     _ = (tmp / "metrics.json").write_text("{}")
    >>> sorted(os.listdir("runs/demo"))
    ['.keras-gauss', 'metrics.json']
    """
    path = _check_location(path)
    with _held(path):  # waits for another writer of `path`
        path = check_output_dir(path, overwrite, content=content)
        tmp, fd = _locked_temp(path, directory=True)
        try:
            # mkdtemp's 0700 would hide the result from other users (a model server).
            os.chmod(tmp, 0o777 & ~_umask())
            try:
                yield tmp
                write_marker(tmp, content)  # last: the directory is whole
            except BaseException as error:
                shutil.rmtree(tmp, ignore_errors=True)
                refused = not_writable(path, error, f"the {content}",
                                       f"{path} is left as it was")
                if refused is not None:
                    raise refused from None
                raise
            old = None
            try:
                with _parent_lock(path.parent):
                    recover(path)
                    _check_replaceable(path, overwrite, content)
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


def _check_replaceable_file(path, overwrite, content=None):
    if path.is_dir():
        raise OutputExistsError(f"{path} is a directory; give a file name.")
    if content is not None:
        check_not_inside_an_output(path)
    if not os.path.lexists(path):
        return None
    if content is not None:
        found = file_content(path)
        if found is None:
            raise OutputExistsError(
                f"{path} is not a keras-gauss {content} (it has no {file_marker(path).name} "
                "marker of ours recording its contents), so it is never replaced, not even "
                "with --overwrite; choose another name, or remove it yourself.")
        if found not in REPLACES[content]:
            raise OutputExistsError(f"{path} is a keras-gauss {found}, which {_article(content)} "
                                    f"{content} never replaces; choose another name.")
    if not overwrite:
        raise OutputExistsError(f"{path} exists; pass --overwrite to replace it.")
    if content is not None and not stat.S_ISREG(os.lstat(path).st_mode):
        raise OutputExistsError(f"{path} is not a regular file.")
    return content


def check_output_file(path, overwrite=False, content=None):
    """Refuses an existing output file unless `overwrite`; never a directory.

    Args:
        path: the output file.
        overwrite: allow replacing it.
        content: what will be written (`WORD2VEC`): then only a file of ours
            of that content is replaced (its marker `.NAME.keras-gauss`
            records its size and SHA-256), and never one inside a run or an
            export. None: any existing file (keras-gauss's own files inside
            a run, e.g. `eval.json`).

    Raises:
        OutputBusyError: another process is writing `path` now.
        OutputExistsError: `path` is a directory, exists and `overwrite` is
            False, or (with `content`) is not a file of ours.
        OutputNotWritableError: its directory cannot be written.
    """
    path = _absolute(path)
    # the longest name made beside it: its marker's temporary file, else its own (mkstemp's)
    _check_name_length(path, f".NAME{MARKER}.tmp-XXXXXXXX" if content else ".NAME.tmp-XXXXXXXX")
    _check_free(path)
    _check_replaceable_file(path, overwrite, content)
    check_writable(path)
    return path


@contextlib.contextmanager
def atomic_file(path, overwrite=False, mode="w", content=None):
    """Yields a file object whose contents replace `path` only on success.

    The data go to a temporary sibling that is renamed onto `path` when the
    block ends without an exception, and is deleted otherwise (or, after a
    kill, at the next write of `path`). With `content` (an export, e.g.
    `WORD2VEC`) the marker `.NAME.keras-gauss` is written beside it last.

    Raises:
        OutputNotWritableError: the file system refused the data (no space,
            ...): `path` is left as it was.

    Example:

    >>> with atomic_file("means.txt") as handle:
    ...     _ = handle.write("cat 0.5\\n")
    >>> open("means.txt").read()
    'cat 0.5\\n'
    """
    path = _absolute(path)
    with _held(path) if content is not None else contextlib.nullcontext():
        path = check_output_file(path, overwrite, content)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp, fd = _locked_temp(path, directory=False)
        try:
            kwargs = {"encoding": "utf-8", "newline": "\n"} if "b" not in mode else {}
            try:
                with os.fdopen(os.dup(fd), mode, **kwargs) as handle:
                    yield handle
                os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would be surprising
                if content is not None:
                    _replace_file(tmp, path, overwrite, content)
                else:
                    os.replace(tmp, path)
            except BaseException as error:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                refused = not_writable(path, error, f"the {content or 'file'}",
                                       f"{path} is left as it was")
                if refused is not None:
                    raise refused from None
                raise
        finally:
            os.close(fd)


def _umask():
    umask = os.umask(0)
    os.umask(umask)
    return umask
