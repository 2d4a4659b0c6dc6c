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
    # mkdtemp's 0700 would hide the result from other users (a model server).
    os.chmod(tmp, 0o777 & ~_umask())
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


def check_output_file(path, overwrite=False):
    """Refuses an existing output file unless `overwrite`; never a directory.

    Raises:
        OutputExistsError: `path` is a directory, or exists and `overwrite`
            is False.
    """
    path = Path(path)
    if path.is_dir():
        raise OutputExistsError(f"{path} is a directory; give a file name.")
    if path.exists() and not overwrite:
        raise OutputExistsError(f"{path} exists; pass --overwrite to replace it.")
    return path


@contextlib.contextmanager
def atomic_file(path, overwrite=False, mode="w"):
    """Yields a file object whose contents replace `path` only on success.

    The data go to a temporary sibling that is renamed onto `path` when the
    block ends without an exception, and is deleted otherwise.

    Example:

    >>> with atomic_file("means.txt") as handle:
    ...     handle.write("2 50\n...")
    """
    path = check_output_file(path, overwrite)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    try:
        kwargs = {"encoding": "utf-8", "newline": "\n"} if "b" not in mode else {}
        with os.fdopen(fd, mode, **kwargs) as handle:
            yield handle
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would be surprising
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _umask():
    umask = os.umask(0)
    os.umask(umask)
    return umask
