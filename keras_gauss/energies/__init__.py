"""The energies, one descriptor each: every table, check and choice derives from here.

An energy scores a pair of diagonal Gaussians. Each has one module here
holding its `Energy` descriptor (name, the integer code the C++ shares
through `keras_gauss/fused/energies.h`, the NumPy formula, the Keras formula
and layer, the loss defaults, the engines that run it). The rest of the
package asks this package instead of naming energies:

- `get(name, task=..., engine=...)`: the descriptor, or one `ValueError`
  line naming the setting and the choices;
- `names(task=..., engine=...)`: the choices (argparse, `run.json` checks).

Adding an energy: one module here, its layer (a one-method
`keras_gauss.layers.GaussianEnergy`), its C++ function where an engine runs
it (the code in `fused/energies.h`), and their tests.

Importing this package imports neither Keras nor the C++ library.

Example:

>>> from keras_gauss import energies
>>> energies.names(task="hierarchy")
('kl', 'containment')
>>> energies.get("containment").loss_defaults["loss"]
'threshold'
>>> energies.get("box")
Traceback (most recent call last):
ValueError: energy must be one of el, kl, containment, got 'box'.
"""

from keras_gauss.energies.base import ENGINES
from keras_gauss.energies.base import TASKS
from keras_gauss.energies.base import Energy
from keras_gauss.energies.containment import CONTAINMENT
from keras_gauss.energies.el import EL
from keras_gauss.energies.kl import KL

ALL = (EL, KL, CONTAINMENT)
BY_NAME = {energy.name: energy for energy in ALL}
# The energy each command trains unless told otherwise.
DEFAULTS = {"corpus": EL, "hierarchy": CONTAINMENT}


def names(task=None, engine=None):
    """The names of the energies for `task` (`TASKS`) run by `engine` (`ENGINES`), in order.

    Example:

    >>> names(engine="scores")
    ('kl', 'containment')
    """
    return tuple(e.name for e in ALL if (task is None or task in e.tasks)
                 and (engine is None or engine in e.engines))


def get(name, task=None, engine=None, setting="energy"):
    """The descriptor of energy `name`, checked once for `task` and `engine`.

    Args:
        name: an energy's name, or an `Energy` (returned as is after the check).
        task: `"corpus"` or `"hierarchy"`: the energy must train it.
        engine: one of `ENGINES`: the energy must run on it.
        setting: how the error names the setting (`"--energy"`).

    Raises:
        ValueError: one line naming `setting`, the value and the choices.

    Example:

    >>> get("kl", task="hierarchy").code
    1
    >>> get("el", task="hierarchy", setting="--energy")
    Traceback (most recent call last):
    ValueError: --energy must be one of kl, containment, got 'el'.
    """
    energy = name if isinstance(name, Energy) else BY_NAME.get(name)
    choices = names(task, engine)
    if energy is None or energy.name not in choices:
        raise ValueError(f"{setting} must be one of {', '.join(choices)}, got "
                         f"{getattr(name, 'name', name)!r}.")
    return energy


__all__ = ["ALL", "BY_NAME", "CONTAINMENT", "DEFAULTS", "EL", "ENGINES", "Energy", "KL",
           "TASKS", "get", "names"]
