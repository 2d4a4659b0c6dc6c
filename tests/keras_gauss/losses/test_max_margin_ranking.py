import importlib

import keras
import numpy as np
import pytest
from backends import float64_loss_available

from keras_gauss import MaxMarginRanking
from keras_gauss.losses import max_margin_ranking
from keras_gauss.losses.max_margin_ranking import check_label_shape


def _per_example(y_true, y_pred, margin=1.0):
    return keras.ops.convert_to_numpy(
        max_margin_ranking(np.asarray(y_true, "float32"),
                           np.asarray(y_pred, "float32"), margin=margin))


def test_single_negative():
    # max(0, 1 - (-2.0) + (-2.5)) = 0.5
    np.testing.assert_allclose(_per_example([[1, 0]], [[-2.0, -2.5]]), [0.5])
    # margin 3: max(0, 3 - 0.5) = 2.5
    np.testing.assert_allclose(_per_example([[1, 0]], [[-2.0, -2.5]], 3.0), [2.5])


def test_several_negatives_sum_and_batch_mean():
    y_true = [[1, 0, 0], [1, 0, 0]]
    y_pred = [[-1.0, -1.5, -3.0],  # 0.5 + 0
              [0.0, 0.5, 0.2]]  # 1.5 + 1.2
    np.testing.assert_allclose(_per_example(y_true, y_pred), [0.5, 2.7], rtol=1e-6)
    loss = MaxMarginRanking()(np.array(y_true, "float32"), np.array(y_pred, "float32"))
    assert float(loss) == pytest.approx((0.5 + 2.7) / 2, rel=1e-6)
    summed = MaxMarginRanking(reduction="sum")(
        np.array(y_true, "float32"), np.array(y_pred, "float32"))
    assert float(summed) == pytest.approx(3.2, rel=1e-6)


def test_one_row_of_labels_is_shared_by_every_list():
    y_pred = np.array([[-1.0, -1.5, -3.0], [0.0, 0.5, 0.2]], "float32")
    shared = MaxMarginRanking()(np.array([[1, 0, 0]], "float32"), y_pred)
    tiled = MaxMarginRanking()(np.array([[1, 0, 0]] * 2, "float32"), y_pred)
    assert float(shared) == pytest.approx(float(tiled)) == pytest.approx(1.6)
    with pytest.raises(ValueError, match="does not match"):
        MaxMarginRanking()(np.ones((1, 2), "float32"), y_pred)


def test_zero_when_margin_met():
    np.testing.assert_array_equal(
        _per_example([[1, 0, 0]], [[0.0, -1.0, -7.0]]), [0.0])
    assert _per_example([[1, 0]], [[0.0, -0.999]])[0] == pytest.approx(0.001, abs=1e-6)


def test_labels_order_semantics():
    y_pred = [[-3.0, -1.0]]
    # the second item is the positive: 1 - (-1) + (-3) < 0
    np.testing.assert_array_equal(_per_example([[0, 1]], y_pred), [0.0])
    np.testing.assert_allclose(_per_example([[1, 0]], y_pred), [3.0])
    # graded labels: every ordered pair counts, only the order matters
    graded = _per_example([[2, 1, 0]], [[0.0, 0.0, 0.0]])
    np.testing.assert_allclose(graded, [3.0])
    np.testing.assert_allclose(_per_example([[5, 3, -1]], [[0.0, 0.0, 0.0]]), graded)
    # equal labels make no pair
    np.testing.assert_array_equal(_per_example([[1, 1]], [[0.0, 5.0]]), [0.0])


def test_config_round_trip():
    loss = MaxMarginRanking(margin=0.25, reduction="sum", name="rank")
    config = loss.get_config()
    assert config["margin"] == 0.25
    revived = MaxMarginRanking.from_config(config)
    assert revived.get_config() == config
    y_true = np.array([[1, 0]], "float32")
    y_pred = np.array([[0.0, 0.1]], "float32")
    assert float(revived(y_true, y_pred)) == pytest.approx(0.35)
    deserialized = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(loss))
    assert isinstance(deserialized, MaxMarginRanking)
    assert deserialized.get_config() == config


def test_shape_errors():
    with pytest.raises(ValueError, match=r"\(batch, list_size\)"):
        MaxMarginRanking()(np.ones(3, "float32"), np.ones(3, "float32"))
    with pytest.raises(ValueError, match="does not match"):
        MaxMarginRanking()(np.ones((2, 3), "float32"), np.ones((2, 4), "float32"))


@pytest.mark.parametrize("margin", [0.0, -1.0, float("nan")])
def test_margin_must_be_positive(margin):
    with pytest.raises(ValueError, match="margin"):
        MaxMarginRanking(margin=margin)


@pytest.mark.parametrize("margin", ["1", None, True])
def test_margin_must_be_a_number(margin):
    with pytest.raises(TypeError, match="margin"):
        MaxMarginRanking(margin=margin)


def test_float16_input_gives_float32():
    y_true = np.array([[1, 0, 0]], "float16")
    y_pred = np.array([[-1.0, -1.5, -3.0]], "float16")
    per_example = max_margin_ranking(y_true, y_pred)
    assert keras.backend.standardize_dtype(per_example.dtype) == "float32"
    loss = MaxMarginRanking()(y_true, y_pred)
    assert keras.backend.standardize_dtype(loss.dtype) == "float32"
    assert float(loss) == pytest.approx(0.5)


def test_dtype_float64_computes_in_float64():
    # dtype="float64" gave a float64 loss computed in float32: 1.1 came
    # out as 1.100000023841858.
    if not float64_loss_available():
        pytest.skip("float64 losses come out float32 here (JAX without jax_enable_x64; "
                    "torch: Keras 3.15's mean over the batch)")
    y_true, y_pred = np.array([[1.0, 0.0]]), np.array([[0.1, 0.2]])
    loss = MaxMarginRanking(dtype="float64")(y_true, y_pred)  # max(0, 1 - 0.1 + 0.2)
    assert keras.backend.standardize_dtype(loss.dtype) == "float64"
    assert float(loss) == pytest.approx(1.1, abs=1e-15)
    per_example = max_margin_ranking(y_true, y_pred)  # float64 energies: float64
    assert float(per_example[0]) == pytest.approx(1.1, abs=1e-15)


def _values_and_gradients(y_true, y_pred):
    """Per-example losses and the gradient of their sum with respect to `y_pred`."""
    if keras.backend.backend() != "tensorflow":
        return _per_example(y_true, y_pred), None
    import tensorflow as tf

    y_pred = tf.constant(y_pred)
    with tf.GradientTape() as tape:
        tape.watch(y_pred)
        losses = max_margin_ranking(tf.constant(y_true), y_pred)
        total = tf.reduce_sum(losses)
    return losses.numpy(), tape.gradient(total, y_pred).numpy()


@pytest.mark.parametrize("shape", [(64, 2), (64, 6), (8, 5, 3)])
def test_the_pair_matrix_gives_the_broadcasts_losses_and_gradients(monkeypatch, shape):
    # On TensorFlow's CPU the differences come from one matmul
    # (`pair_differences`); the broadcast formula is the reference.
    module = importlib.import_module("keras_gauss.losses.max_margin_ranking")

    rng = np.random.default_rng(0)
    y_pred = rng.normal(size=shape).astype("float32")
    y_true = rng.integers(0, 3, size=shape).astype("float32")
    if keras.backend.backend() == "tensorflow":
        assert module.pair_differences(shape[-1]) is not None
    fast = _values_and_gradients(y_true, y_pred)
    monkeypatch.setattr(module, "pair_differences", lambda list_size: None)
    reference = _values_and_gradients(y_true, y_pred)
    np.testing.assert_allclose(fast[0], reference[0], rtol=1e-6, atol=1e-6)
    if fast[1] is not None:
        np.testing.assert_allclose(fast[1], reference[1], rtol=1e-6, atol=1e-6)
    assert np.any(fast[0] > 0)


def test_long_lists_broadcast_instead_of_building_the_pair_matrix():
    # The matrix grows as list_size^3: 301 items built 108 MB (6.5 s to
    # trace, then 2.7x slower than the broadcasts), 1,001 would build 4 GB.
    module = importlib.import_module("keras_gauss.losses.max_margin_ranking")
    assert module.pair_differences(module.MAX_PAIR_MATRIX_ITEMS + 1) is None
    assert module.pair_differences(301) is None
    y_true = np.zeros((2, 301), "float32")
    y_true[:, 0] = 1.0
    y_pred = np.zeros((2, 301), "float32")
    y_pred[:, 0] = 0.5  # each of the 300 negatives is 0.5 short of the margin
    np.testing.assert_allclose(keras.ops.convert_to_numpy(max_margin_ranking(y_true, y_pred)),
                               [150.0, 150.0])


def test_a_numpy_margin_is_taken_and_an_infinite_one_is_not():
    assert MaxMarginRanking(margin=np.float32(2.0)).get_config()["margin"] == 2.0
    with pytest.raises(ValueError, match="margin"):
        MaxMarginRanking(margin=float("inf"))


def test_labels_of_one_column_are_an_error_whatever_the_batch():
    # in a compiled step the batch may be unknown: (None, 1) labels passed the check
    y_true = keras.KerasTensor((None, 1))
    y_pred = keras.KerasTensor((None, 3))
    with pytest.raises(ValueError, match="does not match"):
        check_label_shape(y_true, y_pred, "MaxMarginRanking")


def test_lists_of_one_energy_are_an_error():
    # no pair to rank: the loss was 0 whatever the energies, and nothing trained
    with pytest.raises(ValueError, match="no pair to rank"):
        MaxMarginRanking()(np.ones((4, 1), np.float32), np.zeros((4, 1), np.float32))


@pytest.mark.parametrize("list_size", [3, 301])  # the pair matrix, the broadcasts
def test_a_nan_label_makes_its_lists_loss_nan_not_a_silent_partial_sum(list_size):
    y_true = np.zeros((3, list_size), "float32")
    y_true[:, 0] = 1.0
    y_true[1, 2] = np.nan
    y_true[2, 0] = np.inf  # ordered above the rest: a label, not missing
    y_pred = np.zeros((3, list_size), "float32")
    got = keras.ops.convert_to_numpy(max_margin_ranking(y_true, y_pred))
    assert got[0] == got[2] == list_size - 1 and np.isnan(got[1])
    assert np.isnan(keras.ops.convert_to_numpy(MaxMarginRanking()(y_true, y_pred)))
