"""Pairs drawn on the device (`--pairs device`): the streaming pipeline's
rules (line boundaries, reduced window, subsampling, unigram^0.75
negatives), checked against that pipeline's own functions with fixed seeds;
training through `train_corpus`."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf
from scipy import stats
from test_pipelines_train import TOPICS, _cosine, tiny_config, topic_corpus

from keras_gauss.layers import SkipGramSampler
from keras_gauss.pipelines import Vocabulary
from keras_gauss.pipelines.device_pairs import corpus_ids, device_corpus, step_dataset
from keras_gauss.pipelines.skipgram import (
    epoch_size, make_skipgram_dataset, negative_table, skipgram_pairs)
from keras_gauss.pipelines.train import train_corpus
from keras_gauss.runs import load_run

WINDOW = 3


def _positions_corpus(seed=0, n_lines=80):
    """Token id = position (so a pair gives its two positions), a keep
    probability per position."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, 30, n_lines)
    lines = np.repeat(np.arange(n_lines), lengths).astype("int32")
    keep = rng.uniform(0.2, 1.0, len(lines)).astype("float32")
    return np.arange(len(lines), dtype="int32"), lines, keep


def _host_pairs(corpus, lines, keep, epochs):
    """The streaming pipeline's rule: subsample every token, then
    `skipgram_pairs` with the reduced window."""
    words, contexts = [], []
    for epoch in range(epochs):
        rng = np.random.default_rng(epoch)
        kept = rng.random(len(corpus)) < keep[corpus]
        ids = tf.RaggedTensor.from_value_rowids(corpus[kept], lines[kept],
                                                nrows=int(lines[-1]) + 1)
        w, c = skipgram_pairs(ids, WINDOW, dynamic_window=True, seed=(epoch, 1))
        words.append(w.numpy())
        contexts.append(c.numpy())
    return np.concatenate(words), np.concatenate(contexts)


def _device_pairs(corpus, lines, keep, steps, batch=4096, negatives=1, **kwargs):
    sampler = SkipGramSampler.from_arrays(
        corpus, lines, keep, kwargs.pop("table", np.zeros(1, "int32")), window=WINDOW,
        batch_size=batch, negatives=negatives, seed=1, **kwargs)
    out = {"word": [], "context": [], "negatives": []}
    for step in range(steps):
        for key, value in sampler(np.array([step], "int32")).items():
            out[key].append(keras.ops.convert_to_numpy(value))
    return {key: np.concatenate(value) for key, value in out.items()}


def _same_distribution(a, b, bins):
    """Two-sample chi-square on histograms over `bins`: the p-value."""
    table = np.array([np.histogram(a, bins)[0], np.histogram(b, bins)[0]])
    table = table[:, table.sum(axis=0) > 0]
    return stats.chi2_contingency(table).pvalue


def test_distances_and_subsampling_match_the_streaming_pipeline():
    corpus, lines, keep = _positions_corpus()
    host_w, host_c = _host_pairs(corpus, lines, keep, epochs=60)
    device = _device_pairs(corpus, lines, keep, steps=25)
    dev_w, dev_c = device["word"], device["context"]
    assert np.all(lines[dev_w] == lines[dev_c])
    # the signed distance in tokens (subsampling stretches it past the window)
    gaps = np.arange(-12.5, 13)
    p = _same_distribution(host_c - host_w, dev_c - dev_w, gaps)
    assert p > 1e-3, p
    # how often each token is a centre (its keep probability, its line's length)
    by_token = np.arange(-0.5, len(corpus) + 0.5, 8)
    assert _same_distribution(host_w, dev_w, by_token) > 1e-3
    assert _same_distribution(host_c, dev_c, by_token) > 1e-3
    # the pairs' count per token follows keep: rare-kept tokens are rarer centres
    rate = np.bincount(dev_w, minlength=len(corpus)) / np.bincount(host_w, minlength=len(corpus))
    low, high = keep < 0.4, keep > 0.8
    ratio = (len(host_w) / len(dev_w))
    assert abs(np.nanmean(rate[low]) * ratio - 1) < 0.1
    assert abs(np.nanmean(rate[high]) * ratio - 1) < 0.1


def test_negatives_follow_unigram_to_the_three_quarters():
    counts = np.array([5000, 2000, 800, 300, 100, 40, 10, 5])
    corpus = np.zeros(50, "int32")
    lines = np.zeros(50, "int32")
    device = _device_pairs(corpus, lines, np.ones(len(counts), "float32"), steps=5,
                           batch=8192, negatives=2, table=negative_table(counts))
    seen = np.bincount(device["negatives"].ravel(), minlength=len(counts))
    expected = counts ** 0.75 / (counts ** 0.75).sum() * seen.sum()
    assert stats.chisquare(seen, expected).pvalue > 1e-3


def test_corpus_ids_and_epoch_size_are_the_pipelines(write_corpus):
    path = write_corpus(["a b c a", "", "b zz a", "c c c c c"])
    vocab = Vocabulary(["c", "a", "b"], [6, 3, 2])
    ids, lines = corpus_ids(path, vocab)
    assert ids.tolist() == [1, 2, 0, 1, 2, 1, 0, 0, 0, 0, 0]
    assert lines.tolist() == [0, 0, 0, 0, 2, 2, 3, 3, 3, 3, 3]
    for dynamic, sample in ((True, 0.0), (False, 0.1), (True, 0.2)):
        data = device_corpus(ids, lines, vocab.counts, 2, dynamic, sample)
        size = epoch_size(path, vocab, window=2, dynamic_window=dynamic, sample=sample)
        assert (round(data.kept_tokens), round(data.pairs)) == (size.tokens, size.pairs)


def test_the_steps_run_without_the_autotuner():  # keras_gauss.tf_data
    steps = step_dataset(0, 3, negatives=1)
    assert steps.options().autotune.enabled is False
    assert [int(x["step"][0]) for x, _ in steps.as_numpy_iterator()] == [0, 1, 2]


@pytest.fixture(scope="module")
def topic_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("device")
    corpus = topic_corpus(root / "corpus.txt")
    return {pairs: (root / pairs, train_corpus(tiny_config(pairs=pairs), corpus, root / pairs,
                                               verbose=0))
            for pairs in ("host", "device")}


def test_device_pairs_train_as_well_as_host_pairs(topic_runs):
    quality = {}
    for pairs, (out, metrics) in topic_runs.items():
        losses = metrics["loss_per_epoch"]
        assert losses[-1] < losses[0]
        run = load_run(out)
        means, _ = run.tables()
        vec = {w: means[i] for w, i in run.index.items()}
        within = np.mean([_cosine(vec[a], vec[b]) for t in TOPICS for a in t for b in t
                          if a < b])
        across = np.mean([_cosine(vec[a], vec[b]) for a in TOPICS[0] for b in TOPICS[1]])
        quality[pairs] = within - across
    assert quality["device"] > 0.3 and abs(quality["device"] - quality["host"]) < 0.15, quality
    device_metrics = topic_runs["device"][1]
    config = json.loads((topic_runs["device"][0] / "metrics.json").read_text())["config"]
    assert config["pairs"] == "device"
    # an epoch: the stream's expected pairs, in whole batches of 256
    epochs = config["epochs"]
    size = topic_runs["host"][1]["pairs"] / epochs
    assert device_metrics["pairs"] == epochs * 256 * round(size / 256)


def test_device_pairs_refuse_what_they_cannot_do_in_one_line(tmp_path):
    from keras_gauss.distribution import DistributionConfig
    from keras_gauss.distribution import DistributionError

    corpus = topic_corpus(tmp_path / "corpus.txt", n=20)
    with pytest.raises(ValueError, match="--engine native draws its pairs itself: --pairs"):
        train_corpus(tiny_config(pairs="device", engine="native"), corpus, tmp_path / "a")
    with pytest.raises(ValueError, match="--pairs must be host or device"):
        train_corpus(tiny_config(pairs="gpu"), corpus, tmp_path / "b")
    with pytest.raises(DistributionError, match="--pairs device trains on one device"):
        train_corpus(tiny_config(pairs="device"), corpus, tmp_path / "c",
                     distribution=DistributionConfig("data", num_processes=1))
    single = tmp_path / "single.txt"
    single.write_text("cat\ndog\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no \\(word, context\\) pairs"):
        train_corpus(tiny_config(pairs="device"), single, tmp_path / "d", verbose=0)
    with pytest.raises(ValueError, match="--pairs device with --window 5000 .*at most"):
        train_corpus(tiny_config(pairs="device", window=5000, batch_size=2**15), corpus,
                     tmp_path / "e", verbose=0)
    assert not any(tmp_path.glob("[abcde]"))


def test_heavy_subsampling_leaves_device_pairs_as_it_leaves_host_pairs(write_corpus, tmp_path):
    # 300 short lines of 30 words: --sample 1e-4 keeps about one token in 17,
    # under one a line on average. The stream still draws pairs (lines
    # keeping two tokens); the device's epoch counted none ("every line has
    # fewer than two in-vocabulary tokens", which was not so).
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(30)]
    path = write_corpus([" ".join(rng.choice(words, 8)) for _ in range(300)])
    vocab = Vocabulary(words, np.bincount([int(w[1:]) for w in path.read_text().split()],
                                          minlength=30))
    ids, lines = corpus_ids(path, vocab)
    data = device_corpus(ids, lines, vocab.counts, 10, True, 1e-4)
    streamed = [sum(len(y) for _, y in make_skipgram_dataset(
        path, vocab, window=10, dynamic_window=True, sample=1e-4, seed=seed)
        .as_numpy_iterator()) for seed in range(4)]
    assert data.steps(2048) == 1 and 0.5 < data.pairs / np.mean(streamed) < 2
    assert round(data.pairs) == epoch_size(path, vocab, window=10, dynamic_window=True,
                                           sample=1e-4).pairs
    # a corpus of one two-token line: too few pairs to draw a batch from
    single = write_corpus(["cat dog"], "one.txt")
    with pytest.raises(ValueError, match="--sample 0.0001 the corpus keeps about .*--sample 0"):
        train_corpus(tiny_config(pairs="device", sample=1e-4, batch_size=2048), single,
                     tmp_path / "one", verbose=0)
