"""The native trainer (plain C ABI, interleaved rows) == the TensorFlow op."""

import subprocess
import sys

import numpy as np
import pytest

from keras_gauss.fused import fused_available
from keras_gauss.fused import native_available
from keras_gauss.fused import NativeTables
from keras_gauss.fused import skipgram_train

from test_fused_skipgram import BOUNDS
from test_fused_skipgram import _chunk
from test_fused_skipgram import _variables

needs_both = pytest.mark.skipif(not (fused_available() and native_available()),
                                reason="the fused op or the native trainer did not build")


def _native_from(tables, accumulators, spherical):
    native = NativeTables(tables[0].shape[0], tables[0].shape[1], spherical=spherical,
                          bounds=(BOUNDS["max_norm"], BOUNDS["min_variance"],
                                  BOUNDS["max_variance"]))
    for t in range(2):
        native.set(t, tables[2 * t].numpy(), tables[2 * t + 1].numpy(),
                   accumulators[2 * t].numpy(), accumulators[2 * t + 1].numpy())
    return native


@needs_both
@pytest.mark.parametrize("energy", ["el", "kl"])
@pytest.mark.parametrize("batch_size", [1, 7])
@pytest.mark.parametrize("layout", ["diagonal", "spherical", "shuffled"])
def test_one_thread_equals_the_op(energy, batch_size, layout):
    tokens, splits, probs, alias, keep = _chunk()
    spherical = layout == "spherical"
    tables, accumulators = _variables(spherical=spherical)
    native = _native_from(tables, accumulators, spherical)
    settings = dict(keep=keep, negatives=2, batch_size=batch_size,
                    shuffle=layout == "shuffled", num_threads=1, margin=1.0, energy=energy)
    loss, pairs = skipgram_train(tables, accumulators, tokens, splits, 3, 0.2, probs, alias,
                                 use_fused=True, **settings, **BOUNDS)
    native_loss, native_pairs = native.train(tokens, splits, 3, 0.2, probs, alias, **settings)
    assert native_pairs == int(pairs) > 100
    np.testing.assert_allclose(native_loss, float(loss), rtol=1e-5)
    for t in range(2):
        got = [native.means(t), native.variances(t), *native.accumulators(t)]
        want = [v.numpy() for v in (tables[2 * t], tables[2 * t + 1], accumulators[2 * t],
                                    accumulators[2 * t + 1])]
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not native_available(), reason="the native trainer did not build")
def test_bad_chunks_raise_clear_errors():
    tokens, splits, probs, alias, _ = _chunk()
    native = NativeTables(30, 4)
    with pytest.raises(ValueError, match=r"`tokens` holds id 30 .*outside \[0, 30\)"):
        native.train(np.append(tokens[:-1], 30), splits, 0, 0.1, probs, alias)
    with pytest.raises(ValueError, match="row_splits"):
        native.train(tokens, splits[:-1], 0, 0.1, probs, alias)
    with pytest.raises(ValueError, match="keep"):
        native.train(tokens, splits, 0, 0.1, probs, alias, keep=np.ones(3))


def test_native_trainer_does_not_import_tensorflow():
    code = ("import sys, numpy as np; from keras_gauss.fused import NativeTables, alias_table;"
            "t = NativeTables(4, 2); p, a = alias_table(np.ones(4));"
            "t.train(np.array([0, 1, 2, 3], 'int32'), np.array([0, 4]), 0, 0.1, p, a);"
            "print('tensorflow' in sys.modules, 'keras' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300)
    assert result.stdout.strip() == "False False", result.stderr[-2000:]


@needs_both
@pytest.mark.parametrize("spherical", [False, True])
def test_variance_learning_rate_moves_only_the_variances_and_both_engines_agree(spherical):
    tokens, splits, probs, alias, keep = _chunk()
    settings = dict(keep=keep, negatives=2, batch_size=7, num_threads=1, margin=1.0)
    runs = {}
    for name, var_lr in (("same", None), ("explicit", 0.2), ("slow", 1e-3)):
        tables, accumulators = _variables(spherical=spherical, inside=True)
        start = [tables[1].numpy(), tables[3].numpy()]
        native = _native_from(tables, accumulators, spherical)
        skipgram_train(tables, accumulators, tokens, splits, 3, 0.2, probs, alias,
                       use_fused=True, variance_learning_rate=var_lr, **settings, **BOUNDS)
        native.train(tokens, splits, 3, 0.2, probs, alias, variance_learning_rate=var_lr,
                     **settings)
        for t in range(2):  # the op and the native trainer give the same tables
            np.testing.assert_allclose(native.variances(t), tables[2 * t + 1].numpy(),
                                       rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(native.means(t), tables[2 * t].numpy(),
                                       rtol=1e-5, atol=1e-6)
        runs[name] = (native, start)
    same, explicit, slow = runs["same"][0], runs["explicit"][0], runs["slow"][0]
    for t in range(2):
        # the variances' rate equal to the means' is the default, bit for bit
        np.testing.assert_array_equal(same.variances(t), explicit.variances(t))
        np.testing.assert_array_equal(same.means(t), explicit.means(t))
        # a 200x smaller rate moves the variances far less (the bounds cap the default)
        moved = np.abs(same.variances(t) - runs["same"][1][t]).max()
        moved_slow = np.abs(slow.variances(t) - runs["slow"][1][t]).max()
        assert moved > 0.3 and moved_slow < moved / 20, (moved, moved_slow)


@pytest.mark.skipif(not fused_available(), reason="the fused op did not build")
def test_variance_learning_rate_is_refused_by_the_tensorflow_implementation():
    tokens, splits, probs, alias, _ = _chunk()
    tables, accumulators = _variables(spherical=False)
    with pytest.raises(ValueError, match="variance_learning_rate` needs the C\\+\\+ op"):
        skipgram_train(tables, accumulators, tokens, splits, 3, 0.2, probs, alias,
                       use_fused=False, variance_learning_rate=0.01, **BOUNDS)
    with pytest.raises(ValueError, match="learning_rate"):
        skipgram_train(tables, accumulators, tokens, splits, 3, 0.2, probs, alias,
                       use_fused=True, variance_learning_rate=float("nan"), **BOUNDS)
