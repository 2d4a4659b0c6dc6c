import keras
from keras import ops

from keras_gauss import energies
from keras_gauss.layers.gaussian_energy import GaussianEnergy


def containment_energy(general_mean, general_var, specific_mean, specific_var):
    """How far the specific Gaussian's one-sigma box sticks out of the general one's.

    `E = -sum_d max(0, |mu_s - mu_g| + sigma_s - sigma_g)^2` with `sigma` the
    standard deviations (square roots of the diagonal variances): 0 when the
    box `mu_s +- sigma_s` lies inside `mu_g +- sigma_g` in every dimension,
    below 0 by the squared amount it sticks out. Nesting of boxes is
    transitive (a box inside a box inside a box is inside the last), so
    edges implied by the training edges come out inside too: on Ganea et
    al.'s WordNet split it generalises where `-KL`, which also penalises a
    general side much broader than the specific one, does not. An order
    embedding (Vendrov et al., 2016) of boxes, one per Gaussian.

    Args:
        general_mean, general_var: `(..., d)` the general (entailed) side.
        specific_mean, specific_var: `(..., d)` the specific (entailing) side.

    Returns:
        `(...)` energies, `<= 0`.

    Example:

    >>> import numpy as np
    >>> animal = (np.zeros(2), np.full(2, 4.0))  # sigma 2
    >>> dog = (np.full(2, 0.5), np.full(2, 1.0))  # inside: 0.5 + 1 <= 2
    >>> float(containment_energy(*animal, *dog)) == 0  # dog is-a animal
    True
    >>> float(containment_energy(*dog, *animal))  # 2 * (0.5 + 2 - 1)^2
    -4.5
    """
    general_mean, general_var, specific_mean, specific_var = (
        ops.convert_to_tensor(x) for x in (general_mean, general_var, specific_mean,
                                           specific_var))
    violation = ops.relu(ops.abs(specific_mean - general_mean) + ops.sqrt(specific_var)
                         - ops.sqrt(general_var))
    return -ops.sum(ops.square(violation), axis=-1)


@keras.saving.register_keras_serializable(package="keras_gauss")
class ContainmentEnergy(GaussianEnergy):
    """Hierarchy energy `E = -sum_d max(0, |mu_s - mu_g| + sigma_s - sigma_g)^2`.

    0 when the specific Gaussian's one-sigma box lies inside the general
    one's; see `containment_energy`. Trained with
    `keras_gauss.losses.ThresholdedDivergence` (positives at 0, corrupted
    pairs beyond the margin), it embeds is-a as nested boxes, which keeps
    the edges the training edges imply. A `GaussianEnergy` (its arguments
    and call: general side first, then the specific side); energies `<= 0`.

    Example:

    >>> import numpy as np
    >>> animal = np.zeros((1, 2)), np.full((1, 2), 4.0)
    >>> dog = np.full((1, 2), 0.5), np.ones((1, 2))
    >>> keras.ops.convert_to_numpy(ContainmentEnergy()(*dog, *animal))  # animal is-a dog?
    array([-4.5], dtype=float32)
    """

    energy = energies.CONTAINMENT

    def compute(self, general_mean, general_var, specific_mean, specific_var):
        return containment_energy(general_mean, general_var, specific_mean, specific_var)
