import keras

from keras_gauss import kernels
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
    the global policy is `mixed_float16`. See `keras_gauss.ops.kl_energy`. In
    a training step it runs a compiled kernel where one is available (see
    `keras_gauss.kernels`).

    Args:
        **kwargs: `keras.layers.Layer` arguments.

    Call arguments:
        general_mean, general_var: `(..., d)` the general (entailed) side.
        specific_mean, specific_var: `(..., d)` the specific (entailing) side.

    Returns:
        `(...)` energies `<= 0`.

    Example:

    >>> import numpy as np
    >>> animal = np.zeros((1, 2)), np.full((1, 2), 4.0)  # (mean, variance)
    >>> dog = np.zeros((1, 2)), np.ones((1, 2))
    >>> # -KL(dog || animal) = -(1/2)(2 * 1/4 - 2 + 2 log 4): near 0, dog is-a animal
    >>> keras.ops.convert_to_numpy(KLEnergy()(*animal, *dog)).round(4)
    array([-0.6363], dtype=float32)
    >>> keras.ops.convert_to_numpy(KLEnergy()(*dog, *animal)).round(4)  # -KL(animal || dog)
    array([-1.6137], dtype=float32)
    """

    def __init__(self, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)

    def call(self, general_mean, general_var, specific_mean, specific_var, training=None):
        kernel = kernels.get(training)
        if kernel is not None:
            energy = kernel.energy("kl", general_mean, general_var, specific_mean,
                                   specific_var)
            if energy is not None:
                return energy
        return gauss_ops.kl_energy(
            general_mean, general_var, specific_mean, specific_var
        )
