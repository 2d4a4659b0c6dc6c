"""Small ranking models of keras_gauss parts and their batches, shared by
`test_saving.py` (saved and reloaded) and `models/torch_run.py` (trained
on torch as on TensorFlow): `ranking_data` makes a batch, `el_two_tables`
and `kl_shared_table` a model's `(inputs, energies)` for `keras.Model` or
`keras_gauss.GaussianModel`."""

import keras
import numpy as np

import keras_gauss as kg

VOCAB, DIM, NEGATIVES = 25, 6, 3


def ranking_data(seed=0, n=32):
    """A batch of `n` rows drawn with `seed`: `x`, the word ids `(n, 1)` and
    the context ids `(n, 1 + NEGATIVES)`, and `y`, the targets (each row's
    first context is the positive one).

    Example:

    >>> x, y = ranking_data(n=2)
    >>> x[0].shape, x[1].shape, y.tolist()
    ((2, 1), (2, 4), [[1.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    """
    rng = np.random.default_rng(seed)
    x = [rng.integers(0, VOCAB, (n, 1)).astype("int32"),
         rng.integers(0, VOCAB, (n, 1 + NEGATIVES)).astype("int32")]
    y = np.tile(np.eye(1, 1 + NEGATIVES, dtype="float32"), (n, 1))
    return x, y


def el_two_tables():
    """`(inputs, energies)` of an EL model: a diagonal "words" table and a
    spherical "contexts" one.

    Example:

    >>> model = keras.Model(*el_two_tables())
    >>> model.get_layer("contexts").covariance
    'spherical'
    """
    words = kg.GaussianEmbedding(VOCAB, DIM, name="words")
    contexts = kg.GaussianEmbedding(VOCAB, DIM, covariance="spherical", name="contexts")
    word = keras.Input((1,), dtype="int32", name="word")
    context = keras.Input((1 + NEGATIVES,), dtype="int32", name="context")
    return [word, context], kg.ELEnergy(include_constant=False)(*words(word),
                                                                 *contexts(context))


def kl_shared_table():
    """`(inputs, energies)` of a KL model of one clipped "nodes" table
    (`max_norm` 1.5, variances in [0.2, 3]) on both sides.

    Example:

    >>> model = keras.Model(*kl_shared_table())
    >>> len(model.trainable_weights)
    2
    """
    nodes = kg.GaussianEmbedding(VOCAB, DIM, name="nodes", max_norm=1.5, min_variance=0.2,
                                 max_variance=3.0)
    general = keras.Input((1,), dtype="int32", name="general")
    specific = keras.Input((1 + NEGATIVES,), dtype="int32", name="specific")
    return [general, specific], kg.KLEnergy()(*nodes(general), *nodes(specific))
