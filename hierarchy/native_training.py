"""The native engine's training of a hierarchy: the C++ pair trainer's epochs, no TensorFlow.

`train_wordnet(engine="native")` (the default where the native library
builds; `keras_gauss.hierarchy.engines.NativeHierarchyEngine`) trains the
hierarchy model's table with `keras_gauss.fused.NativePairTable`: the
step of the compiled model (`hierarchy_model`: energy, loss, SparseAdagrad
and the table's bounds), with the epoch's order and every step's negatives
drawn in C++ (`keras_gauss.fused.pairs`) from the seed, the epoch and the
step. Steps run in chunks of `CHUNK_STEPS`; a checkpoint is taken between
two chunks when due. It holds the table and its accumulators as they are
(`native/means`, `native/variances`, `native/mean_accumulator`,
`native/variance_accumulator`), the position (epoch, step) and the epoch's
summed loss so far, so a resumed run redraws the same batches and ends with
the tables of an uninterrupted one, bit for bit.
"""

import numpy as np

from keras_gauss.callbacks.progress import Progress
from keras_gauss.checks import check_loss
from keras_gauss.fused.pairs import NativePairTable
from keras_gauss.fused.pairs import RelatedNodes
from keras_gauss.fused.pairs import order

# Steps per call of the native trainer: the unit of checkpoints.
CHUNK_STEPS = 16
# The engine a native checkpoint names.
ENGINE = "native"
ARRAYS = ("means", "variances", "mean_accumulator", "variance_accumulator")


def related_nodes(index, sibling_negatives=0.0):
    """The `RelatedNodes` of a `keras_gauss.hierarchy.closure.EdgeIndex`
    (its ancestor and descendant lists), which the negatives avoid; with
    `sibling_negatives` > 0 (`WordNetConfig.sibling_negatives`), also its
    direct links, which that fraction of the negatives follows to a sibling.

    Example:

    >>> from keras_gauss.hierarchy.closure import EdgeIndex
    >>> related_nodes(EdgeIndex(np.array([[1, 0], [2, 0]]), 3)).free.tolist()
    [0, 1, 1]
    """
    direct = None
    if sibling_negatives > 0:
        from keras_gauss.hierarchy.closure import EdgeIndex
        from keras_gauss.hierarchy.closure import transitive_reduction

        direct = EdgeIndex(transitive_reduction(index), index.num_nodes).csr()
    return RelatedNodes(*index.csr(), direct=direct, siblings=sibling_negatives)


def pair_table(config, rows, total_steps, index=None):
    """The table a (resolved) `WordNetConfig` trains, started as the keras
    engine's model starts: with `config.init == "tree"` nested along the
    direct links of `index` (the training edges' closure, `initial_table`),
    else means uniform in +-0.05 from the seed and variances 1 (NumPy's
    numbers, not Keras's); accumulators 1e-6.

    Example:

    >>> from keras_gauss.hierarchy.config import WordNetConfig
    >>> config = WordNetConfig(dim=3, init="uniform").resolved()
    >>> pair_table(config, rows=4, total_steps=10).means.shape
    (4, 3)
    """
    table = NativePairTable.initial(
        rows, config.dim, seed=config.seed, spherical=config.covariance == "spherical",
        energy=config.energy, loss=config.loss, margin=config.margin,
        threshold=config.threshold, learning_rate=config.learning_rate,
        schedule=config.learning_rate_schedule, total_steps=total_steps,
        max_norm=config.max_norm, min_variance=config.min_variance,
        max_variance=config.max_variance)
    start = initial_table(config, index)
    if start is not None:
        table.means[...], table.variances[...] = start
    return table


def initial_table(config, index):
    """The starting `(means, variances)` of a (resolved) config with
    `init == "tree"` or `"tree-size"` (`keras_gauss.hierarchy.initialization.tree_initialization`
    of `index`, the training edges' closure, seeded by `config.seed`), else
    `None` (the layers' own start)."""
    if config.init not in ("tree", "tree-size"):
        return None
    if index is None:
        raise ValueError("init='tree' needs the training edges' closure (index).")
    from keras_gauss.hierarchy.initialization import SIZE_WEIGHT
    from keras_gauss.hierarchy.initialization import tree_initialization

    return tree_initialization(index, config.dim, min_variance=config.min_variance,
                               max_variance=config.max_variance, max_norm=config.max_norm,
                               seed=config.seed, spherical=config.covariance == "spherical",
                               size_weight=SIZE_WEIGHT if config.init == "tree-size" else 0.0)


def restore(table, arrays, out_dir):
    """Copies a native checkpoint's arrays into `table`; `CheckpointError`
    (one line) when one is missing or does not fit."""
    from keras_gauss.checkpoint import CheckpointError

    for name, target in zip(ARRAYS, table.arrays()):
        value = arrays.get(f"native/{name}")
        if value is None or value.dtype != np.float32 or value.shape != target.shape:
            got = "missing" if value is None else f"{value.dtype} {value.shape}"
            raise CheckpointError(
                f"--resume {out_dir}: the checkpoint's native/{name} is {got}, this run needs "
                f"float32 {target.shape}; start again with --overwrite.")
        target[...] = value


def train_epochs(table, related, edges, config, job, selection=None):
    """Trains `table` for the epochs of `config` from `job.state`'s position.

    Args:
        table: the `NativePairTable`.
        related: the `RelatedNodes` the negatives avoid.
        edges: the `(n, 2)` training edges.
        config: the resolved `WordNetConfig`.
        job: the `keras_gauss.job.Job` (state, checkpointer, verbose).
        selection: a `keras_gauss.hierarchy.selection.BestEpoch`, or None:
            scores every epoch's tables, stops on its patience, and ends
            with the best epoch's tables.

    Returns:
        `(losses, iterations)`: every epoch's loss (the mean over its edges
        of each edge's summed loss, as Keras logs it) and the steps taken.
    """
    edges = np.ascontiguousarray(edges, np.int32).reshape(-1, 2)
    batch, count = config.batch_size, len(edges)
    steps = -(-count // batch)
    state = job.state
    losses = list(state.get("losses", []))
    first_epoch, first_step = state.get("epoch", 0), state.get("step", 0)
    iterations = state.get("iterations", 0)
    checkpointer = job.checkpointer
    if checkpointer is not None and selection is not None:
        checkpointer = selection.wrap(checkpointer)
    progress = Progress(unit="edges", batch_size=batch, epoch_size=count,
                        mode={0: "off", 1: "auto"}.get(job.verbose, "lines"))
    progress.set_params({"epochs": config.epochs, "steps": steps})
    progress.on_train_begin()
    for epoch in range(first_epoch, config.epochs):
        step, loss = 0, 0.0
        if epoch == first_epoch and first_step:
            step, loss = first_step, state["epoch_loss"]
        progress.on_epoch_begin(epoch, {"edges": min(step * batch, count)})
        edge_order = order(count, config.seed, epoch)
        while step < steps:
            last = min(step + CHUNK_STEPS, steps)
            loss += table.train_steps(related, edges, config.seed, epoch, batch,
                                      config.negatives, config.reversed_negatives, first=step,
                                      last=last, iteration=iterations, edge_order=edge_order)
            iterations += last - step
            step = last
            seen = min(step * batch, count)
            check_loss(loss, f"in epoch {epoch + 1}, step {step}")
            progress.on_train_batch_end(step - 1, {"loss": loss / seen})
            if checkpointer is not None and checkpointer.due():
                checkpointer.save(
                    {"epoch": epoch, "step": step, "epoch_loss": loss, "losses": losses,
                     "iterations": iterations, "train_seconds": job.elapsed()},
                    {f"native/{name}": array.copy()
                     for name, array in zip(ARRAYS, table.arrays())})
        losses.append(loss / count)
        progress.on_epoch_end(epoch, {"loss": losses[-1], "edges": count})
        if selection is not None and selection.update(
                epoch, selection.score(table.means, table.variances, epoch),
                [table.means, table.variances]):
            break
    progress.on_train_end()
    if selection is not None and selection.weights is not None:
        table.means[...], table.variances[...] = selection.weights
    return losses, iterations
