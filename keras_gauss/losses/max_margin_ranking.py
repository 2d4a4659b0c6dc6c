import keras
import numpy as np
from keras import ops

from keras_gauss.checks import check_number


def max_margin_ranking(y_true, y_pred, margin=1.0):
    """Pairwise hinge loss on energies: `sum max(0, m - E_i + E_j)`.

    For every pair of list items with `y_true[i] > y_true[j]`, the energy of
    the better item `i` should exceed that of `j` by the margin `m`. With a
    list `[E(w, c+), E(w, c1-), ..., E(w, ck-)]` and labels `[1, 0, ..., 0]`
    this is the paper's loss `max(0, m - E(w, c+) + E(w, c-))` summed over
    the `k` negatives.

    Args:
        y_true: `(batch, list_size)` relevance labels; only their order
            matters (higher is better). `(1, list_size)`: the same labels
            for every list (as when the lists are drawn inside the model).
            A NaN label orders nothing: its list's loss is NaN (so Keras's
            `TerminateOnNaN` and `keras_gauss.callbacks.FiniteLoss` stop on
            it), not a sum that silently leaves its pairs out.
        y_pred: `(batch, list_size)` energies (higher is better).
        margin: the margin `m`.

    Returns:
        `(batch,)` losses, summed over the pairs of each list.

    Example:

    >>> import numpy as np
    >>> float(max_margin_ranking(np.array([[1.0, 0.0]]),
    ...                          np.array([[-2.0, -2.5]]))[0])
    0.5
    """
    y_pred = ops.convert_to_tensor(y_pred)
    dtype = computation_dtype(y_pred)
    y_pred = ops.cast(y_pred, dtype)
    y_true = ops.cast(ops.convert_to_tensor(y_true), dtype)
    if len(y_pred.shape) == 1:
        raise ValueError(
            "MaxMarginRanking expects lists of energies shaped "
            f"(batch, list_size), got shape {tuple(y_pred.shape)}. Stack the "
            "positive and negative energies on the last axis."
        )
    if y_pred.shape[-1] == 1:
        raise ValueError(
            "MaxMarginRanking ranks the energies of each list against each "
            f"other; lists of one energy (shape {tuple(y_pred.shape)}) have no "
            "pair to rank, so the loss would always be 0. Stack the positive "
            "and at least one negative energy on the last axis."
        )
    check_label_shape(y_true, y_pred, "MaxMarginRanking")
    differences = pair_differences(y_pred.shape[-1])
    if differences is not None:
        # The items' differences y_i - y_j of every ordered pair i != j by
        # one matmul (exact: the matrix holds 1, -1 and 0); on TensorFlow's
        # CPU three times cheaper than the broadcasts below, gradient included.
        differences = ops.cast(differences, dtype)
        better = ops.cast(ops.greater(ops.matmul(y_true, differences), 0.0), dtype)
        hinge = ops.relu(margin - ops.matmul(y_pred, differences))
        return ops.sum(better * hinge, axis=-1) + nan_labels(y_true)
    # better[b, i, j] is 1 where item i should outrank item j.
    better = ops.cast(
        ops.greater(ops.expand_dims(y_true, -1), ops.expand_dims(y_true, -2)),
        dtype,
    )
    gaps = ops.expand_dims(y_pred, -1) - ops.expand_dims(y_pred, -2)
    hinge = ops.relu(margin - gaps)
    return ops.sum(better * hinge, axis=(-2, -1)) + nan_labels(y_true)


def nan_labels(y_true):
    """`(batch,)`: NaN for a list with a NaN label, else 0 (added to a
    loss, so that such a list's loss is NaN instead of leaving it out).

    Example:

    >>> [float(v) for v in nan_labels(np.array([[1.0, 0.0], [np.nan, 0.0], [np.inf, 0.0]]))]
    [0.0, nan, 0.0]
    """
    y_true = ops.convert_to_tensor(y_true)
    return ops.sum(ops.where(ops.isnan(y_true), y_true, ops.zeros_like(y_true)), axis=-1)


def computation_dtype(energies):
    """The dtype a loss of `energies` computes in: float64 for float64
    energies (a loss with `dtype="float64"` hands it those), else float32
    (half-precision energies are widened: a hinge's margin and differences
    keep float32's precision).

    Example:

    >>> computation_dtype(np.zeros(2, "float64")), computation_dtype(np.zeros(2, "float16"))
    ('float64', 'float32')
    """
    dtype = keras.backend.standardize_dtype(energies.dtype)
    return "float64" if dtype == "float64" else "float32"


def check_label_shape(y_true, y_pred, loss):
    """Raises one `ValueError` naming `loss` unless the labels fit the
    energies: the same shape where both are known, or `(1, list_size)`
    labels shared by every list. (Keras gives a loss `(batch, 1)` labels for
    `(batch,)` ones: broadcast against `(batch, list_size)` energies they
    would label every item of a list alike.)

    Example:

    >>> check_label_shape(np.ones((4, 1)), np.ones((4, 3)), "MaxMarginRanking")
    Traceback (most recent call last):
    ValueError: MaxMarginRanking: `y_true` shape (4, 1) does not match `y_pred` shape (4, 3)...
    """
    true, pred = tuple(y_true.shape), tuple(y_pred.shape)
    shared = len(true) == 2 and true[0] == 1 and true[1:] == pred[1:]
    fits = len(true) == len(pred) and all(
        t is None or p is None or t == p for t, p in zip(true, pred))
    if not (fits or shared):
        raise ValueError(
            f"{loss}: `y_true` shape {true} does not match `y_pred` shape {pred}: give "
            "a label to every energy (or one (1, list_size) row for every list).")


# The longest list whose pairs' differences come from one matmul: up to here
# it is as fast as the broadcasts or faster (3x at 6 items), beyond them
# slower (1.3-2.7x from 65 to 301 items on 2 cores).
MAX_PAIR_MATRIX_ITEMS = 32


def pair_differences(list_size):
    """The `(list_size, list_size * (list_size - 1))` matrix `D` with
    `(y @ D)[p] = y[i] - y[j]` for the p-th ordered pair `(i, j)`, `i != j`;
    None (`max_margin_ranking` broadcasts instead) for an unknown or single
    item list, for a list of more than `MAX_PAIR_MATRIX_ITEMS` items (the
    matrix grows as `list_size^3`: 108 MB and 6.5 s to trace at 301 items,
    whose loss then ran 2.7x slower than the broadcasts; 4 GB at 1,001), and
    off TensorFlow's CPU: XLA fuses the broadcasts on JAX, and a GPU's TF32
    matmul would round the differences.

    Example:

    >>> pair_differences(2) if keras.backend.backend() == "tensorflow" else None
    array([[ 1., -1.],
           [-1.,  1.]], dtype=float32)
    """
    if (list_size is None or not 2 <= list_size <= MAX_PAIR_MATRIX_ITEMS
            or keras.backend.backend() != "tensorflow"):
        return None
    import tensorflow as tf

    if tf.config.list_logical_devices("GPU"):
        return None
    pairs = [(i, j) for i in range(list_size) for j in range(list_size) if i != j]
    matrix = np.zeros((list_size, len(pairs)), "float32")
    for p, (i, j) in enumerate(pairs):
        matrix[i, p], matrix[j, p] = 1.0, -1.0
    return matrix


@keras.saving.register_keras_serializable(package="keras_gauss")
class MaxMarginRanking(keras.losses.Loss):
    """Max-margin ranking loss on energies (the paper's training loss).

    `L = max(0, m - E(w, c+) + E(w, c-))`, generalised to lists: `y_pred`
    holds energies shaped `(batch, list_size)` (for example the positive
    energy followed by `k` negative energies) and `y_true` holds relevance
    labels of the same shape (for example `[1, 0, ..., 0]`). Every pair
    whose labels are ordered contributes a hinge term. The loss is computed
    in float32, or in float64 with `dtype="float64"` (`computation_dtype`).

    Args:
        margin: the margin `m > 0` (default 1.0).
        reduction: how per-example losses are reduced (Keras's default,
            `"sum_over_batch_size"`, averages them).
        name: name of the loss.
        dtype: dtype of the loss's inputs and result (default: Keras's
            float type, `keras.backend.floatx()`): `"float64"` computes in
            float64; float32 and half precision (whose energies are
            widened) in float32.

    Example:

    >>> import numpy as np
    >>> loss = MaxMarginRanking(margin=1.0)
    >>> y_true = np.array([[1.0, 0.0, 0.0]])
    >>> y_pred = np.array([[-1.0, -1.5, -3.0]])  # E+, E1-, E2-
    >>> float(loss(y_true, y_pred))  # max(0, 1 - 0.5) + max(0, 1 - 2)
    0.5
    """

    def __init__(
        self,
        margin=1.0,
        reduction="sum_over_batch_size",
        name="max_margin_ranking",
        dtype=None,
    ):
        check_number(margin, "`margin`", above=0)  # finite; NumPy numbers too
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.margin = float(margin)

    def call(self, y_true, y_pred):
        return max_margin_ranking(y_true, y_pred, margin=self.margin)

    def get_config(self):
        config = super().get_config()
        config.update({"margin": self.margin})
        return config
