"""Training on a tiny corpus: the run directory, atomic writes, and learning."""

import json

import numpy as np
import pytest

from keras_gauss.io import OutputExistsError
from keras_gauss.runs import load_run
from keras_gauss.pipelines.train import CorpusConfig
from keras_gauss.pipelines.train import train_corpus

TOPICS = (["cat", "dog", "horse", "cow", "sheep", "goat"],
          ["hammer", "saw", "drill", "wrench", "nail", "screw"])
FILLER = ["the", "a", "and", "with"]


def topic_corpus(path, n=300, seed=0):
    """Sentences of 8 words drawn from one topic (plus fillers)."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n):
        words = TOPICS[i % 2] + FILLER
        p = np.array([3.0] * 6 + [1.0] * 4)
        lines.append(" ".join(rng.choice(words, 8, p=p / p.sum())))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def tiny_config(**kwargs):
    base = dict(dim=8, epochs=2, window=3, min_count=1, sample=0.0, batch_size=256,
                learning_rate=0.1, seed=0, engine="keras")
    base.update(kwargs)
    return CorpusConfig(**base)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("train")
    corpus = topic_corpus(root / "corpus.txt")
    metrics = train_corpus(tiny_config(), corpus, root / "run", verbose=0)
    return root / "run", metrics


def _cosine(a, b):
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_run_directory_contents(tiny_run):
    out, metrics = tiny_run
    assert sorted(p.name for p in out.iterdir()) == [
        ".keras-gauss", "history.csv", "history.png", "metrics.json", "model.keras", "run.json",
            "vocab.tsv"]
    info = json.loads((out / "run.json").read_text())
    assert (info["kind"], info["energy"], info["table"], info["vocabulary"]) == (
        "corpus", "el", "words", "vocab.tsv")
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["config"]["dim"] == 8 and saved["pairs"] == metrics["pairs"] > 0
    assert saved["tokens_per_second"] > 0 and saved["train_seconds"] > 0
    word, _, count = (out / "vocab.tsv").read_text().splitlines()[0].partition("\t")
    assert word and int(count) > 0
    run = load_run(out)
    means, variances = run.tables()
    assert means.shape == (len(run.words), 8) == variances.shape
    assert run.counts is not None and len(run.counts) == 16


def test_related_words_become_similar(tiny_run):
    run = load_run(tiny_run[0])
    means, _ = run.tables()
    vec = {w: means[i] for w, i in run.index.items()}
    within = np.mean([_cosine(vec[a], vec[b]) for t in TOPICS for a in t for b in t if a < b])
    across = np.mean([_cosine(vec[a], vec[b]) for a in TOPICS[0] for b in TOPICS[1]])
    assert within > across + 0.3, (within, across)


def test_loss_decreases(tiny_run):
    losses = tiny_run[1]["loss_per_epoch"]
    assert losses[-1] < losses[0]


def test_failed_save_leaves_no_directory(tmp_path, monkeypatch):
    import keras_gauss.job

    corpus = topic_corpus(tmp_path / "corpus.txt", n=40)

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(keras_gauss.job, "write_run_info", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        train_corpus(tiny_config(epochs=1), corpus, tmp_path / "out", verbose=0)
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.txt"]


def test_existing_output_needs_overwrite(tiny_run):
    with pytest.raises(OutputExistsError):
        train_corpus(tiny_config(), "unused", tiny_run[0], verbose=0)


def test_bad_inputs(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no tokens"):
        train_corpus(tiny_config(), empty, tmp_path / "a", verbose=0)
    rare = tmp_path / "rare.txt"
    rare.write_text("one two three\n", encoding="utf-8")
    with pytest.raises(ValueError, match="min_count"):
        train_corpus(tiny_config(min_count=5), rare, tmp_path / "b", verbose=0)
    with pytest.raises(ValueError, match="--window"):
        train_corpus(tiny_config(window=0), rare, tmp_path / "c", verbose=0)
    assert not any((tmp_path / name).exists() for name in "abc")


def test_config_validate():
    CorpusConfig().validate()
    for bad in (dict(energy="dot"), dict(covariance="full"), dict(sample=1.5),
                dict(min_variance=2.0, max_variance=1.0), dict(max_size=0),
                dict(batch_size=0)):
        with pytest.raises(ValueError):
            CorpusConfig(**bad).validate()


@pytest.mark.parametrize("source", ["file", "dataset"])
def test_native_engine_learns_and_writes_the_same_run(tmp_path, source):
    from keras_gauss.fused import native_available

    if not native_available():
        pytest.skip("the native trainer did not build")
    corpus = topic_corpus(tmp_path / "corpus.txt", n=200)
    if source == "dataset":  # a corpus that is not text files: read through tf.data
        import tensorflow as tf

        corpus = tf.data.Dataset.from_tensor_slices(corpus.read_text().splitlines())
    config = tiny_config(engine="native", batch_size=1, learning_rate=0.2, epochs=6,
                         sample=1e-2)
    metrics = train_corpus(config, corpus, tmp_path / "run", verbose=0)
    run = load_run(tmp_path / "run")
    assert run.table.name == "words" and metrics["config"]["engine"] == "native"
    assert metrics["batch_size"] == 1
    assert 0 < metrics["pairs"] < 200 * 6 * 2 * 3 * 8
    assert metrics["loss_per_epoch"][-1] < metrics["loss_per_epoch"][0]
    means, variances = run.tables()
    vec = {w: means[i] for w, i in run.index.items()}
    within = np.mean([_cosine(vec[a], vec[b]) for t in TOPICS for a in t for b in t if a < b])
    across = np.mean([_cosine(vec[a], vec[b]) for a in TOPICS[0] for b in TOPICS[1]])
    assert within > across + 0.3, (within, across)
    assert ((variances >= 0.05) & (variances <= 5.0)).all()
    assert (np.linalg.norm(means, axis=1) <= config.max_norm + 1e-5).all()


def test_native_engine_with_a_prebuilt_vocabulary_trains_its_words(tmp_path):
    from keras_gauss.pipelines import Vocabulary

    corpus = topic_corpus(tmp_path / "corpus.txt", n=40)
    vocab = Vocabulary(["cat", "dog", "the", "zebra"], [9, 8, 7, 1])  # zebra: not in it
    metrics = train_corpus(tiny_config(engine="native", epochs=1), corpus, tmp_path / "run",
                           verbose=0, vocab=vocab)
    assert metrics["vocab_size"] == 4 and metrics["pairs"] > 0
    lines = (tmp_path / "run" / "vocab.tsv").read_text().splitlines()
    assert lines == ["cat\t9", "dog\t8", "the\t7", "zebra\t1"]


def test_native_engine_without_the_trainer_trains_with_keras(tmp_path, monkeypatch):
    from keras_gauss.fused import native

    monkeypatch.setattr(native, "native_available", lambda: False)
    corpus = topic_corpus(tmp_path / "corpus.txt", n=40)
    with pytest.warns(RuntimeWarning, match="--engine keras"):
        metrics = train_corpus(tiny_config(engine="native", epochs=1),
                               corpus, tmp_path / "run", verbose=0)
    assert metrics["config"]["engine"] == "keras" and metrics["batch_size"] == 256


def test_engines_refuse_what_they_cannot_do_in_one_line_before_any_work(tmp_path):
    corpus = topic_corpus(tmp_path / "corpus.txt", n=20)
    cases = [(dict(engine="native"), dict(callbacks=[object()]),
              "--engine native runs no Keras callbacks (it does not call model.fit); use "
              "--engine keras."),
             (dict(engine="keras", variance_learning_rate=0.1), {},
              "--engine keras has one learning rate for means and variances: "
              "--variance-learning-rate needs the native engine; use --engine native."),
             (dict(engine="fused"), {}, "--engine fused is gone: use --engine native"),
             (dict(engine="fused-step"), {}, "--engine fused-step is gone: use --engine keras"),
             (dict(engine="gpu"), {}, "--engine must be native or keras, got 'gpu'."),
             (dict(threads=-1), {}, "--threads must be >= 0"),
             # before: the keras engine ignored --threads without a word
             (dict(engine="keras", threads=2), {},
              "--engine keras trains with model.fit, not threads of its own: --threads 2 is "
              "the native engine's; use --engine native."),
             # before: the native engine ignored --pairs host without a word
             (dict(engine="native", pairs="host"), {},
              "--engine native draws its pairs itself: --pairs host is the keras engine's; "
              "use --engine keras.")]
    for i, (settings, arguments, message) in enumerate(cases):
        with pytest.raises(ValueError) as error:
            train_corpus(tiny_config(**settings), corpus, tmp_path / str(i), verbose=0,
                         **arguments)
        assert str(error.value).startswith(message) and "\n" not in str(error.value)
        assert not (tmp_path / str(i)).exists()


def test_native_engine_refuses_pairs_host_on_the_command_line(tmp_path, capsys):
    # it trained, ignoring --pairs host; the default (not given) still trains
    from cli_errors import cli_error

    corpus = topic_corpus(tmp_path / "corpus.txt", n=20)
    argv = ["train-corpus", "--corpus", corpus, "--out", tmp_path / "run", "--engine", "native"]
    assert cli_error([*argv, "--pairs", "host"], capsys) == (
        "keras-gauss train-corpus: error: --engine native draws its pairs itself: --pairs "
        "host is the keras engine's; use --engine keras.")
    assert not (tmp_path / "run").exists()


def test_initial_accumulator_and_epsilon_are_checked_and_reach_the_keras_optimizer():
    from keras_gauss.pipelines.train import corpus_model

    CorpusConfig(initial_accumulator=0.0).validate()
    CorpusConfig(epsilon=0.0).validate()
    for bad in (-1e-6, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="--initial-accumulator"):
            CorpusConfig(initial_accumulator=bad).validate()
        with pytest.raises(ValueError, match="--epsilon"):
            CorpusConfig(epsilon=bad).validate()
    with pytest.raises(ValueError, match="--epsilon must be >= 0 \\(> 0 with"):
        CorpusConfig(epsilon=0.0, initial_accumulator=0.0).validate()
    model = corpus_model(CorpusConfig(dim=4, initial_accumulator=0.5, epsilon=0.25), 3)
    assert (model.optimizer.initial_accumulator_value, model.optimizer.epsilon) == (0.5, 0.25)


def test_variance_learning_rate_is_checked_and_refused_where_unsupported():
    CorpusConfig(variance_learning_rate=0.01).validate()
    for bad in (dict(variance_learning_rate=0.0), dict(variance_learning_rate=float("nan")),
                dict(variance_learning_rate=0.01, engine="keras")):
        with pytest.raises(ValueError, match="--variance-learning-rate"):
            CorpusConfig(**bad).validate()


def test_the_keras_engine_starts_from_the_same_tables_on_every_backend(tmp_path):
    # Keras's seeded RandomUniform draws other numbers on TensorFlow, JAX and
    # torch: the same seed gave other tables on each (JAX against TensorFlow,
    # 8-d, 3 epochs: means 1.7 apart). The start is NumPy's draw, as the
    # native engine's.
    import types

    from keras_gauss.distribution.distribution_lib import Distribution
    from keras_gauss.pipelines.train import KerasEngine
    from keras_gauss.pipelines.train import start_means

    config = tiny_config(dim=2, seed=3)
    engine = KerasEngine(config, topic_corpus(tmp_path / "corpus.txt", n=10))
    job = types.SimpleNamespace(state={}, distribution=Distribution(), verbose=0)
    engine.read(job)
    engine.build(job, None)
    words, contexts = start_means(config, len(engine.vocab))
    np.testing.assert_array_equal(engine.model.get_layer("words").means.numpy(), words)
    np.testing.assert_array_equal(engine.model.get_layer("contexts").means.numpy(), contexts)
