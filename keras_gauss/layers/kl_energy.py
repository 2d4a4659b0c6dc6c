import keras

from keras_gauss import ops as gauss_ops


@keras.saving.register_keras_serializable(package="keras_gauss")
class KLEnergy(keras.layers.Layer):
    """Asymmetric energy `E = -KL(N_specific || N_general)`.

    The paper's Section 4.2 defines `-E(P_i, P_j) = KL(N_j || N_i)`: here
    `i` is the **general** side (the broader, entailed concept, such as
    *animal*, which should get the larger variance) and `j` the **specific**
    side (the narrower, entailing concept, such as *dog*). The energy is at
    most 0 and is highest when the specific Gaussian lies inside the general
    one, so ranking `E(general, specific)` above corrupted pairs embeds
    "specific is-a general" as inclusion of ellipsoids.

    The layer computes in float32 by default (`dtype="float32"`), also when
    the global policy is `mixed_float16`. See `keras_gauss.ops.kl_energy`.

    Args:
        **kwargs: `keras.layers.Layer` arguments.

    Call arguments:
        general_mean, general_var: `(..., d)` the general (entailed) side.
        specific_mean, specific_var: `(..., d)` the specific (entailing) side.

    Returns:
        `(...)` energies `<= 0`.

    Example:

    >>> import numpy as np
    >>> nodes = GaussianEmbedding(100, 8)
    >>> animal = nodes(np.array([0]))
    >>> dog = nodes(np.array([1]))
    >>> KLEnergy()(*animal, *dog).shape  # -KL(dog || animal)
    TensorShape([1])
    """

    def __init__(self, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)

    def call(self, general_mean, general_var, specific_mean, specific_var):
        return gauss_ops.kl_energy(
            general_mean, general_var, specific_mean, specific_var
        )
