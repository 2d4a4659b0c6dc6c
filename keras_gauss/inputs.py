"""Opening input files safely: regular files only, text checked whole.

Every reader of a user's file (a corpus, an edges file, a benchmark file,
the files of a run) opens it through `open_input` (or checks it with
`check_input_file` when another library opens it), so a named pipe, a
device, a socket or a directory where a file is expected is one
`InputFileError` naming the setting and the path, never a hang: the file is
opened without blocking (`O_NONBLOCK`: a FIFO without a writer does not
wait) and its type checked on the open descriptor before a byte is read.

`read_text` and `TextCheck` check text whole, not a sniffed head: a NUL byte
or invalid UTF-8 anywhere is an error naming the file and the line.

Example:

>>> with open("pairs.tsv", "w") as f:
...     _ = f.write("dog\\tanimal\\n")
>>> read_text("pairs.tsv", "--edges")
'dog\\tanimal\\n'
>>> os.mkfifo("pipe")
>>> read_text("pipe", "--edges")
Traceback (most recent call last):
keras_gauss.inputs.InputFileError: --edges pipe: a named pipe (FIFO), not a regular file; ...
"""

import codecs
import os
import stat

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


class InputFileError(ValueError):
    """An input that cannot be read as a file: one line naming the setting and the path."""


def _where(path, setting):
    return f"{setting} {os.fspath(path)}" if setting else os.fspath(path)


def _kind_error(path, mode, setting):
    for test, kind in _KINDS:
        if test(mode):
            hint = ("it is read more than once, so write it to a file first"
                    if kind == "a named pipe (FIFO)" else "give a file")
            return InputFileError(f"{_where(path, setting)}: {kind}, not a regular file; "
                                  f"{hint}.")
    return None


def _open_error(path, error, setting):
    try:  # a socket cannot be opened at all (ENXIO): say what it is
        problem = _kind_error(path, os.stat(path).st_mode, setting)
    except OSError:
        problem = None
    if problem is not None:
        return problem
    if isinstance(error, (FileNotFoundError, NotADirectoryError)):
        return InputFileError(f"{_where(path, setting)}: no such file.")
    if isinstance(error, IsADirectoryError):
        return InputFileError(f"{_where(path, setting)}: a directory, not a regular file; "
                              "give a file.")
    reason = error.strerror or str(error)
    return InputFileError(f"{_where(path, setting)}: cannot be read ({reason}).")


def check_input_file(path, setting=None):
    """Returns `path` if it names a regular file (symlinks followed) that can be read.

    For files another library opens by name (`tf.data`, `keras.saving`);
    readers that open the file themselves use `open_input`.

    Args:
        path: the file.
        setting: how messages name it (`"--corpus"`), or None.

    Raises:
        InputFileError: missing, unreadable, or a directory, FIFO, device or
            socket (the message names `setting` and `path`).
    """
    with open_input(path, setting):
        return path


def open_input(path, setting=None):
    """Opens a regular file for reading, in binary; never waits on a FIFO.

    Args:
        path: the file.
        setting: how messages name it (`"--edges"`), or None.

    Returns:
        A binary file object (close it, or use it in a `with` block).

    Raises:
        InputFileError: as `check_input_file`.

    Example:

    >>> with open_input("pairs.tsv", "--edges") as f:
    ...     f.read(3)
    b'dog'
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(
        os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        raise _open_error(path, error, setting) from None
    try:
        mode = os.fstat(fd).st_mode
        problem = _kind_error(path, mode, setting)
        if problem is None and not stat.S_ISREG(mode):
            problem = InputFileError(f"{_where(path, setting)}: not a regular file.")
        if problem is not None:
            raise problem from None
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


# What an error on the first row of a pairs file adds (a header line?).
HEADER_HINT = "; a header line starts with '#'"

_MAGIC_BYTES = 6
# the magic numbers of compressed and archive formats: (start, name, how to read it)
_COMPRESSED = (
    (b"\x1f\x8b", "gzip", "name it with a .gz ending, which is read as gzip"),
    (b"BZh", "bzip2", "decompress it (bunzip2 -k) or recompress it with gzip (.gz)"),
    (b"\xfd7zXZ\x00", "xz", "decompress it (unxz -k) or recompress it with gzip (.gz)"),
    (b"\x28\xb5\x2f\xfd", "zstd", "decompress it (unzstd) or recompress it with gzip (.gz)"),
    (b"PK\x03\x04", "zip", "extract its text files (unzip) and give those"),
)


def compression_of(head):
    """What to say of a text input whose first bytes `head` are a compressed
    format's magic number (it was read as plain text), or None.

    Example:

    >>> compression_of(b"BZh91AY")
    'is bzip2-compressed, not plain text (only .gz files are decompressed); decompress it (bunzip2 -k) or recompress it with gzip (.gz).'
    >>> compression_of(b"the cat") is None
    True
    """
    for magic, name, advice in _COMPRESSED:
        if head.startswith(magic):
            only = "" if name == "gzip" else " (only .gz files are decompressed)"
            return f"is {name}-compressed, not plain text{only}; {advice}."
    return None


def _utf16(start):
    """True when `start`, a file's first bytes, reads as UTF-16 text: its
    byte-order mark, then characters (some ASCII, such as a tab or a line
    end, and no NUL) rather than binary bytes that begin as the mark does."""
    if not start or not start.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    try:
        text, _ = codecs.utf_16_decode(start, "strict", False)
    except UnicodeDecodeError:
        return False
    return "\0" not in text and any(" " <= c < "\x7f" or c in "\t\r\n" for c in text)


class TextCheck:
    """Checks a stream of bytes as UTF-8 text without NUL bytes, piece by piece.

    `update(piece)` raises `InputFileError` at the first NUL byte or invalid
    UTF-8 sequence (a sequence cut between two pieces is completed by the
    next), naming the setting, the file and the line; `finish()` checks the
    end. The line is found by counting the newlines before the bad byte
    again, from `reopen()` (a callable returning the same bytes as an
    iterable of pieces), only when there is an error: the check itself
    costs a NUL search and a decode.

    Args:
        path: the file, for the message.
        setting: how messages name it, or None.
        reopen: returns the stream again (for the line number).

    Example:

    >>> check = TextCheck("a.txt", "--corpus", lambda: [b"ok\\n", b"bad \\xff\\n"])
    >>> check.update(b"ok\\n")
    >>> check.update(b"bad \\xff\\n")
    Traceback (most recent call last):
    keras_gauss.inputs.InputFileError: --corpus a.txt: line 2 is not UTF-8 text (byte 0xff at byte 7).
    """

    def __init__(self, path, setting=None, reopen=None):
        self.path, self.setting, self.reopen = path, setting, reopen
        self.offset = 0  # bytes before `_pending`
        self._pending = b""  # the start of a UTF-8 sequence cut by the end of a piece
        self._head = b""  # the stream's first bytes (a compressed file's magic number)
        self._start = None  # the first piece's first KB (UTF-16 text?)

    def update(self, piece):
        if self._start is None:
            self._start = piece[:1024]
        if len(self._head) < _MAGIC_BYTES:
            self._head += piece[:_MAGIC_BYTES - len(self._head)]
        nul = piece.find(b"\0")
        data = self._pending + piece if self._pending else piece
        try:
            _, consumed = codecs.utf_8_decode(data, "strict", False)
        except UnicodeDecodeError as error:
            bad = error.start
        else:
            bad = None
        if nul >= 0 and (bad is None or len(self._pending) + nul < bad):
            raise self._error(self.offset + len(self._pending) + nul, None)
        if bad is not None:  # the first problem of the piece
            raise self._error(self.offset + bad, data[bad:bad + 1])
        self.offset += consumed
        self._pending = data[consumed:]

    def finish(self):
        if self._pending:  # the file ends inside a UTF-8 sequence
            raise self._error(self.offset, self._pending[:1])

    def _error(self, at, byte):
        compressed = compression_of(self._head)
        if compressed is not None:
            return InputFileError(f"{_where(self.path, self.setting)}: {compressed}")
        if _utf16(self._start):
            return InputFileError(f"{_where(self.path, self.setting)}: is UTF-16 text (it starts "
                                  "with UTF-16's byte-order mark); save it as UTF-8.")
        line = self._line(at)
        where = f"line {line:,}" if line else "a line"
        if byte is None:
            return InputFileError(f"{_where(self.path, self.setting)}: {where} is binary, not "
                                  f"text (a NUL byte at byte {at:,}).")
        return InputFileError(f"{_where(self.path, self.setting)}: {where} is not UTF-8 text "
                             f"(byte 0x{byte.hex()} at byte {at:,}).")

    def _line(self, at):
        if self.reopen is None:
            return None
        newlines, seen = 0, 0
        for piece in self.reopen():
            take = piece[:max(at - seen, 0)]
            newlines += take.count(b"\n")
            seen += len(piece)
            if seen >= at:
                break
        return newlines + 1


def read_text(path, setting=None, encoding="utf-8"):
    """The whole text of a small file (an edges file, a benchmark file, a run's JSON).

    Args:
        path: the file.
        setting: how messages name it, or None.
        encoding: `"utf-8"` or `"utf-8-sig"` (a leading BOM dropped).

    Raises:
        InputFileError: not a regular file (`open_input`), or a NUL byte or
            invalid UTF-8 anywhere (naming the line).
    """
    with open_input(path, setting) as f:
        raw = f.read()
    check = TextCheck(path, setting, lambda: [raw])
    check.update(raw)
    check.finish()
    return raw.decode(encoding)
