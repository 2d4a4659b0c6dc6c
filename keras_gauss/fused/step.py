"""One ranking training step, fused in one C++ TensorFlow op.

For a minibatch of `(word, context, negatives)` ids, `ranking_step`
computes what the Keras path (`GaussianEmbedding` -> `ELEnergy`/`KLEnergy`
-> `MaxMarginRanking` -> `SparseAdagrad`) computes in one `fit` step, and
updates the tables and the AdaGrad accumulators in place:

- energies `E(w, c+)`, `E(w, c-_k)`; for `"kl"` the word is the general
  side and the context the specific one: `E = -KL(N_context || N_word)`;
- the loss `mean_b sum_k max(0, margin - E(w_b, c+_b) + E(w_b, c-_bk))`;
- the gradients of that mean loss w.r.t. every gathered row, from the
  parameters before the update, summed over repeated ids;
- AdaGrad once per touched row (`acc += g^2; w -= lr g / sqrt(acc + eps)`)
  followed by the row constraints (`NormClip` on means, `VarianceClip` on
  variances).

No trainer of the package runs these steps any more (the layers' own
kernels do, `keras_gauss.kernels`); they are the C++ steps that
`benchmarks/` time the layers against, tested against the `keras.ops`
reference of a `fit` step.
"""

import keras
import tensorflow as tf

from keras_gauss.fused import build as _build
from keras_gauss.layers.candidate_energies import ENERGIES


def fused_available():
    """Whether the fused C++ op is built and loaded (builds it on first call).

    Returns:
        True if `ranking_step` and the other fused steps can run.

    Example:

    >>> from keras_gauss.fused import fused_available
    >>> fused_available()
    True
    """
    return _build.load() is not None


def require_op():
    """The loaded op library; `RuntimeError` (one line) when it cannot be built."""
    if not fused_available():
        raise RuntimeError(f"The fused op is unavailable: {_build.error()}.")
    return _build.load()


def _tf_var(variable):
    """The `tf.Variable` behind a Keras variable (or the variable itself)."""
    if isinstance(variable, keras.Variable):
        return variable.value
    return variable


def setting_pair(value, name):
    """`(word, context)` floats from a scalar, a pair or None (-> None)."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError(f"`{name}` must be a number or a (word, context) pair.")
        return tuple(value)
    return (value, value)


def check_step_settings(learning_rate, margin, epsilon, bounds):
    """Checks the Python-number settings of a step (tensors are the caller's):
    finite, `learning_rate >= 0` (0: the loss alone), `margin >= 0`, `epsilon >= 0`, bounds
    finite, variance bounds `> 0` and `min <= max`."""
    from keras_gauss.checks import check_number
    from keras_gauss.checks import is_number

    for name, value, low in (("learning_rate", learning_rate, dict(at_least=0)),
                             ("margin", margin, dict(at_least=0)),
                             ("epsilon", epsilon, dict(at_least=0))):
        if is_number(value):
            check_number(value, f"`{name}`", **low)
    for name, pair in bounds.items():
        for value in pair or ():
            if is_number(value):
                check_number(value, f"`{name}`",
                             **({} if name == "max_norm" else dict(above=0)))
    low, high = bounds["min_variance"], bounds["max_variance"]
    if low is not None and high is not None:
        for m, big_m in zip(low, high):
            if is_number(m) and is_number(big_m) and m > big_m:
                raise ValueError(f"`min_variance` ({m}) must not exceed `max_variance` "
                                 f"({big_m}).")


def int32_ids(ids, name):
    """`ids` as an int32 tensor; ids of a wider or unsigned dtype are checked
    to fit first (a uint64 2^32 + 3 must not become row 3).

    Raises:
        TypeError: not integers.
        InvalidArgumentError: (when run) an id outside [0, 2^31).
    """
    ids = tf.convert_to_tensor(ids)
    if ids.dtype == tf.int32:
        return ids
    if not ids.dtype.is_integer:
        raise TypeError(f"`{name}` must be integer ids, got dtype {ids.dtype.name}.")
    if ids.dtype in (tf.int8, tf.uint8, tf.int16, tf.uint16):
        return tf.cast(ids, tf.int32)  # always fit
    wide = tf.cast(ids, tf.int64)  # uint64 >= 2^63 turns negative: caught below
    message = f"`{name}` ids must lie in [0, 2^31) (dtype {ids.dtype.name})"
    checks = [tf.debugging.assert_non_negative(wide, message=message),
              tf.debugging.assert_less(wide, tf.constant(2**31, tf.int64), message=message)]
    with tf.control_dependencies(checks):
        return tf.cast(wide, tf.int32)


def check_tables(tables, accumulators):
    """`ValueError` unless `tables` and `accumulators` are the four float32 variables of a step."""
    if len(tables) != 4 or len(accumulators) != 4:
        raise ValueError(
            "`tables` and `accumulators` must each hold 4 variables: word means, "
            "word variances, context means, context variances (pass the same "
            "variables twice for a shared table)."
        )
    tables = [_tf_var(v) for v in tables]
    accumulators = [_tf_var(v) for v in accumulators]
    return tables, accumulators


def ranking_step(
    tables,
    accumulators,
    word,
    context,
    negatives,
    learning_rate,
    margin=1.0,
    epsilon=1e-7,
    max_norm=None,
    min_variance=None,
    max_variance=None,
    energy="el",
):
    """Runs one max-margin ranking step and updates the variables in place.

    Args:
        tables: `(word_means, word_variances, context_means,
            context_variances)` float32 variables (Keras or TF); means are
            `(V, d)`, variances `(V, d)` (diagonal) or `(V, 1)` (spherical).
            For a shared table pass the same two variables twice.
        accumulators: the 4 AdaGrad accumulators, shaped like `tables` (the
            same ones twice for a shared table).
        word: `(B,)` int32 word ids.
        context: `(B,)` int32 positive context ids.
        negatives: `(B, k)` int32 negative context ids.
        learning_rate: scalar learning rate.
        margin: hinge margin `m`.
        epsilon: AdaGrad's epsilon (inside the square root).
        max_norm: `C`, bound on the means' norms: a number, a
            `(word, context)` pair, or None (no bound). A value `<= 0` also
            means no bound.
        min_variance: `m`, a number or pair, or None (no lower clip).
        max_variance: `M`, a number or pair, or None (no upper clip).
        energy: `"el"` (expected likelihood) or `"kl"`
            (`E = -KL(N_context || N_word)`, word = general side).

    Returns:
        The mean loss of the batch before the update (a float32 scalar).

    Raises:
        RuntimeError: the op library cannot be built here.

    Example:

    >>> import tensorflow as tf
    >>> means = tf.Variable(tf.random.uniform((100, 8), -0.05, 0.05))
    >>> variances = tf.Variable(tf.ones((100, 8)))
    >>> accs = [tf.Variable(tf.fill(v.shape, 1e-6)) for v in (means, variances)]
    >>> loss = ranking_step((means, variances, means, variances), accs * 2,
    ...                     word=[1, 2], context=[3, 4], negatives=[[5], [6]],
    ...                     learning_rate=0.1, max_norm=2.0,
    ...                     min_variance=0.05, max_variance=5.0)
    """
    if energy not in ENERGIES:
        raise ValueError(f"`energy` must be one of {ENERGIES}, got {energy!r}.")
    tables, accumulators = check_tables(tables, accumulators)
    word = int32_ids(word, "word")
    context = int32_ids(context, "context")
    negatives = int32_ids(negatives, "negatives")
    kwargs = dict(
        learning_rate=learning_rate,
        margin=margin,
        epsilon=epsilon,
        max_norm=setting_pair(max_norm, "max_norm"),
        min_variance=setting_pair(min_variance, "min_variance"),
        max_variance=setting_pair(max_variance, "max_variance"),
        energy=energy,
    )
    check_step_settings(learning_rate, margin, epsilon,
                        {k: kwargs[k] for k in ("max_norm", "min_variance", "max_variance")})
    return _fused_step(tables, accumulators, word, context, negatives, **kwargs)


def is_spherical(tables):
    """Whether the variance tables have one column (spherical); `ValueError` when mixed."""
    columns = {int(tables[1].shape[-1]), int(tables[3].shape[-1])}
    dim = int(tables[0].shape[-1])
    if columns == {1} and dim != 1:
        return True
    if columns == {dim}:
        return False
    raise ValueError(
        "The word and context tables must both be diagonal (variances (V, d)) "
        "or both spherical (variances (V, 1)); got variance columns "
        f"{sorted(columns)} with d={dim}."
    )


def _fused_step(
    tables,
    accumulators,
    word,
    context,
    negatives,
    learning_rate,
    margin,
    epsilon,
    max_norm,
    min_variance,
    max_variance,
    energy,
):
    module = require_op()
    inf = float("inf")
    return module.keras_gauss_ranking_step(
        *[v.handle for v in tables],
        *[v.handle for v in accumulators],
        word=word,
        context=context,
        negatives=negatives,
        learning_rate=tf.cast(learning_rate, tf.float32),
        margin=tf.cast(margin, tf.float32),
        epsilon=tf.cast(epsilon, tf.float32),
        max_norm=tf.constant(max_norm or (0.0, 0.0), tf.float32),
        min_variance=tf.constant(min_variance or (-inf, -inf), tf.float32),
        max_variance=tf.constant(max_variance or (inf, inf), tf.float32),
        energy=energy,
        spherical=is_spherical(tables),
    )


def pair_ranking_step(
    tables,
    accumulators,
    general,
    specific,
    learning_rate,
    margin=1.0,
    epsilon=1e-7,
    max_norm=None,
    min_variance=None,
    max_variance=None,
    energy="kl",
):
    """One max-margin ranking step over `(general, specific)` pairs, in place.

    Like `ranking_step`, but each candidate is its own pair, so both sides
    can change from candidate to candidate (the hierarchy model's corrupted
    and reversed edges): row `b` holds the positive pair in column 0 and its
    `k` negatives after it, and the loss is
    `mean_b sum_{j>0} max(0, margin - E(g_b0, s_b0) + E(g_bj, s_bj))`. The
    general side is read from the word table, the specific side from the
    context table; for `"kl"`, `E = -KL(N_specific || N_general)`. One step
    equals one `fit` step of `keras_gauss.hierarchy.model.build_kl_model`
    with `MaxMarginRanking` and `SparseAdagrad`, up to float rounding.

    Args:
        tables: `(word_means, word_variances, context_means,
            context_variances)`; the same two variables twice for a shared
            table (a hierarchy).
        accumulators: the 4 AdaGrad accumulators, shaped like `tables`.
        general: `(B, 1 + k)` int32 ids of the general sides.
        specific: `(B, 1 + k)` int32 ids of the specific sides.
        learning_rate, margin, epsilon, max_norm, min_variance,
            max_variance, energy: as in `ranking_step`
            (`energy` defaults to `"kl"` here).

    Returns:
        The mean loss of the batch before the update (a float32 scalar).

    Example:

    >>> means = tf.Variable(tf.random.uniform((100, 8), -0.05, 0.05))
    >>> variances = tf.Variable(tf.ones((100, 8)))
    >>> accs = [tf.Variable(tf.fill(v.shape, 1e-6)) for v in (means, variances)]
    >>> loss = pair_ranking_step((means, variances) * 2, accs * 2,
    ...                          general=[[1, 7]], specific=[[2, 2]],
    ...                          learning_rate=0.1)
    """
    if energy not in ENERGIES:
        raise ValueError(f"`energy` must be one of {ENERGIES}, got {energy!r}.")
    tables, accumulators = check_tables(tables, accumulators)
    general = tf.convert_to_tensor(general, tf.int32)
    specific = tf.convert_to_tensor(specific, tf.int32)
    kwargs = dict(
        learning_rate=learning_rate,
        margin=margin,
        epsilon=epsilon,
        max_norm=setting_pair(max_norm, "max_norm"),
        min_variance=setting_pair(min_variance, "min_variance"),
        max_variance=setting_pair(max_variance, "max_variance"),
        energy=energy,
    )
    module = require_op()
    inf = float("inf")
    return module.keras_gauss_pair_ranking_step(
        *[v.handle for v in tables],
        *[v.handle for v in accumulators],
        general=general,
        specific=specific,
        learning_rate=tf.cast(learning_rate, tf.float32),
        margin=tf.cast(margin, tf.float32),
        epsilon=tf.cast(epsilon, tf.float32),
        max_norm=tf.constant(kwargs["max_norm"] or (0.0, 0.0), tf.float32),
        min_variance=tf.constant(kwargs["min_variance"] or (-inf, -inf), tf.float32),
        max_variance=tf.constant(kwargs["max_variance"] or (inf, inf), tf.float32),
        energy=energy,
        spherical=is_spherical(tables),
    )
