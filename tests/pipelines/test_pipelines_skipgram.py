import collections
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from keras_gauss.pipelines import (
    Vocabulary,
    build_vocabulary,
    epoch_size,
    keep_probabilities,
    load_corpus,
    make_skipgram_dataset,
    negative_table,
    skipgram_pairs,
)

from keras_gauss.pipelines.sources import MAX_LINE_WORDS, cut_long_lines

NEWS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "corpus" / "news2017.txt.gz"

ABCD = Vocabulary(["a", "b", "c", "d"], [1, 1, 1, 1])


def pairs_of(ds, vocab):
    """Multiset of (word, context) strings of a whole epoch."""
    out = collections.Counter()
    for x, _ in ds.as_numpy_iterator():
        out.update((vocab.words[w], vocab.words[c]) for w, c in zip(x["word"], x["context"]))
    return out


def test_keep_probabilities_formula():
    counts = np.array([500, 100, 10, 1])  # t = 1e-2 * 611 = 6.11; keep = (sqrt(f / t) + 1) * t / f
    expected = [(np.sqrt(500 / 6.11) + 1) * 6.11 / 500, (np.sqrt(100 / 6.11) + 1) * 6.11 / 100, 1.0, 1.0]
    np.testing.assert_allclose(keep_probabilities(counts, 1e-2), expected)
    np.testing.assert_allclose(expected[:2], [0.12276, 0.30829], rtol=1e-4)
    np.testing.assert_array_equal(keep_probabilities(counts, 0), np.ones(4))


def test_negative_table_follows_unigram_power():
    counts = np.array([1000, 100, 10, 1])
    table = negative_table(counts, size=100_000)
    p = counts**0.75 / (counts**0.75).sum()
    np.testing.assert_allclose(np.bincount(table, minlength=4) / table.size, p, atol=1e-5)
    assert table.dtype == np.int32


def test_skipgram_pairs_window_1():
    word, context = skipgram_pairs(tf.ragged.constant([[0, 1, 2, 3]], dtype=tf.int32), window=1)
    got = sorted(zip(word.numpy().tolist(), context.numpy().tolist()))
    assert got == [(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2)]


def test_skipgram_pairs_do_not_cross_lines():
    ids = tf.ragged.constant([[0, 1, 2], [], [3], [4, 5]], dtype=tf.int32)
    word, context = skipgram_pairs(ids, window=5)
    got = sorted(zip(word.numpy().tolist(), context.numpy().tolist()))
    assert got == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1), (4, 5), (5, 4)]


def test_dynamic_window_stays_within_window_and_shrinks():
    n, w = 2000, 3
    ids = tf.ragged.constant([list(range(n))], dtype=tf.int32)
    word, context = skipgram_pairs(ids, window=w, dynamic_window=True, seed=(1, 2))
    distance = np.abs(word.numpy() - context.numpy())
    assert distance.min() >= 1 and distance.max() <= w
    # P(distance d) ∝ (w - d + 1) / w: about 3:2:1 for w = 3
    share = np.bincount(distance, minlength=w + 1)[1:] / distance.size
    np.testing.assert_allclose(share, [3 / 6, 2 / 6, 1 / 6], atol=0.03)


def test_dataset_yields_exact_pairs_shapes_and_labels(write_corpus):
    ds = make_skipgram_dataset(write_corpus(["a b c d"]), ABCD, window=1, negatives=3, sample=0, batch_size=4, seed=0)
    batches = list(ds.as_numpy_iterator())
    assert [len(y) for _, y in batches] == [4, 2]
    x, y = batches[0]
    assert x["word"].dtype == x["context"].dtype == x["negatives"].dtype == np.int32
    assert x["negatives"].shape == (4, 3) and y.dtype == np.float32
    np.testing.assert_array_equal(y, [[1, 0, 0, 0]] * 4)
    expected = {("a", "b"): 1, ("b", "a"): 1, ("b", "c"): 1, ("c", "b"): 1, ("c", "d"): 1, ("d", "c"): 1}
    assert pairs_of(ds, ABCD) == expected


def test_oov_tokens_dropped_before_windowing(write_corpus):
    ds = make_skipgram_dataset(write_corpus(["a x b", "y"]), ABCD, window=1, sample=0, seed=0)
    assert pairs_of(ds, ABCD) == {("a", "b"): 1, ("b", "a"): 1}


def test_negatives_follow_unigram_power(write_corpus):
    counts = np.array([400, 200, 100, 50, 25])
    vocab = Vocabulary(["v", "w", "x", "y", "z"], counts)
    ds = make_skipgram_dataset(write_corpus(["v w x y z"] * 200), vocab, window=2, negatives=10, sample=0, seed=3)
    drawn = np.concatenate([x["negatives"].ravel() for x, _ in ds.as_numpy_iterator()])
    observed = np.bincount(drawn, minlength=5)
    expected = drawn.size * counts**0.75 / (counts**0.75).sum()
    chi2 = ((observed - expected) ** 2 / expected).sum()
    assert drawn.size == 2800 * 10 and chi2 < 18.47  # 99.9% quantile of chi-square, 4 dof
    uniform = np.full(5, drawn.size / 5)
    assert ((observed - uniform) ** 2 / uniform).sum() > 1000


def test_subsampling_drops_frequent_words_at_keep_rate(write_corpus):
    lines = ["the a b c d e f g h the"] * 200  # 'the' is 20% of the tokens, the others 10%
    vocab = build_vocabulary(write_corpus(lines), min_count=1)
    ds = make_skipgram_dataset(write_corpus(lines), vocab, window=1, sample=1e-2, seed=1, shuffle_buffer=0)
    kept = collections.Counter(vocab.words[w] for x, _ in ds.as_numpy_iterator() for w in x["word"])
    keep = dict(zip(vocab.words, keep_probabilities(vocab.counts, 1e-2)))
    # a kept token that is not alone in its line is the centre of 1 or 2 pairs; compare the ratio
    assert kept["the"] / kept["a"] == pytest.approx(2 * keep["the"] / keep["a"], rel=0.25)
    assert keep["the"] < 0.6


def test_seeded_stream_is_reproducible_and_reshuffled_per_epoch(write_corpus):
    path = write_corpus([" ".join("abcd"[i % 4] for i in range(j, j + 7)) for j in range(50)])
    first = [make_skipgram_dataset(path, ABCD, window=2, batch_size=32, seed=7, chunk_lines=8) for _ in range(2)]
    epochs = [[x["word"].tolist() + x["negatives"].ravel().tolist() for x, _ in ds.as_numpy_iterator()] for ds in first]
    assert epochs[0] == epochs[1]
    second_epoch = [x["word"].tolist() + x["negatives"].ravel().tolist() for x, _ in first[0].as_numpy_iterator()]
    assert second_epoch != epochs[0]


def test_the_datasets_of_one_vocabulary_trace_their_steps_once(write_corpus):
    """The keras engine builds a dataset an epoch: the chunk step and the line
    cutting are traced once a process (they were traced once a dataset, about
    0.6 CPU-s an epoch), and a dataset of another seed draws other batches."""
    from keras_gauss.pipelines import skipgram, sources

    path = write_corpus([" ".join("abcd"[i % 4] for i in range(j, j + 7)) for j in range(50)])
    vocab = Vocabulary(["a", "b", "c", "d"], [1, 1, 1, 1])
    epochs = [[x["word"].tolist() for x, _ in make_skipgram_dataset(
        path, vocab, window=2, batch_size=32, seed=seed, chunk_lines=8).as_numpy_iterator()]
        for seed in (1, 2, 1)]
    assert epochs[0] == epochs[2] != epochs[1]
    step = skipgram._examples_function(skipgram._Same(vocab), skipgram._Same(skipgram.tokenize),
                                       2, False, 1, 1e-3, 1_000_000)
    assert step.experimental_get_tracing_count() == 1
    assert sources._cut_function(MAX_LINE_WORDS).experimental_get_tracing_count() == 1


def test_epoch_size_counts_pairs(write_corpus):
    lines = ["a b c d", "a b", "c", "a x b c d a b"]
    path = write_corpus(lines)
    size = epoch_size(path, ABCD, window=2)
    actual = sum(len(y) for _, y in make_skipgram_dataset(path, ABCD, window=2, sample=0, seed=0).as_numpy_iterator())
    assert size.tokens == 13 and size.pairs == actual == 10 + 2 + 0 + 18
    assert size.steps(batch_size=7) == 5
    dynamic = epoch_size(path, ABCD, window=2, dynamic_window=True)
    assert dynamic.pairs == 6 + 2 + 10 + (4 + 0 + 8) * 0.5  # distance-2 pairs are kept half the time


def test_a_line_of_text8_length_trains_as_lines_of_10000_words(write_corpus):
    # A corpus of one line (text8: 17 M words) made all its pairs in one
    # tensor, gigabytes; it now reads as lines of MAX_LINE_WORDS words, as
    # gensim's LineSentence does, in the stream and in its epoch size alike.
    assert MAX_LINE_WORDS == 10_000
    path = write_corpus([" ".join("abcd"[i % 4] for i in range(25_000)) + " ", "a b"])
    size = epoch_size(path, ABCD, window=1)
    stream = make_skipgram_dataset(path, ABCD, window=1, sample=0, seed=0, batch_size=60_000,
                                   chunk_lines=1)
    pairs = sum(len(y) for _, y in stream.as_numpy_iterator())
    assert size.pairs == pairs == 2 * (9_999 + 9_999 + 4_999) + 2  # not 2 * 24_999 + 2
    assert [x.decode() for x in cut_long_lines(load_corpus(path)).as_numpy_iterator()][-1] == "a b"


def test_invalid_arguments(write_corpus):
    with pytest.raises(ValueError, match="window"):
        make_skipgram_dataset(write_corpus(["a b"]), ABCD, window=0)


@pytest.mark.filterwarnings("ignore:Your input ran out of data")  # Keras learns the epoch length
@pytest.mark.filterwarnings("ignore:`shuffle=True` was passed")
def test_model_fit_consumes_the_dataset(write_corpus):
    import keras

    word, context = keras.Input((), name="word", dtype="int32"), keras.Input((), name="context", dtype="int32")
    negatives = keras.Input((2,), name="negatives", dtype="int32")
    emb = keras.layers.Embedding(4, 3)
    candidates = keras.ops.concatenate([keras.ops.expand_dims(context, 1), negatives], axis=1)
    scores = keras.ops.sum(keras.ops.expand_dims(emb(word), 1) * emb(candidates), axis=-1)
    model = keras.Model({"word": word, "context": context, "negatives": negatives}, scores)
    model.compile("sgd", keras.losses.BinaryCrossentropy(from_logits=True))
    ds = make_skipgram_dataset(write_corpus(["a b c d"] * 10), ABCD, window=2, negatives=2, batch_size=16, seed=0)
    history = model.fit(ds, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2


@pytest.mark.skipif(not NEWS.exists(), reason="shared news corpus not available")
def test_news_corpus_pairs_per_epoch():
    articles = load_corpus(NEWS).take(500)
    vocab = build_vocabulary(articles, min_count=5)
    assert len(vocab) > 3_000 and vocab.words[0] == "the"
    size = epoch_size(articles, vocab, window=5)
    ds = make_skipgram_dataset(articles, vocab, window=5, sample=0, batch_size=8192, seed=0)
    assert int(ds.reduce(np.int64(0), lambda n, xy: n + tf.cast(tf.shape(xy[1])[0], tf.int64))) == size.pairs
