"""The hierarchy model's training step touches only the rows of its batch, and
the fused trainer equals `fit` of the Keras model."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_gauss as kg
from keras_gauss.hierarchy.model import FusedKLTrainer
from keras_gauss.hierarchy.model import build_kl_model

ROWS = 9973  # a prime no batch-sized tensor has as a dimension
NEGATIVES = 3
TOL = dict(rtol=1e-5, atol=1e-5)


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


@pytest.mark.parametrize("use_fused", [True, False])
def test_fused_trainer_step_is_one_op_without_table_reads(use_fused):
    model, optimizer = _compiled_model()
    trainer = FusedKLTrainer(model, use_fused=use_fused)
    trainer.compile(optimizer=optimizer)
    graph = _traced_step(trainer)
    assert _table_sized(graph) == []
    kinds = [op.type for op in graph.get_operations()]
    if use_fused:
        assert kinds.count("KerasGaussPairRankingStep") == 1
        # No TensorFlow op touches the tables: no batch-sized intermediates.
        assert not {"ResourceGather", "ResourceScatterUpdate"} & set(kinds)


def test_fused_trainer_trains_the_model_table_and_saves_the_optimizer(tmp_path):
    model, optimizer = _compiled_model()
    trainer = FusedKLTrainer(model)
    trainer.compile(optimizer=optimizer)
    rng = np.random.default_rng(0)
    x = {"general": rng.integers(0, ROWS, 64).astype("int32"),
         "specific": rng.integers(0, ROWS, 64).astype("int32"),
         "neg_general": rng.integers(0, ROWS, (64, NEGATIVES)).astype("int32"),
         "neg_specific": rng.integers(0, ROWS, (64, NEGATIVES)).astype("int32")}
    before = model.get_layer("nodes").means.numpy()
    trainer.fit(x, np.zeros((64, 1 + NEGATIVES)), batch_size=32, verbose=0)
    after = model.get_layer("nodes").means.numpy()
    assert not np.array_equal(before, after)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    np.testing.assert_array_equal(loaded.get_layer("nodes").means.numpy(), after)
    assert int(loaded.optimizer.iterations) == 2


def _hierarchy_batch(rng, vocab, batch, negatives):
    x = {"general": rng.integers(0, vocab, batch).astype("int32"),
         "specific": rng.integers(0, vocab, batch).astype("int32"),
         "neg_general": rng.integers(0, vocab, (batch, negatives)).astype("int32"),
         "neg_specific": rng.integers(0, vocab, (batch, negatives)).astype("int32")}
    y = np.zeros((batch, 1 + negatives), "float32")
    y[:, 0] = 1.0
    return x, y


@pytest.mark.parametrize("use_fused", [True, False])
def test_trainer_equals_keras_fit_of_the_hierarchy_model(use_fused):
    rng = np.random.default_rng(5)
    vocab, dim, negatives = 15, 5, 3
    bounds = dict(max_norm=0.9, min_variance=0.4, max_variance=1.7)
    keras_model = build_kl_model(vocab, dim, negatives=negatives, **bounds)
    fused_model = build_kl_model(vocab, dim, negatives=negatives, **bounds)
    values = [rng.uniform(-0.5, 0.5, (vocab, dim)).astype("float32"),
              rng.uniform(0.5, 1.6, (vocab, dim)).astype("float32")]
    for model in (keras_model, fused_model):
        nodes = model.get_layer("nodes")
        nodes.means.assign(values[0])
        nodes.variances.assign(values[1])
    # Two batches (the second smaller): the second step starts from the
    # tables and accumulators the first one wrote.
    x, y = _hierarchy_batch(rng, vocab, 48, negatives)
    keras_model.compile(optimizer=kg.SparseAdagrad(0.3), loss=kg.MaxMarginRanking(0.7))
    optimizer = kg.SparseAdagrad(0.3)
    fused_model.compile(optimizer=optimizer, loss=kg.MaxMarginRanking(0.7))
    trainer = FusedKLTrainer(fused_model, margin=0.7, use_fused=use_fused)
    trainer.compile(optimizer=optimizer)
    fit = dict(batch_size=32, epochs=2, verbose=0, shuffle=False)
    keras_loss = keras_model.fit(x, y, **fit).history["loss"]
    fused_loss = trainer.fit(x, y, **fit).history["loss"]

    np.testing.assert_allclose(fused_loss, keras_loss, **TOL)
    for name in ("means", "variances"):
        ours = getattr(fused_model.get_layer("nodes"), name)
        theirs = getattr(keras_model.get_layer("nodes"), name)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), **TOL)
        theirs_acc = keras_model.optimizer._accumulators[
            keras_model.optimizer._get_variable_index(theirs)]
        np.testing.assert_allclose(
            optimizer._accumulators[optimizer._get_variable_index(ours)].numpy(),
            theirs_acc.numpy(), **TOL)
    assert int(optimizer.iterations) == 4


def test_trainer_refuses_other_optimizers():
    trainer = FusedKLTrainer(build_kl_model(10, 4))
    with pytest.raises(TypeError, match="SparseAdagrad"):
        trainer.compile(optimizer=keras.optimizers.SGD(0.1))
