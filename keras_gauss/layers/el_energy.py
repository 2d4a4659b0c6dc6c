import keras
import numpy as np

from keras_gauss import energies
from keras_gauss import ops as gauss_ops
from keras_gauss.layers.gaussian_energy import GaussianEnergy


@keras.saving.register_keras_serializable(package="keras_gauss")
class ELEnergy(GaussianEnergy):
    """Log expected-likelihood energy `log N(0; mu_i - mu_j, Sigma_i + Sigma_j)`.

    The paper's symmetric similarity (Section 4.1): the log of the inner
    product of the two densities. Higher is more similar. See
    `keras_gauss.ops.el_energy`.

    A `GaussianEnergy` (float32 by default; a compiled kernel in a training
    step where one is available, with the values of `keras_gauss.ops`).

    Args:
        include_constant: keep the `-d/2 log(2 pi)` term (default True: the
            value is the exact log density; the constant changes neither
            gradients nor rankings).
        **kwargs: other `keras.layers.Layer` arguments.

    Call arguments:
        mean_i, var_i: `(..., d)` mean and variance of the first Gaussians.
        mean_j, var_j: `(..., d)` mean and variance of the second Gaussians.

    Returns:
        `(...)` energies.

    Example:

    >>> import numpy as np
    >>> mean, var = np.zeros((1, 2)), np.ones((1, 2))
    >>> # log N(0; 0 - 1, I + I) in 2-d: -log(4 pi) - 1/2 * 2 / 2
    >>> keras.ops.convert_to_numpy(ELEnergy()(mean, var, mean + 1.0, var)).round(4)
    array([-3.031], dtype=float32)
    >>> from keras_gauss.layers import GaussianEmbedding
    >>> words = GaussianEmbedding(100, 8)
    >>> mean_i, var_i = words(np.array([1, 2]))
    >>> mean_j, var_j = words(np.array([3, 4]))
    >>> tuple(ELEnergy()(mean_i, var_i, mean_j, var_j).shape)
    (2,)
    """

    energy = energies.EL

    def __init__(self, include_constant=True, **kwargs):
        if not isinstance(include_constant, (bool, np.bool_)):
            # bool("False") is True: a string from a settings file must not
            # silently keep the constant.
            raise TypeError(f"`include_constant` must be True or False, got {include_constant!r}.")
        super().__init__(**kwargs)
        self.include_constant = bool(include_constant)

    def kernel_options(self):
        return {"include_constant": self.include_constant}

    def compute(self, mean_i, var_i, mean_j, var_j):
        return gauss_ops.el_energy(mean_i, var_i, mean_j, var_j,
                                   include_constant=self.include_constant)

    def get_config(self):
        config = super().get_config()
        config.update({"include_constant": self.include_constant})
        return config
