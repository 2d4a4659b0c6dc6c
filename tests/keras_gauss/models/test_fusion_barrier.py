"""No summing scatter of a train step may have the backward pass fused into
its updates (on a GPU such a scatter serializes on frequent ids): the HLO
that XLA receives, read by `fusion_check`, on JAX and on TensorFlow's XLA."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from fusion_check import summing_scatters
from fusion_check import parse
from fusion_check import unguarded_work

from keras_gauss.hierarchy.model import build_kl_model
from keras_gauss.losses import MaxMarginRanking
from keras_gauss.models.row_lookups import materialized
from keras_gauss.optimizers import SparseAdagrad
from keras_gauss.pipelines.model import build_corpus_model

def _xla_hlo(function, *args):
    return tf.function(function, jit_compile=True).experimental_get_compiler_ir(*args)(
        stage="hlo")


def test_the_check_sees_work_fused_into_a_summing_scatter():
    table = tf.random.normal((10, 3))
    ids = tf.constant([1, 1, 4])

    def step(guard):
        def run(table, ids):
            rows = tf.gather(table, ids) * 2.0
            if guard:
                rows = materialized(rows)
            return tf.tensor_scatter_nd_add(tf.zeros((10, 3)), ids[:, None], rows)
        return run

    text = _xla_hlo(step(False), table, ids)
    assert len(summing_scatters(parse(text)[0])) == 1
    [(_, reached)] = unguarded_work(text)
    assert [work.split()[0] for work in reached] == ["gather"]
    assert unguarded_work(_xla_hlo(step(True), table, ids)) == []


def _corpus(optimizer):
    model = build_corpus_model(50, 4, negatives=1, max_norm=1.0, min_variance=0.2,
                               max_variance=2.5)
    model.compile(optimizer=optimizer, loss=MaxMarginRanking(0.5))
    rng = np.random.default_rng(0)
    x = {"word": rng.integers(0, 50, 16).astype("int32"),
         "context": rng.integers(0, 50, 16).astype("int32"),
         "negatives": rng.integers(0, 50, (16, 1)).astype("int32")}
    return model, x


def _hierarchy():
    model = build_kl_model(50, 4, negatives=1)
    model.compile(optimizer=SparseAdagrad(0.1), loss=MaxMarginRanking(1.0))
    rng = np.random.default_rng(1)
    return model, {name: rng.integers(0, 50, shape).astype("int32") for name, shape in (
        ("general", 16), ("specific", 16), ("neg_general", (16, 1)),
        ("neg_specific", (16, 1)))}


@pytest.mark.parametrize("case", ["sparse_adagrad", "keras_adagrad", "hierarchy"])
def test_tensorflow_xla_steps_sum_materialized_rows(case):
    # Keras's fit keeps our models off XLA on TensorFlow (`supports_jit`),
    # but a user's own `tf.function(jit_compile=True)` step compiles them.
    model, x = {"sparse_adagrad": lambda: _corpus(SparseAdagrad(0.1)),
                "keras_adagrad": lambda: _corpus(keras.optimizers.Adagrad(0.1)),
                "hierarchy": _hierarchy}[case]()
    y = np.tile(np.array([[1.0, 0.0]], "float32"), (16, 1))
    text = _xla_hlo(lambda x, y: model.train_step((x, y)), x, y)
    assert summing_scatters(parse(text)[0])  # the check has scatters to read
    assert unguarded_work(text) == []


@pytest.fixture(scope="module")
def jax_steps(jax_job):
    """`lowered_steps.py` on JAX (in the tests' one JAX child, `jax_job`)."""
    return {path.stem: path.read_text() for path in jax_job("lowered")[0].glob("*.hlo")}


def test_jax_steps_sum_materialized_rows(jax_steps):
    # SparseAdagrad's row update, Keras's own optimizers (the row gradients
    # summed into dense arrays), the hierarchy model, the device-pairs trainer
    assert sorted(jax_steps) == sorted([
        "corpus_sparse_adagrad", "corpus_keras_adagrad", "corpus_keras_sgd",
        "hierarchy_sparse_adagrad", "device_pairs_sparse_adagrad"])
    for name, text in jax_steps.items():
        assert summing_scatters(parse(text)[0]), name
        assert unguarded_work(text) == [], name
