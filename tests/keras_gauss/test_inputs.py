"""Issue 23, item 3: every input file is checked before it is opened (a FIFO,
device, socket or directory is one line naming the setting and the path,
never a hang), and text inputs are checked whole (a NUL byte or invalid
UTF-8 anywhere is one line naming the file and the line, before any
training or output).

A FIFO here always has a writer waiting (`fifo`): code that opened it for
reading would get an empty file at once (each time), so a regression fails
its assertions instead of hanging the suite."""

import contextlib
import gzip
import os
import socket
import threading

import pytest

from keras_gauss.inputs import InputFileError
from keras_gauss.inputs import TextCheck
from keras_gauss.inputs import check_input_file
from keras_gauss.inputs import open_input
from keras_gauss.inputs import read_text
from cli_errors import cli_exit

TRAIN = ["--dim", "4", "--epochs", "1", "--window", "2", "--min-count", "1",
         "--sample", "0", "--batch-size", "64", "--seed", "0", "--checkpoint-every", "0"]


@contextlib.contextmanager
def fifo(path):
    """A FIFO at `path` whose writer serves every reader an empty file (until the end)."""
    os.mkfifo(path)
    done = threading.Event()

    def writer():  # never blocks: a blocked open could outlive the test by its join
        while not done.is_set():
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))  # a reader has EOF
            except OSError:  # no reader yet (ENXIO)
                done.wait(0.005)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        yield path
    finally:
        done.set()
        thread.join(10)


# --- the helper -----------------------------------------------------------------

def test_a_regular_file_opens_and_every_other_kind_is_one_line(tmp_path):
    (tmp_path / "f.txt").write_text("text\n")
    with open_input(tmp_path / "f.txt", "--edges") as f:
        assert f.read() == b"text\n"
    assert check_input_file(tmp_path / "f.txt") == tmp_path / "f.txt"
    os.symlink(tmp_path / "f.txt", tmp_path / "link")
    assert read_text(tmp_path / "link") == "text\n"  # a link to a file is the file
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(tmp_path / "sock"))
    (tmp_path / "dir").mkdir()
    os.symlink(tmp_path / "missing", tmp_path / "dangling")
    with fifo(tmp_path / "pipe"):
        cases = {"pipe": "a named pipe (FIFO), not a regular file",
                 "dir": "a directory, not a regular file",
                 "sock": "a socket, not a regular file",
                 "missing": "no such file", "dangling": "no such file"}
        for name, words in cases.items():
            with pytest.raises(InputFileError) as info:
                read_text(tmp_path / name, "--edges")
            message = str(info.value)
            assert message.startswith(f"--edges {tmp_path / name}: "), message
            assert "\n" not in message
            if words:
                assert words in message, message
    unix.close()
    with pytest.raises(InputFileError, match=r"^--corpus /dev/null: a character device, "
                                             "not a regular file"):
        check_input_file("/dev/null", "--corpus")


def test_text_is_checked_to_its_last_byte_with_the_line(tmp_path):
    head = b"fine line\n" * 10_000  # 100 KB: past any sniffed head
    for tail, words in ((b"x\0y\n", "line 10,001 is binary, not text (a NUL byte at byte "
                                    "100,001)"),
                        (b"caf\xe9\n", "line 10,001 is not UTF-8 text (byte 0xe9 at byte "
                                       "100,003)"),
                        (b"ok\n\xf0\x9f\x98", "line 10,002 is not UTF-8 text (byte 0xf0")):
        (tmp_path / "t.txt").write_bytes(head + tail)
        with pytest.raises(InputFileError, match=r"^--edges .*t\.txt: " + words.replace(
                "(", r"\(").replace(")", r"\)")):
            read_text(tmp_path / "t.txt", "--edges")
    # The first problem wins; a character cut between two pieces is fine.
    check = TextCheck("x", None, lambda: [b"\xff\0"])
    with pytest.raises(InputFileError, match="line 1 is not UTF-8"):
        check.update(b"\xff\0")
    check = TextCheck("x")
    snow = "☃\n".encode()
    check.update(snow[:1])
    check.update(snow[1:])
    check.finish()


# --- the corpus -------------------------------------------------------------------

@pytest.mark.parametrize("engine", ["native", "keras"])
def test_a_fifo_or_device_as_corpus_is_one_line(tmp_path, capsys, engine):
    with fifo(tmp_path / "pipe"):
        code, err = cli_exit(["train-corpus", "--corpus", str(tmp_path / "pipe"), "--out",
                           str(tmp_path / "r"), "--engine", engine, *TRAIN], capsys)
    assert code == 2 and f"--corpus {tmp_path / 'pipe'}: a named pipe (FIFO)" in err
    code, err = cli_exit(["train-corpus", "--corpus", "/dev/zero", "--out", str(tmp_path / "r"),
                       "--engine", engine, *TRAIN], capsys)
    assert code == 2 and "--corpus /dev/zero: a character device" in err
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "a.txt").write_text("the cat sat\n" * 20)
    with fifo(tmp_path / "dir" / "b.txt"):
        code, err = cli_exit(["train-corpus", "--corpus", str(tmp_path / "dir"), "--out",
                           str(tmp_path / "r"), "--engine", engine, *TRAIN], capsys)
    assert code == 2 and f"{tmp_path / 'dir' / 'b.txt'}: a named pipe (FIFO)" in err
    assert err.startswith(f"keras-gauss train-corpus: error: --corpus {tmp_path / 'dir'}: ")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("engine", ["native", "keras"])
@pytest.mark.parametrize("compress", [False, True])
def test_bad_text_anywhere_in_a_corpus_is_one_line_before_training(tmp_path, capsys, engine,
                                                                   compress):
    good = "the cat sat on the mat\n" * 4000  # 92 KB
    for tail, words in ((b"a\0b\n", "line 4,001 is binary"),
                        (b"caf\xe9\n", "line 4,001 is not UTF-8 text")):
        name = "c.txt.gz" if compress else "c.txt"
        data = good.encode() + tail + good.encode()
        (tmp_path / name).write_bytes(gzip.compress(data) if compress else data)
        code, err = cli_exit(["train-corpus", "--corpus", str(tmp_path / name), "--out",
                           str(tmp_path / "r"), "--engine", engine, *TRAIN], capsys)
        assert code == 2 and f"--corpus {tmp_path / name}: {words}" in err, err
        assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("engine", ["native", "keras"])
def test_a_corpus_compressed_otherwise_than_gz_is_one_line_naming_the_format(
        tmp_path, capsys, engine):
    # gensim's LineSentence reads .bz2 (and gzip whatever its name): read as
    # plain text here, such a file was "line 1 is binary (a NUL byte ...)".
    import bz2
    import lzma

    text = b"the cat sat on the mat\n" * 200
    for name, data, words in (
            ("c.txt.bz2", bz2.compress(text), "is bzip2-compressed, not plain text (only "
                                              ".gz files are decompressed); decompress it"),
            ("c.txt.xz", lzma.compress(text), "is xz-compressed"),
            ("c.txt", gzip.compress(text), "is gzip-compressed, not plain text; name it "
                                           "with a .gz ending")):
        (tmp_path / name).write_bytes(data)
        code, err = cli_exit(["train-corpus", "--corpus", str(tmp_path / name), "--out",
                              str(tmp_path / "r"), "--engine", engine, *TRAIN], capsys)
        assert code == 2 and f"--corpus {tmp_path / name}: {words}" in err, err
        assert not (tmp_path / "r").exists()
    # The magic number is found across pieces however the stream is cut.
    check = TextCheck("x", None, lambda: [b"B", b"Zh9\0"])
    for piece in (b"B", b"Zh9\0"):
        with contextlib.suppress(InputFileError):
            check.update(piece)
    with pytest.raises(InputFileError, match="x: is bzip2-compressed"):
        check.update(b"\0")


def test_the_tf_data_source_and_counting_check_the_whole_file(tmp_path):
    from keras_gauss.pipelines.vocabulary import count_corpus

    (tmp_path / "c.txt").write_bytes(b"the cat\n" * 20_000 + b"\xff\n")
    with pytest.raises(InputFileError, match="line 20,001 is not UTF-8"):
        count_corpus(str(tmp_path / "c.txt"))


# --- edges, benchmark files, similarity files ----------------------------------------

def test_a_fifo_or_directory_as_edges_or_benchmark_file_is_one_line(tmp_path, capsys):
    (tmp_path / "dir").mkdir()
    with fifo(tmp_path / "pipe"):
        for target, kind in ((tmp_path / "pipe", "a named pipe (FIFO)"),
                             (tmp_path / "dir", "a directory"),
                             ("/dev/null", "a character device")):
            code, err = cli_exit(["train-hierarchy", "--edges", str(target), "--out",
                               str(tmp_path / "r")], capsys)
            assert code == 2 and f"--edges {target}: {kind}, not a regular file" in err
            for flag in ("--hyperlex", "--entailment"):
                code, err = cli_exit(["train-wordnet", flag, str(target), "--out",
                                   str(tmp_path / "r")], capsys)
                assert code == 2 and f"{flag} {target}: {kind}, not a regular file" in err
    assert not (tmp_path / "r").exists()


def test_a_utf16_file_is_named_as_such(tmp_path):
    # Excel's "Unicode text": a byte-order mark, then two bytes a character
    for encoding in ("utf-16-le", "utf-16-be"):
        (tmp_path / "u.tsv").write_bytes("\ufeffdog\tanimal\n".encode(encoding))
        with pytest.raises(InputFileError, match=r"^--edges .*u\.tsv: is UTF-16 text \(it "
                                                 r"starts with UTF-16's byte-order mark\); "
                                                 r"save it as UTF-8\.$"):
            read_text(tmp_path / "u.tsv", "--edges")


def test_bad_text_anywhere_in_an_edges_or_benchmark_file_names_the_line(tmp_path):
    from keras_gauss.hierarchy.benchmark_data import read_entailment, read_hyperlex
    from keras_gauss.hierarchy.edgefile import EdgeFileError, read_edge_file
    from keras_gauss.pipelines.evaluate import read_similarity

    lines = b"".join(b"w%d\tw%d\tTrue\n" % (i, i + 1) for i in range(9000))
    (tmp_path / "f.tsv").write_bytes(lines + b"x\xc3\tb\tTrue\n")
    with pytest.raises(EdgeFileError, match=r"^--edges .*f\.tsv: line 9,001 is not UTF-8"):
        read_edge_file(tmp_path / "f.tsv")
    with pytest.raises(InputFileError, match=r"^--entailment .*: line 9,001 is not UTF-8"):
        read_entailment(tmp_path / "f.tsv")
    with pytest.raises(InputFileError, match=r"^--hyperlex .*: line 9,001 is not UTF-8"):
        read_hyperlex(tmp_path / "f.tsv")
    with pytest.raises(InputFileError, match=r"^--similarity .*: line 9,001 is not UTF-8"):
        read_similarity(tmp_path / "f.tsv")


# --- the files of a run ----------------------------------------------------------------

@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from keras_gauss.pipelines.train import CorpusConfig, train_corpus

    tmp = tmp_path_factory.mktemp("inputs")
    (tmp / "c.txt").write_text("the cat sat on the mat\nthe dog sat on the log\n" * 30)
    train_corpus(CorpusConfig(dim=4, min_count=1, epochs=1), tmp / "c.txt", tmp / "run",
                 verbose=0, checkpoint_every=0)
    (tmp / "sim.tsv").write_text("cat\tdog\t5\ncat\tmat\t2\ndog\tlog\t3\n")
    return tmp / "run"


@pytest.mark.parametrize("name", ["metrics.json", "run.json", "vocab.tsv", "model.keras"])
def test_a_fifo_in_a_run_is_one_line_for_every_reader(run, tmp_path, capsys, name):
    import shutil

    from keras_gauss.run_format import DamagedRunError

    from keras_gauss.runs import load_run

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    os.remove(copy / name)
    with fifo(copy / name):
        with pytest.raises(DamagedRunError, match=f"{copy / name}: a named pipe"):
            load_run(copy)
        for argv in (["neighbors", str(copy), "cat"],
                     ["evaluate", str(copy), "--similarity", str(run.parent / "sim.tsv")]):
            code, err = cli_exit(argv, capsys)
            assert code == 2 and f"{copy / name}: a named pipe (FIFO)" in err, err
    os.remove(copy / name)
    os.mkdir(copy / name)
    with pytest.raises(DamagedRunError, match=f"{copy / name}: a directory"):
        load_run(copy)


def test_a_fifo_as_similarity_or_entailment_file_is_one_line(run, tmp_path, capsys):
    with fifo(tmp_path / "pipe"):
        for flag in ("--similarity", "--entailment"):
            code, err = cli_exit(["evaluate", str(run), flag, str(tmp_path / "pipe")], capsys)
            assert code == 2 and f"{flag} {tmp_path / 'pipe'}: a named pipe (FIFO)" in err
