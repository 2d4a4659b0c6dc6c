import gzip
import itertools

import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import keras_gauss.pipelines.sources
from keras_gauss.pipelines import Vocabulary, load_corpus, make_skipgram_dataset, text_source, tfds_source


def read(ds):
    return [line.decode() for batch in ds.batch(4096).as_numpy_iterator() for line in batch]


def test_text_file_and_gzip(write_corpus, tmp_path):
    assert read(load_corpus(write_corpus(["one two", "three"]))) == ["one two", "three"]
    with gzip.open(tmp_path / "c.txt.gz", "wt", encoding="utf-8") as f:
        f.write("héllo\nworld\n")
    assert read(load_corpus(str(tmp_path / "c.txt.gz"))) == ["héllo", "world"]


def test_directory_sorted_hidden_skipped_recursive_optional(write_corpus, tmp_path):
    write_corpus(["b"], "d/b.txt")
    write_corpus(["a"], "d/a.txt")
    write_corpus(["hidden"], "d/.hidden")
    write_corpus(["nested"], "d/sub/c.txt")
    with gzip.open(tmp_path / "d" / "c.gz", "wt", encoding="utf-8") as f:
        f.write("zipped\n")
    with pytest.warns(UserWarning, match=r"its 1 sub-directory \(sub\) is not read"):
        assert read(load_corpus(tmp_path / "d")) == ["a", "b", "zipped"]
    assert read(text_source(tmp_path / "d", recursive=True)) == ["a", "b", "zipped", "nested"]
    # files of one compression are read by one reader, in the order given
    assert read(text_source([tmp_path / "d" / "b.txt", tmp_path / "d" / "a.txt"])) == ["b", "a"]


def test_missing_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        load_corpus(tmp_path / "nope.txt")


def test_empty_directory(tmp_path):
    with pytest.raises(ValueError, match="no files"):
        load_corpus(tmp_path)


@pytest.mark.parametrize(
    "name, data, message",
    [
        ("binary.bin", b"abc\x00\x01\x02", "binary"),
        ("latin1.txt", "café au lait\n".encode("latin-1"), "not UTF-8"),
        ("broken.txt.gz", b"not gzip at all", "gzip"),
    ],
)
def test_unreadable_files_are_named(tmp_path, name, data, message):
    (tmp_path / name).write_bytes(data)
    with pytest.raises(ValueError, match=rf"{name}.*{message}"):
        load_corpus(tmp_path)


def test_utf8_char_cut_at_sniff_boundary_is_accepted(tmp_path):
    text = "a" * (64 * 1024 - 1) + "é\n"  # the 2-byte 'é' straddles the 64 KiB boundary
    (tmp_path / "edge.txt").write_text(text, encoding="utf-8")
    assert read(load_corpus(tmp_path / "edge.txt")) == [text[:-1]]


def test_dataset_passthrough_and_check():
    ds = tf.data.Dataset.from_tensor_slices(["x y"])
    assert read(load_corpus(ds)) == ["x y"]
    assert ds.options().autotune.enabled is None  # the user's dataset is left as it was
    with pytest.raises(ValueError, match="scalar tf.string"):
        load_corpus(tf.data.Dataset.from_tensor_slices([1, 2]))


def test_tfds_mock_source():
    with tfds.testing.mock_data(num_examples=4):
        texts = read(load_corpus("tfds:imdb_reviews:train/text"))
        assert texts == read(load_corpus("tfds:imdb_reviews"))  # split train, the only text feature
    assert len(texts) == 4 and all(isinstance(t, str) and t for t in texts)


def test_tfds_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown TFDS dataset 'no_such_dataset_xyz'"):
        load_corpus("tfds:no_such_dataset_xyz")
    with pytest.raises(FileNotFoundError, match="'imdb_reviews' is not prepared locally"):
        tfds_source("imdb_reviews", data_dir=str(tmp_path))
    with tfds.testing.mock_data(num_examples=1):
        with pytest.raises(ValueError, match="no scalar string feature 'label'"):
            load_corpus("tfds:imdb_reviews:train/label")


def test_wordnet_default_corpus(tmp_path, monkeypatch):
    from keras_gauss.hierarchy.wordnet import load_wordnet

    monkeypatch.setattr(keras_gauss.pipelines.sources, "cache_dir", lambda: tmp_path)
    lines = read(load_corpus())
    (cached,) = tmp_path.glob("wordnet-*-glosses.txt")
    assert len(lines) == 165_998  # 117,659 definitions + 48,339 examples of WordNet 3.0
    expected = [
        text
        for s in itertools.islice(load_wordnet().all_synsets("n"), 100)
        for text in [s.definition(), *s.examples()]
    ]
    assert lines[: len(expected)] == expected
    dog = load_wordnet().synset("dog.n.01")
    assert dog.definition() in lines and dog.examples()[0] in lines
    cached.write_text("from the cache\n", encoding="utf-8")  # a second call reads the cache
    assert read(load_corpus("wordnet")) == ["from the cache"]


@pytest.fixture(scope="module")
def big_gzip():
    """`(data, lines)`: a gzip file's bytes of 20,000 lines, and that count
    (made once: compressing it takes most of a second)."""
    import random

    rng = random.Random(0)
    words = ["w%d" % i for i in range(500)]
    text = "\n".join(" ".join(rng.choice(words) for _ in range(12)) for _ in range(20_000))
    return gzip.compress(text.encode() + b"\n"), text.count("\n") + 1


@pytest.mark.parametrize("damage", ["truncated", "crc", "length"])
def test_damaged_gzip_is_refused_naming_file_and_offset(tmp_path, big_gzip, damage):
    path = tmp_path / "corpus.txt.gz"
    data, lines = big_gzip
    path.write_bytes(data)
    data = bytearray(data)
    assert len(read(text_source(path))) == lines
    if damage == "truncated":  # tf.data alone reads the first part and stops quietly
        data = data[: int(len(data) * 0.63)]
    else:
        data[-8 if damage == "crc" else -4] ^= 0x01
    path.write_bytes(bytes(data))
    if damage == "truncated":
        assert 0 < len(read(tf.data.TextLineDataset(str(path), "GZIP"))) < lines
    with pytest.raises(ValueError, match=r"corpus\.txt\.gz: corrupt or truncated gzip .*byte"):
        text_source(path)


def test_concatenated_gzip_members_and_zero_padding_are_whole(tmp_path):
    from keras_gauss.pipelines.sources import verify_gzip

    path = tmp_path / "m.gz"
    path.write_bytes(gzip.compress(b"a b\n") + gzip.compress(b"c d\n") + b"\0" * 16)
    assert verify_gzip(path) == 8
    path.write_bytes(gzip.compress(b"a b\n") + b"junk")
    with pytest.raises(ValueError, match="member 2"):
        verify_gzip(path)


@pytest.mark.parametrize("source", ["file", "dataset", "tfds"])
def test_every_pipeline_runs_without_the_autotuner(write_corpus, source):
    # Deleting an autotuned iterator (at the end of each of fit's epochs)
    # waits for the autotuner's thread: see keras_gauss.tf_data.
    corpus = {"file": lambda: write_corpus(["a b c a b", "c a b"]),
              "dataset": lambda: tf.data.Dataset.from_tensor_slices(["a b c a b", "c a b"]),
              "tfds": lambda: "tfds:imdb_reviews:train/text"}[source]()
    with tfds.testing.mock_data(num_examples=2):
        assert load_corpus(corpus).options().autotune.enabled is False
        pairs = make_skipgram_dataset(corpus, Vocabulary(["a", "b", "c"], [3, 3, 2]), window=2,
                                      seed=0, sample=0)
        assert pairs.options().autotune.enabled is False
