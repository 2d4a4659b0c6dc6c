import numpy as np
import pytest
import tensorflow as tf

from keras_gauss.pipelines import Vocabulary, build_vocabulary, tokenize

LINES = ["the cat sat on the mat", "The dog sat", "a cat, the dog!"]  # the:4 cat:2 sat:2 dog:2 on/mat/a:1


def test_counts_sorted_by_count_then_word(write_corpus):
    vocab = build_vocabulary(write_corpus(LINES), min_count=1)
    assert vocab.words == ("the", "cat", "dog", "sat", "a", "mat", "on")
    assert vocab.counts.tolist() == [4, 2, 2, 2, 1, 1, 1]
    assert vocab.total == 13


def test_min_count_and_max_size(write_corpus):
    path = write_corpus(LINES)
    assert build_vocabulary(path, min_count=2).words == ("the", "cat", "dog", "sat")
    assert build_vocabulary(path, min_count=1, max_size=2).words == ("the", "cat")


def test_custom_tokenizer_is_used(write_corpus):
    vocab = build_vocabulary(write_corpus(LINES), min_count=1, tokenizer=lambda x: tokenize(x, lowercase=False))
    assert "The" in vocab.words and vocab.counts[vocab.words.index("the")] == 3


def test_save_load_round_trip(tmp_path):
    vocab = Vocabulary(["the", "naïve", "don't"], [5, 3, 1])
    vocab.save(tmp_path / "v.tsv")
    assert (tmp_path / "v.tsv").read_text(encoding="utf-8") == "the\t5\nnaïve\t3\ndon't\t1\n"
    loaded = Vocabulary.load(tmp_path / "v.tsv")
    assert loaded.words == vocab.words
    np.testing.assert_array_equal(loaded.counts, vocab.counts)


def test_load_rejects_malformed_line(tmp_path):
    (tmp_path / "bad.tsv").write_text("the\t5\ncat 3\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.tsv:2"):
        Vocabulary.load(tmp_path / "bad.tsv")


def test_lookup_in_graph_unknown_is_minus_one():
    vocab = Vocabulary(["the", "cat"], [2, 1])
    ds = tf.data.Dataset.from_tensors(["cat", "dog", "the"]).map(vocab.lookup)
    assert next(iter(ds)).numpy().tolist() == [1, -1, 0]


def test_invalid_vocabulary():
    with pytest.raises(ValueError, match="distinct"):
        Vocabulary(["a", "a"], [1, 1])
    with pytest.raises(ValueError, match="positive"):
        Vocabulary(["a"], [0])


def test_empty_corpus_error(write_corpus):
    path = write_corpus(["", " ... !!", ""], name="empty.txt")
    with pytest.raises(ValueError, match=r"empty\.txt.*contains no tokens"):
        build_vocabulary(path)


def test_empty_after_min_count_error(write_corpus):
    path = write_corpus(LINES, name="small.txt")
    with pytest.raises(ValueError, match=r"small\.txt.*empty after min_count=5.*'the' occurs 4 times"):
        build_vocabulary(path, min_count=5)
