"""Package attributes that import their module on first use (PEP 562)."""

import importlib
import sys


def lazy_exports(package, exports):
    """Returns a module `__getattr__` for `package`.

    Args:
        package: the package's `__name__`.
        exports: `{public name: submodule name}`; the first use of a name
            imports `package.submodule` and caches the attribute.

    Example:

    >>> __getattr__ = lazy_exports(__name__, {"split_edges": "split"})  # doctest: +SKIP
    """

    def __getattr__(name):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
