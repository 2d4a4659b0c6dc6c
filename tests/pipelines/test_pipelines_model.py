"""The corpus model: shapes, layer names, and the direction of its energies."""

import numpy as np
import pytest

from keras_gauss import ops as gauss_ops
from keras_gauss.pipelines.model import build_corpus_model


def _inputs(batch=4, k=3, vocab=20, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "word": rng.integers(0, vocab, batch).astype("int32"),
        "context": rng.integers(0, vocab, batch).astype("int32"),
        "negatives": rng.integers(0, vocab, (batch, k)).astype("int32"),
    }


def _set(table, means, variances):
    table.means.assign(np.asarray(means, "float32"))
    table.variances.assign(np.asarray(variances, "float32"))


@pytest.mark.parametrize("energy", ["el", "kl"])
@pytest.mark.parametrize("covariance", ["diagonal", "spherical"])
def test_shapes_and_tables(energy, covariance):
    model = build_corpus_model(20, dim=6, negatives=3, energy=energy, covariance=covariance)
    out = model.predict(_inputs(), verbose=0)
    assert out.shape == (4, 4)
    words, contexts = model.get_layer("words"), model.get_layer("contexts")
    assert words is not contexts
    assert words.means.shape == contexts.means.shape == (20, 6)
    assert words.variances.shape[1] == (6 if covariance == "diagonal" else 1)


@pytest.mark.parametrize("energy", ["el", "kl"])
def test_energies_match_ops_positive_first(energy):
    rng = np.random.default_rng(1)
    model = build_corpus_model(20, dim=5, negatives=2, energy=energy)
    words, contexts = model.get_layer("words"), model.get_layer("contexts")
    _set(words, rng.uniform(-1, 1, (20, 5)) * 0.3, rng.uniform(0.5, 2, (20, 5)))
    _set(contexts, rng.uniform(-1, 1, (20, 5)) * 0.3, rng.uniform(0.5, 2, (20, 5)))
    x = _inputs(batch=3, k=2)
    out = model.predict(x, verbose=0)
    mw, vw = words.means.numpy(), words.variances.numpy()
    mc, vc = contexts.means.numpy(), contexts.variances.numpy()
    cand = np.concatenate([x["context"][:, None], x["negatives"]], 1)
    w = x["word"][:, None]
    if energy == "el":
        want = gauss_ops.el_energy(mw[w], vw[w], mc[cand], vc[cand])
    else:  # word general, context specific: -KL(N_c || N_w)
        want = -gauss_ops.kl_divergence(mc[cand], vc[cand], mw[w], vw[w])
    np.testing.assert_allclose(out, np.asarray(want), rtol=1e-5, atol=1e-5)


def test_kl_direction_word_is_general():
    model = build_corpus_model(2, dim=2, negatives=1, energy="kl", max_norm=None)
    words, contexts = model.get_layer("words"), model.get_layer("contexts")
    # word 0 broad, word 1 narrow; contexts the same Gaussians.
    means, variances = [[0.0, 0.0], [0.3, 0.0]], [[4.0, 4.0], [0.1, 0.1]]
    _set(words, means, variances)
    _set(contexts, means, variances)
    x = {"word": np.array([0, 1], "int32"), "context": np.array([1, 0], "int32"),
         "negatives": np.array([[0], [1]], "int32")}
    out = model.predict(x, verbose=0)
    # narrow context inside the broad word scores higher than the reverse
    assert out[0, 0] > out[1, 0]


def test_bad_arguments():
    with pytest.raises(ValueError, match="energy"):
        build_corpus_model(10, energy="cosine")
    with pytest.raises(ValueError, match="negatives"):
        build_corpus_model(10, negatives=0)
