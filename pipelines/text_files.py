"""Text corpus files without TensorFlow: checks, gzip verification, directory listing.

Shared by :mod:`keras_gauss.pipelines.sources` (``tf.data``) and
:mod:`keras_gauss.pipelines.native_corpus` (the fused engine's
TensorFlow-free path).
"""

from __future__ import annotations

import codecs
import gzip
import os
import zlib
from pathlib import Path

_SNIFF_BYTES = 64 * 1024


def _check_text_file(path: Path) -> None:
    """Raise ``ValueError`` naming ``path`` if its first 64 KiB are binary or not UTF-8."""
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as f:
            head = f.read(_SNIFF_BYTES)
    except (OSError, EOFError) as e:  # includes gzip.BadGzipFile
        raise ValueError(f"{path}: cannot read as {'gzip ' if path.suffix == '.gz' else ''}text: {e}") from e
    if b"\0" in head:
        raise ValueError(f"{path}: binary file (NUL bytes), expected UTF-8 text")
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text (invalid byte at offset {e.start})") from e


_VERIFIED: dict = {}


def verify_gzip(path: str | os.PathLike) -> int:
    """Decompress a gzip file to its end, checking every member's CRC-32 and length.

    ``tf.data.TextLineDataset`` stops silently at the point where a truncated
    gzip file breaks off; this reads the whole file first (streaming, about
    as fast as ``zcat``), once per process for an unchanged file.

    Args:
        path: The ``.gz`` file.

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
    member's CRC-32 and length (what :func:`verify_gzip` checks).

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
    size, offset, members = path.stat().st_size, 0, 0
    decoder, pending = None, b""

    def fail(reason, chunk=b""):
        where = (f"at byte {offset:,}" if not chunk else
                 f"between bytes {offset:,} and {offset + len(chunk):,}")
        raise ValueError(f"{path}: corrupt or truncated gzip file {where} of {size:,} "
                         f"(member {members + 1}): {reason}; refusing to train on part of it")

    with open(path, "rb") as f:
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


def _expand(path: Path, recursive: bool) -> list[Path]:
    if not path.exists():
        raise FileNotFoundError(f"corpus path not found: {path}")
    if not path.is_dir():
        return [path]
    files = path.rglob("*") if recursive else path.iterdir()
    found = sorted(
        f for f in files if f.is_file() and not any(p.startswith(".") for p in f.relative_to(path).parts)
    )
    if not found:
        raise ValueError(f"corpus directory contains no files: {path}")
    return found
