import tensorflow as tf

from pipelines import tokenize


def tokens(text, **kwargs):
    return [t.decode() for t in tokenize(tf.constant(text), **kwargs).numpy()]


def test_lowercases_and_strips_punctuation():
    assert tokens("Hello, World! (It's) 3.14") == ["hello", "world", "it's", "3", "14"]


def test_keeps_intra_word_apostrophes_and_hyphens_only():
    text = "Don't 'quote' state-of-the-art -- rock 'n' roll o’clock -x- a--b"
    assert tokens(text) == ["don't", "quote", "state-of-the-art", "rock", "n", "roll", "o’clock", "x", "a", "b"]


def test_unicode_letters_are_lowercased_and_kept():
    assert tokens("ÉTÉ Naïve") == ["été", "naïve"]


def test_options_off_split_on_whitespace_only():
    assert tokens("Hello,  World!\tX", lowercase=False, strip_punctuation=False) == ["Hello,", "World!", "X"]
    assert tokens("Hello, World!", strip_punctuation=False) == ["hello,", "world!"]
    assert tokens("Hello, World!", lowercase=False) == ["Hello", "World"]


def test_batched_inside_tf_data():
    ds = tf.data.Dataset.from_tensor_slices(["A b.", "", "c-d!"]).batch(3).map(tokenize)
    assert next(iter(ds)).to_list() == [[b"a", b"b"], [], [b"c-d"]]


# token_ids: the C++ op (ASCII lines) + tf.strings (the rest) == tf.strings.

import itertools  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from keras_gauss.fused import fused_available  # noqa: E402
from pipelines import Vocabulary  # noqa: E402
from pipelines import token_ids  # noqa: E402

# Letters, digits, the marks, every kind of whitespace (RE2's \s lacks \v,
# tf.strings.split has it), punctuation, control characters, U+FFFD (the op
# handles it), and lines that must go through tf.strings (accents, the curly
# apostrophe, no-break space, invalid UTF-8).
_ALPHABET = list("aZq09'-'- \t\v\f\r\n.,!\"(/") + ["\x00", "\x1f", "\x7f", "\ufffd"]
_NON_ASCII = ["é", "’", "\u00a0", "Ö"]


def _random_lines(rng, count):
    lines = []
    for i in range(count):
        n = int(rng.integers(0, 30))
        chars = [_ALPHABET[k] for k in rng.integers(0, len(_ALPHABET), n)]
        if i % 5 == 4 and n:
            chars[int(rng.integers(0, n))] = _NON_ASCII[i % len(_NON_ASCII)]
        lines.append("".join(chars).encode())
    lines.append(b"bad \xff utf-8 Zq")
    return lines


def _vocab_of(lines, drop_every=4, **kwargs):
    words = sorted(set(itertools.chain.from_iterable(tokenize(tf.constant(lines), **kwargs).to_list())))
    words = [w.decode("utf-8", "replace") for w in words]
    kept = sorted({w for i, w in enumerate(words) if i % drop_every})  # some unknown
    return Vocabulary(kept, [1] * len(kept))


needs_op = pytest.mark.skipif(not fused_available(), reason="the fused ops cannot be built here")


@needs_op
@pytest.mark.parametrize("lowercase", [True, False])
@pytest.mark.parametrize("strip_punctuation", [True, False])
def test_token_ids_fused_equal_tf_strings(lowercase, strip_punctuation):
    rng = np.random.default_rng(5)
    lines = _random_lines(rng, 400)
    kwargs = dict(lowercase=lowercase, strip_punctuation=strip_punctuation)
    vocab = _vocab_of(lines, **kwargs)
    fused = token_ids(tf.constant(lines), vocab, use_fused=True, **kwargs).to_list()
    reference = token_ids(tf.constant(lines), vocab, use_fused=False, **kwargs).to_list()
    assert fused == reference
    assert sum(map(len, reference)) > 300  # most tokens known, some not
    assert any(len(row) for line, row in zip(lines, reference) if max(line, default=0) >= 0x80)


@needs_op
def test_token_ids_examples():
    vocab = Vocabulary(["don't", "quote", "state-of-the-art", "ok", "a", "b", "été"], [1] * 7)
    lines = tf.constant(["Don't 'quote' state-of-the-art -- OK!", "", "a--b ÉTÉ", "-a- b'"])
    assert token_ids(lines, vocab, use_fused=True).to_list() == [[0, 1, 2, 3], [], [4, 5, 6], [4, 5]]


@needs_op
def test_token_ids_follow_a_changed_vocabulary():
    # The op caches its hash table; a vocabulary of the same size with other
    # words must not reuse it.
    lines = tf.constant(["a b c"])
    first = token_ids(lines, Vocabulary(["a", "b", "c"], [1, 1, 1]), use_fused=True)
    second = token_ids(lines, Vocabulary(["c", "x", "a"], [1, 1, 1]), use_fused=True)
    assert first.to_list() == [[0, 1, 2]]
    assert second.to_list() == [[2, 0]]


def test_token_ids_in_tf_data_and_rank_check():
    vocab = Vocabulary(["a", "b"], [1, 1])
    ds = tf.data.Dataset.from_tensor_slices(["A b.", "", "b-a é b"]).batch(3)
    ds = ds.map(lambda lines: token_ids(lines, vocab))
    assert next(iter(ds)).to_list() == [[0, 1], [], [1]]
    with pytest.raises(ValueError, match="vector of lines"):
        token_ids(tf.constant("a b"), vocab)


@needs_op
def test_op_leaves_only_other_non_ascii_lines_to_tf_strings():
    from keras_gauss.fused import build

    lines = tf.constant(["plain text", "a\ufffdb", "caf\u00e9", "nul\x00x", "bad \xff".encode("latin-1")])
    words = tf.constant(["plain", "text", "a", "b"])
    ids, splits, fallback = build.load().keras_gauss_ascii_token_ids(lines, words)
    assert fallback.numpy().tolist() == [False, False, True, True, True]
    assert tf.RaggedTensor.from_row_splits(ids, splits).to_list() == [[0, 1], [2, 3], [], [], []]
