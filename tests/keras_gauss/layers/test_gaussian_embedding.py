import json
import re

import keras
import numpy as np
import pytest
from backends import BACKEND
from backends import gradients
from backends import only_on_tensorflow
from layer_test_case import run_layer_test

from keras_gauss import GaussianEmbedding
from keras_gauss import NormClip
from keras_gauss import VarianceClip

IDS = np.array([[0, 3, 9], [2, 2, 5]], dtype="int32")


def _numpy(x):
    return keras.ops.convert_to_numpy(x)


def _out_of_range_error():
    """What an id outside `[0, input_dim)` raises on this backend."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        return tf.errors.InvalidArgumentError
    return IndexError


@pytest.mark.parametrize("covariance", ["diagonal", "spherical"])
def test_layer(covariance):
    run_layer_test(
        GaussianEmbedding,
        {"input_dim": 10, "output_dim": 4, "covariance": covariance},
        IDS,
        expected_output_shape=((2, 3, 4), (2, 3, 4)),
        expected_output_dtype="float32",
        expected_num_trainable_weights=2,
    )


def test_table_shapes_and_lookup():
    layer = GaussianEmbedding(10, 4)
    mean, var = layer(IDS)
    assert tuple(layer.means.shape) == (10, 4)
    assert tuple(layer.variances.shape) == (10, 4)
    np.testing.assert_array_equal(_numpy(mean), layer.means.numpy()[IDS])
    np.testing.assert_array_equal(_numpy(var), layer.variances.numpy()[IDS])


def test_spherical_variance_is_one_column_broadcast():
    layer = GaussianEmbedding(
        10, 4, covariance="spherical",
        variance_initializer=keras.initializers.RandomUniform(0.1, 3.0),
    )
    mean, var = layer(IDS)
    assert tuple(layer.variances.shape) == (10, 1)
    var = _numpy(var)
    assert var.shape == tuple(mean.shape) == (2, 3, 4)
    np.testing.assert_array_equal(var, np.broadcast_to(var[..., :1], var.shape))
    np.testing.assert_array_equal(var[..., 0], layer.variances.numpy()[IDS, 0])
    assert len(np.unique(var[..., 0])) > 1  # rows differ, columns do not


def test_default_initial_values():
    layer = GaussianEmbedding(50, 8)
    layer.build()
    means = layer.means.numpy()
    assert np.all(np.abs(means) <= 0.05) and np.std(means) > 0.01
    np.testing.assert_array_equal(layer.variances.numpy(), np.ones((50, 8)))


@pytest.mark.parametrize("covariance", ["diagonal", "spherical"])
def test_initial_values_are_projected_into_constraints(covariance):
    layer = GaussianEmbedding(
        200, 8, covariance=covariance,
        mean_initializer=keras.initializers.RandomNormal(stddev=10.0),
        variance_initializer=keras.initializers.RandomUniform(-5.0, 50.0),
        max_norm=1.5, min_variance=0.2, max_variance=3.0,
    )
    layer.build()
    norms = np.linalg.norm(layer.means.numpy(), axis=-1)
    variances = layer.variances.numpy()
    assert norms.max() <= 1.5 * (1 + 1e-6)
    assert norms.min() > 1.4  # every row was long and got scaled back
    assert variances.min() == pytest.approx(0.2)
    assert variances.max() == pytest.approx(3.0)
    assert isinstance(layer.means.constraint, NormClip)
    assert isinstance(layer.variances.constraint, VarianceClip)


def test_no_mean_constraint():
    layer = GaussianEmbedding(
        5, 3, max_norm=None,
        mean_initializer=keras.initializers.Constant(10.0),
    )
    layer.build()
    assert layer.means.constraint is None
    np.testing.assert_array_equal(layer.means.numpy(), np.full((5, 3), 10.0))
    assert GaussianEmbedding.from_config(layer.get_config()).max_norm is None


def test_float_ids_are_a_type_error():
    layer = GaussianEmbedding(10, 4)
    with pytest.raises(TypeError, match="integer ids"):
        layer(np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="integer ids"):
        layer(keras.Input((3,), dtype="float32"))


@pytest.mark.parametrize("bad_id", [-1, 10, 1000])
def test_out_of_range_ids_eager(bad_id):
    layer = GaussianEmbedding(10, 4)
    with pytest.raises(_out_of_range_error(), match=r"input_dim=10"):
        layer(np.array([1, bad_id]))


def _compiled(fn):
    """`fn` compiled as the backend compiles a step (torch: as it is)."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        return tf.function(fn)
    if BACKEND == "jax":
        import jax

        return jax.jit(fn)
    return fn


def _in_step_error():
    """What an id outside the table raises inside a compiled step."""
    if BACKEND == "jax":
        import jax

        # around the layer's IndexError (a ValueError from JAX's C++ dispatch)
        return (jax.errors.JaxRuntimeError, ValueError)
    return _out_of_range_error()


@pytest.mark.parametrize("bad_id", [-1, 10])
def test_out_of_range_ids_in_compiled_steps(bad_id):
    """A compiled call, `predict` and `fit` (jitted on JAX, graphs on
    TensorFlow) fail on an id outside the table with the layer's one line,
    never a NaN row (an id past the table) or the last row (-1)."""
    # (TensorFlow's graph assertions print the quotes as \')
    line = re.escape("GaussianEmbedding 'words': ids must lie in [0, input_dim=10)").replace(
        "'", r"\\?'")
    ids = np.array([[1, 9]] * 7 + [[1, bad_id]], "int32")

    def model():  # a fresh one each time: Keras on JAX drops a failed step's values
        keras.backend.clear_session(free_memory=False)
        layer = GaussianEmbedding(10, 4, name="words")
        inputs = keras.Input((2,), dtype="int32")
        out = keras.Model(inputs, keras.ops.sum(layer(inputs)[0], axis=-1))
        out.compile("sgd", "mse")
        return out, layer

    _, layer = model()
    lookup = _compiled(lambda x: layer(x)[0])
    np.testing.assert_array_equal(_numpy(lookup(ids[:1])), layer.means.numpy()[[[1, 9]]])
    with pytest.raises(_in_step_error(), match=line):
        _numpy(lookup(ids[-1:]))
    with pytest.raises(_in_step_error(), match=line):
        model()[0].predict(ids, batch_size=4, verbose=0)
    with pytest.raises(_in_step_error(), match=line):
        model()[0].fit(ids, np.zeros((8, 2), "float32"), batch_size=4, verbose=0)


@only_on_tensorflow("the graph assertions of predict (other backends: test above)")
def test_predict_on_tensorflow_names_the_id_outside_the_table():
    # predict's assertion printed the ids' first values ("[x (data:0) = ]
    # [0 1 2...]"), not the one outside; now its line is the train step's.
    layer = GaussianEmbedding(10, 4, name="words")
    inputs = keras.Input((2,), dtype="int32")
    model = keras.Model(inputs, layer(inputs)[0])
    ids = np.array([[0, 1], [2, 3], [4, 12], [-1, 5]], "int32")
    with pytest.raises(_out_of_range_error(),
                       match=r"input_dim=10\) \(id 12 outside \[0, 10\)\)\]\n"):
        model.predict(ids, verbose=0)
    with pytest.raises(_out_of_range_error(), match=r"\(id -1 outside \[0, 10\)\)"):
        model.predict(ids[3:], verbose=0)
    with pytest.raises(_out_of_range_error(), match=r"\(id 4294967299 outside \[0, 10\)\)"):
        layer(np.array([3, 2**32 + 3], "int64"))  # eager


@pytest.mark.skipif(BACKEND != "jax", reason="JAX only: its steps run asynchronously")
def test_a_gaussian_model_fit_on_jax_fails_inside_fit():
    """A JAX step that fails as it runs hands its error to its outputs, and
    Keras's logs dropped it: `fit` of steps big enough to run asynchronously
    returned, its loss a failed array, and the next read of the model raised.
    `GaussianModel` raises it in `fit` (at the epoch's end)."""
    import jax

    from keras_gauss import GaussianModel
    from keras_gauss import SparseAdagrad

    layer = GaussianEmbedding(1000, 16, name="words")
    inputs = keras.Input((20,), dtype="int32")
    model = GaussianModel(inputs, keras.ops.sum(layer(inputs)[0], axis=-1))
    model.compile(SparseAdagrad(0.1), "mse")
    ids = np.random.default_rng(0).integers(0, 1000, (8000, 20)).astype("int32")
    ids[5000, 3] = 1000
    with pytest.raises((jax.errors.JaxRuntimeError, ValueError),
                       match=re.escape("GaussianEmbedding 'words': ids must lie in "
                                       "[0, input_dim=1000)")):
        model.fit(ids, np.zeros((8000, 20), "float32"), batch_size=1000, verbose=0)
    # Where the failed step's outputs became the model's values, a later fit with
    # good ids says so (it said the old step's id again); else it trains
    try:
        model.fit(ids[:1000] % 1000, np.zeros((1000, 20), "float32"), verbose=0)
    except RuntimeError as error:
        assert str(error).startswith(
            f"model '{model.name}' lost its values in a step that failed earlier "
            "(GaussianEmbedding 'words': ids must lie in [0, input_dim=1000)"), str(error)


@pytest.mark.skipif(BACKEND != "jax", reason="JAX only: a failed step takes the values")
@pytest.mark.parametrize("call", ["fit", "predict"])
def test_a_failed_jax_step_is_one_line_and_the_model_then_says_its_values_are_lost(call):
    # Keras detaches the values for a fit or predict (and donates them): the next
    # call said "'NoneType' object is not callable"; a failed host check in
    # predict was 22 lines of the callback's traceback
    from keras_gauss import GaussianModel
    from keras_gauss import SparseAdagrad

    ids = keras.Input((2,), dtype="int32")
    mean, var = GaussianEmbedding(20, 3, name="words")(ids)
    energy = _pair_energy(mean, var)
    model = GaussianModel(ids, energy)
    model.compile(SparseAdagrad(0.1), "mse")
    bad, y = np.array([[0, 20]] * 4, "int32"), np.zeros((4, 1), "float32")
    run = (lambda x: model.fit(x, y, verbose=0)) if call == "fit" else (
        lambda x: model.predict(x, verbose=0))
    with pytest.raises(Exception) as failed:
        run(bad)
    assert len(str(failed.value).strip().splitlines()) == 1, str(failed.value)
    assert "'words': ids must lie in [0, input_dim=20)" in str(failed.value)
    with pytest.raises(RuntimeError, match=re.escape(
            f"model '{model.name}' lost its values in a step that failed earlier (")):
        run(bad % 20)


@pytest.mark.skipif(BACKEND != "jax", reason="JAX only: its steps in one lax.scan")
@pytest.mark.parametrize("bad_column", [None, 0, 1])
def test_scanned_steps_check_the_ids_once_a_call(monkeypatch, bad_column):
    """Where `GaussianModel` runs a call's steps in one `lax.scan` (a GPU;
    here asked for) and no kernel gathers (a GPU), the layers' id checks run
    once a call, after the steps: one `cond` for both layers, none in the
    steps (on a GPU each waits for the device). An id outside a table in
    any step of the call fails `fit` with that layer's line."""
    import jax

    from keras_gauss import ELEnergy
    from keras_gauss import GaussianModel
    from keras_gauss import SparseAdagrad

    monkeypatch.setenv("KERAS_GAUSS_KERNELS", "reference")  # what a GPU runs
    ids = keras.Input((2,), dtype="int32")
    words = GaussianEmbedding(20, 3, name="words")(ids[:, :1])
    contexts = GaussianEmbedding(20, 3, name="contexts")(ids[:, 1:])
    model = GaussianModel(ids, ELEnergy()(*words, *contexts))
    model.compile(SparseAdagrad(0.1), "mse", steps_per_execution=4)
    model.scan_steps = True
    x = np.random.default_rng(0).integers(0, 20, (32, 2)).astype("int32")
    y = np.zeros((32, 1), "float32")
    if bad_column is None:
        model.fit(x, y, batch_size=4, verbose=0)
        model.make_train_function(force=True)
        state = ([v.value for v in model.trainable_variables],
                 [v.value for v in model.non_trainable_variables],
                 [v.value for v in model.optimizer.variables],
                 [v.value for v in model.metrics_variables])
        batches = tuple((x[i:i + 4], y[i:i + 4]) for i in range(0, 16, 4))
        text = model.train_function.scan.lower(state, batches).compiler_ir(
            "hlo").as_hlo_text()
        assert text.count(" conditional(") == 1, text.count(" conditional(")
        return
    x[22, bad_column] = 20  # the 2nd call's 2nd step
    name = ("words", "contexts")[bad_column]
    with pytest.raises((jax.errors.JaxRuntimeError, ValueError), match=re.escape(
            f"GaussianEmbedding '{name}': ids must lie in [0, input_dim=20)")):
        model.fit(x, y, batch_size=4, verbose=0)


def _pair_energy(mean, var):
    from keras_gauss import ELEnergy

    return ELEnergy()(mean[:, :1], var[:, :1], mean[:, 1:], var[:, 1:])


@pytest.mark.skipif(BACKEND != "jax", reason="JAX only: jax2tf cannot serialize the "
                    "range check's host callback (TensorFlow exports its assertions)")
def test_model_export_on_jax_serves_nan_rows_for_ids_outside(tmp_path):
    """`model.export` converts the layer with jax2tf, which cannot serialize
    the check's callback: the export works and an id outside the table
    (past it, or -1) reads a NaN row there, never another row."""
    import tensorflow as tf

    layer = GaussianEmbedding(10, 4, name="words")
    inputs = keras.Input((2,), dtype="int32")
    model = keras.Model(inputs, layer(inputs)[0])
    model.export(str(tmp_path / "served"), format="tf_saved_model", verbose=False)
    served = tf.saved_model.load(str(tmp_path / "served"))
    means = layer.means.numpy()
    np.testing.assert_array_equal(served.serve(tf.constant([[1, 9]])).numpy()[0],
                                  means[[1, 9]])
    rows = served.serve(tf.constant([[1, 10], [-1, 3]])).numpy()
    np.testing.assert_array_equal(rows[[0, 1], [0, 1]], means[[1, 3]])
    assert np.isnan(rows[[0, 1], [1, 0]]).all()


@pytest.mark.skipif(BACKEND != "jax", reason="JAX only: TensorFlow and torch keep int64 ids")
def test_a_table_past_int32_ids_needs_x64_on_jax():
    # Without jax_enable_x64 JAX turns int64 ids into int32: ids from 2**31
    # on wrapped (2**32 + 3 read row 3) in a table that has such rows.
    import jax

    if jax.config.jax_enable_x64:
        pytest.skip("jax_enable_x64 is on: 64-bit ids are kept")
    with pytest.raises(ValueError, match=r"^`input_dim`=2,147,483,648: ids above 2\*\*31 - 1 "
                                         r"need 64-bit integers, .*jax_enable_x64"):
        GaussianEmbedding(2**31, 4)
    assert GaussianEmbedding(2**31 - 1, 4).input_dim == 2**31 - 1  # (not built: no table)


@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_numpy_ids_past_32_bits_fail_the_range_check(dtype):
    # On JAX without x64, Keras cut NumPy's int64 2**32 + 3 to 3 before the
    # layer saw it: row 3, silently.
    layer = GaussianEmbedding(10, 4, name="words")
    with pytest.raises(_out_of_range_error(), match=r"input_dim=10"):
        layer(np.array([1, 2**32 + 3], dtype))


def test_string_ids_are_a_type_error():
    # JAX said "could not convert string to float: np.str_('cat')"
    layer = GaussianEmbedding(10, 4)
    with pytest.raises(TypeError, match="expects integer ids, got dtype str"):
        layer(np.array(["cat"]))


@only_on_tensorflow("ragged and sparse tensors are TensorFlow's")
def test_ragged_and_sparse_ids_are_a_type_error():
    # "object of type 'RaggedTensor' has no len()" deep in the call
    import tensorflow as tf

    layer = GaussianEmbedding(10, 4, name="words")
    with pytest.raises(TypeError, match=r"^GaussianEmbedding 'words' expects a dense tensor "
                                        r"of ids, got a RaggedTensor: pad it first "
                                        r"\(ids.to_tensor\(\)\)\.$"):
        layer(tf.ragged.constant([[1, 2], [3]]))
    with pytest.raises(TypeError, match=r"got a SparseTensor: .*tf.sparse.to_dense"):
        layer(tf.sparse.from_dense(tf.constant([[1, 0], [0, 2]])))


def test_int64_and_small_int_ids():
    layer = GaussianEmbedding(10, 4)
    a = _numpy(layer(np.array([3, 7], dtype="int64"))[0])
    b = _numpy(layer(np.array([3, 7], dtype="uint8"))[0])
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "kwargs, error, argument",
    [
        ({"input_dim": 0}, ValueError, "input_dim"),
        ({"input_dim": -3}, ValueError, "input_dim"),
        ({"input_dim": 2.5}, ValueError, "input_dim"),
        ({"output_dim": 0}, ValueError, "output_dim"),
        ({"output_dim": True}, ValueError, "output_dim"),
        ({"covariance": "full"}, ValueError, "covariance"),
        ({"max_norm": 0.0}, ValueError, "max_norm"),
        ({"max_norm": -1.0}, ValueError, "max_norm"),
        ({"max_norm": "two"}, TypeError, "max_norm"),
        ({"min_variance": 0.0}, ValueError, "min_variance"),
        ({"min_variance": -0.1}, ValueError, "min_variance"),
        ({"min_variance": 6.0, "max_variance": 5.0}, ValueError, "max_variance"),
        ({"min_variance": "small"}, TypeError, "min_variance"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, error, argument):
    kwargs = {"input_dim": 10, "output_dim": 4, **kwargs}
    with pytest.raises(error, match=argument):
        GaussianEmbedding(**kwargs)


def test_equal_min_and_max_variance_is_allowed():
    layer = GaussianEmbedding(3, 2, min_variance=0.5, max_variance=0.5)
    layer.build()
    np.testing.assert_array_equal(layer.variances.numpy(), np.full((3, 2), 0.5))


def test_shared_table_called_twice():
    table = GaussianEmbedding(10, 4, name="nodes")
    left = keras.Input((1,), dtype="int32")
    right = keras.Input((3,), dtype="int32")
    mean_l, var_l = table(left)
    mean_r, var_r = table(right)
    model = keras.Model([left, right], [mean_l, mean_r])
    assert len(model.trainable_weights) == 2  # one means and one variances

    def loss():
        out_l, out_r = model([np.array([[1]]), np.array([[1, 2, 3]])])
        return keras.ops.sum(out_l) + 2.0 * keras.ops.sum(out_r)

    grad, = gradients(loss, [table.means])
    # id 1 is looked up on both sides: the gradients add up.
    np.testing.assert_allclose(grad[1], np.full(4, 3.0))
    np.testing.assert_allclose(grad[2], np.full(4, 2.0))
    np.testing.assert_allclose(grad[0], np.zeros(4))


def test_numpy_integer_sizes_are_taken_and_saved_as_ints():
    # `ids.max() + 1` is a NumPy integer; Keras's own Embedding takes it
    layer = GaussianEmbedding(np.int64(10), np.int32(4), max_norm=np.float32(1.5),
                              min_variance=np.float64(0.1))
    config = layer.get_config()
    assert (config["input_dim"], config["output_dim"]) == (10, 4)
    assert all(type(config[key]) is int for key in ("input_dim", "output_dim"))
    assert (config["max_norm"], config["min_variance"]) == (1.5, 0.1)
    json.dumps(config)  # as `model.save` writes it


@pytest.mark.parametrize("argument", ["mean_initializer", "variance_initializer"])
def test_an_unknown_initializer_names_the_argument(argument):
    with pytest.raises(ValueError, match=f"`{argument}`.*nope"):
        GaussianEmbedding(10, 4, **{argument: "nope"})


@pytest.mark.parametrize("kwargs, argument", [({"min_variance": 1e-50}, "min_variance"),
                                              ({"max_variance": 1e50}, "max_variance")])
def test_variance_bounds_the_float32_tables_cannot_hold_are_refused(kwargs, argument):
    # 1e-50 is 0 in float32: the clip let zero variances in (energies NaN);
    # 1e50 is infinity there: no bound.
    with pytest.raises(ValueError, match=f"^`{argument}` 1e[+-]50: the tables are float32"):
        GaussianEmbedding(10, 4, **kwargs)
    if BACKEND != "jax":  # (JAX without x64 has no float64 tables)
        assert GaussianEmbedding(10, 4, dtype="float64", **kwargs).min_variance > 0


@pytest.mark.parametrize("argument, value", [("mean_initializer", float("nan")),
                                             ("mean_initializer", float("inf")),
                                             ("variance_initializer", float("nan"))])
def test_an_initializer_that_gives_nan_or_inf_is_refused_at_build(argument, value):
    # the clips into the bounds keep a NaN (an infinite variance is clipped to the bound)
    layer = GaussianEmbedding(3, 2, name="words", **{argument: keras.initializers.Constant(value)})
    with pytest.raises(ValueError, match=f"'words': `{argument}` gave non-finite values"):
        layer.build()
