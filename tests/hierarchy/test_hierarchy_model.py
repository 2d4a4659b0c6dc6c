"""The hierarchy model's training step touches only the rows of its batch, and
the fused C++ pair step equals `fit` of the Keras model on the reference ops."""

import numpy as np
import tensorflow as tf

import keras_gauss as kg
from keras_gauss.fused import pair_ranking_step
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


def _hierarchy_batch(rng, vocab, batch, negatives):
    x = {"general": rng.integers(0, vocab, batch).astype("int32"),
         "specific": rng.integers(0, vocab, batch).astype("int32"),
         "neg_general": rng.integers(0, vocab, (batch, negatives)).astype("int32"),
         "neg_specific": rng.integers(0, vocab, (batch, negatives)).astype("int32")}
    y = np.zeros((batch, 1 + negatives), "float32")
    y[:, 0] = 1.0
    return x, y


def test_pair_step_equals_keras_fit_of_the_hierarchy_model(monkeypatch):
    monkeypatch.setenv("KERAS_GAUSS_KERNELS", "reference")  # the keras.ops code
    rng = np.random.default_rng(5)
    vocab, dim, negatives = 15, 5, 3
    bounds = dict(max_norm=0.9, min_variance=0.4, max_variance=1.7)
    keras_model = build_kl_model(vocab, dim, negatives=negatives, **bounds)
    values = [rng.uniform(-0.5, 0.5, (vocab, dim)).astype("float32"),
              rng.uniform(0.5, 1.6, (vocab, dim)).astype("float32")]
    nodes = keras_model.get_layer("nodes")
    nodes.means.assign(values[0])
    nodes.variances.assign(values[1])
    # Two batches (the second smaller), two epochs: every step starts from the
    # tables and accumulators the one before wrote.
    x, y = _hierarchy_batch(rng, vocab, 48, negatives)
    keras_model.compile(optimizer=kg.SparseAdagrad(0.3), loss=kg.MaxMarginRanking(0.7))
    keras_loss = keras_model.fit(x, y, batch_size=32, epochs=2, verbose=0,
                                 shuffle=False).history["loss"]

    tables = [tf.Variable(v) for v in values]
    optimizer = kg.SparseAdagrad(0.3)
    optimizer.build(tables)
    accumulators = [optimizer._accumulators[optimizer._get_variable_index(v)].value
                    for v in tables]
    general = np.concatenate([x["general"][:, None], x["neg_general"]], 1)
    specific = np.concatenate([x["specific"][:, None], x["neg_specific"]], 1)
    fused_loss = []
    for _ in range(2):
        losses = [float(pair_ranking_step(tables * 2, accumulators * 2, general[rows],
                                          specific[rows], learning_rate=0.3, margin=0.7,
                                          epsilon=optimizer.epsilon, **bounds)) * (rows.stop - rows.start)
                  for rows in (slice(0, 32), slice(32, 48))]
        fused_loss.append(sum(losses) / 48)

    np.testing.assert_allclose(fused_loss, keras_loss, **TOL)
    for ours, name, accumulator in zip(tables, ("means", "variances"), accumulators):
        theirs = getattr(nodes, name)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), **TOL)
        theirs_acc = keras_model.optimizer._accumulators[
            keras_model.optimizer._get_variable_index(theirs)]
        np.testing.assert_allclose(accumulator.numpy(), theirs_acc.numpy(), **TOL)
        assert not np.allclose(ours.numpy(), values[0 if name == "means" else 1])
