"""JAX on CPU: the layers' kernels as XLA FFI calls into `fused/jax_ops.cc`.

`energy` (a `jax.custom_vjp` whose backward is the gradient kernel),
`lookup` (a row gather whose gradient is a scatter-add kernel into a dense
table: what `jax.grad` of a gather must return), and SparseAdagrad's row
update from rows (`adagrad_rows`, GaussianModel's row gradients) or from a
dense gradient (`adagrad_dense`: the rows holding a nonzero value), updating
the table and accumulator in place (`input_output_aliases`). Each returns
None for what the kernels do not cover, and the caller runs the reference.
"""

import functools

import jax
import numpy as np
from jax import numpy as jnp

from keras_gauss import energies
from keras_gauss.fused import build as _build
from keras_gauss.kernels.grid import pair_grid

_TARGETS = {
    "keras_gauss_energy": "KgEnergy",
    "keras_gauss_energy_grad": "KgEnergyGrad",
    "keras_gauss_gather": "KgGather",
    "keras_gauss_scatter_add": "KgScatterAdd",
    "keras_gauss_adagrad_rows": "KgAdagradRows",
    "keras_gauss_adagrad_dense": "KgAdagradDense",
}
_registered = []


def applies():
    """CPU only (on a GPU XLA fuses the reference ops), and not under
    `keras.distribution` (the calls would not be partitioned)."""
    import keras

    return jax.default_backend() == "cpu" and keras.distribution.distribution() is None


def unavailable():
    """Why the kernels cannot run here (builds and registers them once), or None."""
    if _registered:
        return None
    library = _build.load_jax()
    if library is None:
        return _build.jax_error() or "the JAX kernel library did not load"
    for name, symbol in _TARGETS.items():
        jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(library, symbol)),
                                    platform="cpu")
    _registered.append(library)
    return None


def _f32(shape):
    return jax.ShapeDtypeStruct(tuple(shape), jnp.float32)


def _three_d(array):
    if array.ndim == 1:
        return array.reshape(1, 1, array.shape[0])
    return array.reshape(-1, array.shape[-2], array.shape[-1])


def energy(kind, mean_a, var_a, mean_b, var_b, include_constant=False):
    """Energies `kind` (a `keras_gauss.energies` name with the `"kernels"` engine:
    EL, KL as `-KL(b || a)`) of `keras_gauss.ops`, or None."""
    arrays = [jnp.asarray(t) for t in (mean_a, var_a, mean_b, var_b)]
    if any(not jnp.issubdtype(a.dtype, jnp.floating) or a.dtype == jnp.float64
           for a in arrays):
        return None
    grid = pair_grid(*[a.shape for a in arrays])
    if grid is None:
        return None
    inputs = [_three_d(a.astype(jnp.float32)) for a in arrays]
    out = _energy(energies.get(kind, engine="kernels").code, bool(include_constant), *inputs)
    return out.reshape(grid.lead + (grid.k,) if arrays[0].ndim > 1 else ())


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def _energy(kind, include_constant, mean_a, var_a, mean_b, var_b):
    n, k = mean_a.shape[0], max(mean_a.shape[1], mean_b.shape[1])
    return jax.ffi.ffi_call("keras_gauss_energy", _f32((n, k)))(
        mean_a, var_a, mean_b, var_b, kind=np.int32(kind), include_constant=include_constant)


def _energy_fwd(kind, include_constant, *inputs):
    return _energy(kind, include_constant, *inputs), inputs


def _energy_bwd(kind, include_constant, inputs, grad):
    shapes = [_f32(x.shape) for x in inputs]
    return tuple(jax.ffi.ffi_call("keras_gauss_energy_grad", shapes)(
        grad.astype(jnp.float32), *inputs, kind=np.int32(kind)))


_energy.defvjp(_energy_fwd, _energy_bwd)


def lookup(table, ids, message=""):
    """`take(table, ids, axis=0)` for a float32 `(rows, c)` table, or None.
    An id outside the table fails the step with an error that starts with
    `message` when it is given (as TensorFlow's `lookup`)."""
    table = jnp.asarray(table)
    if not gathers(table):
        return None
    ids = jnp.asarray(ids)
    if ids.dtype not in (jnp.int32, jnp.int64):
        ids = ids.astype(jnp.int32)
    return _gather(table.shape[0], str(message), table, ids)


def gathers(table):
    """Whether `lookup` gathers from `table` (a float32 matrix), checking the ids."""
    return table.dtype == jnp.float32 and table.ndim == 2


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def _gather(rows, message, table, ids):
    return jax.ffi.ffi_call("keras_gauss_gather", _f32(ids.shape + table.shape[1:]))(
        table, ids, message=message)


def _gather_fwd(rows, message, table, ids):
    return _gather(rows, message, table, ids), ids


def _gather_bwd(rows, message, ids, grad):
    dense = jax.ffi.ffi_call("keras_gauss_scatter_add", _f32((rows, grad.shape[-1])))(
        ids, grad.astype(jnp.float32))
    return dense, None


_gather.defvjp(_gather_fwd, _gather_bwd)


def _update(target, table, acc, extra, learning_rate, epsilon, bounds):
    if table.dtype != jnp.float32 or acc.dtype != jnp.float32 or table.ndim != 2:
        return None
    max_norm, low, high = (np.float32(b) for b in bounds)
    lr = jnp.asarray(learning_rate, jnp.float32).reshape(())
    call = jax.ffi.ffi_call(target, (_f32(table.shape), _f32(acc.shape)),
                            input_output_aliases={0: 0, 1: 1})
    return call(table, acc, *extra, lr, epsilon=np.float32(epsilon), max_norm=max_norm,
                min_value=low, max_value=high)


def adagrad_rows(table, acc, indices, values, learning_rate, epsilon, bounds):
    """`(table, accumulator)` after SparseAdagrad on rows `indices`, or None."""
    indices = jnp.asarray(indices).reshape(-1)
    if indices.dtype not in (jnp.int32, jnp.int64):
        indices = indices.astype(jnp.int32)
    values = jnp.asarray(values).astype(jnp.float32).reshape(indices.shape[0], -1)
    return _update("keras_gauss_adagrad_rows", table, acc, (indices, values), learning_rate,
                   epsilon, bounds)


def adagrad_dense(table, acc, grad, learning_rate, epsilon, bounds):
    """`(table, accumulator)` after SparseAdagrad on the rows where the dense
    `grad` is not zero, or None."""
    grad = jnp.asarray(grad).astype(jnp.float32)
    return _update("keras_gauss_adagrad_dense", table, acc, (grad,), learning_rate, epsilon,
                   bounds)
