import keras
import numpy as np
import pytest
from backends import BACKEND
from backends import dense_gradient
from backends import only_on_tensorflow
from backends import row_gradient
from recording import RecordingSparseAdagrad

from keras_gauss import ELEnergy
from keras_gauss import GaussianEmbedding
from keras_gauss import GaussianModel
from keras_gauss import MaxMarginRanking
from keras_gauss import SparseAdagrad

HYPER = {"learning_rate": 0.3, "initial_accumulator_value": 0.2, "epsilon": 1e-5}


def _accumulator(optimizer, variable):
    return optimizer._accumulators[optimizer._get_variable_index(variable)].numpy()


def _train_embedding(optimizer, ids, steps=4, densify=False):
    """A few steps of a weighted squared loss on an unconstrained table,
    `sum_i w_i (table[ids_i] - target_i)^2`, whose gradient is one row per
    lookup (`2 w_i (table[ids_i] - target_i)`), given as the backend's sparse
    gradient (`densify`: as the dense array of the table's shape)."""
    table = keras.Variable(np.random.default_rng(1).normal(size=(8, 3)), dtype="float32")
    target = np.random.default_rng(2).normal(size=(len(ids), 3))
    weights = np.arange(1, len(ids) + 1, dtype="float32")[:, None]
    for _ in range(steps):
        rows = 2 * weights * (table.numpy()[ids] - target)
        grad = (dense_gradient if densify else row_gradient)(ids, rows, (8, 3))
        optimizer.apply([grad], [table])
    return table.numpy(), _accumulator(optimizer, table)


def test_equals_keras_adagrad_without_duplicates():
    ids = [1, 3, 6]
    ours, ours_acc = _train_embedding(SparseAdagrad(**HYPER), ids)
    theirs, theirs_acc = _train_embedding(keras.optimizers.Adagrad(**HYPER), ids,
                                          densify=True)
    initial = np.random.default_rng(1).normal(size=(8, 3)).astype("float32")
    assert np.abs(ours[ids] - initial[ids]).max() > 0.1  # it did train
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ours_acc, theirs_acc, rtol=1e-6, atol=1e-6)


def test_duplicate_ids_equal_adagrad_on_the_summed_gradient():
    # The exact minibatch gradient of a repeated row is the sum of its
    # lookups' gradients; Adagrad squares that sum. Keras's Adagrad given the
    # densified gradient does exactly this.
    ids = [1, 3, 1, 1]
    ours, ours_acc = _train_embedding(SparseAdagrad(**HYPER), ids)
    dense, dense_acc = _train_embedding(
        keras.optimizers.Adagrad(**HYPER), ids, densify=True)
    np.testing.assert_allclose(ours, dense, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ours_acc, dense_acc, rtol=1e-6, atol=1e-5)
    if BACKEND == "tensorflow":
        # Keras's own IndexedSlices path squares each lookup's gradient before
        # summing, which is not Adagrad on the minibatch gradient.
        keras_sparse, _ = _train_embedding(keras.optimizers.Adagrad(**HYPER), ids)
        assert np.abs(keras_sparse - dense).max() > 1e-3


def test_a_dense_table_gradient_equals_adagrad():
    # A dense gradient of a table (a plain `keras.Model` on JAX or torch):
    # on torch and JAX only its non-zero rows are updated; the same numbers.
    ids = [1, 3, 1, 1]
    ours, ours_acc = _train_embedding(SparseAdagrad(**HYPER), ids, densify=True)
    theirs, theirs_acc = _train_embedding(keras.optimizers.Adagrad(**HYPER), ids,
                                          densify=True)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ours_acc, theirs_acc, rtol=1e-6, atol=1e-5)
    np.testing.assert_array_equal(ours[[0, 2, 4, 5, 6, 7]], np.random.default_rng(1).normal(
        size=(8, 3)).astype("float32")[[0, 2, 4, 5, 6, 7]])


def _table_with_an_infeasible_row():
    table = GaussianEmbedding(10, 4, max_norm=1.0, min_variance=0.1, max_variance=2.0)
    table.build()
    means = table.means.numpy()
    means[7] = 5.0  # norm 10 > C
    table.means.assign(means)
    variances = table.variances.numpy()
    variances[7] = [100.0, 0.001, 1.0, 1.0]  # outside [m, M]
    table.variances.assign(variances)
    return table


def _one_step(table, optimizer, ids, densify=False):
    """One step of `sum(3 * mean) + sum(var)` over the lookups of `ids`."""
    grads = [(dense_gradient if densify else row_gradient)(ids, np.full((len(ids), v.shape[1]), g),
                                                  v.shape)
             for v, g in ((table.means, 3.0), (table.variances, 1.0))]
    optimizer.apply(grads, [table.means, table.variances])


def test_untouched_rows_and_accumulators_are_bit_identical():
    table = _table_with_an_infeasible_row()
    before_means, before_vars = table.means.numpy(), table.variances.numpy()
    optimizer = SparseAdagrad(learning_rate=10.0, initial_accumulator_value=0.1)
    _one_step(table, optimizer, [0, 2, 2, 5])

    untouched = [1, 3, 4, 6, 7, 8, 9]
    np.testing.assert_array_equal(table.means.numpy()[untouched], before_means[untouched])
    np.testing.assert_array_equal(
        table.variances.numpy()[untouched], before_vars[untouched])
    for variable in (table.means, table.variances):
        acc = _accumulator(optimizer, variable)
        np.testing.assert_array_equal(acc[untouched], np.float32(0.1))
        assert np.all(acc[[0, 2, 5]] > 0.1)
    # the touched rows moved and were projected
    touched_norms = np.linalg.norm(table.means.numpy()[[0, 2, 5]], axis=-1)
    np.testing.assert_allclose(touched_norms, 1.0, rtol=1e-6)
    np.testing.assert_array_equal(table.variances.numpy()[[0, 2, 5]], np.float32(0.1))

    # A dense optimizer projects every row, the infeasible one included.
    dense_table = _table_with_an_infeasible_row()
    _one_step(dense_table, keras.optimizers.Adagrad(learning_rate=10.0), [0, 2, 5],
              densify=True)
    assert np.linalg.norm(dense_table.means.numpy()[7]) == pytest.approx(1.0, rel=1e-6)


def _corpus_model(optimizer_factory, vocab=30, dim=8, negatives=3):
    words = GaussianEmbedding(vocab, dim, name="words", max_norm=1.0,
                              min_variance=0.1, max_variance=2.0)
    contexts = GaussianEmbedding(vocab, dim, name="contexts", max_norm=1.0,
                                 min_variance=0.1, max_variance=2.0)
    word = keras.Input((1,), dtype="int32")
    context = keras.Input((1 + negatives,), dtype="int32")
    energies = ELEnergy()(*words(word), *contexts(context))
    model = GaussianModel([word, context], energies)  # row gradients on every backend
    optimizer = optimizer_factory(words, contexts)
    # (torch runs one step per call)
    model.compile(optimizer=optimizer, loss=MaxMarginRanking(),
                  steps_per_execution=1 if BACKEND == "torch" else 4)
    return model, optimizer


def test_constraints_hold_after_every_step_of_fit():
    model, optimizer = _corpus_model(
        lambda words, contexts: RecordingSparseAdagrad(
            norm_tables=[words.means, contexts.means],
            range_tables=[words.variances, contexts.variances],
            learning_rate=100.0,
        )
    )
    rng = np.random.default_rng(0)
    n, batch = 64, 8
    x = [rng.integers(0, 30, (n, 1)), rng.integers(0, 30, (n, 4))]
    y = np.tile(np.array([[1.0, 0.0, 0.0, 0.0]], "float32"), (n, 1))
    history = model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False)

    assert int(optimizer.steps.numpy()) == n // batch  # every step was observed
    assert np.isfinite(history.history["loss"][0])
    max_norm = float(optimizer.max_row_norm.numpy())
    assert max_norm <= 1.0 + 1e-6
    assert max_norm > 0.99  # the huge steps did reach the bound
    assert float(optimizer.min_value.numpy()) >= 0.1 * (1 - 1e-6)
    assert float(optimizer.max_value.numpy()) <= 2.0 * (1 + 1e-6)
    assert float(optimizer.min_value.numpy()) == pytest.approx(0.1)


def test_a_loss_scale_factor_trains_as_without_it():
    # On TensorFlow, Keras's `apply` divided the tables' tf.IndexedSlices by
    # the factor: "unsupported operand type(s) for /: 'IndexedSlices' and 'float'"
    rng = np.random.default_rng(0)
    x = [rng.integers(0, 30, (32, 1)), rng.integers(0, 30, (32, 4))]
    y = np.tile(np.array([[1.0, 0.0, 0.0, 0.0]], "float32"), (32, 1))

    def fit(**settings):
        keras.utils.set_random_seed(0)
        model, _ = _corpus_model(lambda words, contexts: SparseAdagrad(0.5, **settings))
        model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
        return [w.numpy() for w in model.weights]

    for plain, scaled in zip(fit(), fit(loss_scale_factor=4.0)):
        np.testing.assert_allclose(scaled, plain, rtol=1e-5, atol=1e-7)


def test_dense_gradients_take_the_dense_path():
    def train(optimizer):
        keras.utils.set_random_seed(3)
        dense = keras.layers.Dense(3, kernel_constraint=keras.constraints.NonNeg())
        dense.build((None, 4))
        x = np.random.default_rng(4).normal(size=(5, 4)).astype("float32")
        for _ in range(3):  # the gradients of sum((x K + b)^2)
            out = 2 * (x @ dense.kernel.numpy() + dense.bias.numpy())
            optimizer.apply([keras.ops.convert_to_tensor(g) for g in (x.T @ out, out.sum(0))],
                            dense.trainable_variables)
        return [w.numpy() for w in dense.trainable_variables]

    ours = train(SparseAdagrad(**HYPER))
    theirs = train(keras.optimizers.Adagrad(**HYPER))
    assert ours[0].min() >= 0.0  # the non-row-wise constraint still applies
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_config_round_trip():
    optimizer = SparseAdagrad(learning_rate=0.02, initial_accumulator_value=0.5,
                              epsilon=1e-6)
    config = optimizer.get_config()
    assert config["initial_accumulator_value"] == 0.5
    assert config["epsilon"] == 1e-6
    assert config["learning_rate"] == pytest.approx(0.02)
    assert SparseAdagrad.from_config(config).get_config() == config
    revived = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(optimizer))
    assert isinstance(revived, SparseAdagrad) and revived.get_config() == config


def test_numpy_settings_are_taken():
    # Keras's base optimizer refused a NumPy learning rate with a long message
    optimizer = SparseAdagrad(np.float32(0.25), initial_accumulator_value=np.float64(0.5),
                              epsilon=np.float32(1e-6))
    config = optimizer.get_config()
    assert config["learning_rate"] == pytest.approx(0.25)
    assert type(config["initial_accumulator_value"]) is float and type(config["epsilon"]) is float


def test_a_zero_accumulator_and_epsilon_together_are_an_error():
    # a row in the batch with a zero gradient stepped by 0 / sqrt(0): NaN tables
    with pytest.raises(ValueError, match="`epsilon` must be > 0"):
        SparseAdagrad(initial_accumulator_value=0.0, epsilon=0.0)
    SparseAdagrad(initial_accumulator_value=0.0, epsilon=1e-7)  # either alone is fine
    SparseAdagrad(initial_accumulator_value=1e-6, epsilon=0.0)


def test_negative_initial_accumulator_is_an_error():
    with pytest.raises(ValueError, match="initial_accumulator_value"):
        SparseAdagrad(initial_accumulator_value=-0.1)


class _FromStep(keras.optimizers.schedules.LearningRateSchedule):
    """0.1, then `value` from step `at` on."""

    def __init__(self, value, at=2):
        self.value, self.at = value, at

    def __call__(self, step):
        return keras.ops.where(step >= self.at, self.value, 0.1)


def _schedule_fits(values):
    """Fits one `_corpus_model` with `SparseAdagrad(_FromStep(value))` for each
    rate value (a string) on the backend of this process; returns what each
    did: `"VALUE FIT OK"` or `"VALUE ERROR <the SparseAdagrad line>"`, and on
    TensorFlow `"VALUE FINITE True|False"` (the tables after the fit; Keras on
    JAX drops a failed fit's values)."""
    lines = []
    for value in values:
        model, _ = _corpus_model(lambda w, c: SparseAdagrad(_FromStep(float(value))))
        rng = np.random.default_rng(0)
        x = [rng.integers(0, 30, (64, 1)), rng.integers(0, 30, (64, 4))]
        y = np.tile(np.array([[1.0, 0.0, 0.0, 0.0]], "float32"), (64, 1))
        try:
            model.fit(x, y, batch_size=8, epochs=1, verbose=0)
            lines.append(f"{value} FIT OK")
        except Exception as error:
            said = [line for line in str(error).splitlines() if "SparseAdagrad:" in line]
            lines.append(f"{value} ERROR {said[-1] if said else error!r}")
        if keras.backend.backend() == "tensorflow":
            finite = all(np.isfinite(w.numpy()).all() for w in model.trainable_weights)
            lines.append(f"{value} FINITE {finite}")
    return lines


@only_on_tensorflow("starts its own TensorFlow and JAX children")
@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_a_schedule_giving_nan_inf_or_a_negative_rate_is_one_clear_error(backend, request):
    """A schedule that turns NaN (or inf, or negative) at step 2 stops `fit`
    there with an error naming the value and the step; no table turns NaN.
    A rate of 0 (a decay's end) is fine. TensorFlow here; JAX in the tests'
    one JAX child (`jax_job`: `_schedule_fits` of the same four values)."""
    cases = (("nan", "gave nan at step 2"), ("inf", "gave inf at step 2"),
             ("-1", "gave -1"), ("0", None))
    if backend == "tensorflow":
        lines = _schedule_fits([value for value, _ in cases])
    else:
        _, lines = request.getfixturevalue("jax_job")("schedules")
    for value, words in cases:
        said = " ".join(line for line in lines if line.split(" ", 1)[0] == value)
        assert backend == "jax" or "FINITE True" in said, lines
        if words is None:
            assert "FIT OK" in said, lines
        else:
            assert "ERROR" in said and words in said, lines
            assert "must be finite and >= 0" in said


@pytest.mark.skipif(BACKEND != "torch", reason="TensorFlow and JAX: in the children of "
                    "test_a_schedule_giving_nan_inf_or_a_negative_rate_is_one_clear_error")
@pytest.mark.parametrize("value, words", [("nan", "gave nan at step 2"),
                                          ("-1", "gave -1.0 at step 2"), ("0", None)])
def test_on_torch_a_bad_schedule_stops_fit_with_one_clear_error(value, words):
    from keras_gauss.optimizers.sparse_adagrad import LearningRateError

    model, _ = _corpus_model(lambda w, c: SparseAdagrad(_FromStep(float(value))))
    rng = np.random.default_rng(0)
    x = [rng.integers(0, 30, (64, 1)), rng.integers(0, 30, (64, 4))]
    y = np.tile(np.array([[1.0, 0.0, 0.0, 0.0]], "float32"), (64, 1))
    if words is None:
        model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    else:
        with pytest.raises(LearningRateError, match=words):
            model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    assert all(np.isfinite(w.numpy()).all() for w in model.trainable_weights)


def test_a_plain_callable_rate_is_checked_at_once():
    from keras_gauss.optimizers.sparse_adagrad import LearningRateError

    optimizer = SparseAdagrad(lambda: float("nan"))
    with pytest.raises(LearningRateError, match="gave nan at step 0"):
        _train_embedding(optimizer, [1, 2], steps=1)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -0.1])
def test_setting_a_bad_learning_rate_later_is_an_error(value):
    optimizer = SparseAdagrad(0.1)
    with pytest.raises(ValueError, match="`learning_rate` must be"):
        optimizer.learning_rate = value
    optimizer.learning_rate = 0.05  # a number in range, or a schedule, is taken
    assert float(optimizer.learning_rate) == pytest.approx(0.05)
