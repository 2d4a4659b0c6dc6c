"""`run_layer_test`: the standard checks every keras_gauss layer must pass.

Modelled on keras-hub's `TestCase.run_layer_test`, for layers that take
several positional tensors and may return a tuple of tensors:

1. config round trip (`from_config(get_config())`) and Keras serialization;
2. a symbolic call on `keras.Input`s gives the expected shapes;
3. an eager call gives the expected shapes, and a layer re-created from its
   config with copied weights gives equal outputs;
4. one `fit` step of a tiny model built around the layer lowers the loss,
   changes the weights and produces no NaN.
"""

import json

import keras
import numpy as np
from keras import ops


class _PositiveScale(keras.layers.Layer):
    """`x * exp(w)`: a trainable, sign-preserving input transform.

    It gives weightless layers (the energies) something to train, and keeps
    variances positive.
    """

    def build(self, input_shape):
        self.log_scale = self.add_weight(
            shape=(input_shape[-1],), initializer="zeros", name="log_scale"
        )

    def call(self, x):
        return x * ops.exp(self.log_scale)


def _as_tuple(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _shapes(outputs):
    return tuple(tuple(o.shape) for o in _as_tuple(outputs))


def _expected_shapes(expected_output_shape):
    if expected_output_shape and isinstance(expected_output_shape[0], tuple):
        return tuple(expected_output_shape)
    return (tuple(expected_output_shape),)


def _is_float(dtype):
    return "float" in keras.backend.standardize_dtype(dtype)


def run_layer_test(
    layer_cls,
    init_kwargs,
    input_data,
    expected_output_shape,
    expected_output_dtype=None,
    expected_num_trainable_weights=None,
    run_training_check=True,
):
    """Runs the standard layer checks.

    Args:
        layer_cls: the layer class.
        init_kwargs: keyword arguments of the constructor.
        input_data: one numpy array or a tuple of arrays (positional inputs).
        expected_output_shape: a shape tuple, or a tuple of shape tuples for
            layers that return several tensors.
        expected_output_dtype: dtype every output must have, or None.
        expected_num_trainable_weights: number of trainable weights after
            building, or None to skip the check.
        run_training_check: run the one-step `fit` check.
    """
    inputs = tuple(np.asarray(x) for x in _as_tuple(input_data))
    expected_shapes = _expected_shapes(expected_output_shape)

    # 1. Config round trip and serialization.
    layer = layer_cls(**init_kwargs)
    config = layer.get_config()
    json.dumps(config)  # the config must be JSON serializable
    revived = layer_cls.from_config(config)
    assert revived.get_config() == config
    serialized = keras.saving.serialize_keras_object(layer)
    json.dumps(serialized)
    deserialized = keras.saving.deserialize_keras_object(serialized)
    assert type(deserialized) is layer_cls
    assert deserialized.get_config() == config

    # 2. Symbolic call.
    symbolic_inputs = [
        keras.Input(batch_shape=x.shape, dtype=str(x.dtype)) for x in inputs
    ]
    symbolic_outputs = layer_cls(**init_kwargs)(*symbolic_inputs)
    assert _shapes(symbolic_outputs) == expected_shapes
    if expected_output_dtype is not None:
        for output in _as_tuple(symbolic_outputs):
            assert output.dtype == expected_output_dtype

    # 3. Eager call, and equal outputs for a re-created layer.
    layer = layer_cls(**init_kwargs)
    outputs = layer(*inputs)
    assert _shapes(outputs) == expected_shapes
    if expected_output_dtype is not None:
        for output in _as_tuple(outputs):
            assert keras.backend.standardize_dtype(output.dtype) == (
                expected_output_dtype
            )
    if expected_num_trainable_weights is not None:
        assert len(layer.trainable_weights) == expected_num_trainable_weights
    recreated = layer_cls.from_config(layer.get_config())
    recreated(*inputs)
    recreated.set_weights(layer.get_weights())
    for a, b in zip(_as_tuple(outputs), _as_tuple(recreated(*inputs))):
        np.testing.assert_array_equal(ops.convert_to_numpy(a), ops.convert_to_numpy(b))

    # 4. One training step of a tiny model around the layer.
    if run_training_check:
        _check_training_step(layer_cls, init_kwargs, inputs)


def _check_training_step(layer_cls, init_kwargs, inputs):
    symbolic_inputs = [
        keras.Input(batch_shape=x.shape, dtype=str(x.dtype)) for x in inputs
    ]
    transformed = [
        _PositiveScale()(x) if _is_float(x.dtype) else x for x in symbolic_inputs
    ]
    outputs = _as_tuple(layer_cls(**init_kwargs)(*transformed))
    # One scalar per example: the sum of every output over its non-batch axes.
    total = None
    for output in outputs:
        flat = keras.layers.Flatten()(output) if len(output.shape) > 1 else (
            keras.layers.Reshape((1,))(output)
        )
        summed = keras.layers.Dense(
            1, kernel_initializer="ones", use_bias=False, trainable=False
        )(flat)
        total = summed if total is None else keras.layers.Add()([total, summed])
    model = keras.Model(symbolic_inputs, total)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
    batch = inputs[0].shape[0]
    y = np.full((batch, 1), -100.0, "float32")  # far from any output

    before_weights = [w.copy() for w in model.get_weights()]
    assert model.trainable_weights, "nothing to train"
    loss_before = model.evaluate(list(inputs), y, verbose=0)
    history = model.fit(list(inputs), y, batch_size=batch, epochs=1, verbose=0)
    loss_after = model.evaluate(list(inputs), y, verbose=0)

    assert np.isfinite(history.history["loss"][0])
    assert np.isfinite(loss_after)
    assert loss_after < loss_before
    after_weights = model.get_weights()
    assert all(np.all(np.isfinite(w)) for w in after_weights)
    assert any(
        not np.array_equal(a, b) for a, b in zip(before_weights, after_weights)
    ), "no weight changed"
