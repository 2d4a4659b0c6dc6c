"""word2vec and projector exports, and a real `train-wordnet` run end to end."""

import numpy as np
import pytest

import keras_gauss as kg
from keras_gauss import ops as gauss_ops
from keras_gauss.cli import main
from keras_gauss.export import save_word2vec, write_projector
from keras_gauss.io import OutputExistsError
from keras_gauss.run_format import write_run_info
from keras_gauss.runs import load_run

WORDS = ["the", "café", "naïve", "dog", "ran"]
COUNTS = [40, 3, 2, 9, 5]


@pytest.fixture(scope="module")
def wordnet_run(tmp_path_factory):
    """A real (one epoch) WordNet run of the mammal subtree."""
    from keras_gauss.hierarchy.train import WordNetConfig, train_wordnet

    path = tmp_path_factory.mktemp("wordnet") / "run"
    train_wordnet(WordNetConfig(root="mammal.n.01", dim=10, epochs=1, val_size=0,
                                test_size=0), path)
    return path


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory):
    """A corpus-style run: "words" and "contexts" tables, vocab.tsv with counts."""
    import keras

    path = tmp_path_factory.mktemp("corpus") / "run"
    path.mkdir()
    rng = np.random.default_rng(1)
    words = kg.GaussianEmbedding(len(WORDS), 3, covariance="spherical", name="words")
    contexts = kg.GaussianEmbedding(len(WORDS), 3, name="contexts")
    word = keras.Input((), dtype="int32", name="word")
    context = keras.Input((), dtype="int32", name="context")
    energy = kg.ELEnergy()(*words(word), *contexts(context))
    model = keras.Model({"word": word, "context": context}, energy)
    words.means.assign(rng.uniform(-1, 1, (len(WORDS), 3)).astype("float32"))
    words.variances.assign(rng.uniform(0.1, 3, (len(WORDS), 1)).astype("float32"))
    model.save(path / "model.keras")
    (path / "vocab.tsv").write_text(
        "".join(f"{w}\t{c}\n" for w, c in zip(WORDS, COUNTS)), encoding="utf-8")
    write_run_info(path, kind="corpus", energy="el", table="words", vocabulary="vocab.tsv")
    return path


@pytest.mark.parametrize("run_name", ["wordnet_run", "corpus_run"])
def test_word2vec_text_and_binary_load_in_gensim(run_name, request, tmp_path):
    from gensim.models import KeyedVectors

    run_dir = request.getfixturevalue(run_name)
    run = load_run(run_dir)
    means, _ = run.tables()
    for fmt, binary in (("word2vec", False), ("word2vec-binary", True)):
        out = tmp_path / f"means.{fmt}"
        assert main(["export", str(run_dir), "--format", fmt, "--out", str(out)]) == 0
        assert out.stat().st_mode & 0o077 != 0  # not mkstemp's 0600
        vectors = KeyedVectors.load_word2vec_format(str(out), binary=binary)
        assert vectors.index_to_key == run.words
        if binary:
            np.testing.assert_array_equal(vectors.vectors, means)
        else:
            np.testing.assert_allclose(vectors.vectors, means, rtol=1e-7, atol=1e-9)
        with pytest.raises(SystemExit):  # exists: needs --overwrite
            main(["export", str(run_dir), "--format", fmt, "--out", str(out)])
        assert main(["export", str(run_dir), "--format", fmt, "--out", str(out),
                     "--overwrite"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [  # each with its marker
        ".means.word2vec-binary.keras-gauss", ".means.word2vec.keras-gauss", "means.word2vec",
        "means.word2vec-binary"]


def test_word2vec_refuses_words_it_cannot_hold(tmp_path):
    with pytest.raises(ValueError, match="cannot hold"):
        save_word2vec(["new york", "paris"], np.eye(2), tmp_path / "v.txt")
    with pytest.raises(ValueError, match="2 words for 3 vectors"):
        save_word2vec(["a", "b"], np.eye(3), tmp_path / "v.txt")
    (tmp_path / "v.txt").write_text("keep")
    with pytest.raises(OutputExistsError):
        save_word2vec(["a", "b"], np.eye(2), tmp_path / "v.txt")
    assert (tmp_path / "v.txt").read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.txt"]


def test_words_utf8_cannot_hold_are_named_before_anything_is_written(tmp_path):
    """A lone surrogate (os.fsdecode's, surrogateescape's) or bytes that are not UTF-8."""
    from keras_gauss.export import export_tables

    means, variances = np.eye(3), np.ones((3, 1))
    for words in (["ok", "bad\udcff", "z"], [b"ok", b"bad\xff", b"z"]):
        bad = repr(words[1])
        for write in (lambda: save_word2vec(words, means, tmp_path / "v.txt"),
                      lambda: save_word2vec(words, means, tmp_path / "v.bin", binary=True),
                      lambda: write_projector(tmp_path / "p", words, means, variances),
                      lambda: export_tables(means, variances, words, tmp_path / "s" / "1", "el")):
            with pytest.raises(ValueError, match="UTF-8, which cannot hold") as error:
                write()
            assert bad in str(error.value)
    assert list(tmp_path.iterdir()) == []
    assert save_word2vec(["café", b"na\xc3\xafve"], np.eye(2), tmp_path / "v.txt").is_file()


@pytest.mark.parametrize("run_name", ["wordnet_run", "corpus_run"])
def test_projector_files(run_name, request, tmp_path):
    run_dir = request.getfixturevalue(run_name)
    run = load_run(run_dir)
    means, variances = run.tables()
    out = tmp_path / "projector"
    assert main(["export", str(run_dir), "--format", "projector", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        ".keras-gauss", "metadata.tsv", "projector_config.pbtxt", "vectors.tsv"]
    vectors = np.loadtxt(out / "vectors.tsv", delimiter="\t", ndmin=2)
    np.testing.assert_allclose(vectors, means, rtol=1e-7, atol=1e-9)
    lines = (out / "metadata.tsv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "word\tcount\tlog_det_variance"
    rows = [line.split("\t") for line in lines[1:]]
    assert [r[0] for r in rows] == run.words
    if run.counts is None:
        assert all(r[1] == "" for r in rows)
    else:
        assert [int(r[1]) for r in rows] == list(run.counts)
    log_det = np.asarray(gauss_ops.log_det(variances))
    np.testing.assert_allclose([float(r[2]) for r in rows], log_det, rtol=1e-5, atol=1e-5)
    assert 'tensor_path: "vectors.tsv"' in (out / "projector_config.pbtxt").read_text()
    with pytest.raises(SystemExit):
        main(["export", str(run_dir), "--format", "projector", "--out", str(out)])


def test_projector_refuses_tabs(tmp_path):
    with pytest.raises(ValueError, match="cannot hold"):
        write_projector(tmp_path / "p", ["a\tb", "c"], np.eye(2), np.ones((2, 1)))
    assert list(tmp_path.iterdir()) == []


def test_trained_wordnet_run_serves_its_model_energies(wordnet_run, tmp_path):
    import tensorflow as tf

    assert main(["export", str(wordnet_run), "--out", str(tmp_path / "serve")]) == 0
    served = tf.saved_model.load(str(tmp_path / "serve" / "1"))
    run = load_run(wordnet_run)
    query = ["dog.n.01", "mammal.n.01", "feline.n.01", "cat.n.01"]
    cand = ["canine.n.02", "dog.n.01", "carnivore.n.01", "placental.n.01"]
    out = served.signatures["serving_default"](query=tf.constant(query),
                                              candidate=tf.constant(cand))
    q, c = run.ids(query), run.ids(cand)
    model_energy = run.model({"general": c, "specific": q, "neg_general": c[:, None],
                              "neg_specific": q[:, None]})[:, 0]
    np.testing.assert_allclose(out["energy"].numpy(), np.asarray(model_energy),
                               rtol=1e-5, atol=1e-5)
    neighbors = served.signatures["neighbors"](query=tf.constant(["dog.n.01"]))
    assert neighbors["candidates"].shape == (1, 10)
    assert b"dog.n.01" not in neighbors["candidates"].numpy()[0]
    energies = neighbors["energies"].numpy()[0]
    assert np.all(np.diff(energies) <= 0)


def test_corpus_run_served_against_its_context_table(corpus_run, tmp_path, capsys):
    import tensorflow as tf

    serve = tmp_path / "serve"
    assert main(["export", str(corpus_run), "--out", str(serve),
                 "--candidate-table", "contexts", "--k", "2"]) == 0
    served = tf.saved_model.load(str(serve / "1"))
    run = load_run(corpus_run)
    query, cand = ["the", "café", "dog"], ["naïve", "ran", "the"]
    out = served.signatures["serving_default"](query=tf.constant(query),
                                              candidate=tf.constant(cand))
    q, c = run.ids(query), run.ids(cand)
    expected = run.model({"word": q, "context": c})  # words vs contexts
    np.testing.assert_allclose(out["energy"].numpy(), np.asarray(expected),
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(SystemExit):
        main(["export", str(corpus_run), "--out", str(tmp_path / "x"),
              "--candidate-table", "nope"])
    # before: "error: the model has no GaussianEmbedding layer named 'nope'", no flag named
    assert ("error: --candidate-table nope: the model has no GaussianEmbedding layer named "
            "'nope' (it has: words, contexts).") in capsys.readouterr().err
