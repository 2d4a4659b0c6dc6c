"""AdaGrad's floor: `SparseAdagrad`'s default starting accumulator and epsilon.

Every trainer that starts its accumulators as `SparseAdagrad` does reads them
here (the native trainers, the pipelines' settings and model files), without
importing Keras.

Example:

>>> from keras_gauss.optimizers.adagrad_floor import EPSILON, INITIAL_ACCUMULATOR
>>> INITIAL_ACCUMULATOR, EPSILON
(1e-06, 1e-07)
"""

# The first step of a row is about `learning_rate` long whatever the batch:
# see `SparseAdagrad`'s text.
INITIAL_ACCUMULATOR = 1e-6
EPSILON = 1e-7
