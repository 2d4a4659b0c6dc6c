from keras_gauss._lazy import lazy_exports

# `SparseAdagrad` loads Keras on first use; `adagrad_floor` does not.
__getattr__ = lazy_exports(__name__, {"SparseAdagrad": "sparse_adagrad"})

__all__ = ["SparseAdagrad"]
