"""Outputs of keras-gauss: written whole, replaced only when ours, one writer at a time.

**Ownership.** Every directory keras-gauss writes (a run, a run being
trained, a serving or a projector export) holds the marker file
`.keras-gauss`, the JSON object `{"format": "keras-gauss", "version": 1,
"content": CONTENT}`, written last; a file export (word2vec) has its marker
beside it, `.NAME.keras-gauss`, which also records the file's size and
SHA-256. `overwrite` replaces only an output of ours of the same content (a
run or an interrupted run by a run, a projector export by a projector
export, ...), never a directory because a common file name is in it, and
nothing is ever written into a run or an export (`--out RUN/x`). Outputs
written before the marker existed are recognised by their whole set of
files and their own description file: a run holds only the files a run
holds and a `run.json` with `"format": 1` and a kind, energy, table and
vocabulary of ours; a serving export only SavedModel files and its
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
(`OutputClaim`); a second writer of the same output is refused at once
(`OutputBusyError`), `atomic_directory` and `atomic_file` called on their
own wait their turn. Every start first repairs what a killed writer left:
an old output whose replacement never arrived is put back; temporary files
and directories, stale locks and half-written checkpoints whose writer is
dead (each writer holds a lock on its own) are deleted.
"""

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

import numpy as np

# The ownership marker of a directory (inside it) or of a file (beside it:
# `.NAME` + MARKER).
MARKER = ".keras-gauss"
MARKER_FORMAT = "keras-gauss"
MARKER_VERSION = 1
# What an output of ours holds (the marker's "content").
RUN = "run"
RUN_IN_PROGRESS = "interrupted run"
SERVING = "serving export"
PROJECTOR = "projector export"
WORD2VEC = "word2vec export"
CONTENTS = (RUN, RUN_IN_PROGRESS, SERVING, PROJECTOR, WORD2VEC)
# What an output of each content may replace.
REPLACES = {RUN: (RUN, RUN_IN_PROGRESS), RUN_IN_PROGRESS: (RUN_IN_PROGRESS,),
            SERVING: (SERVING,), PROJECTOR: (PROJECTOR,), WORD2VEC: (WORD2VEC,)}
# The checkpoint of a run being trained (`keras_gauss.checkpoint`).
CHECKPOINT = Path(".checkpoint") / "state.npz"
LOCK_SUFFIX = ".keras-gauss-lock"
# Free space asked for before training when the caller has no estimate.
MIN_FREE_BYTES = 1 << 20
# errno values of a file system that cannot take the data.
DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO)

# Outputs written before the marker: the names each may hold.
_LEGACY_RUN_NAMES = {"model.keras", "run.json", "metrics.json", "vocab.tsv", "nodes.tsv",
                     "split", "eval.json", "synthetic_hierarchy.png", ".checkpoint"}
_LEGACY_SERVING_NAMES = {"saved_model.pb", "variables", "assets", "assets.extra",
                         "fingerprint.pb"}
_LEGACY_PROJECTOR_NAMES = {"vectors.tsv", "metadata.tsv", "projector_config.pbtxt"}
_LEGACY_PROJECTOR_CONFIG = ('embeddings {\n  tensor_name: "means"\n  tensor_path: "vectors.tsv"\n'
                            '  metadata_path: "metadata.tsv"\n}\n')


class OutputExistsError(FileExistsError):
    """The output path holds something that may not be replaced."""


class OutputBusyError(OutputExistsError):
    """Another process is writing the output now."""


class OutputNotWritableError(OSError):
    """The output cannot be written there (permissions, read-only, space)."""


def _absolute(path):
    return Path(os.path.abspath(os.fspath(path)))


# ----------------------------------------------------------------- markers


def _marker_text(content, **extra):
    return json.dumps({"format": MARKER_FORMAT, "version": MARKER_VERSION,
                       "content": content, **extra}, indent=2) + "\n"


def _read_small_json(path, limit=1 << 16):
    """A small regular file's JSON object, or None (never opens a FIFO or device)."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        with open(path, "rb") as f:
            value = json.loads(f.read(limit).decode("utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _marker(path):
    """The marker file `path`'s object when it is a marker of ours, else None."""
    value = _read_small_json(path)
    if value is None or value.get("format") != MARKER_FORMAT:
        return None
    version = value.get("version")
    if isinstance(version, bool) or not isinstance(version, int) \
            or not 1 <= version <= MARKER_VERSION:
        return None
    return value if value.get("content") in CONTENTS else None


def _marker_content(path):
    """The content named by the marker file `path`, or None when it is not ours."""
    value = _marker(path)
    return None if value is None else value["content"]


def _files(directory):
    """The relative paths of the files (anything not a directory) under `directory`."""
    found = []
    for root, dirs, files in os.walk(directory):
        base = Path(root).relative_to(directory)
        found += [(base / name).as_posix() for name in files]
        found += [(base / name).as_posix() for name in dirs
                  if os.path.islink(os.path.join(root, name))]
    return sorted(found)


def write_marker(directory, content):
    """Writes the marker of `directory` (atomically: a sibling renamed onto it),
    recording the files it holds: what a later replace may delete."""
    directory = Path(directory)
    text = _marker_text(content, files=_files(directory))
    fd, tmp = tempfile.mkstemp(prefix=f"{MARKER}.tmp-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, directory / MARKER)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _foreign_files(path):
    """Files in the output `path` (with a marker of ours) that keras-gauss did not
    write: neither recorded by its marker, nor the marker, nor a run's later
    files (`eval.json`, the checkpoint)."""
    marker = _marker(path / MARKER)
    recorded = set(marker.get("files") or []) if marker is not None else set()
    runs = marker is not None and marker["content"] in (RUN, RUN_IN_PROGRESS)
    return [name for name in _files(path)
            if name not in recorded and name != MARKER
            and not name.startswith(f"{MARKER}.tmp-")
            and not (runs and (name == "eval.json" or name.startswith(".eval.json.tmp-")
                               or name.startswith(".checkpoint/")))]


def _names(path):
    try:
        return {entry.name for entry in os.scandir(path)}
    except OSError:
        return None


def _legacy_content(path):
    """What a directory written before the marker holds, recognised by its whole
    set of files and its own description file (see the module docstring)."""
    if (path / "run.json").is_file():
        info = _read_small_json(path / "run.json")
        names = _names(path)
        if info is not None and names is not None and names <= _LEGACY_RUN_NAMES \
                and info.get("format") == 1 \
                and info.get("kind") in ("wordnet", "hierarchy", "corpus") \
                and info.get("energy") in ("kl", "el") and isinstance(info.get("table"), str) \
                and info.get("vocabulary") in names and "model.keras" in names:
            return RUN
        return None
    if (path / "assets.extra" / "keras_gauss_export.json").is_file():
        info = _read_small_json(path / "assets.extra" / "keras_gauss_export.json")
        names = _names(path)
        if info is not None and names is not None and names <= _LEGACY_SERVING_NAMES \
                and info.get("format") == 1 and "signatures" in info \
                and "saved_model.pb" in names:
            return SERVING
        return None
    if (path / "projector_config.pbtxt").is_file():
        names = _names(path)
        try:
            config = (path / "projector_config.pbtxt").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        if names is not None and names <= _LEGACY_PROJECTOR_NAMES \
                and config == _LEGACY_PROJECTOR_CONFIG:
            return PROJECTOR
        return None
    if (path / CHECKPOINT).is_file() and _names(path) == {".checkpoint"}:
        if _is_checkpoint(path / CHECKPOINT):
            return RUN_IN_PROGRESS
    return None


def _is_checkpoint(path):
    """Whether `path` is a checkpoint of ours (its state names our format)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            state = json.loads(data["__state__"].tobytes().decode("utf-8"))
    except Exception:  # noqa: BLE001 - anything unreadable is not ours
        return False
    return isinstance(state, dict) and state.get("kind") in ("corpus", "hierarchy") \
        and isinstance(state.get("format"), int)


def output_content(path):
    """What the directory `path` holds as an output of ours, or None.

    Returns:
        One of `RUN`, `RUN_IN_PROGRESS`, `SERVING`, `PROJECTOR` (from its
        marker, or for outputs written before the marker from its whole set
        of files), or None: not an output of ours (or not a directory).

    Example:

    >>> with atomic_directory("runs/marked") as tmp:
    ...     _ = (tmp / "metrics.json").write_text("{}")
    >>> output_content("runs/marked")
    'run'
    """
    path = Path(path)
    if not path.is_dir():
        return None
    marker = path / MARKER
    if os.path.lexists(marker):
        return _marker_content(marker)
    return _legacy_content(path)


def _file_marker(path):
    return path.parent / f".{path.name}{MARKER}"


def _file_digest(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def file_content(path):
    """What the file `path` is as an output of ours (`WORD2VEC`), or None: its
    marker `.NAME.keras-gauss` must name it and record its size and SHA-256
    (those of the file now, or, while a replace is under way, of the file it
    replaces)."""
    path = Path(path)
    value = _marker(_file_marker(path))
    if value is None:
        return None
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode):
            return None
        known = [(v.get("size"), v.get("sha256")) for v in (value, value.get("previous") or {})]
        if not any(size == info.st_size for size, _ in known):
            return None
        digest = _file_digest(path)
    except OSError:
        return None
    return value["content"] if (info.st_size, digest) in known else None


def _write_file_marker(path, content, data=None, previous=None):
    """Writes the marker beside the file `path` for the file `data` (default
    `path`), recording `previous` (`{"size", "sha256"}`) too."""
    marker = _file_marker(path)
    data = path if data is None else data
    text = _marker_text(content, size=os.path.getsize(data), sha256=_file_digest(data),
                        **({"previous": previous} if previous else {}))
    fd, tmp = tempfile.mkstemp(prefix=f"{marker.name}.tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, marker)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _replace_file(tmp, path, overwrite, content):
    """Puts the complete `tmp` in the place of the export `path`: its marker first
    (naming the new file and the old one), then the rename, then the marker
    of the new file alone. A failure or a kill at any point leaves `path`
    and a marker that names it."""
    with _parent_lock(path.parent):
        previous = None
        if _check_replaceable_file(path, overwrite, content) is not None:
            previous = {"size": os.path.getsize(path), "sha256": _file_digest(path)}
        _write_file_marker(path, content, data=tmp, previous=previous)
        os.replace(tmp, path)
    with contextlib.suppress(OSError):  # (the marker above names the new file already)
        _write_file_marker(path, content)


# ------------------------------------------------------------------ checks


def _describe(path):
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return f"{len(names)} entr{'y' if len(names) == 1 else 'ies'}: {shown}"


def _article(content):
    return "an" if content[0] in "aeiou" else "a"


def _check_not_inside_an_output(path):
    """Outputs are never written into a run or an export of ours."""
    for ancestor in path.parents:
        found = output_content(ancestor)
        if found is not None:
            raise OutputExistsError(
                f"{path} is inside the keras-gauss {found} {ancestor}: nothing is written "
                "into a run or an export; choose a path outside it.")


def _is_empty(path):
    return not any(path.iterdir())


def _check_replaceable(path, overwrite, content=RUN):
    """Checks that the directory `path` may be written as `content`; returns
    what it holds now (None: nothing)."""
    if os.path.lexists(path) and not path.is_dir():
        raise OutputExistsError(f"{path} exists and is not a directory.")
    _check_not_inside_an_output(path)
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
    foreign = _foreign_files(path) if os.path.lexists(path / MARKER) else []
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


def _check_location(path):
    path = _absolute(path)
    if path.parent == path:
        raise OutputExistsError(f"{path} is the root directory.")
    cwd = Path(os.getcwd())
    if os.path.lexists(path) and (cwd == path or path in cwd.parents):
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
        except PermissionError:
            fd = os.open(self.file, os.O_RDONLY | flags)
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


def _check_free(path):
    """Raises `OutputBusyError` when another process holds `path`'s lock."""
    if path in _HELD:
        return
    file = _lock_path(path)
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        raise _busy(path, _holder(fd)) from None
    finally:
        os.close(fd)


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
    names = _names(path) or set()
    ours = os.path.lexists(path / MARKER) and _marker_content(path / MARKER) is not None
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
    marker = _file_marker(path)
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
    file system (`write_error`)."""
    reason = getattr(error, "reason", None) or write_error(error)
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
        _check_not_inside_an_output(path)
    if not os.path.lexists(path):
        return None
    if content is not None:
        found = file_content(path)
        if found is None:
            raise OutputExistsError(
                f"{path} is not a keras-gauss {content} (it has no {_file_marker(path).name} "
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
