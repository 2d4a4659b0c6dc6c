"""`Energy`: what the package knows about one energy, in one place."""

import dataclasses
import importlib
from types import MappingProxyType

# The places an energy can run, beyond its Keras layer (which every energy has):
# "kernels": the layers' compiled TensorFlow/JAX kernels (fused/layer_ops.cc,
# fused/jax_ops.cc); "native-corpus": `train-corpus --engine native`
# (fused/native.cc); "native-hierarchy": `train-wordnet --engine native`
# (fused/pairs.cc); "scores": the reconstruction's score blocks (fused/scores.cc).
ENGINES = ("kernels", "native-corpus", "native-hierarchy", "scores")
# What an energy is trained for: "corpus" (`train-corpus`, word against
# context) and "hierarchy" (`train-wordnet`/`train-hierarchy`, is-a edges).
TASKS = ("corpus", "hierarchy")


def _resolve(reference):
    module, name = reference.split(":")
    return getattr(importlib.import_module(module), name)


@dataclasses.dataclass(frozen=True, eq=False)
class Energy:
    """One energy of two diagonal Gaussians: its name, code, formulas and defaults.

    Importing a descriptor imports neither Keras nor the C++ library: the
    Keras formula and layer are named by `"module:attribute"` and imported on
    first use (`keras_formula()`, `layer_class()`).

    Args:
        name: the name in settings, `run.json` and `--energy` (`"kl"`).
        code: the integer the C++ knows it by (`fused/energies.h`; the test
            `tests/keras_gauss/energies/test_energies.py` reads the header).
        title: its name in prose and table rows (`"KL"`, `"containment"`).
        label: its short column label (`"KL"`, `"box"`).
        numpy: the float64 NumPy formula `numpy(mean_a, var_a, mean_b, var_b,
            **options, xp=numpy)` with `a` the specific side (EL is
            symmetric); the reference the Keras formula and the C++ are
            tested against. `xp=jax.numpy` (64-bit JAX) runs the same
            formula on a device (`keras_gauss.hierarchy.device_scores`).
        options: the keyword options `numpy` takes (`"include_constant"`,
            `"generality"`).
        keras: `"module:function"` of the `keras.ops` formula, called
            `(general_mean, general_var, specific_mean, specific_var)`.
        layer: `"module:class"` of its `keras_gauss.layers.GaussianEnergy`.
        tasks: what it trains (`TASKS`).
        engines: where else it runs (`ENGINES`).
        loss_defaults: the hierarchy settings it trains with unless told
            otherwise (`loss`, `threshold`, `margin`, `negatives`,
            `reversed_negatives`, `init`, `max_norm`, `min_variance`; the
            `WordNetConfig` fields of those names).
        rank_by_box: neighbours rank by `keras_gauss.numpy_ops.containment_rank`
            (every holding box scores about 0: the smallest first).
        words: `(short, long)`: what a hierarchy command trains with it, in
            words, for the commands' help (`("asymmetric KL", "...")`).

    Example:

    >>> from keras_gauss.energies import KL
    >>> KL.name, KL.code, "native-hierarchy" in KL.engines
    ('kl', 1, True)
    >>> float(KL.numpy([0.0], [1.0], [1.0], [1.0]))  # -KL(N(0, 1) || N(1, 1))
    -0.5
    """

    name: str
    code: int
    title: str
    label: str
    numpy: object
    keras: str
    layer: str
    tasks: tuple
    engines: tuple = ()
    options: tuple = ()
    loss_defaults: object = dataclasses.field(default_factory=dict)
    rank_by_box: bool = False
    words: tuple = ()

    def __post_init__(self):
        unknown = set(self.tasks) - set(TASKS) | set(self.engines) - set(ENGINES)
        if unknown:
            raise ValueError(f"energy {self.name!r}: unknown tasks or engines {sorted(unknown)}")
        object.__setattr__(self, "loss_defaults", MappingProxyType(dict(self.loss_defaults)))

    def keras_formula(self):
        """The `keras.ops` formula (imports Keras)."""
        return _resolve(self.keras)

    def layer_class(self):
        """The Keras layer class (imports Keras)."""
        return _resolve(self.layer)

    def __repr__(self):
        return f"Energy({self.name!r})"
