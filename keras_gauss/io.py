"""Writing run and export directories so that none is ever left half-written."""

import contextlib
import os
import shutil
import tempfile
from pathlib import Path


class OutputExistsError(FileExistsError):
    """The output directory already holds files and `overwrite` was not set."""


def check_output_dir(path, overwrite=False):
    """Refuses an output path that holds something, unless `overwrite`.

    Args:
        path: the output directory.
        overwrite: allow replacing an existing, non-empty directory.

    Returns:
        The path as a `Path`.

    Raises:
        OutputExistsError: `path` is a non-empty directory and `overwrite` is
            False, or `path` is a file.
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputExistsError(f"{path} exists and is not a directory.")
    if path.is_dir() and any(path.iterdir()) and not overwrite:
        raise OutputExistsError(
            f"{path} already holds files (another run?); pass --overwrite to "
            "replace them."
        )
    return path


@contextlib.contextmanager
def atomic_directory(path, overwrite=False):
    """Yields a temporary directory that replaces `path` only on success.

    Everything is written into a sibling temporary directory; when the block
    ends without an exception the directory is renamed to `path` (an old
    `path` is moved aside first and deleted after), otherwise the temporary
    directory is deleted. A reader never sees a half-written `path`.

    Args:
        path: the final directory.
        overwrite: allow replacing an existing, non-empty `path`.

    Example:

    >>> with atomic_directory("runs/demo") as tmp:
    ...     (tmp / "metrics.json").write_text("{}")
    """
    path = check_output_dir(path, overwrite)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = None
    if path.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=path.parent))
        os.replace(path, old / path.name)
    os.replace(tmp, path)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
