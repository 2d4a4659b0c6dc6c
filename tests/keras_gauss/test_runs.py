"""`keras_gauss.load_run` and the `Run` queries: energy, neighbors, is_a.

Two small run directories in the shared format (a hierarchy run with a
hand-set KL table and a validation threshold in metrics.json, a corpus run
with an EL word/context model) are loaded; the numpy queries are compared
with the TF Serving export of the same runs and with an independent
computation (numerical integration of the KL divergence).
"""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

import keras_gauss as kg
from keras_gauss.cli import main
from keras_gauss.export import export_run
from keras_gauss.run_format import write_run_info
from keras_gauss.runs import UnknownWordError
from cli_errors import cli_exit

NODES = ["animal.n.01", "mammal.n.01", "dog.n.01", "dog.n.03", "cat.n.01",
         "vehicle.n.01", "car.n.01", "a_synset_with_a_long_name.n.01"]
# "st._dog.n.01" would be the lemma "st._dog", not "st"
MEANS = [[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.4, 0.1, 0.0], [-1.5, 1.0, 0.4],
         [-0.6, 0.5, 0.0], [1.8, -0.4, 0.2], [1.75, -0.3, 0.3], [0.1, 0.0, 0.0]]
VARS = [[4.0, 4.0, 3.5], [2.0, 1.5, 2.0], [0.2, 0.3, 0.25], [0.3, 0.3, 0.3],
        [0.3, 0.2, 0.2], [1.5, 1.2, 1.0], [0.1, 0.15, 0.2], [2.0, 1.5, 2.0]]
THRESHOLD = -3.0
WORDS = ["the", "cat", "sat", "on", "mat", "dog"]


@pytest.fixture(scope="module")
def hierarchy_run(tmp_path_factory):
    from keras_gauss.hierarchy.model import build_kl_model

    path = tmp_path_factory.mktemp("runs") / "hierarchy"
    path.mkdir()
    model = build_kl_model(len(NODES), dim=3)
    model.get_layer("nodes").means.assign(np.array(MEANS, "float32"))
    model.get_layer("nodes").variances.assign(np.array(VARS, "float32"))
    model.save(path / "model.keras")
    (path / "nodes.tsv").write_text("\n".join(NODES) + "\n")
    (path / "metrics.json").write_text(json.dumps({"threshold": THRESHOLD}))
    write_run_info(path, kind="wordnet", energy="kl", table="nodes", vocabulary="nodes.tsv")
    return path


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory):
    return _corpus_run(tmp_path_factory.mktemp("runs") / "corpus", WORDS)


def _corpus_run(path, words_):
    rng = np.random.default_rng(0)
    n, dim = len(words_), 4
    words = kg.GaussianEmbedding(n, dim, covariance="spherical", name="words")
    contexts = kg.GaussianEmbedding(n, dim, name="contexts")
    word = keras.Input((), dtype="int32", name="word")
    context = keras.Input((1,), dtype="int32", name="context")
    mean_w, var_w = words(word)
    mean_c, var_c = contexts(context)
    energy = kg.ELEnergy(include_constant=False)(
        ops.expand_dims(mean_w, 1), ops.expand_dims(var_w, 1), mean_c, var_c)
    model = keras.Model({"word": word, "context": context}, energy)
    words.means.assign(rng.uniform(-0.6, 0.6, (n, dim)).astype("float32"))
    words.variances.assign(rng.uniform(0.2, 2.0, (n, 1)).astype("float32"))
    path.mkdir()
    model.save(path / "model.keras")
    (path / "vocab.tsv").write_text("".join(f"{w}\t{9 - i}\n" for i, w in enumerate(words_)))
    write_run_info(path, kind="corpus", energy="el", table="words", vocabulary="vocab.tsv")
    return path


@pytest.fixture(scope="module")
def served(hierarchy_run, corpus_run, tmp_path_factory):
    root = tmp_path_factory.mktemp("serve")
    return {kind: tf.saved_model.load(str(export_run(run, root / kind, k=4)))
            for kind, run in (("hierarchy", hierarchy_run), ("corpus", corpus_run))}


def test_lazy_export_and_tables(hierarchy_run):
    run = kg.load_run(hierarchy_run)
    assert isinstance(run, kg.Run) and "load_run" in kg.__all__
    assert run.words == NODES and run.kind == "wordnet" and run.energy_name == "kl"
    np.testing.assert_allclose(run.means, MEANS, rtol=1e-6)
    np.testing.assert_allclose(run.variances, VARS, rtol=1e-6)
    assert run.means.dtype == np.float32 and run.threshold == THRESHOLD


@pytest.mark.parametrize("kind", ["hierarchy", "corpus"])
def test_energy_matches_the_serving_signature(kind, hierarchy_run, corpus_run, served):
    run = kg.load_run(hierarchy_run if kind == "hierarchy" else corpus_run)
    rng = np.random.default_rng(1)
    query = [run.words[i] for i in rng.integers(0, len(run.words), 20)]
    cand = [run.words[i] for i in rng.integers(0, len(run.words), 20)]
    out = served[kind].signatures["serving_default"](query=tf.constant(query),
                                                     candidate=tf.constant(cand))
    np.testing.assert_allclose(run.energy(query, cand), out["energy"].numpy(),
                               rtol=1e-5, atol=1e-5)
    # one word against many broadcasts; two words give a float
    np.testing.assert_allclose(run.energy(query[0], cand), run.energy([query[0]] * 20, cand))
    assert isinstance(run.energy(query[0], cand[0]), float)
    # the serving neighbors: same entries, same order, same energies
    if kind == "hierarchy":
        for word in run.words:
            mine = run.neighbors(word, by="energy", k=4)
            theirs = served[kind].signatures["neighbors"](query=tf.constant([word]))
            assert [w for w, _ in mine] == [w.decode() for w in
                                            theirs["candidates"].numpy()[0]]
            np.testing.assert_allclose([e for _, e in mine], theirs["energies"].numpy()[0],
                                       rtol=1e-5, atol=1e-5)


def test_kl_direction_against_numerical_integration(hierarchy_run):
    """energy(a, b) = -KL(N_a || N_b) = -integral of p_a log(p_a / p_b)."""
    run = kg.load_run(hierarchy_run)
    a, b = run.ids(["dog.n.01", "mammal.n.01"])
    kl = 0.0
    for d in range(3):  # a diagonal KL is a sum of 1-d ones
        x = np.linspace(-12, 12, 200001)
        ma, va = run.means[a, d], run.variances[a, d]
        mb, vb = run.means[b, d], run.variances[b, d]
        log_pa = -0.5 * ((x - ma) ** 2 / va + np.log(2 * np.pi * va))
        log_pb = -0.5 * ((x - mb) ** 2 / vb + np.log(2 * np.pi * vb))
        kl += np.trapezoid(np.exp(log_pa) * (log_pa - log_pb), x)
    assert run.energy("dog.n.01", "mammal.n.01") == pytest.approx(-kl, rel=1e-6)
    assert run.energy("dog.n.01", "mammal.n.01") > run.energy("mammal.n.01", "dog.n.01")


def test_is_a_uses_the_validation_threshold(hierarchy_run, tmp_path):
    run = kg.load_run(hierarchy_run)
    pairs = [("dog.n.01", "mammal.n.01"), ("dog.n.01", "animal.n.01"),
             ("mammal.n.01", "dog.n.01"), ("car.n.01", "mammal.n.01")]
    expected = [run.energy(a, b) >= THRESHOLD for a, b in pairs]
    assert expected == [True, True, False, False]  # the fixture is meaningful
    assert run.is_a(*zip(*pairs)).tolist() == expected
    assert run.is_a("dog.n.01", "mammal.n.01") is True
    assert run.is_a("dog.n.01", "mammal.n.01", threshold=0.0) is False
    run.metrics = {}
    with pytest.raises(ValueError, match="no validation threshold"):
        run.is_a("dog.n.01", "mammal.n.01")


def test_neighbors_orders(hierarchy_run, corpus_run):
    run = kg.load_run(hierarchy_run)
    # default on a hierarchy run: the run's energy, what dog most plausibly is-a
    by_energy = run.neighbors("dog.n.01", k=3)
    assert by_energy == run.neighbors("dog.n.01", by="energy", k=3)
    assert [w for w, _ in by_energy][:2] == ["mammal.n.01", "a_synset_with_a_long_name.n.01"]
    scores = [s for _, s in by_energy]
    assert scores == sorted(scores, reverse=True)
    by_variance = run.neighbors("dog.n.01", by="variance", k=3)
    similar = run.neighbors("dog.n.01", by="similarity", k=3)
    assert {w for w, _ in by_variance} == {w for w, _ in similar}
    assert [d for _, d in by_variance] == sorted((d for _, d in by_variance), reverse=True)
    assert len(run.neighbors("dog.n.01", k=100)) == len(NODES) - 1
    corpus = kg.load_run(corpus_run)
    assert corpus.neighbors("cat", k=2) == corpus.neighbors("cat", by="similarity", k=2)
    with pytest.raises(ValueError, match="by must be"):
        run.neighbors("dog.n.01", by="kl")
    with pytest.raises(ValueError, match="k must be"):
        run.neighbors("dog.n.01", k=0)


def test_unknown_words_and_lemma_suggestions(hierarchy_run):
    run = kg.load_run(hierarchy_run)
    with pytest.raises(UnknownWordError) as info:
        run.neighbors("dog")
    assert info.value.suggestions == ["dog.n.01", "dog.n.03"]
    assert "dog.n.01" in str(info.value)
    assert run.suggest("a synset with a long name") == ["a_synset_with_a_long_name.n.01"]
    assert run.suggest("a") == [] and run.suggest("unicorn") == []
    with pytest.raises(KeyError, match="unicorn"):
        run.energy("unicorn.n.01", "animal.n.01")


def test_words_given_as_utf8_bytes_are_words(hierarchy_run):
    # energy(b"dog.n.01", ...) looked up the byte values ("not in the
    # vocabulary: 100, 111, 103, ..."), neighbors(b"...") failed in suggest
    # ("TypeError: a bytes-like object is required, not 'str'")
    run = kg.load_run(hierarchy_run)
    assert run.energy(b"dog.n.01", b"mammal.n.01") == run.energy("dog.n.01", "mammal.n.01")
    assert run.is_a([b"dog.n.01"], "mammal.n.01").tolist() == [True]
    assert run.neighbors(b"dog.n.01", k=2) == run.neighbors("dog.n.01", k=2)
    with pytest.raises(UnknownWordError, match=r"vocabulary of .*: b'\\xff'$"):
        run.neighbors(b"\xff")


def test_cli_neighbors_on_a_hierarchy_run(hierarchy_run, capsys):
    run = kg.load_run(hierarchy_run)
    assert main(["neighbors", str(hierarchy_run), "dog.n.01", "--k", "7"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].split() == ["neighbour", "energy", "log", "det"]
    # ranked by the run's energy (KL), as the serving signature does
    expected = run.neighbors("dog.n.01", k=7)
    assert [line.split()[0] for line in lines[1:]] == [w for w, _ in expected]
    # the columns line up whatever the name lengths; no "-0.00"
    assert len({len(line) for line in lines}) == 1
    assert "-0.00" not in "\n".join(lines) and "-0.000" not in "\n".join(lines)
    code, err = cli_exit(["neighbors", str(hierarchy_run), "dog"], capsys)
    assert code == 2 and "dog.n.01, dog.n.03" in err and err.count("\n") == 1
    code, err = cli_exit(["neighbors", str(hierarchy_run), "unicorn"], capsys)
    assert code == 2 and "unicorn" in err


def test_neighbors_of_the_only_word_of_a_run_is_one_line(tmp_path, capsys):
    # A corpus of one distinct word (--min-count 1 --sample 0) makes a
    # one-word run: it has no neighbours to list, said in one line.
    run = _corpus_run(tmp_path / "one", ["word"])
    for by in ("similarity", "variance", "energy"):
        code, err = cli_exit(["neighbors", run, "word", "--by", by], capsys)
        assert code == 2 and "'word' has no neighbours" in err and "only entry" in err


def test_format_neighbors_never_prints_negative_zero():
    from keras_gauss.pipelines.cli import format_neighbors

    table = format_neighbors([("x" * 30, -0.0004, -0.001), ("y", -1.0, 2.0)],
                             ("neighbour", "energy", "log det"))
    lines = table.splitlines()
    assert "-0.0" not in table and lines[1].split()[1:] == ["0.000", "0.00"]
    assert len({len(line) for line in lines}) == 1


def test_format_neighbors_lines_up_combining_marks_and_wide_characters():
    # Hindi vowel signs and a separate accent take no column, a CJK character
    # two: the numbers stood out of line by the difference.
    from keras_gauss.pipelines.evaluate import display_width
    from keras_gauss.pipelines.cli import format_neighbors

    names = ["हिन्दी", "cafe\u0301", "犬", "dog"]
    table = format_neighbors([(name, 1.0, 2.0) for name in names], ("neighbour", "e", "d"))
    lines = table.splitlines()
    assert [line.split("  ")[0] for line in lines[1:]] == names
    assert len({display_width(line[:line.index("1.000")]) for line in lines[1:]}) == 1
    assert len({display_width(line) for line in lines}) == 1
    assert [display_width(n) for n in names] == [5, 4, 2, 3]  # हिन्दी: its virama takes none


GENERALITY = 0.5


@pytest.fixture(scope="module")
def generality_run(hierarchy_run, tmp_path_factory):
    """The hierarchy run's files, with `"generality": 0.5` in run.json."""
    import shutil

    path = tmp_path_factory.mktemp("runs") / "generality"
    shutil.copytree(hierarchy_run, path)
    write_run_info(path, kind="hierarchy", energy="kl", table="nodes", vocabulary="nodes.tsv",
                   generality=GENERALITY)
    return path


def _numpy_energy(a, b, beta):
    """-KL(N_a || N_b) + beta (log det Sigma_b - log det Sigma_a), from the fixture's lists."""
    ma, va, mb, vb = (np.array(x, np.float64) for x in (MEANS[a], VARS[a], MEANS[b], VARS[b]))
    log_det_a, log_det_b = np.log(np.prod(va)), np.log(np.prod(vb))
    kl = 0.5 * (np.sum(va / vb) + np.sum((mb - ma) ** 2 / vb) - len(ma) + log_det_b - log_det_a)
    return -kl + beta * (log_det_b - log_det_a)


def test_generality_energy_is_used_by_energy_is_a_neighbors_and_serving(
        hierarchy_run, generality_run, tmp_path, capsys):
    run, old = kg.load_run(generality_run), kg.load_run(hierarchy_run)
    assert (run.generality, old.generality) == (GENERALITY, 0.0)  # no entry: beta 0
    pairs = [(a, b) for a in range(len(NODES)) for b in range(len(NODES))]
    left, right = [NODES[a] for a, _ in pairs], [NODES[b] for _, b in pairs]
    expected = [_numpy_energy(a, b, GENERALITY) for a, b in pairs]
    np.testing.assert_allclose(run.energy(left, right), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(old.energy(left, right), [_numpy_energy(a, b, 0.0) for a, b in pairs],
                               rtol=1e-5, atol=1e-5)
    assert run.energy("dog.n.01", "animal.n.01") > old.energy("dog.n.01", "animal.n.01")
    assert run.energy("animal.n.01", "dog.n.01") < old.energy("animal.n.01", "dog.n.01")
    np.testing.assert_array_equal(run.is_a(left, right), np.array(expected) >= THRESHOLD)
    # `keras-gauss evaluate`'s "kl" measure scores with the run's energy too
    from keras_gauss.pipelines.evaluate import Embeddings, pair_scores

    emb = Embeddings.from_run(run)
    assert emb.generality == GENERALITY and Embeddings.from_run(old).generality == 0.0
    np.testing.assert_allclose(pair_scores(emb, *np.array(pairs).T, "kl"), expected,
                               rtol=1e-5, atol=1e-5)
    for word in NODES:
        i = NODES.index(word)
        scores = [(NODES[j], _numpy_energy(i, j, GENERALITY)) for j in range(len(NODES)) if j != i]
        top = sorted(scores, key=lambda item: -item[1])[:4]
        assert [w for w, _ in run.neighbors(word, k=4)] == [w for w, _ in top]
    assert main(["neighbors", str(generality_run), "dog.n.01", "--k", "7"]) == 0
    printed = [line.split()[0] for line in capsys.readouterr().out.strip().splitlines()[1:]]
    assert printed == [w for w, _ in run.neighbors("dog.n.01", k=7)]
    served = tf.saved_model.load(str(export_run(generality_run, tmp_path / "serve", k=4)))
    out = served.signatures["serving_default"](query=tf.constant(left), candidate=tf.constant(right))
    np.testing.assert_allclose(out["energy"].numpy(), run.energy(left, right), rtol=1e-5, atol=1e-5)
    for word in NODES:
        theirs = served.signatures["neighbors"](query=tf.constant([word]))
        assert [w.decode() for w in theirs["candidates"].numpy()[0]] == [
            w for w, _ in run.neighbors(word, k=4)]
    info = json.loads((tmp_path / "serve" / "1" / "assets.extra" / "keras_gauss_export.json").read_text())
    assert info["generality"] == GENERALITY and "log det" in info["kl_direction"]


def test_load_run_names_run_json_with_a_bad_generality(generality_run, tmp_path):
    # (the values refused: tests/keras_gauss/test_run_format.py)
    import shutil

    from keras_gauss.run_format import DamagedRunError

    path = tmp_path / "damaged"
    shutil.copytree(generality_run, path)
    info = json.loads((path / "run.json").read_text())
    (path / "run.json").write_text(json.dumps({**info, "generality": -1.0}))
    with pytest.raises(DamagedRunError, match=f"{path / 'run.json'}: 'generality' must be"):
        kg.load_run(path)


def test_containment_neighbors_nearest_holding_box_first(tmp_path):
    """With containment, every box holding the query scores about 0: the
    holders come first, smallest first (the nearest hypernyms), the others by
    energy, and the serving `neighbors` gives the same list."""
    from keras_gauss.hierarchy.model import build_kl_model

    path = tmp_path / "containment"
    path.mkdir()
    model = build_kl_model(len(NODES), dim=3, energy="containment")
    model.get_layer("nodes").means.assign(np.array(MEANS, "float32"))
    model.get_layer("nodes").variances.assign(np.array(VARS, "float32"))
    model.save(path / "model.keras")
    (path / "nodes.tsv").write_text("\n".join(NODES) + "\n")
    (path / "metrics.json").write_text(json.dumps({"threshold": -0.05}))
    write_run_info(path, kind="wordnet", energy="containment", table="nodes",
                   vocabulary="nodes.tsv")
    run = kg.load_run(path)
    near = run.neighbors("dog.n.01", k=4)
    holders = [w for w, e in near if e >= -0.05]
    assert holders[:3] == ["mammal.n.01", "a_synset_with_a_long_name.n.01", "animal.n.01"]
    log_det = run.log_det()
    assert [log_det[run.words.index(w)] for w in holders] == sorted(
        log_det[run.words.index(w)] for w in holders)
    served = tf.saved_model.load(str(export_run(path, tmp_path / "serve", k=4)))
    for word in run.words:
        mine = run.neighbors(word, k=4)
        theirs = served.signatures["neighbors"](query=tf.constant([word]))
        assert [w for w, _ in mine] == [w.decode() for w in theirs["candidates"].numpy()[0]]
        np.testing.assert_allclose([e for _, e in mine], theirs["energies"].numpy()[0],
                                   rtol=1e-5, atol=1e-5)


def test_a_folder_without_a_run_is_refused_before_keras_is_asked(tmp_path, monkeypatch):
    """`keras-gauss neighbors TYPO word` said "holds no trained run" after
    Keras had started (6 s of a 0.4 s error): the run's files are looked for
    first, and Keras's classes are registered only to read a run's model."""
    import keras_gauss

    def keras_asked():
        raise AssertionError("Keras was asked before the run was found")

    monkeypatch.setattr(keras_gauss, "register_serializables", keras_asked)
    with pytest.raises(FileNotFoundError, match="typo: no such run directory"):
        kg.load_run(tmp_path / "typo")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="holds no trained run"):
        kg.load_run(tmp_path / "run")
