"""Energies under the `mixed_float16` policy: the tables hand out float16,
the energy layers compute in float32."""

import keras
import numpy as np

from keras_gauss import ELEnergy
from keras_gauss import GaussianEmbedding
from keras_gauss import KLEnergy
from keras_gauss import MaxMarginRanking
from keras_gauss import SparseAdagrad

D, C, M_MIN, M_MAX = 50, 2.0, 1e-3, 5.0


# float64 references, as per-dimension terms (the energy is their sum).
def _el_terms(mi, vi, mj, vj):
    total = vi + vj
    return -0.5 * (np.log(2 * np.pi * total) + (mi - mj) ** 2 / total)


def _kl_energy_terms(mi, vi, mj, vj):  # -KL(N_j || N_i)
    return -0.5 * (vj / vi + (mi - mj) ** 2 / vi - 1 - np.log(vj / vi))


def _assert_close(energy, terms, rtol):
    """|error| <= rtol * sum |terms|: relative to the size of the terms, so an
    energy near 0 that is a sum of large terms is judged fairly."""
    error = np.abs(energy - terms.sum(-1))
    assert np.all(error <= rtol * np.abs(terms).sum(-1)), error.max()


def _extreme_table():
    rng = np.random.default_rng(0)
    u = rng.normal(size=D)
    u /= np.linalg.norm(u)
    means = np.stack([C * u, -C * u, C * u, np.zeros(D),
                      *(rng.normal(size=(2, D)) * 0.2)])
    variances = np.stack([np.full(D, M_MIN), np.full(D, M_MIN), np.full(D, M_MAX),
                          np.full(D, M_MAX), rng.uniform(M_MIN, M_MAX, D),
                          np.where(rng.random(D) < 0.5, M_MIN, M_MAX)])
    return means, variances


def test_energies_inside_constraints_are_finite_and_accurate(mixed_float16):
    means, variances = _extreme_table()
    table = GaussianEmbedding(6, D, max_norm=C, min_variance=M_MIN, max_variance=M_MAX)
    table.build()
    table.means.assign(means)
    table.variances.assign(variances)
    i, j = (a.ravel() for a in np.meshgrid(np.arange(6), np.arange(6)))
    mean_i, var_i = table(i)
    mean_j, var_j = table(j)
    assert keras.backend.standardize_dtype(mean_i.dtype) == "float16"

    for layer, reference in ((ELEnergy(), _el_terms), (KLEnergy(), _kl_energy_terms)):
        energy = layer(mean_i, var_i, mean_j, var_j)
        assert keras.backend.standardize_dtype(energy.dtype) == "float32"
        energy = np.asarray(energy, "float64")
        assert np.all(np.isfinite(energy))
        # against the float64 energies of the stored (float32) parameters
        stored = [np.asarray(t, "float64") for t in (
            table.means.numpy()[i], table.variances.numpy()[i],
            table.means.numpy()[j], table.variances.numpy()[j])]
        _assert_close(energy, reference(*stored), rtol=1e-3)
        # and the float32 math adds little to the float16 rounding of inputs
        rounded = [np.asarray(t, "float64") for t in (mean_i, var_i, mean_j, var_j)]
        _assert_close(energy, reference(*rounded), rtol=1e-6)

    # the extreme KL value does not fit in float16 at all
    assert np.max(np.abs(_kl_energy_terms(*stored).sum(-1))) > np.finfo("float16").max


def test_training_under_mixed_precision(mixed_float16):
    words = GaussianEmbedding(20, D, name="words", min_variance=M_MIN)
    contexts = GaussianEmbedding(20, D, name="contexts", min_variance=M_MIN)
    word = keras.Input((1,), dtype="int32")
    context = keras.Input((3,), dtype="int32")
    energies = ELEnergy()(*words(word), *contexts(context))
    model = keras.Model([word, context], energies)
    model.compile(optimizer=SparseAdagrad(0.5), loss=MaxMarginRanking())
    rng = np.random.default_rng(1)
    x = [rng.integers(0, 20, (32, 1)), rng.integers(0, 20, (32, 3))]
    y = np.tile(np.array([[1.0, 0.0, 0.0]], "float32"), (32, 1))
    before = words.means.numpy().copy()
    history = model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    assert all(np.isfinite(history.history["loss"]))
    assert history.history["loss"][1] < history.history["loss"][0]
    assert words.means.dtype == "float32"
    assert not np.array_equal(before, words.means.numpy())
    assert np.linalg.norm(words.means.numpy(), axis=-1).max() <= 2.0 + 1e-6
    assert words.variances.numpy().min() >= M_MIN * (1 - 1e-6)
    assert keras.backend.standardize_dtype(model.predict(x, verbose=0).dtype) == "float32"
