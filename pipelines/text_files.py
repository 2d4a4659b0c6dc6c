"""Text corpus files without TensorFlow: checks, gzip verification, directory listing.

Shared by `keras_gauss.pipelines.sources` (`tf.data`) and
`keras_gauss.pipelines.native_corpus` (the native engine's
TensorFlow-free path).
"""

from __future__ import annotations

import os
import warnings
import zlib
from pathlib import Path

from keras_gauss.inputs import InputFileError
from keras_gauss.inputs import TextCheck
from keras_gauss.inputs import check_input_file
from keras_gauss.inputs import open_input

# The setting every corpus message names (the CLI flag).
SETTING = "--corpus"
_PIECE_BYTES = 1 << 20


def raw_pieces(path: str | os.PathLike, piece_bytes: int = _PIECE_BYTES):
    """Yield the bytes of a text file (decompressed for `.gz`) in pieces
    (of `piece_bytes` for a plain file).

    The file is opened with `keras_gauss.inputs.open_input` (a regular
    file only); `.gz` files are checked as `gzip_chunks` checks them.
    """
    path = Path(path)
    if path.suffix == ".gz":
        yield from gzip_chunks(path)
        return
    with open_input(path, SETTING) as f:
        yield from iter(lambda: f.read(piece_bytes), b"")


_CHECKED: dict = {}


def _identity(path: Path):
    stat = path.stat()
    return (str(path.resolve()), stat.st_size, stat.st_mtime_ns, stat.st_ino)


def text_check(path: str | os.PathLike) -> TextCheck:
    """The `keras_gauss.inputs.TextCheck` of a corpus file (it names
    `--corpus`, the file and, on an error, the line)."""
    return TextCheck(path, SETTING, lambda: raw_pieces(path))


def mark_checked(path: str | os.PathLike) -> None:
    """Records that `path`, as it is now, was read whole and checked
    (by `check_text_file` or a reader that checked every piece)."""
    path = Path(path)
    _CHECKED[_identity(path)] = True


def check_text_file(path: str | os.PathLike) -> None:
    """Check a corpus file whole: UTF-8 text without NUL bytes, to its last byte.

    A `.gz` file is decompressed to its end and its CRCs and lengths
    checked (`gzip_chunks`). Done once per process for an unchanged
    file (path, size, modification time), in one streaming pass.

    Raises:
        keras_gauss.inputs.InputFileError: naming `--corpus`, the file and
            the line of the first NUL byte or invalid UTF-8 sequence, or
            saying what the path is when it is not a regular file.
        ValueError: a corrupt or truncated gzip file (naming the byte offset).

    Example:

    >>> with open("bad.txt", "wb") as f:
    ...     _ = f.write(b"fine\\n" * 20000 + b"caf\\xe9\\n")
    >>> check_text_file("bad.txt")
    Traceback (most recent call last):
    keras_gauss.inputs.InputFileError: --corpus bad.txt: line 20,001 is not UTF-8 text (byte 0xe9 at byte 100,003).
    """
    path = Path(path)
    key = _identity(path)
    if key in _CHECKED:
        return
    check = text_check(path)
    for piece in raw_pieces(path):
        check.update(piece)
    check.finish()
    _CHECKED[key] = True


def _check_text_file(path: Path) -> None:
    """`check_text_file` (the old name, kept for callers)."""
    check_text_file(path)


_VERIFIED: dict = {}


def verify_gzip(path: str | os.PathLike) -> int:
    """Decompress a gzip file to its end, checking every member's CRC-32 and length.

    `tf.data.TextLineDataset` stops silently at the point where a truncated
    gzip file breaks off; this reads the whole file first (streaming, about
    as fast as `zcat`), once per process for an unchanged file.

    Args:
        path: The `.gz` file.

    Returns:
        The number of decompressed bytes.

    Raises:
        ValueError: Naming the file and the compressed byte offset where it is
            truncated or corrupt.

    Example:

    >>> import gzip
    >>> with gzip.open("news.txt.gz", "wt") as f:
    ...     _ = f.write("the cat sat\\n")
    >>> verify_gzip("news.txt.gz")
    12
    >>> with open("news.txt.gz", "rb") as whole, open("cut.txt.gz", "wb") as cut:
    ...     _ = cut.write(whole.read()[:-4])  # loses the length field
    >>> verify_gzip("cut.txt.gz")
    Traceback (most recent call last):
    ValueError: cut.txt.gz: corrupt or truncated gzip file ... refusing to train on part of it
    """
    path = Path(path)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key in _VERIFIED:
        return _VERIFIED[key]
    out = sum(len(chunk) for chunk in gzip_chunks(path))
    _VERIFIED[key] = out
    return out


def gzip_chunks(path: str | os.PathLike):
    """Yield the decompressed bytes of a gzip file in pieces, checking every
    member's CRC-32 and length (what `verify_gzip` checks).

    Raises:
        ValueError: Naming the file and the compressed byte offset where it is
            truncated or corrupt (after the pieces before it were yielded).

    Example:

    >>> import gzip
    >>> with gzip.open("news.txt.gz", "wt") as f:
    ...     _ = f.write("the cat sat\\n")
    >>> b"".join(gzip_chunks("news.txt.gz"))
    b'the cat sat\\n'
    """
    path = Path(path)
    handle = open_input(path, SETTING)
    size, offset, members = os.fstat(handle.fileno()).st_size, 0, 0
    decoder, pending = None, b""

    def fail(reason, chunk=b""):
        where = (f"at byte {offset:,}" if not chunk else
                 f"between bytes {offset:,} and {offset + len(chunk):,}")
        raise ValueError(f"{path}: corrupt or truncated gzip file {where} of {size:,} "
                         f"(member {members + 1}): {reason}; refusing to train on part of it")

    with handle as f:
        while True:
            chunk = pending or f.read(1 << 20)
            pending = b""
            if not chunk:
                break
            if decoder is None:
                if not chunk.strip(b"\0") and members:
                    offset += len(chunk)  # zero padding after the last member
                    continue
                decoder = zlib.decompressobj(wbits=31)
            try:
                piece = decoder.decompress(chunk)
            except zlib.error as e:
                fail(str(e), chunk)
            if piece:
                yield piece
            offset += len(chunk) - len(decoder.unused_data)
            if decoder.eof:
                members += 1
                pending, decoder = decoder.unused_data, None
    if decoder is not None or not members:
        fail("the file ends before the end of the compressed stream")


def expand_paths(path: Path, recursive: bool) -> list[Path]:
    """The files of a corpus path: the path itself, or the regular files of a
    directory (sorted, hidden names skipped); a FIFO, device or socket,
    given or inside the directory, is an error naming it (never opened).
    Sub-directories are searched with `recursive`, else named in a warning
    (or in the error of a directory holding nothing else)."""
    if not path.exists():
        raise FileNotFoundError(f"corpus path not found: {path}")
    if not path.is_dir():
        check_input_file(path, SETTING)
        return [path]
    files = path.rglob("*") if recursive else path.iterdir()
    found, subdirectories = [], []
    for f in sorted(files):
        if any(p.startswith(".") for p in f.relative_to(path).parts):
            continue
        if f.is_dir():
            subdirectories.append(f.name)
            continue
        if not f.is_file():
            try:
                check_input_file(f)
            except InputFileError as error:
                raise InputFileError(f"{SETTING} {path}: {error}") from None
        found.append(f)
    unread = "" if recursive or not subdirectories else (
        f"{len(subdirectories):,} sub-director{'y' if len(subdirectories) == 1 else 'ies'} "
        f"({', '.join(subdirectories[:3])}{', ...' if len(subdirectories) > 3 else ''})")
    if not found:
        if unread:
            raise ValueError(f"corpus directory {path} holds no files, only {unread}, whose "
                             "files are not read; give a directory of text files.")
        raise ValueError(f"corpus directory contains no files: {path}")
    if unread:
        warnings.warn(f"{SETTING} {path}: training on its {len(found):,} file(s) only; its "
                      f"{unread} {'is' if len(subdirectories) == 1 else 'are'} not read.",
                      stacklevel=2)
    return found
