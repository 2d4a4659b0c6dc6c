"""Nothing non-finite gets in, no id wraps: the argument checks of every
entry point (issue 12, items 2 and 7)."""


import numpy as np
import pytest
import tensorflow as tf

from keras_gauss.checks import check_number, check_tables_finite
from keras_gauss.constraints import NormClip, VarianceClip
from keras_gauss.layers import GaussianEmbedding
from keras_gauss.optimizers import SparseAdagrad

NAN, INF = float("nan"), float("inf")


def test_check_number():
    assert check_number(0.5, "x", above=0, at_most=1) == 0.5
    for value in (NAN, INF, -INF, np.float32("nan")):
        with pytest.raises(ValueError, match="x must be finite"):
            check_number(value, "x")
    with pytest.raises(ValueError, match="x must be > 0, got 0"):
        check_number(0, "x", above=0)
    with pytest.raises(TypeError, match="x must be a number"):
        check_number(True, "x")
    with pytest.raises(TypeError, match="an integer"):
        check_number(1.5, "x", integer=True)


def test_check_tables_finite_names_where():
    check_tables_finite(np.zeros((2, 3)), np.ones((2, 3)), "f")
    with pytest.raises(ValueError, match="f: 1 of 2 rows have non-finite means"):
        check_tables_finite(np.array([[0.0], [NAN]]), np.ones((2, 1)), "f")
    with pytest.raises(ValueError, match="non-positive variances .first: row 0"):
        check_tables_finite(np.zeros((2, 1)), np.array([[0.0], [1.0]]), "f")


@pytest.mark.parametrize("make", [
    lambda: SparseAdagrad(NAN),
    lambda: SparseAdagrad(-1.0),
    lambda: SparseAdagrad(INF),
    lambda: SparseAdagrad(0.1, epsilon=NAN),
    lambda: SparseAdagrad(0.1, initial_accumulator_value=INF),
    lambda: NormClip(INF),
    lambda: NormClip(NAN),
    lambda: VarianceClip(0.05, INF),
    lambda: VarianceClip(NAN, 5.0),
    lambda: GaussianEmbedding(3, 2, max_variance=INF),
    lambda: GaussianEmbedding(3, 2, max_norm=NAN),
], ids=lambda f: "")
def test_constructors_refuse_non_finite_settings(make):
    with pytest.raises(ValueError, match="finite|> 0"):
        make()


@pytest.mark.parametrize("dtype", ["uint64", "int64", "uint32"])
def test_layer_ids_never_wrap(dtype):
    layer = GaussianEmbedding(10, 2)
    big = 2**32 + 3 if dtype != "uint32" else 2**32 - 1
    with pytest.raises(tf.errors.InvalidArgumentError, match="ids must lie"):
        layer(np.array([1, big], dtype))
    if dtype == "uint64":
        with pytest.raises(tf.errors.InvalidArgumentError, match="ids must lie"):
            layer(np.array([2**63 + 3], dtype))
    mean, _ = layer(np.array([3], dtype))
    np.testing.assert_array_equal(mean, layer(np.array([3], "int32"))[0])
