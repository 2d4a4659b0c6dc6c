"""TensorFlow: the layers' kernels as C++ ops (`fused/layer_ops.cc`).

`energy` runs `KerasGaussEnergy` (its gradient op is registered below),
`lookup` `KerasGaussGather` (whose gradient is a `tf.IndexedSlices`, as
`ResourceGather`'s), and `sparse_adagrad` runs `KerasGaussSparseAdagrad` on a
variable and its accumulator in place. Each returns None (False) for what
the ops do not cover (float64, shapes that broadcast another way, a
`tf.distribute` strategy), and the caller runs the reference code.

When the four inputs of `energy` are rows of `lookup` (as in a train step
of the README quick start: `GaussianEmbedding` then `ELEnergy` or
`KLEnergy`), it runs `KerasGaussTableEnergy` (`lookup_energy`): the same
energies, read from the tables themselves (each side's unique rows once,
kept for the gradient), whose gradient goes to the tables' unique rows,
summed (`tf.IndexedSlices` with one row per table row, the sums of the
per-occurrence rows in the order `KerasGaussSparseAdagrad` adds them: the
same floats), so the optimizer reads a row per table row, not one per
occurrence. The rows themselves then get no gradient (a tape asked for the
gradient of the rows, not of the tables, gets None); `LOOKUP_GRADIENTS =
False` turns it off. Nothing reads the gathers' rows then: TensorFlow still
runs the gathers (an op that takes a variable is stateful, and every read
of a variable runs before its update), which then only check the ids.
`TABLE_READS = False` (or a grid whose `k` is not static) runs
`KerasGaussLookupEnergy` on the gathered rows instead (the same floats).
"""

import tensorflow as tf
from tensorflow.python.framework import ops as tf_ops
from tensorflow.python.ops import control_flow_util
from tensorflow.python.ops.resource_variable_ops import variable_accessed
from tensorflow.python.ops.resource_variable_ops import variable_shape

from keras_gauss.fused import build as _build
from keras_gauss.kernels.grid import pair_grid


# `keras_gauss.fused.build.load` logs why the library is unavailable itself.
LOADER_WARNS = True


def applies():
    """Whether this trace may hold the ops: not inside an XLA cluster
    (`jit_compile=True`), which cannot compile them."""
    return not control_flow_util.GraphOrParentsInXlaContext(tf_ops.get_default_graph())


def unavailable():
    """Why the ops cannot run here (builds the library once), or None."""
    library = _build.load()
    if library is None:
        return _build.error() or "the op library did not load"
    return None


def _three_d(tensor):
    """`(..., k, c)` as `(n, k, c)` (a vector as `(1, 1, c)`)."""
    shape = tensor.shape
    if shape.rank == 1:
        return tf.reshape(tensor, [1, 1, shape[0]])
    k = shape[-2] if shape[-2] is not None else tf.shape(tensor)[-2]
    return tf.reshape(tensor, [-1, k, shape[-1]])


def energy(kind, mean_a, var_a, mean_b, var_b, include_constant=False):
    """Energies `kind` (a `keras_gauss.energies` name with the `"kernels"` engine:
    EL, KL as `-KL(b || a)`) of `keras_gauss.ops`, or None."""
    tensors = [tf.convert_to_tensor(t) for t in (mean_a, var_a, mean_b, var_b)]
    if any(not t.dtype.is_floating or t.dtype == tf.float64 or t.shape.rank is None
           for t in tensors):
        return None
    grid = pair_grid(*[t.shape.as_list() for t in tensors])
    if grid is None:
        return None
    inputs = [_three_d(tf.cast(t, tf.float32)) for t in tensors]
    out = lookup_energy(kind, tensors, inputs, include_constant)
    if out is None:
        out = _build.load().keras_gauss_energy(*inputs, energy=kind,
                                               include_constant=bool(include_constant))
    if tensors[0].shape.rank == 1:
        return tf.reshape(out, [])
    dims = list(grid.lead) + [grid.k]
    if sum(d is None for d in dims) <= 1:
        out = tf.reshape(out, [-1 if d is None else d for d in dims])
    else:
        out = tf.reshape(out, tf.concat([tf.shape(tensors[0])[:-2], tf.shape(out)[1:]], 0))
    out.set_shape(dims)
    return out


@tf.RegisterGradient("KerasGaussEnergy")
def _energy_gradient(op, grad):
    return _build.load().keras_gauss_energy_grad(grad, *op.inputs,
                                                 energy=op.get_attr("energy"))


# Set False to give the energies' gradients to their rows, never to the tables.
LOOKUP_GRADIENTS = True
# Set False to have the lookup energy read the gathered rows, not the tables.
TABLE_READS = True

# Ops that hand on the rows of their input whole and in order (the last axis
# unchanged: `_gathered` checks it).
_ROW_PRESERVING = frozenset({"Reshape", "ExpandDims", "Squeeze", "Identity"})


def _gathered(tensor):
    """The `KerasGaussGather` op whose rows the graph tensor `tensor` holds
    (reshaped, the last axis the table's columns throughout; its inputs: the
    table's handle and the ids), else None."""
    if not tf.is_symbolic_tensor(tensor) or tensor.shape.rank is None:
        return None
    columns = tensor.shape[-1]
    while columns is not None:
        if tensor.shape.rank is None or tensor.shape.rank < 1 or tensor.shape[-1] != columns:
            return None
        op = tensor.op
        if op.type == "KerasGaussGather":
            return op
        if op.type not in _ROW_PRESERVING:
            return None
        tensor = op.inputs[0]
    return None


def lookup_energy(kind, tensors, inputs, include_constant):
    """The energies of `inputs` (the `(n, k, d)` forms of `tensors`) by
    `KerasGaussTableEnergy` (reading the tables; `KerasGaussLookupEnergy`,
    reading `inputs`, without `TABLE_READS` or a static `k`) when all four
    are rows of `lookup` (each side's mean and variance rows of the same
    ids, the two sides from different tables), or None. Its gradient goes
    to the tables' unique rows, summed (`tf.IndexedSlices`, one row per id),
    not to the rows: the optimizer reads one row a table row, not one an
    occurrence. An id outside a table fails it with the gather's message."""
    if not LOOKUP_GRADIENTS:
        return None
    gathers = [_gathered(t) for t in tensors]
    if any(g is None for g in gathers):
        return None
    handles = [g.inputs[0] for g in gathers]
    ids_a, ids_va, ids_b, ids_vb = (g.inputs[1] for g in gathers)
    if ids_a is not ids_va or ids_b is not ids_vb or len({id(h) for h in handles}) < 4:
        return None  # a shared table keeps the rows' gradients (their sums' order)
    ka, kb = inputs[0].shape[1], inputs[2].shape[1]
    # With table reads the ids are the (n, k_a) / (n, k_b) grid of the rows (a
    # row-preserving chain keeps their order): the gathers' rows are then read
    # by nothing.
    table_reads = (TABLE_READS and isinstance(ka, int) and isinstance(kb, int)
                   and inputs[1].shape[1] == ka and inputs[3].shape[1] == kb)
    shapes = ([-1, ka], [-1, kb]) if table_reads else ([-1], [-1])
    ids = [tf.reshape(ids_a, shapes[0]), tf.reshape(ids_b, shapes[1])]
    if ids[0].dtype != ids[1].dtype:
        ids = [tf.cast(i, tf.int64) for i in ids]
    if table_reads:
        return _build.load().keras_gauss_table_energy(
            *handles, *ids, energy=kind, include_constant=bool(include_constant),
            messages=[g.get_attr("message") for g in gathers])[0]
    return _build.load().keras_gauss_lookup_energy(
        *inputs, *handles, *ids, energy=kind, include_constant=bool(include_constant))


@tf.RegisterGradient("KerasGaussLookupEnergy")
def _lookup_energy_gradient(op, grad):
    handles = op.inputs[4:8]
    rows = [variable_shape(handles[i], out_type=tf.int64)[0] for i in (0, 2)]
    ids_a, mean_a, var_a, ids_b, mean_b, var_b = _build.load().keras_gauss_lookup_energy_grad(
        grad, *op.inputs[:4], op.inputs[8], op.inputs[9], *rows,
        energy=op.get_attr("energy"))
    tables = [tf.IndexedSlices(values, ids, variable_shape(handle)) for values, ids, handle in
              zip((mean_a, var_a, mean_b, var_b), (ids_a, ids_a, ids_b, ids_b), handles)]
    return [None] * 4 + tables + [None, None]


@tf.RegisterGradient("KerasGaussTableEnergy")
def _table_energy_gradient(op, grad, *unused):
    rows, unique, slots = op.outputs[1:5], op.outputs[5:7], op.outputs[7:9]
    grads = _build.load().keras_gauss_table_energy_grad(grad, *rows, *slots,
                                                       energy=op.get_attr("energy"))
    tables = [tf.IndexedSlices(values, ids, variable_shape(handle)) for values, ids, handle in
              zip(grads, (unique[0], unique[0], unique[1], unique[1]), op.inputs[:4])]
    return tables + [None, None]


def lookup(variable, ids, message=""):
    """`tf.gather(variable, ids)` for a float32 `(rows, c)` variable, or None.
    An id outside the table fails the step with an error that starts with
    `message` when it is given."""
    if (variable.dtype != tf.float32 or variable.shape.rank != 2
            or variable.shape[1] is None or tf.distribute.has_strategy()):
        return None
    ids = tf.convert_to_tensor(ids)
    if ids.dtype not in (tf.int32, tf.int64) or ids.shape.rank is None:
        return None
    columns = variable.shape[1]
    variable_accessed(variable)  # as `sparse_read`: the tape watches the read
    rows = _build.load().keras_gauss_gather(variable.handle, ids, message=message)
    rows.set_shape([None, columns])  # (what `_gathered` reads)
    shape = ids.shape.as_list() + [columns]
    if sum(d is None for d in shape) <= 1:
        return tf.reshape(rows, [-1 if d is None else d for d in shape])
    return tf.reshape(rows, tf.concat([tf.shape(ids), [columns]], 0))


@tf.RegisterGradient("KerasGaussGather")
def _gather_gradient(op, grad):
    # As ResourceGather's: the rows' gradients against the ids, unsummed.
    shape = variable_shape(op.inputs[0])
    return [tf.IndexedSlices(grad, tf.reshape(op.inputs[1], [-1]), shape), None]


def sparse_adagrad(variable, accumulator, indices, values, learning_rate, epsilon, bounds):
    """SparseAdagrad's row update in place (`bounds`: max_norm, min, max);
    False when the op does not cover it."""
    if tf.distribute.has_strategy():
        return False
    if (variable.dtype != tf.float32 or accumulator.dtype != tf.float32
            or variable.shape.rank != 2 or variable.shape[1] is None):
        return False
    columns = variable.shape[1]
    indices = tf.reshape(indices, [-1])
    if indices.dtype not in (tf.int32, tf.int64):
        indices = tf.cast(indices, tf.int64)
    values = tf.reshape(tf.cast(values, tf.float32), [-1, columns])
    max_norm, low, high = (float(b) for b in bounds)
    _build.load().keras_gauss_sparse_adagrad(
        variable.handle, accumulator.handle, indices, values,
        tf.cast(learning_rate, tf.float32), tf.constant(epsilon, tf.float32),
        tf.constant(max_norm, tf.float32), tf.constant(low, tf.float32),
        tf.constant(high, tf.float32))
    return True

