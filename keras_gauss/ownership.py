"""Which outputs are ours: the marker of a run or an export, and outputs from before it.

Every directory keras-gauss writes (a run, a run being trained, a serving
or a projector export) holds the marker file `.keras-gauss`, the JSON
object `{"format": "keras-gauss", "version": 1, "content": CONTENT,
"files": [...]}`, written last: `files` are the files written with it. A
file export (word2vec) has its marker beside it, `.NAME.keras-gauss`,
recording the file's size and SHA-256. An output is ours (`output_content`,
`file_content`) only by such a marker with our own content, never because a
common file name is in it; `foreign_files` lists what keras-gauss did not
write into an output of ours. Outputs written before the marker existed
are recognised by their whole set of files and their own description file
(see `keras_gauss.io`, which writes and replaces outputs by these rules).

Example:

>>> import os
>>> os.makedirs("runs/mine")
>>> write_marker("runs/mine", RUN)
>>> output_content("runs/mine"), output_content("runs")
('run', None)
"""

import contextlib
import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path

import numpy as np

from keras_gauss import energies

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

# Outputs written before the marker: the names each may hold.
_LEGACY_RUN_NAMES = {"model.keras", "run.json", "metrics.json", "vocab.tsv", "nodes.tsv",
                     "split", "eval.json", "synthetic_hierarchy.png", ".checkpoint"}
# The energies of runs written before the marker (containment came later).
_LEGACY_ENERGIES = (energies.EL.name, energies.KL.name)
_LEGACY_SERVING_NAMES = {"saved_model.pb", "variables", "assets", "assets.extra",
                         "fingerprint.pb"}
_LEGACY_PROJECTOR_NAMES = {"vectors.tsv", "metadata.tsv", "projector_config.pbtxt"}
_LEGACY_PROJECTOR_CONFIG = ('embeddings {\n  tensor_name: "means"\n  tensor_path: "vectors.tsv"\n'
                            '  metadata_path: "metadata.tsv"\n}\n')


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


def marker_content(path):
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


def foreign_files(path):
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


def entry_names(path):
    """The names in the directory `path`, or None when it cannot be listed."""
    try:
        return {entry.name for entry in os.scandir(path)}
    except OSError:
        return None


def _legacy_content(path):
    """What a directory written before the marker holds, recognised by its whole
    set of files and its own description file (see the module docstring)."""
    if (path / "run.json").is_file():
        info = _read_small_json(path / "run.json")
        names = entry_names(path)
        if info is not None and names is not None and names <= _LEGACY_RUN_NAMES \
                and info.get("format") == 1 \
                and info.get("kind") in ("wordnet", "hierarchy", "corpus") \
                and info.get("energy") in _LEGACY_ENERGIES and isinstance(info.get("table"), str) \
                and info.get("vocabulary") in names and "model.keras" in names:
            return RUN
        return None
    if (path / "assets.extra" / "keras_gauss_export.json").is_file():
        info = _read_small_json(path / "assets.extra" / "keras_gauss_export.json")
        names = entry_names(path)
        if info is not None and names is not None and names <= _LEGACY_SERVING_NAMES \
                and info.get("format") == 1 and "signatures" in info \
                and "saved_model.pb" in names:
            return SERVING
        return None
    if (path / "projector_config.pbtxt").is_file():
        names = entry_names(path)
        try:
            config = (path / "projector_config.pbtxt").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        if names is not None and names <= _LEGACY_PROJECTOR_NAMES \
                and config == _LEGACY_PROJECTOR_CONFIG:
            return PROJECTOR
        return None
    if (path / CHECKPOINT).is_file() and entry_names(path) == {".checkpoint"}:
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

    >>> from keras_gauss.io import atomic_directory
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
        return marker_content(marker)
    return _legacy_content(path)


def file_marker(path):
    return path.parent / f".{path.name}{MARKER}"


def file_digest(path):
    """The SHA-256 of the file `path`, hex."""
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
    value = _marker(file_marker(path))
    if value is None:
        return None
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode):
            return None
        known = [(v.get("size"), v.get("sha256")) for v in (value, value.get("previous") or {})]
        if not any(size == info.st_size for size, _ in known):
            return None
        digest = file_digest(path)
    except OSError:
        return None
    return value["content"] if (info.st_size, digest) in known else None


def write_file_marker(path, content, data=None, previous=None):
    """Writes the marker beside the file `path` for the file `data` (default
    `path`), recording `previous` (`{"size", "sha256"}`) too."""
    marker = file_marker(path)
    data = path if data is None else data
    text = _marker_text(content, size=os.path.getsize(data), sha256=file_digest(data),
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




def _umask():
    umask = os.umask(0)
    os.umask(umask)
    return umask
