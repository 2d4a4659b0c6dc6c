from keras_gauss.optimizers.sparse_adagrad import SparseAdagrad

__all__ = ["SparseAdagrad"]
