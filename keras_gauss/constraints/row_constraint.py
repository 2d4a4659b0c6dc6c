import keras


class RowConstraint(keras.constraints.Constraint):
    """Base class of constraints that act on each table row independently.

    A row constraint maps every row of an embedding table (the last axis is
    the embedding dimension) without looking at other rows, so projecting a
    subset of rows gives the same result as projecting the whole table and
    reading those rows. Sparse optimizers such as
    `keras_gauss.optimizers.SparseAdagrad` rely on this to project only the
    rows a step touched, instead of every row of the table.

    Subclasses implement `__call__(w)` for `w` shaped `(..., d)`.
    """

    rowwise = True
