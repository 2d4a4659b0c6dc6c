"""tf.data without its autotuner: `without_autotune`, `array_batches`.

With the autotuner on (tf.data's default), deleting an iterator waits for
the autotuner's thread to wake by itself: it sleeps for its optimization
period, which doubles (up to a minute) while the iterator lives, and the
deletion does not wake it (TensorFlow 2.21). Keras's `fit` deletes its
iterator at the end of every epoch (and of every `fit` call), so a long
epoch ended in a stall of up to its own length: after 26 s epochs of
news2017 skip-gram batches, 13-20 s in three of four epochs (checked with
perf: the process idle, the main thread in the iterator's destructor joining
the autotuner's thread). Without the autotuner the deletion takes
milliseconds and the epochs ran as fast: `num_parallel_calls=AUTOTUNE` then
runs one call per core and `prefetch(AUTOTUNE)` sizes its buffer by itself.

Every dataset the package builds goes through `without_autotune` at its
source (`load_corpus`, the device-pairs steps, the hierarchy's edge
batches); the options of a dataset's inputs hold for the whole pipeline.
Keras's own dataset of NumPy arrays (`model.fit(x, y, batch_size=...)`)
keeps the autotuner: `model.fit(array_batches(x, y, batch_size),
shuffle=False)` feeds the same batches without it.

Example:

>>> import tensorflow as tf
>>> data = without_autotune(tf.data.Dataset.range(4).map(lambda i: i * 2))
>>> data.options().autotune.enabled
False
"""

__all__ = ["array_batches", "without_autotune"]


def without_autotune(dataset):
    """`dataset` with tf.data's autotuner off (`options.autotune.enabled =
    False`): its iterators are deleted without waiting for the autotuner's
    thread. The input dataset is not changed."""
    import tensorflow as tf

    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


def array_batches(x, y=None, batch_size=32, shuffle=False, seed=None):
    """NumPy arrays as a `tf.data` dataset of `(x, y)` batches for `fit`, without the autotuner.

    With `shuffle=False` (default), what `model.fit(x, y,
    batch_size=batch_size, shuffle=False)` feeds: the same batches in the
    same order (the last one smaller when `batch_size` does not divide the
    rows), one slice of the arrays a batch. With `shuffle=True`, as `fit`'s
    own default does, every epoch (every iteration of the dataset) reads the
    rows in a new order, drawn from `seed`; the rows of `x` and `y` stay
    together. Either way without the stall at the end of each epoch (see
    the module docstring).

    Args:
        x: an array or a dict (or tuple) of arrays, the same rows each.
        y: the labels, an array or a structure of them; `None`: `x` alone.
        batch_size: rows a batch (default 32, as Keras's).
        shuffle: False (default: the rows in the given order) or True (a
            new order each epoch).
        seed: the seed of the orders with `shuffle=True`; None: unseeded.

    Returns:
        A `tf.data.Dataset` of `(x, y)` batches (of `x` batches without `y`).

    Raises:
        ValueError: for `batch_size < 1`, `shuffle` not a bool, no rows, or
            arrays of different lengths.

    Example:

    >>> import numpy as np
    >>> data = array_batches({"word": np.arange(5)}, np.zeros((5, 2)), batch_size=2)
    >>> [tuple(x["word"].shape) for x, _ in data]
    [(2,), (2,), (1,)]
    >>> data = array_batches(np.arange(5), batch_size=2, shuffle=True, seed=0)
    >>> sorted(np.concatenate(list(data.as_numpy_iterator())).tolist())  # each row once
    [0, 1, 2, 3, 4]
    """
    import numpy as np
    import tensorflow as tf

    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    if not isinstance(shuffle, bool):
        raise ValueError(f"shuffle must be True or False, got {shuffle!r}")
    data = x if y is None else (x, y)
    arrays = tf.nest.map_structure(np.asarray, data)
    lengths = {len(a) if a.ndim else 0 for a in tf.nest.flatten(arrays)}
    if len(lengths) != 1:
        raise ValueError(f"the arrays have different numbers of rows: {sorted(lengths)}")
    rows = lengths.pop()
    if rows == 0:
        raise ValueError("no rows to batch")
    if shuffle:  # a new permutation each iteration; each batch's rows gathered
        tensors = tf.nest.map_structure(tf.constant, arrays)

        def batches_of(order):
            return tf.data.Dataset.range(0, rows, batch_size).map(
                lambda start: tf.nest.map_structure(
                    lambda t: tf.gather(t, order[start:start + batch_size]), tensors))

        orders = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).take(1).map(
            lambda draw: tf.random.experimental.stateless_shuffle(
                tf.range(rows, dtype=tf.int64), seed=tf.stack([draw, 0])))
        batches = orders.flat_map(batches_of).apply(  # the number of batches known, as fit's
            tf.data.experimental.assert_cardinality(-(-rows // batch_size)))
        return without_autotune(batches)
    whole = rows // batch_size * batch_size
    batches = None
    if whole:
        batches = tf.data.Dataset.from_tensor_slices(tf.nest.map_structure(
            lambda a: a[:whole].reshape(whole // batch_size, batch_size, *a.shape[1:]), arrays))
    if whole < rows:
        last = tf.data.Dataset.from_tensors(tf.nest.map_structure(lambda a: a[whole:], arrays))
        batches = last if batches is None else batches.concatenate(last)
    return without_autotune(batches)
