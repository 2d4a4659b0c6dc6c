"""The hierarchy model's training step touches only the rows of its batch."""

import numpy as np
import pytest
import tensorflow as tf

import keras_gauss as kg
from keras_gauss.hierarchy.model import build_kl_model

ROWS = 9973  # a prime no batch-sized tensor has as a dimension
NEGATIVES = 3


def _traced_step(model):
    """The graph of one `train_step` with an unknown batch size (as `fit` on
    `make_dataset` traces it)."""
    ids = tf.TensorSpec((None,), tf.int32)
    negatives = tf.TensorSpec((None, NEGATIVES), tf.int32)
    x = {"general": ids, "specific": ids, "neg_general": negatives,
         "neg_specific": negatives}
    y = tf.TensorSpec((None, 1 + NEGATIVES), tf.float32)
    step = tf.function(lambda x, y: model.train_step((x, y)))
    return step.get_concrete_function(x, y).graph


def _table_sized(graph):
    """Ops of `graph` with an output of `ROWS` rows: a dense read, a densified
    gradient or a constraint applied to a whole table."""
    return [f"{op.type} {op.name} {t.shape}" for op in graph.get_operations()
            for t in op.outputs if t.shape.rank and t.shape[0] == ROWS]


def _compiled_model():
    model = build_kl_model(ROWS, 8, negatives=NEGATIVES)
    optimizer = kg.SparseAdagrad(0.1)
    model.compile(optimizer=optimizer, loss=kg.MaxMarginRanking())
    optimizer.build(model.trainable_variables)
    return model, optimizer


def test_keras_step_reads_and_writes_only_batch_rows():
    model, _ = _compiled_model()
    graph = _traced_step(model)
    assert _table_sized(graph) == []
    kinds = {op.type for op in graph.get_operations()}
    # the rows are read and written by the layers' kernels (keras_gauss.kernels)
    assert {"KerasGaussGather", "KerasGaussSparseAdagrad"} <= kinds


def test_keras_step_with_the_reference_ops_reads_and_writes_only_batch_rows(monkeypatch):
    monkeypatch.setenv("KERAS_GAUSS_KERNELS", "reference")
    model, _ = _compiled_model()
    graph = _traced_step(model)
    assert _table_sized(graph) == []
    kinds = {op.type for op in graph.get_operations()}
    assert {"ResourceGather", "ResourceScatterUpdate"} <= kinds


def test_keras_step_check_catches_a_whole_table_constraint():
    # The check above is able to fail: Keras's Adagrad densifies the sparse
    # gradients and projects whole tables.
    model = build_kl_model(ROWS, 8, negatives=NEGATIVES)
    model.compile(optimizer="adagrad",
                  loss=kg.MaxMarginRanking())
    model.optimizer.build(model.trainable_variables)
    assert _table_sized(_traced_step(model))


def test_negatives_may_be_a_numpy_integer():
    # `np.int64(2)` was refused as "`negatives` must be an integer >= 1"
    model = build_kl_model(10, 2, negatives=np.int64(2))
    assert tuple(model.output.shape) == (None, 3)
    for bad in (0, True, 2.0):
        with pytest.raises(ValueError, match="`negatives` must be an integer >= 1"):
            build_kl_model(10, 2, negatives=bad)
