"""SkipGramSampler: pairs drawn on the device from the step number.

The statistics against the streaming pipeline's rules are in
tests/pipelines/test_pipelines_device_pairs.py."""

import keras
import numpy as np
import pytest
from backends import only_on_tensorflow
from scipy import stats

from keras_gauss.layers import SkipGramSampler
from keras_gauss.layers.skipgram_sampler import first_true
from keras_gauss.layers.skipgram_sampler import hash_bits
from keras_gauss.layers.skipgram_sampler import hash_uniform
from keras_gauss.layers.skipgram_sampler import step_key


def _positions_corpus(seed=0, n_lines=60):
    """Token id = position, so a pair gives its two positions."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 25, n_lines)
    lines = np.repeat(np.arange(n_lines), lengths).astype("int32")
    return np.arange(len(lines), dtype="int32"), lines


def _sampler(corpus, lines, keep=None, **kwargs):
    keep = np.ones(len(corpus), "float32") if keep is None else keep
    return SkipGramSampler.from_arrays(corpus, lines, keep, np.arange(len(corpus), dtype="int32"),
                                       **kwargs)


def _batch(sampler, step):
    return {k: keras.ops.convert_to_numpy(v) for k, v in sampler(np.array([step], "int32")).items()}


@pytest.mark.parametrize("dynamic", [True, False])
def test_pairs_stay_in_their_line_and_window(dynamic):
    corpus, lines = _positions_corpus()
    sampler = _sampler(corpus, lines, window=3, batch_size=2000, dynamic_window=dynamic)
    batch = _batch(sampler, 1)
    word, context = batch["word"], batch["context"]
    assert np.all(lines[word] == lines[context])
    gap = np.abs(context - word)
    assert gap.min() >= 1 and gap.max() <= 3
    assert set(np.unique(gap)) == {1, 2, 3}
    # subsampled: the context is the d-th *kept* neighbour, so further away
    keep = np.full(len(corpus), 0.5, "float32")
    far = _batch(_sampler(corpus, lines, keep, window=3, batch_size=2000, scan=40), 1)
    assert np.all(lines[far["word"]] == lines[far["context"]])
    assert np.abs(far["context"] - far["word"]).max() > 3


def test_same_seed_and_step_same_batch():
    corpus, lines = _positions_corpus()
    a = _sampler(corpus, lines, window=2, batch_size=64, seed=5)
    b = _sampler(corpus, lines, window=2, batch_size=64, seed=5)
    for key in ("word", "context", "negatives"):
        np.testing.assert_array_equal(_batch(a, 9)[key], _batch(b, 9)[key])
    assert not np.array_equal(_batch(a, 9)["word"], _batch(a, 10)["word"])
    other = _sampler(corpus, lines, window=2, batch_size=64, seed=6)
    assert not np.array_equal(_batch(a, 9)["word"], _batch(other, 9)["word"])


def _numpy_mix32(x):
    x = np.asarray(x, "uint64") & 0xFFFFFFFF
    x ^= x >> 16
    x = (x * 0x85EBCA6B) & 0xFFFFFFFF
    x ^= x >> 13
    x = (x * 0xC2B2AE35) & 0xFFFFFFFF
    return x ^ (x >> 16)


def test_the_hash_is_murmur3s_finaliser_of_a_weyl_sequence_on_every_backend():
    """The bits, in NumPy's uint64 arithmetic modulo 2^32: the same on every
    backend (Keras on torch holds "uint32" as int64, which must wrap too)."""
    golden = 0x9E3779B9
    seed, step, stream = 7, 123_456, 3
    key = _numpy_mix32(_numpy_mix32(seed + 0x632BE5AB) + step * golden)
    base = _numpy_mix32(key + stream * 0x7FEB352D + 1)
    want = _numpy_mix32(np.arange(6, dtype="uint64") * golden + base).reshape(2, 3)
    got = keras.ops.convert_to_numpy(hash_bits(step_key(seed, step), stream, (2, 3)))
    assert int(keras.ops.convert_to_numpy(step_key(seed, step))) == int(key)
    np.testing.assert_array_equal(got.astype("uint64"), want)


def test_hash_uniforms_are_uniform_and_independent_of_the_step():
    u = keras.ops.convert_to_numpy(hash_uniform(step_key(0, 3), 1, (100_000,)))
    assert 0 <= u.min() and u.max() < 1
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    v = keras.ops.convert_to_numpy(hash_uniform(step_key(0, 4), 1, (100_000,)))
    assert abs(np.corrcoef(u, v)[0, 1]) < 0.02


def test_first_true_takes_the_first_and_cycles_when_short():
    index, count = first_true(np.array([0, 1, 1, 0, 1, 1], bool), 3)
    assert keras.ops.convert_to_numpy(index).tolist() == [1, 2, 4]
    index, count = first_true(np.array([0, 1, 0, 1], bool), 5)
    assert keras.ops.convert_to_numpy(index).tolist() == [1, 3, 1, 3, 1]
    assert int(count) == 2


def test_config_round_trip_and_bad_arrays():
    corpus, lines = _positions_corpus()
    sampler = _sampler(corpus, lines, window=2, batch_size=8, seed=3, draws=40)
    clone = SkipGramSampler.from_config(sampler.get_config())
    assert clone.get_config() == sampler.get_config()
    clone.set_weights(sampler.get_weights())
    np.testing.assert_array_equal(_batch(clone, 2)["word"], _batch(sampler, 2)["word"])
    with pytest.raises(ValueError, match="non-decreasing"):
        _sampler(corpus, lines[::-1].copy(), window=2, batch_size=8)
    with pytest.raises(ValueError, match="token ids"):
        SkipGramSampler.from_arrays(corpus, lines, np.ones(3), np.zeros(3, "int32"),
                                    window=2, batch_size=8)
    with pytest.raises(ValueError, match="window"):
        SkipGramSampler(10, 2, window=0, batch_size=8)


def test_numpy_integer_sizes_are_taken_and_saved_as_ints():
    # `np.int64(10)` was refused: "`corpus_size` must be an integer >= 1"
    sampler = SkipGramSampler(np.int64(10), np.int32(2), window=np.int64(2), batch_size=8,
                              table_size=np.int64(5))
    config = sampler.get_config()
    assert (config["corpus_size"], config["window"], config["table_size"]) == (10, 2, 5)
    assert all(type(config[key]) is int for key in ("corpus_size", "line_count", "window"))


def _batch_11():
    """Batch 11 of a sampler with subsampling, on the backend of this process."""
    corpus, lines = _positions_corpus()
    keep = np.linspace(0.2, 1.0, len(corpus)).astype("float32")
    return _batch(_sampler(corpus, lines, keep, window=4, batch_size=512, seed=2, negatives=3),
                  11)


def draw_on_jax(out):
    """`_batch_11` saved to `out` (.npz): the JAX job (`jax_job`) of this file."""
    np.savez(out, **_batch_11())


@only_on_tensorflow("compares with the JAX job's batch")
def test_tensorflow_and_jax_draw_the_same_batch(jax_job):
    here = _batch_11()
    on_jax = np.load(jax_job("sampler")[0] / "jax.npz")
    for key in ("word", "context", "negatives"):
        np.testing.assert_array_equal(here[key], on_jax[key])
