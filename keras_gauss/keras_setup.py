"""Keras for keras_gauss: the backend check, and every serializable class
registered with Keras from `import keras_gauss` on.

`keras.saving.load_model` finds a class by its registered name
(`keras_gauss>GaussianEmbedding`), so every class must be registered before
a `.keras` file loads. Importing the classes imports Keras and TensorFlow
(seconds), which the `keras-gauss` command avoids when its engine needs
neither. So `import keras_gauss` registers them at once when Keras is
already imported, and otherwise installs an import hook that registers them
the moment Keras has finished importing (from `import keras`, `import
tensorflow` or the first use of `keras_gauss.GaussianEmbedding` alike). A
process that never imports Keras never pays for it.

Example:

>>> import keras_gauss, keras  # doctest: +SKIP
>>> keras.saving.load_model("runs/wordnet/model.keras")  # doctest: +SKIP
<GaussianModel name=...>
"""

import importlib
import importlib.abc
import sys

# the modules whose classes carry `keras.saving.register_keras_serializable`
SERIALIZABLE_MODULES = (
    "keras_gauss.constraints",
    "keras_gauss.layers",
    "keras_gauss.losses",
    "keras_gauss.models",
    "keras_gauss.optimizers.sparse_adagrad",
)
# Registration waits until none of these is half-imported: Keras imports
# TensorFlow (and `import tensorflow` imports Keras) part-way through.
_BACKENDS = ("keras", "tensorflow", "jax", "torch")


def require_backend():
    """Imports Keras's backend, or raises one clear `ImportError` naming the extra to install."""
    try:
        import keras

        # The JAX backend (`KERAS_BACKEND=jax`) trains and loads without
        # TensorFlow; only tf.data pipelines and serving exports need it.
        if keras.backend.backend() != "jax":
            import tensorflow  # noqa: F401
    except ImportError as error:  # pragma: no cover - depends on the install
        raise ImportError(
            "keras-gauss needs TensorFlow. Install it with the extra that fits "
            "your machine: `pip install keras-gauss[cpu]` (CPU-only wheel) or "
            "`pip install keras-gauss[gpu]`."
        ) from error


def register_serializables():
    """Imports every serializable class so `keras.saving.load_model` finds it by name.

    `import keras_gauss` arranges this by itself (see the module's text);
    calling it again does nothing new.
    """
    require_backend()
    for module in SERIALIZABLE_MODULES:
        importlib.import_module(module)


def _watched(name):
    return name in _BACKENDS or name.startswith("keras_gauss.")


def _initializing(name):
    module = sys.modules.get(name)
    return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))


class _Hook(importlib.abc.MetaPathFinder):
    """Finds Keras, the backends and keras_gauss's modules with the other
    finders, and registers once Keras is imported and none is half-imported."""

    def __init__(self):
        self.done = False

    def find_spec(self, name, path, target=None):
        if self.done or not _watched(name):
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, self)
                return spec
        return None

    def maybe_register(self):
        if self.done or "keras" not in sys.modules:
            return
        if any(_initializing(name) for name in list(sys.modules) if _watched(name)):
            return  # the last of them to finish comes back here
        self.done = True
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        try:
            register_serializables()
        except ImportError:
            pass  # no backend installed: nothing can load a model anyway


class _Loader(importlib.abc.Loader):
    """Runs the real loader, then asks the hook to register."""

    def __init__(self, loader, hook):
        self._loader, self._hook = loader, hook

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        # the module's own import is still marked as running; finish it first
        module.__spec__._initializing = False
        self._hook.maybe_register()

    def __getattr__(self, name):  # get_source, get_resource_reader, ...
        return getattr(self._loader, name)


def install_registration():
    """Registers now if Keras is imported, else when it is (called by `import keras_gauss`)."""
    hook = _Hook()
    if "keras" in sys.modules:
        hook.maybe_register()
        if hook.done:
            return
    sys.meta_path.insert(0, hook)
