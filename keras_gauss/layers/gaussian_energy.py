import keras
import numpy as np

from keras_gauss import kernels


class GaussianEnergy(keras.layers.Layer):
    """Base of the energy layers: a score of two batches of diagonal Gaussians.

    A subclass implements `compute`, the `keras.ops` formula, and may name
    its descriptor (`energy`, a `keras_gauss.energies.Energy`, as the
    package's energies do; without one it runs `compute`); the base gives the
    call (the compiled kernel of `keras_gauss.kernels` in a training step
    where the descriptor lists `"kernels"` and one is available, else
    `compute`), float32 by default (also under `mixed_float16`, so that
    energies stay finite) and `get_config` (a subclass adds its own
    arguments to `kernel_options` and `get_config`).

    Args:
        **kwargs: `keras.layers.Layer` arguments.

    Call arguments:
        general_mean, general_var: `(..., d)` the first (general) side.
        specific_mean, specific_var: `(..., d)` the second (specific) side;
            symmetric energies do not tell them apart.

    Returns:
        `(...)` energies, higher for a better pair.

    Example: a new energy is one method (here the negative squared distance
    of the means).

    >>> from keras import ops
    >>> from keras_gauss.energies import Energy
    >>> class MeanDistance(GaussianEnergy):
    ...     energy = Energy("mean_distance", -1, "distance", "dist", None, "", "", ())
    ...     def compute(self, general_mean, general_var, specific_mean, specific_var):
    ...         return -ops.sum(ops.square(general_mean - specific_mean), axis=-1)
    >>> import numpy as np
    >>> float(MeanDistance()(np.zeros(2), np.ones(2), np.ones(2), np.ones(2)))
    -2.0
    """

    energy = None  # the subclass's keras_gauss.energies descriptor

    def __init__(self, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)

    def kernel_options(self):
        """Keyword arguments of the compiled kernel's `energy` (none here)."""
        return {}

    def compute(self, general_mean, general_var, specific_mean, specific_var):
        """The energy's `keras.ops` formula."""
        raise NotImplementedError(f"{type(self).__name__} must implement compute()")

    def call(self, general_mean, general_var, specific_mean, specific_var, training=None):
        self._check_dimensions(general_mean, general_var, specific_mean, specific_var)
        engines = () if self.energy is None else self.energy.engines
        kernel = kernels.get(training) if "kernels" in engines else None
        if kernel is not None:
            energy = kernel.energy(self.energy.name, general_mean, general_var,
                                   specific_mean, specific_var, **self.kernel_options())
            if energy is not None:
                return energy
        return self.compute(general_mean, general_var, specific_mean, specific_var)

    def compute_output_spec(self, *args, **kwargs):
        # Checked before Keras traces `call`, which would wrap the message in
        # "could not automatically infer the output shape".
        names = ("general_mean", "general_var", "specific_mean", "specific_var")
        self._check_dimensions(*args[:4], *(kwargs.get(n) for n in names[len(args[:4]):]))
        return super().compute_output_spec(*args, **kwargs)

    def _check_dimensions(self, *arrays):
        """One `ValueError` naming this layer where the Gaussians' shapes
        cannot pair up: their last axes (the dimension `d`; a variance may
        have 1, spherical), as when two tables of different `output_dim`
        meet, or their leading axes, which must broadcast; else the
        backend's broadcasting error, or Keras's "could not infer the output
        shape" when a functional model is built, would be all one sees."""
        shapes = [_static_shape(a) for a in arrays]
        dims = [shape[-1] if shape else None for shape in shapes]
        means = {dims[0], dims[2]} - {None}
        problem = None
        if len(means) > 1 or any(v not in (None, 1) and means and v not in means
                                 for v in (dims[1], dims[3])):
            problem = "must have the same dimension on their last axis (a variance may have 1)"
        else:
            try:  # unknown axes (None) broadcast with anything
                np.broadcast_shapes(*(tuple(1 if n is None else n for n in shape[:-1])
                                      for shape in shapes if shape))
            except ValueError:
                problem = "must broadcast on their leading axes"
        if problem is not None:
            names = ("first mean", "first variance", "second mean", "second variance")
            given = ", ".join(f"{n} {s}" for n, s in zip(names, shapes))
            raise ValueError(
                f"{type(self).__name__} '{self.name}': the two sides' Gaussians {problem}; "
                f"got shapes {given}.")


def _static_shape(array):
    """`array`'s shape as a tuple (None for unknown axes, also JAX's
    symbolic ones), or None where even its rank is unknown (a `tf.function`
    traced without shapes)."""
    try:
        shape = tuple(array.shape)
    except (AttributeError, TypeError, ValueError):
        return None
    return tuple(int(n) if isinstance(n, (int, np.integer)) else None for n in shape)
