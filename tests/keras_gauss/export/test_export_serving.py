"""TF Serving exports: loaded in a fresh process that cannot import keras_gauss.

The module builds two small run directories in the shared run format (a
WordNet-style KL run with one shared "nodes" table, hand-set so that dog and
cat lie inside mammal, and a corpus-style EL run with a spherical "words" and
a diagonal "contexts" table), exports them with `keras-gauss export` and
`export_energy_model`, then calls every signature once in an isolated
subprocess and compares with the Keras models and `keras_gauss.ops`; the same
subprocess runs `saved_model_cli show --all` and `run` on the WordNet export.
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
from keras import ops

import keras_gauss as kg
from keras_gauss import ops as gauss_ops
from keras_gauss.cli import main
from keras_gauss.export import OOV_ENERGY, export_energy_model, export_run
from keras_gauss.io import OutputExistsError
from keras_gauss.run_format import write_run_info

NODES = ["animal.n.01", "mammal.n.01", "dog.n.01", "cat.n.01",
         "vehicle.n.01", "car.n.01"]
NODE_MEANS = [[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.4, 0.1, 0.0],
              [-0.6, 0.5, 0.0], [1.8, -0.4, 0.2], [1.75, -0.3, 0.3]]
NODE_VARS = [[4.0, 4.0, 3.5], [2.0, 1.5, 2.0], [0.2, 0.3, 0.25],
             [0.3, 0.2, 0.2], [1.5, 1.2, 1.0], [0.1, 0.15, 0.2]]
WORDS = ["the", "cat", "sat", "on", "mat", "café", "dog", "ran"]
COUNTS = [50, 9, 7, 30, 4, 2, 8, 3]
K = 3

ISOLATED = r'''
import sys

BLOCKED = ("keras_gauss", "hierarchy", "pipelines")


class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} imported while loading an export")
        return None


sys.meta_path.insert(0, Blocker())
for name in BLOCKED:
    sys.modules[name] = None

import json

import tensorflow as tf

spec = json.load(open(sys.argv[1]))
results = {}
for export, calls in spec["exports"].items():
    loaded = tf.saved_model.load(export)
    out = results[export] = {"signatures": sorted(loaded.signatures)}
    for key, (signature, inputs) in calls.items():
        fn = loaded.signatures[signature]
        outputs = fn(**{k: tf.constant(v, tf.string) for k, v in inputs.items()})
        out[key] = {k: v.numpy().tolist() for k, v in outputs.items()}
        for k, v in outputs.items():
            out[key][k + ":shape"] = v.shape.as_list()
    # the tf.function attributes work too
    out["attribute_energy"] = loaded.energy(
        tf.constant(calls["pairs"][1]["query"]),
        tf.constant(calls["pairs"][1]["candidate"]))["energy"].numpy().tolist()
# TF Serving users' tool on the WordNet export: `saved_model_cli show --all`
# and `run` (a TF1 session), each command line parsed and run as the
# `saved_model_cli` command does (its `main` less absl's `app.run`, which
# runs once a process), the output it prints kept.
try:
    from tensorflow.python.tools import saved_model_cli
except ImportError:
    saved_model_cli = None
if saved_model_cli is not None:
    import contextlib
    import io

    results["saved_model_cli"] = {}
    for name, argv in spec["saved_model_cli"].items():
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            saved_model_cli.create_parser().parse_args(argv).func()
        results["saved_model_cli"][name] = printed.getvalue()
loaded_modules = [m for m, v in sys.modules.items()
                  if m.split(".")[0] in BLOCKED and v is not None]
results["leaked"] = loaded_modules
print("RESULTS" + json.dumps(results, default=lambda b: b.decode("utf-8")))
'''


def _save_wordnet_run(path):
    from keras_gauss.hierarchy.model import build_kl_model

    path.mkdir()
    model = build_kl_model(len(NODES), dim=3)
    table = model.get_layer("nodes")
    table.means.assign(np.array(NODE_MEANS, "float32"))
    table.variances.assign(np.array(NODE_VARS, "float32"))
    model.save(path / "model.keras")
    (path / "nodes.tsv").write_text("\n".join(NODES) + "\n")
    write_run_info(path, kind="wordnet", energy="kl", table="nodes",
                   vocabulary="nodes.tsv")
    return model


def _corpus_model():
    """The README's word/context model with a spherical word table."""
    rng = np.random.default_rng(0)
    n, dim = len(WORDS), 4
    words = kg.GaussianEmbedding(n, dim, covariance="spherical", name="words")
    contexts = kg.GaussianEmbedding(n, dim, name="contexts")
    word = keras.Input((), dtype="int32", name="word")
    context = keras.Input((), dtype="int32", name="context")
    negative = keras.Input((1,), dtype="int32", name="negatives")
    mean_w, var_w = words(word)
    candidates = ops.concatenate([ops.expand_dims(context, -1), negative], -1)
    mean_c, var_c = contexts(candidates)
    energy = kg.ELEnergy()(ops.expand_dims(mean_w, 1), ops.expand_dims(var_w, 1),
                           mean_c, var_c)
    model = keras.Model({"word": word, "context": context, "negatives": negative},
                        energy)
    words.means.assign(rng.uniform(-0.6, 0.6, (n, dim)).astype("float32"))
    words.variances.assign(rng.uniform(0.2, 2.0, (n, 1)).astype("float32"))
    contexts.means.assign(rng.uniform(-0.6, 0.6, (n, dim)).astype("float32"))
    contexts.variances.assign(rng.uniform(0.2, 2.0, (n, dim)).astype("float32"))
    return model


def _save_corpus_run(path, model):
    path.mkdir()
    model.save(path / "model.keras")
    (path / "vocab.tsv").write_text(
        "".join(f"{w}\t{c}\n" for w, c in zip(WORDS, COUNTS)), encoding="utf-8")
    write_run_info(path, kind="corpus", energy="el", table="words",
                   vocabulary="vocab.tsv")


def _tables(layer):
    means = layer.means.numpy()
    return means, np.broadcast_to(layer.variances.numpy(), means.shape)


PAIRS = {
    "wordnet": (["dog.n.01", "mammal.n.01", "car.n.01", "cat.n.01"],
                ["mammal.n.01", "dog.n.01", "vehicle.n.01", "animal.n.01"]),
    "corpus": (["the", "café", "dog", "mat", "cat"],
               ["cat", "sat", "café", "on", "dog"]),
}
OOV_QUERY = {"wordnet": ["dog.n.01", "unicorn.n.01", "dog.n.01", "Dog.n.01"],
             "corpus": ["cat", "unicorn", "cat", "CAT"]}
OOV_CAND = {"wordnet": ["mammal.n.01", "mammal.n.01", "unicorn.n.01", "qq"],
            "corpus": ["dog", "dog", "unicorn", "qq"]}


def _calls(kind):
    query, cand = PAIRS[kind]
    vocab = NODES if kind == "wordnet" else WORDS
    return {
        "pairs": ["serving_default", {"query": query, "candidate": cand}],
        "energy_alias": ["energy", {"query": query, "candidate": cand}],
        "oov": ["serving_default", {"query": OOV_QUERY[kind], "candidate": OOV_CAND[kind]}],
        "broadcast": ["serving_default", {"query": [query[0]], "candidate": vocab}],
        "empty": ["serving_default", {"query": [], "candidate": []}],
        "embed": ["embed", {"word": vocab + ["unicorn"]}],
        "neighbors": ["neighbors", {"query": vocab + ["unicorn", ""]}],
        "neighbors_empty": ["neighbors", {"query": []}],
    }


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Exports both runs (CLI) and the composed corpus model (API), then loads
    and calls them all in one isolated subprocess."""
    root = tmp_path_factory.mktemp("export")
    wordnet_model = _save_wordnet_run(root / "wordnet_run")
    corpus_model = _corpus_model()
    _save_corpus_run(root / "corpus_run", corpus_model)

    assert main(["export", str(root / "wordnet_run"), "--out", str(root / "serve_wordnet"),
                 "--k", str(K)]) == 0
    assert main(["export", str(root / "corpus_run"), "--out", str(root / "serve_corpus"),
                 "--version", "3", "--k", str(K)]) == 0
    export_energy_model(corpus_model, WORDS, root / "composed" / "1", "el",
                        table="words", candidate_table="contexts", k=K)

    exports = {"wordnet": root / "serve_wordnet" / "1",
               "corpus": root / "serve_corpus" / "3",
               "composed": root / "composed" / "1"}
    wordnet = str(exports["wordnet"])
    spec = {"exports": {str(path): _calls("wordnet" if kind == "wordnet" else "corpus")
                        for kind, path in exports.items()},
            "saved_model_cli": {
                "show": ["show", "--all", "--dir", wordnet],
                "run": ["run", "--dir", wordnet, "--tag_set", "serve", "--signature_def",
                        "serving_default", "--input_exprs",
                        'query=["dog.n.01","unicorn.n.01"];'
                        'candidate=["mammal.n.01","dog.n.01"]']}}
    (root / "spec.json").write_text(json.dumps(spec))
    (root / "isolated.py").write_text(ISOLATED)
    outside = tmp_path_factory.mktemp("elsewhere")
    env = {"PATH": os.environ.get("PATH", ""), "TF_CPP_MIN_LOG_LEVEL": "3",
           "HOME": str(outside)}
    done = subprocess.run([sys.executable, "-I", str(root / "isolated.py"),
                           str(root / "spec.json")], cwd=outside, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULTS")][-1]
    results = json.loads(line[len("RESULTS"):])
    return {
        "root": root,
        "exports": exports,
        "results": {kind: results[str(path)] for kind, path in exports.items()},
        "leaked": results["leaked"],
        "wordnet_model": wordnet_model,
        "corpus_model": corpus_model,
        "saved_model_cli": results.get("saved_model_cli"),
    }


def _ids(vocab, strings):
    return np.array([vocab.index(s) for s in strings], "int32")


def test_loads_without_keras_gauss_and_lists_signatures(exported):
    assert exported["leaked"] == []
    for result in exported["results"].values():
        assert result["signatures"] == ["embed", "energy", "neighbors", "serving_default"]
    umask = os.umask(0)
    os.umask(umask)
    for path in exported["exports"].values():
        # readable by a server running as another user (not mkdtemp's 0700)
        assert path.stat().st_mode & 0o777 == 0o777 & ~umask
        assert (path / "saved_model.pb").is_file()
        assert (path / "variables" / "variables.index").is_file()
        assert (path / "assets" / "vocabulary.txt").is_file()
    info = json.loads((exported["exports"]["wordnet"] / "assets.extra"
                       / "keras_gauss_export.json").read_text())
    assert info["energy"] == "kl" and info["k"] == K and info["kind"] == "wordnet"


def test_wordnet_energy_matches_the_keras_model_and_kl_direction(exported):
    result = exported["results"]["wordnet"]
    query, cand = PAIRS["wordnet"]
    q, c = _ids(NODES, query), _ids(NODES, cand)
    # The trained model scores (general=candidate, specific=query).
    model_energy = exported["wordnet_model"](
        {"general": c, "specific": q, "neg_general": c[:, None],
         "neg_specific": q[:, None]})[:, 0]
    means, variances = _tables(exported["wordnet_model"].get_layer("nodes"))
    ops_energy = gauss_ops.kl_energy(means[c], variances[c], means[q], variances[q])
    served = np.array(result["pairs"]["energy"])
    np.testing.assert_allclose(served, np.asarray(model_energy), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(served, np.asarray(ops_energy), rtol=1e-5, atol=1e-5)
    assert result["pairs"]["query_in_vocabulary"] == [True] * 4
    assert result["energy_alias"]["energy"] == result["pairs"]["energy"]
    assert result["attribute_energy"] == result["pairs"]["energy"]
    # -KL(dog || mammal) is high: "dog is-a mammal"; the reverse is low.
    assert served[0] > served[1]


def test_corpus_exports_match_ops_and_the_composed_model(exported):
    query, cand = PAIRS["corpus"]
    q, c = _ids(WORDS, query), _ids(WORDS, cand)
    model = exported["corpus_model"]
    w_means, w_vars = _tables(model.get_layer("words"))
    # CLI export of the run: the run's "words" table on both sides.
    expected = gauss_ops.el_energy(w_means[q], w_vars[q], w_means[c], w_vars[c])
    np.testing.assert_allclose(exported["results"]["corpus"]["pairs"]["energy"],
                               np.asarray(expected), rtol=1e-5, atol=1e-5)
    # API export with candidate_table="contexts": the Keras model's energy.
    model_energy = model({"word": q, "context": c, "negatives": c[:, None]})[:, 0]
    np.testing.assert_allclose(exported["results"]["composed"]["pairs"]["energy"],
                               np.asarray(model_energy), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["wordnet", "corpus", "composed"])
def test_embed_and_neighbors(exported, kind):
    result = exported["results"][kind]
    if kind == "wordnet":
        vocab, energy = NODES, "kl"
        layer = exported["wordnet_model"].get_layer("nodes")
        query_table = cand_table = _tables(layer)
    else:
        vocab, energy = WORDS, "el"
        model = exported["corpus_model"]
        query_table = _tables(model.get_layer("words"))
        cand_table = query_table if kind == "corpus" else _tables(model.get_layer("contexts"))
    means, variances = query_table
    n, dim = means.shape

    embed = result["embed"]
    np.testing.assert_allclose(embed["mean"][:n], means, rtol=1e-6)
    np.testing.assert_allclose(embed["variance"][:n], variances, rtol=1e-6)
    assert embed["mean:shape"] == [n + 1, dim]
    assert embed["in_vocabulary"] == [True] * n + [False]
    assert embed["mean"][n] == [0.0] * dim and embed["variance"][n] == [0.0] * dim

    neighbors = result["neighbors"]
    assert neighbors["candidates:shape"] == [n + 2, K]
    cand_means, cand_vars = cand_table
    for i, word in enumerate(vocab):
        if energy == "kl":
            values = gauss_ops.kl_energy(cand_means, cand_vars, means[i], variances[i])
        else:
            values = gauss_ops.el_energy(means[i], variances[i], cand_means, cand_vars)
        values = np.asarray(values, "float64")
        values[i] = -np.inf  # the query itself is left out
        top = np.argsort(-values, kind="stable")[:K]
        assert neighbors["candidates"][i] == [vocab[j] for j in top], word
        np.testing.assert_allclose(neighbors["energies"][i], values[top], rtol=1e-5, atol=1e-5)
    assert neighbors["in_vocabulary"] == [True] * n + [False, False]
    for row in (n, n + 1):  # "unicorn" and ""
        assert neighbors["candidates"][row] == [""] * K
        assert neighbors["energies"][row] == [OOV_ENERGY] * K
    assert result["neighbors_empty"]["candidates:shape"] == [0, K]
    if kind == "wordnet":
        # with KL the nearest entries are what the query is-a
        assert neighbors["candidates"][NODES.index("dog.n.01")][0] == "mammal.n.01"
        assert neighbors["candidates"][NODES.index("car.n.01")][0] == "vehicle.n.01"


@pytest.mark.parametrize("kind", ["wordnet", "corpus", "composed"])
def test_out_of_vocabulary_strings_get_flags_not_errors(exported, kind):
    result = exported["results"][kind]
    oov = result["oov"]
    assert oov["query_in_vocabulary"] == [True, False, True, False]
    assert oov["candidate_in_vocabulary"] == [True, True, False, False]
    energy = oov["energy"]
    assert energy[0] > OOV_ENERGY and np.isfinite(energy[0])
    assert energy[1:] == [OOV_ENERGY] * 3
    assert result["empty"]["energy"] == [] and result["empty"]["energy:shape"] == [0]
    # a length-1 query is broadcast against the candidates
    broadcast = result["broadcast"]
    vocab = NODES if kind == "wordnet" else WORDS
    assert len(broadcast["energy"]) == len(vocab)
    first = vocab.index(PAIRS["wordnet" if kind == "wordnet" else "corpus"][1][0])
    assert broadcast["energy"][first] == pytest.approx(result["pairs"]["energy"][0])


def test_saved_model_cli_show_and_run(exported):
    """`saved_model_cli show --all` and `run` on the WordNet export."""
    if not exported["saved_model_cli"]:
        pytest.skip("this TensorFlow has no saved_model_cli")
    show, run = exported["saved_model_cli"]["show"], exported["saved_model_cli"]["run"]
    for name in ("serving_default", "embed", "neighbors", "energy"):
        assert f"signature_def['{name}']" in show
    assert "inputs['query'] tensor_info" in show and "inputs['candidate'] tensor_info" in show
    assert "outputs['energy'] tensor_info" in show
    assert "outputs['candidates'] tensor_info" in show and "shape: (-1, 3)" in show
    assert "Result for output key energy:" in run
    values = run.split("Result for output key energy:")[1].split("Result")[0]
    served = exported["results"]["wordnet"]["pairs"]["energy"][0]
    numbers = [float(x) for x in values.replace("[", " ").replace("]", " ").split()]
    assert numbers[0] == pytest.approx(served, rel=1e-5)
    assert numbers[1] == pytest.approx(OOV_ENERGY)
    assert "Result for output key query_in_vocabulary:\n[ True False]" in run


def test_existing_version_needs_overwrite(exported, capsys):
    run_dir = exported["root"] / "wordnet_run"
    serve = exported["root"] / "serve_overwrite"
    # An export written before the marker: recognised by its files and description.
    (serve / "1" / "assets.extra").mkdir(parents=True)
    (serve / "1" / "assets.extra" / "keras_gauss_export.json").write_text(
        '{"format": 1, "signatures": ["serving_default"]}')
    (serve / "1" / "saved_model.pb").write_text("old")
    with pytest.raises(SystemExit) as exit_info:
        main(["export", str(run_dir), "--out", str(serve)])
    assert exit_info.value.code == 2
    assert "--overwrite" in capsys.readouterr().err
    assert (serve / "1" / "saved_model.pb").read_text() == "old"
    assert main(["export", str(run_dir), "--out", str(serve), "--overwrite", "--k", "2"]) == 0
    assert (serve / "1" / "saved_model.pb").stat().st_size > 100
    assert sorted(p.name for p in serve.iterdir()) == ["1"]
    with pytest.raises(OutputExistsError):
        export_run(run_dir, serve, version=1)


@pytest.mark.parametrize("setup", ["empty", "missing", "only_vocabulary"])
def test_run_dir_without_a_trained_model_is_a_clear_error(tmp_path, capsys, setup):
    run_dir = tmp_path / "run"
    if setup != "missing":
        run_dir.mkdir()
    if setup == "only_vocabulary":
        (run_dir / "nodes.tsv").write_text("a\nb\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["export", str(run_dir), "--out", str(tmp_path / "serve")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    if setup == "missing":
        assert err.endswith("run: no such run directory.\n")
    else:
        assert "holds no trained run" in err and "model.keras" in err
    assert not (tmp_path / "serve").exists()


def test_a_failed_export_leaves_no_version_behind(exported, monkeypatch):
    import tensorflow as tf

    serve = exported["root"] / "serve_crash"
    real_save = tf.saved_model.save

    def crash(obj, path, *args, **kwargs):
        real_save(obj, path, *args, **kwargs)  # a complete-looking directory...
        raise OSError("disk full")  # ...and then the export fails

    monkeypatch.setattr(tf.saved_model, "save", crash)
    with pytest.raises(OSError, match="disk full"):
        export_run(exported["root"] / "wordnet_run", serve, version=2)
    assert not serve.exists()  # no temporary directory, nor the directories made for it
    monkeypatch.setattr(tf.saved_model, "save", real_save)
    export_run(exported["root"] / "wordnet_run", serve, version=2)
    assert sorted(p.name for p in serve.iterdir()) == ["2"]


def test_bad_arguments(exported, tmp_path, capsys):
    run_dir = str(exported["root"] / "wordnet_run")
    for argv, message in [
        (["--version", "0"], "--version must be an integer from 1 to 2^63 - 1"),
        # TF Serving reads version directories as int64 and skips the others
        (["--version", str(2 ** 63)], "--version must be an integer from 1 to 2^63 - 1"),
        (["--k", "0"], "--k must be >= 1"),
        (["--format", "word2vec", "--k", "3"], "--k applies to --format serving"),
    ]:
        with pytest.raises(SystemExit):
            main(["export", run_dir, "--out", str(tmp_path / "x")] + argv)
        assert message in capsys.readouterr().err
    with pytest.raises(ValueError, match="version must be an integer from 1 to 2"):
        export_run(run_dir, tmp_path / "x", version=2 ** 63)
    assert not (tmp_path / "x").exists()
    model = exported["corpus_model"]
    with pytest.raises(ValueError, match="pass `table=`"):
        export_energy_model(model, WORDS, tmp_path / "a", "el")
    with pytest.raises(ValueError, match="no GaussianEmbedding layer named 'nope'"):
        export_energy_model(model, WORDS, tmp_path / "a", "el", table="nope")
    with pytest.raises(ValueError, match="8 rows"):
        export_energy_model(model, WORDS[:-1], tmp_path / "a", "el", table="words")
    with pytest.raises(ValueError, match="unique"):
        export_energy_model(model, WORDS[:-1] + ["the"], tmp_path / "a", "el", table="words")
    with pytest.raises(ValueError, match="energy must be"):
        export_energy_model(model, WORDS, tmp_path / "a", "cosine", table="words")
    assert not (tmp_path / "a").exists()


def test_generality_term_in_the_exported_kl_energy(tmp_path):
    """`generality=beta` adds `beta * (log det Sigma_candidate - log det Sigma_query)` to the
    KL energy of both exporters; it needs KL energy and a finite beta >= 0."""
    import tensorflow as tf

    from keras_gauss.export import export_tables

    rng = np.random.default_rng(5)
    words = ["a", "b", "c", "d"]
    means = rng.normal(size=(4, 3)).astype("float32")
    variances = np.exp(rng.normal(size=(4, 3))).astype("float32")
    layer = kg.GaussianEmbedding(4, 3, name="nodes")
    _ = layer(np.array([0]))
    layer.means.assign(means)
    layer.variances.assign(variances)
    query, cand = ["a", "a", "b", "c", "d"], ["b", "c", "a", "d", "c"]
    q, c = [words.index(w) for w in query], [words.index(w) for w in cand]
    m, v = means.astype(np.float64), variances.astype(np.float64)
    kl = 0.5 * np.sum(v[q] / v[c] + (m[c] - m[q]) ** 2 / v[c] - 1 - np.log(v[q] / v[c]), axis=-1)
    expected = -kl + 0.3 * (np.log(v[c]).sum(-1) - np.log(v[q]).sum(-1))
    for path in (export_tables(means, variances, words, tmp_path / "t", "kl", k=2, generality=0.3),
                 export_energy_model(layer, words, tmp_path / "m", "kl", k=2, generality=0.3)):
        served = tf.saved_model.load(str(path))
        out = served.signatures["energy"](query=tf.constant(query), candidate=tf.constant(cand))
        np.testing.assert_allclose(out["energy"].numpy(), expected, rtol=1e-5, atol=1e-5)
    for energy, beta, message in (("el", 0.3, "KL energy only"), ("kl", -1.0, "generality must be"),
                                  ("kl", float("nan"), "generality must be")):
        with pytest.raises(ValueError, match=message):
            export_tables(means, variances, words, tmp_path / "x", energy, generality=beta)
    assert not (tmp_path / "x").exists()


def test_energy_of_lengths_that_do_not_pair_up_names_both(tmp_path):
    # The request failed with the broadcast's "Incompatible shapes: [2] vs. [3]".
    import tensorflow as tf

    layer = kg.GaussianEmbedding(3, 2, name="words")
    _ = layer(np.array([0]))
    served = tf.saved_model.load(str(export_energy_model(layer, ["a", "b", "c"],
                                                         tmp_path / "1", "el", k=1)))
    energy = served.signatures["serving_default"]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="energy: `query` has 2 strings and `candidate` 3: give them "
                             "the same length, or one of them length 1"):
        energy(query=tf.constant(["a", "b"]), candidate=tf.constant(["a", "b", "c"]))
    out = energy(query=tf.constant(["a"]), candidate=tf.constant(["a", "b", "c"]))
    assert out["energy"].shape == (3,)
    assert energy(query=tf.constant([], tf.string),
                  candidate=tf.constant([], tf.string))["energy"].shape == (0,)


def test_export_under_mixed_float16_serves_the_float32_tables(tmp_path):
    # `embed` and `energy` served the layer's float16 rows (means off by
    # 2e-3, energies by 10 in 46,000), `neighbors` the float32 tables.
    import tensorflow as tf

    rng = np.random.default_rng(0)
    means = (3 * rng.normal(size=(3, 8))).astype("float32")
    variances = rng.uniform(0.01, 1.0, (3, 8)).astype("float32")
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        layer = kg.GaussianEmbedding(3, 8, name="nodes", max_norm=None, min_variance=0.01)
        _ = layer(np.array([0]))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    layer.means.assign(means)
    layer.variances.assign(variances)
    served = tf.saved_model.load(str(export_energy_model(layer, ["a", "b", "c"],
                                                         tmp_path / "1", "kl", k=1)))
    np.testing.assert_array_equal(served.signatures["embed"](word=tf.constant(["b"]))["mean"],
                                  means[1:2])
    neighbor = served.signatures["neighbors"](query=tf.constant(["a"]))
    best = neighbor["candidates"].numpy()[0, 0].decode()
    energy = served.signatures["energy"](query=tf.constant(["a"]),
                                         candidate=tf.constant([best]))["energy"].numpy()
    m, v, c = means.astype(np.float64), variances.astype(np.float64), "abc".index(best)
    kl = 0.5 * np.sum(v[0] / v[c] + (m[c] - m[0]) ** 2 / v[c] - 1 - np.log(v[0] / v[c]))
    np.testing.assert_allclose(energy, [-kl], rtol=1e-6)
    assert neighbor["energies"].numpy()[0, 0] == energy[0]


def test_a_composed_model_is_served_with_its_el_energys_constant(tmp_path):
    # export_energy_model kept -d/2 log 2 pi whatever the model's ELEnergy said
    import tensorflow as tf

    words = kg.GaussianEmbedding(3, 4, name="words")
    ids = keras.Input((), dtype="int32")
    mean, var = words(ids)
    energy = kg.ELEnergy(include_constant=False)(mean, var, mean, var)
    model = keras.Model(ids, energy)
    served = tf.saved_model.load(str(export_energy_model(model, ["a", "b", "c"],
                                                         tmp_path / "1", "el", k=1)))
    out = served.signatures["energy"](query=tf.constant(["b"]), candidate=tf.constant(["b"]))
    np.testing.assert_allclose(out["energy"].numpy(), model(np.array([1])), rtol=1e-6)


def test_table_shapes_are_checked_candidate_table_too(tmp_path):
    # candidate variances of another width failed inside the traced graph
    # ("in user code: ..."); a table of dimension 0 was exported
    from keras_gauss.export import export_tables

    means, variances = np.zeros((3, 2), "float32"), np.ones((3, 2), "float32")
    for kwargs, message in (
            ({"means": np.zeros((3, 0)), "variances": np.ones((3, 0))},
             r"^means must be \(n, d\) with d >= 1 .*got \(3, 0\) and \(3, 0\)\.$"),
            ({"candidate_means": means, "candidate_variances": np.ones((3, 3))},
             r"^candidate_means must be \(n, d\) with d >= 1 and candidate_variances \(n, d\) "
             r"or \(n, 1\); got \(3, 2\) and \(3, 3\)\.$")):
        with pytest.raises(ValueError, match=message):
            export_tables(**{"means": means, "variances": variances, **kwargs},
                          words=["a", "b", "c"], path=tmp_path / "1", energy="kl")
    assert not (tmp_path / "1").exists()
