import keras

from keras_gauss import energies
from keras_gauss import ops as gauss_ops
from keras_gauss.layers.gaussian_energy import GaussianEnergy


@keras.saving.register_keras_serializable(package="keras_gauss")
class KLEnergy(GaussianEnergy):
    """Asymmetric energy `E = -KL(N_specific || N_general)`.

    The paper's Section 4.2 defines `-E(P_i, P_j) = KL(N_j || N_i)`: here
    `i` is the **general** side (the broader, entailed concept, such as
    *animal*, which should get the larger variance) and `j` the **specific**
    side (the narrower, entailing concept, such as *dog*). The energy is at
    most 0 and is highest when the specific Gaussian lies inside the general
    one, so ranking `E(general, specific)` above corrupted pairs embeds
    "specific is-a general" as inclusion of ellipsoids.

    A `GaussianEnergy` (its arguments and call: general side first, then
    the specific side; float32 by default; a compiled kernel in a training
    step where one is available); energies `<= 0`. See
    `keras_gauss.ops.kl_energy`.

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

    energy = energies.KL

    def compute(self, general_mean, general_var, specific_mean, specific_var):
        return gauss_ops.kl_energy(general_mean, general_var, specific_mean, specific_var)
