"""The native engine (TensorFlow-free on text files): same tokens, vocabulary and run files."""

import gzip
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from keras_gauss.fused.native import native_available
from keras_gauss.pipelines import native_corpus
from keras_gauss.pipelines.train import CorpusConfig

from run_files import weights_tree
from test_pipelines_train import topic_corpus
from zipf_ids import zipf_ids

NEWS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "corpus" / \
    "news2017.txt.gz"
needs_native = pytest.mark.skipif(not native_available(),
                                  reason="the native trainer did not build")

TRICKY = [
    "Don't 'quote' state-of-the-art -- ok!", "İstanbul ΣΑΣ Straße ǅemal ﬁ ẞ",
    "a_b __ x\u00a0y\u2028z\x0bw\x1cq\tt\x85u", "--a- -b' 'c ’d’ e--f ‘g’ h’’i",
    "١٢٣ ½ Ⅻ x² e\u0301 cafe\u0301 \u200bzw\u00adsp \ufeffbom", "'", "", "a'-b -'x' y''",
    "A\r", "日本語の文 and 中文", "emoji 🙂 ok 👍🏽 fine",
    "हिन्दी भाषा, หนังสือ ภาษาไทย; اَلْعَرَبِيَّة", "\u0301alone x \u0301",
]


@needs_native
def test_tokens_equal_the_tensorflow_tokenizer():
    import tensorflow as tf

    from keras_gauss.fused.native import NativeTokenizer
    from keras_gauss.pipelines.tokens import tokenize

    want = [[t.decode() for t in line] for line in tokenize(tf.constant(TRICKY)).to_list()]
    assert native_corpus.tokenize_text("\n".join(TRICKY)) == want
    tokenizer = NativeTokenizer()
    tokenizer.add("\n".join(TRICKY[:5]).lower())
    tokenizer.add("\n".join(TRICKY[5:]).lower())
    types, ids, lengths = tokenizer.result()
    assert lengths.tolist() == [len(line) for line in want]
    assert [types[i] for i in ids] == [t for line in want for t in line]
    # A combining mark (a Hindi or Thai vowel sign, an Arabic vowel, an
    # accent written apart) is part of its word; it was a separator, which
    # cut हिन्दी into ह, न and द.
    assert want[-2] == ["हिन्दी", "भाषा", "หนังสือ", "ภาษาไทย", "اَلْعَرَبِيَّة"]
    assert want[4][5] == "cafe\u0301"


@needs_native
@pytest.mark.parametrize("name", ["corpus.txt", "corpus.txt.gz"])
def test_vocabulary_equals_build_vocabulary(tmp_path, name):
    from keras_gauss.pipelines import build_vocabulary

    lines = TRICKY * 3 + ["the cat and the dog", "The Cat's cat"] * 4
    text = "".join(line + "\n" for line in lines).encode()
    path = tmp_path / name
    path.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    want = build_vocabulary(str(path), min_count=2)
    types, counts, ids, splits = native_corpus.read_corpus(native_corpus.corpus_files(path))
    words, kept, remap = native_corpus.vocabulary(types, counts, min_count=2)
    assert tuple(words) == want.words and kept.tolist() == want.counts.tolist()
    assert len(splits) == len(lines) + 1
    ids, splits = native_corpus.in_vocabulary(ids, splits, remap)
    assert len(ids) == want.total and splits[-1] == want.total


@needs_native
def test_lines_read_through_tf_data_equal_the_file_and_digest_as_the_keras_engine(tmp_path):
    """A dataset of lines (what WordNet glosses and tfds: corpora are): the
    tokens of the same text in a file, and the digest of the keras engine
    (`line_digest`), so that every engine names the data alike."""
    import tensorflow as tf

    from keras_gauss.job import Digest
    from keras_gauss.pipelines.train import line_digest

    lines = TRICKY * 3 + ["the cat and the dog", "The Cat's cat"] * 4
    path = tmp_path / "corpus.txt"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    dataset = tf.data.Dataset.from_tensor_slices(lines)
    digest = Digest("corpus")
    got = native_corpus.read_lines(dataset, digest)
    want = native_corpus.read_corpus(native_corpus.corpus_files(path))
    assert got[0] == want[0]
    for a, b in zip(got[1:], want[1:]):
        np.testing.assert_array_equal(a, b)
    assert digest.hexdigest() == line_digest(dataset)
    # A line's own line end is a space: one line stays one sentence.
    types, _, ids, splits = native_corpus.read_lines(
        tf.data.Dataset.from_tensor_slices(["a b\nc", "d"]))
    assert splits.tolist() == [0, 3, 4] and [types[i] for i in ids] == ["a", "b", "c", "d"]


@pytest.mark.skipif(not NEWS.exists(), reason="news2017 is not in /work/shared/data")
@needs_native
def test_news2017_vocabulary_equals_build_vocabulary():
    from keras_gauss.pipelines import build_vocabulary

    want = build_vocabulary(str(NEWS), min_count=5)
    types, counts, _, _ = native_corpus.read_corpus([NEWS])
    words, kept, _ = native_corpus.vocabulary(types, counts, min_count=5)
    assert tuple(words) == want.words and kept.tolist() == want.counts.tolist()


def test_shuffled_lines_keep_every_line():
    ids = np.arange(10, dtype=np.int32)
    splits = np.array([0, 3, 3, 7, 10])
    out, out_splits = native_corpus.shuffled_lines(ids, splits, np.random.default_rng(1))
    lines = sorted(tuple(out[a:b]) for a, b in zip(out_splits[:-1], out_splits[1:]))
    assert lines == sorted(tuple(ids[a:b]) for a, b in zip(splits[:-1], splits[1:]))


SCRIPT = """
import json, sys
from keras_gauss.pipelines.train import CorpusConfig, train_corpus
config = CorpusConfig(**json.loads(sys.argv[3]))
metrics = train_corpus(config, sys.argv[1], sys.argv[2], verbose=0, checkpoint_every=0)
print(json.dumps({"tf": "tensorflow" in sys.modules, "keras": "keras" in sys.modules,
                  "pairs": metrics["pairs"]}))
"""


@needs_native
@pytest.mark.parametrize("energy,covariance", [("el", "diagonal"), ("kl", "spherical")])
def test_run_is_written_without_tensorflow_and_loads(tmp_path, energy, covariance):
    from keras_gauss.runs import load_run

    corpus = topic_corpus(tmp_path / "corpus.txt", n=200)
    settings = dict(dim=8, epochs=3, window=3, min_count=1, sample=0.0, batch_size=64,
                    learning_rate=0.2, energy=energy, covariance=covariance, threads=1)
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(corpus), str(tmp_path / "run"),
                             json.dumps(settings)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["tf"] is False and report["keras"] is False and report["pairs"] > 0
    run = load_run(tmp_path / "run")
    means, variances = run.tables()
    assert means.shape == (len(run.words), 8)
    assert tuple(run.table.variances.shape) == (len(run.words),
                                                1 if covariance == "spherical" else 8)
    assert np.isfinite(means).all() and (variances > 0).all()
    optimizer = run.model.optimizer
    assert int(optimizer.iterations.numpy()) > 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["config"]["energy"] == energy and metrics["pairs"] == report["pairs"]
    assert metrics["loss_per_epoch"][-1] < metrics["loss_per_epoch"][0]


@pytest.mark.parametrize("energy", ["el", "kl"])
@pytest.mark.parametrize("covariance", ["diagonal", "spherical"])
@pytest.mark.parametrize("negatives,max_norm", [(1, 4.0), (3, None)])
def test_model_file_equals_what_keras_writes(tmp_path, energy, covariance, negatives,
                                             max_norm):
    import keras

    from keras_gauss.losses import MaxMarginRanking
    from keras_gauss.optimizers import SparseAdagrad
    from keras_gauss.pipelines.model import build_corpus_model
    from keras_gauss.pipelines.model_file import corpus_model_config
    from keras_gauss.pipelines.model_file import write_corpus_model

    rows, dim = 7, 5
    settings = (rows, dim, negatives, energy, covariance, max_norm, 0.05, 5.0, 3, 1.5, 0.3,
                0.5)
    keras.backend.clear_session()  # the layer names of a fresh process
    model = build_corpus_model(
        rows, dim, negatives=negatives, energy=energy, covariance=covariance,
        max_norm=max_norm, min_variance=0.05, max_variance=5.0,
        mean_initializer=keras.initializers.RandomUniform(-0.05, 0.05, seed=3),
        variance_initializer=keras.initializers.Constant(1.5))
    model.compile(optimizer=SparseAdagrad(0.3, initial_accumulator_value=0.25),
                  loss=MaxMarginRanking(0.5))
    model.optimizer.build(model.trainable_variables)
    want = json.loads(json.dumps(keras.saving.serialize_keras_object(model)))
    assert corpus_model_config(*settings, initial_accumulator=0.25) == want

    rng = np.random.default_rng(0)
    dv = 1 if covariance == "spherical" else dim
    shapes = [(rows, dim), (rows, dv)] * 2
    tables = [rng.random(s).astype("float32") + 0.1 for s in shapes]
    accumulators = [rng.random(s).astype("float32") for s in shapes]
    path = tmp_path / "model.keras"
    write_corpus_model(path, tables, accumulators,
                       corpus_model_config(*settings, initial_accumulator=0.25), iterations=17)
    assert sorted(zipfile.ZipFile(path).namelist()) == [
        "config.json", "metadata.json", "model.weights.h5"]
    loaded = keras.saving.load_model(path)
    got = [loaded.get_layer("words").means, loaded.get_layer("words").variances,
           loaded.get_layer("contexts").means, loaded.get_layer("contexts").variances]
    for a, b in zip(got, tables):
        np.testing.assert_array_equal(a.numpy(), b)
    optimizer = loaded.optimizer
    assert int(optimizer.iterations.numpy()) == 17
    for variable, accumulator in zip(loaded.trainable_variables, accumulators):
        slot = optimizer._accumulators[optimizer._get_variable_index(variable)]
        np.testing.assert_array_equal(slot.numpy(), accumulator)
    # Keras's own file of the same model holds the same weight paths.
    for variable, value in zip(model.trainable_variables, tables):
        variable.assign(value)
    model.save(tmp_path / "keras.keras")
    assert weights_tree(path) == weights_tree(tmp_path / "keras.keras")


@needs_native
def test_bad_corpora_name_the_problem(tmp_path):
    from keras_gauss.pipelines.train import train_corpus

    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(ValueError, match="contains no tokens"):
        train_corpus(CorpusConfig(), empty, tmp_path / "a", verbose=0, checkpoint_every=0)
    rare = tmp_path / "rare.txt"
    rare.write_text("one two\n")
    with pytest.raises(ValueError, match="empty after min_count=5"):
        train_corpus(CorpusConfig(), rare, tmp_path / "b", verbose=0, checkpoint_every=0)
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"ab\0cd\n")
    with pytest.raises(ValueError, match="binary.txt: line 1 is binary"):
        train_corpus(CorpusConfig(), binary, tmp_path / "c", verbose=0, checkpoint_every=0)
    truncated = tmp_path / "truncated.txt.gz"
    truncated.write_bytes(gzip.compress(b"the cat\n" * 5000)[:-40])
    with pytest.raises(ValueError, match="truncated"):
        train_corpus(CorpusConfig(min_count=1), truncated, tmp_path / "d", verbose=0,
                     checkpoint_every=0)
    assert not any((tmp_path / name).exists() for name in "abcd")


@needs_native
def test_variance_learning_rate_reaches_the_trainer(tmp_path):
    from keras_gauss.pipelines.train import train_corpus
    from keras_gauss.runs import load_run

    corpus = topic_corpus(tmp_path / "corpus.txt", n=200)
    base = dict(dim=8, epochs=3, window=3, min_count=1, sample=0.0, batch_size=64,
                learning_rate=0.2, threads=1, max_variance=50.0)
    moved = {}
    for name, var_lr in (("default", None), ("slow", 1e-4)):
        config = CorpusConfig(**base, variance_learning_rate=var_lr)
        metrics = train_corpus(config, corpus, tmp_path / name, verbose=0, checkpoint_every=0)
        assert metrics["config"]["variance_learning_rate"] == var_lr
        means, variances = load_run(tmp_path / name).tables()
        moved[name] = (np.abs(variances - 1.0).max(), np.abs(means).max())
    assert moved["default"][0] > 0.1 and moved["slow"][0] < 0.01, moved
    assert moved["slow"][1] > 0.1  # the means still learn


@needs_native
def test_initial_accumulator_and_epsilon_reach_the_trainer_and_the_model_file(tmp_path):
    from keras_gauss.pipelines.train import train_corpus
    from keras_gauss.runs import load_run

    corpus = topic_corpus(tmp_path / "corpus.txt", n=200)
    base = dict(dim=8, epochs=2, window=3, min_count=1, sample=0.0, batch_size=64,
                learning_rate=0.2, threads=1)
    moved = {}
    for name, acc, eps in (("default", 1e-6, 1e-7), ("acc", 1e4, 1e-7), ("eps", 0.0, 1e4)):
        config = CorpusConfig(**base, initial_accumulator=acc, epsilon=eps)
        metrics = train_corpus(config, corpus, tmp_path / name, verbose=0, checkpoint_every=0)
        assert (metrics["config"]["initial_accumulator"], metrics["config"]["epsilon"]) == (
            acc, eps)
        with zipfile.ZipFile(tmp_path / name / "model.keras") as f:
            optimizer = json.loads(f.read("config.json"))["compile_config"]["optimizer"]
        assert (optimizer["config"]["initial_accumulator_value"],
                optimizer["config"]["epsilon"]) == (acc, eps)
        means, _ = load_run(tmp_path / name).tables()
        moved[name] = np.abs(means).max()
    # Steps of lr * g / sqrt(1e4): the means stay near their start (|w| <= .05).
    assert moved["default"] > 0.2 and moved["acc"] < 0.06 and moved["eps"] < 0.06, moved


@needs_native
def test_the_trainers_draws_follow_the_pipelines_rules():
    """The triples the native trainer trains on, with the tables the engine
    draws from: each occurrence kept with word2vec's probability
    `(sqrt(f / s) + 1) s / f` (f a word's share of the tokens), negatives in
    proportion to count ** 0.75 whatever the pair."""
    from keras_gauss.fused import skipgram_triples

    rng = np.random.default_rng(0)
    vocab, n, sample = 50, 60_000, 5e-3
    tokens = zipf_ids(rng, vocab, n)
    counts = np.bincount(tokens, minlength=vocab)
    probs, alias, keep = native_corpus.sampling_tables(counts, sample)
    share = counts / n
    expected_keep = np.minimum((np.sqrt(share / sample) + 1) * sample / share, 1.0)
    assert expected_keep.min() < 0.2  # the frequent words are subsampled (0.17)
    # Window 1, no reduction: a kept token but the first and the last is
    # the centre of 2 pairs.
    word, context, negatives = skipgram_triples(vocab, tokens, [0, n], 7, probs, alias,
                                                keep=keep, window=1, dynamic_window=False,
                                                negatives=3)
    kept = np.bincount(word, minlength=vocab) / 2
    frequent = counts > 500
    np.testing.assert_allclose(kept[frequent] / counts[frequent], expected_keep[frequent],
                               rtol=0.1)
    unigram = counts ** 0.75 / (counts ** 0.75).sum()
    for rows in (slice(None), word == 0):  # every pair; the pairs of the most frequent word
        freq = np.bincount(negatives[rows].ravel(), minlength=vocab) / negatives[rows].size
        np.testing.assert_allclose(freq, unigram, atol=0.01)
    # Without subsampling every token is kept.
    probs, alias, keep = native_corpus.sampling_tables(counts, 0.0)
    assert keep is None
    word, _, _ = skipgram_triples(vocab, tokens, [0, n], 7, probs, alias, window=1,
                                  dynamic_window=False)
    assert len(word) == 2 * n - 2


@needs_native
def test_a_thread_count_beyond_the_cap_is_capped_after_one_warning_line(two_topic_corpus,
                                                                         tmp_path, capsys,
                                                                         monkeypatch):
    import warnings

    from keras_gauss.cli import main

    cap = native_corpus._threads(CorpusConfig(threads=0)) * native_corpus.THREADS_PER_CORE
    cap = max(cap, 64)

    def shown(message, category, filename, lineno, file=None, line=None):  # Python's way
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    monkeypatch.setattr(warnings, "showwarning", shown)  # not pytest's record
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        assert main(["train-corpus", "--corpus", str(two_topic_corpus(60, 6)), "--out",
                     str(tmp_path / "run"), "--dim", "2", "--epochs", "1", "--min-count", "1",
                     "--threads", "100000", "--checkpoint-every", "0", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err == (f"keras-gauss: warning: --threads 100000: capped at {cap} "
                   f"({native_corpus.THREADS_PER_CORE} a core of the "
                   f"{native_corpus._threads(CorpusConfig(threads=0))} this process may use, "
                   "at least 64).\n"), err
    assert native_corpus._threads(CorpusConfig(threads=cap)) == cap  # no warning below it


def test_a_line_longer_than_a_chunk_is_cut_into_chunks(monkeypatch):
    # A corpus of one long line (text8) was one chunk an epoch: no progress,
    # Ctrl-C or checkpoint before the epoch's end. Lines stay whole
    # otherwise, and the chunks hold every token once, in order.
    monkeypatch.setenv(native_corpus.CHUNK_TOKENS_VARIABLE, "4")
    ids = np.arange(15, dtype=np.int32)
    splits = np.array([0, 2, 12, 13, 15], np.int64)  # lines of 2, 10, 1 and 2 tokens
    chunks = list(native_corpus._chunks(ids, splits, 4))
    assert [(c.tolist(), s.tolist()) for c, s in chunks] == [
        ([0, 1], [0, 2]),  # the long line starts a chunk of its own
        ([2, 3, 4, 5], [0, 4]), ([6, 7, 8, 9], [0, 4]), ([10, 11], [0, 2]),
        ([12, 13, 14], [0, 1, 3])]
    one_line = list(native_corpus.epoch_chunks(ids, np.array([0, 15]), seed=0, epoch=0))
    assert [len(c) for c, _ in one_line] == [4, 4, 4, 3]
    assert np.concatenate([c for c, _ in one_line]).tolist() == ids.tolist()
