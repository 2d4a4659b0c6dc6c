"""A hierarchy run's data: the hierarchy a config names, its split, the
training edges, each process's shard of them, the split files and the
content digest a checkpoint holds."""

import numpy as np

from keras_gauss.distribution import DistributionError
from keras_gauss.job import Digest


def _size(value):
    if value is None:
        return None
    return int(value) if value >= 1 else float(value)


def load_hierarchy(config):
    """The hierarchy a config names: its `--train-edges` or `--edges` file, else
    WordNet; without the root it drops (`drop_root`).

    Returns:
        `(hierarchy, source)`: `source` is a line saying where it came from.

    Raises:
        ValueError: a bad edges file or root (`EdgeFileError` names the file
            and line or node), or WordNet's own errors.
    """
    from keras_gauss.hierarchy import build_hierarchy
    from keras_gauss.hierarchy.edgefile import hierarchy_from_edge_file

    if config.train_edges is not None:
        given = _given(config)
        return given.hierarchy, given.summary
    if config.edges is not None:
        hierarchy, edge_file = hierarchy_from_edge_file(config.edges, root=config.root)
        source = edge_file.summary()
    else:
        hierarchy = build_hierarchy(config.root, include_lemmas=config.include_lemmas,
                                    pos=config.pos)
        kind = {"n": "nouns", "v": "verbs"}[config.pos]
        source = f"WordNet 3.0 {kind}" + (f" under {config.root}" if config.root else "")
    root = root_to_drop(config, hierarchy)
    if root is not None:
        from keras_gauss.hierarchy.split import drop_root

        hierarchy = drop_root(hierarchy, root)
        source += f"; root {root} dropped: {hierarchy.num_nodes:,} nodes, {len(hierarchy.edges):,} closure edges"
    return hierarchy, source


def root_to_drop(config, hierarchy):
    """The node `config.drop_root` removes (`None`: none): by default, with
    `--split ganea`, the hierarchy's root (`--root`, WordNet nouns'
    `entity.n.01`, or the only node without parents)."""
    if config.drop_root is not None:
        return None if config.drop_root == "none" else config.drop_root
    if config.split != "ganea" or config.train_edges is not None:
        return None
    tops = np.flatnonzero(hierarchy.index.num_ancestors == 0)
    if config.root is not None:
        return config.root
    if len(tops) == 1:
        return hierarchy.nodes[int(tops[0])]
    return None


def _given(config):
    from keras_gauss.hierarchy.given_split import read_given_split

    return read_given_split(config.train_edges, config.val_edges, config.test_edges)


def load_data(config):
    """`(hierarchy, source, split, split_line)`: `load_hierarchy` and `make_split`
    (a given split's files read once)."""
    if config.train_edges is not None:
        given = _given(config)
        return given.hierarchy, given.summary, *make_split(given.hierarchy, config, given)
    hierarchy, source = load_hierarchy(config)
    return hierarchy, source, *make_split(hierarchy, config)


def make_split(hierarchy, config, given=None):
    """The split of a config (`None` without held-out edges), and a line
    describing it (`given`: the `GivenSplit` of `--train-edges`, if read)."""
    from keras_gauss.hierarchy.split import DEFAULT_HELD_OUT, ganea_split, split_edges

    if config.train_edges is not None:
        given = given or _given(config)
        return given.split, ("held out: the labelled pairs of --val-edges and --test-edges; "
                             "negatives of training avoid the closure of the training pairs")
    if config.split == "ganea":
        split = ganea_split(hierarchy, config.non_basic_percent, seed=config.seed)
        extra = len(split.train) - split.num_basic
        line = (f"--split ganea --non-basic-percent {config.non_basic_percent:g}: training = the "
                f"{split.num_basic:,} basic edges (transitive reduction) + {extra:,} of the "
                f"{split.eligible:,} non-basic edges; held out: {len(split.val):,} validation + "
                f"{len(split.test):,} test non-basic edges (5% + 5%), with {len(split.val_neg):,} + "
                f"{len(split.test_neg):,} negatives (5 a side: child or parent corrupted, none in "
                "the closure). Not added to training: the other non-basic edges, i.e. no closure "
                "of the training edges (their closure is every edge: a lookup in it scores 1.0); "
                "negatives of training avoid it")
        return split, line
    if config.val_size == 0:
        return None, f"no held-out edges: training on all {len(hierarchy.edges):,}"
    split = split_edges(hierarchy, val_size=_size(config.val_size),
                        test_size=_size(config.test_size), seed=config.seed,
                        method=config.split)
    what = {"closure": "closure edges implied by training edges (Vendrov et al.)",
            "reduction": "edges of the transitive reduction (implied by no training edge)"}
    line = (f"--split {config.split}: {len(split.val):,} validation + {len(split.test):,} test "
            f"{what[config.split]}")
    if hierarchy.synsets_only is not hierarchy:
        line += ", between synsets (every word edge trains)"
    if config.val_size is None or config.test_size is None:
        line += (f"; default size: the smaller of {DEFAULT_HELD_OUT:,} and 10% of "
                 f"{split.eligible:,} eligible edges")
    return split, line


def training_edges(hierarchy, split):
    """`(edges, known)`: the training positives and what the negative sampler may know.

    With a split the sampler sees the closure of the training edges only, never
    a held-out edge, so its negatives are the ones it would draw if the
    held-out edges did not exist.

    Raises:
        ValueError: a training edge without any negative (`check_negatives`:
            one line naming it).
    """
    from keras_gauss.hierarchy.negatives import check_negatives

    edges, known = ((hierarchy.edges, hierarchy.index) if split is None
                    else (split.train, split.train_index))
    check_negatives(edges, known, hierarchy.nodes,
                    drop_root=split is None or split.method != "given")
    return edges, known


def write_split(directory, split, nodes):
    """Writes the split as node names: `train.tsv` (`specific<TAB>general`) and one
    `PART.tsv` per evaluation part (`specific<TAB>general<TAB>label`, 1 = is-a)."""
    directory.mkdir()
    names = np.asarray(nodes, dtype=object)

    def lines(pairs, label=None):
        rows = names[np.asarray(pairs, dtype=np.int64).reshape(-1, 2)]
        end = "" if label is None else f"\t{label}"
        return "".join(f"{a}\t{b}{end}\n" for a, b in rows)

    (directory / "train.tsv").write_text(lines(split.train), encoding="utf-8")
    for name, (pos, neg) in split.parts().items():
        (directory / f"{name}.tsv").write_text(lines(pos, 1) + lines(neg, 0), encoding="utf-8")


def shard_steps(num_edges, batch_size, job):
    """The steps of an epoch of a job whose process `i` of `N` trains edges
    `i::N` of the `num_edges` training edges, `batch_size / N` a step.

    Every process knows every shard's size (all split the same seeded
    hierarchy), so they agree without a message: the fewest full local
    batches of any shard, `(num_edges // N) // (batch_size // N)`.

    Raises:
        keras_gauss.distribution.DistributionError: a shard without one full
            batch (more processes than edges to share).

    Example:

    >>> from keras_gauss.distribution import Distribution
    >>> shard_steps(100, 16, Distribution("data", num_processes=2, process_id=1))
    6
    """
    n, local = job.num_processes, batch_size // job.num_processes
    steps = (num_edges // n) // local
    if steps < 1:
        raise DistributionError(
            f"--num-processes {n}: process {n - 1} trains {num_edges // n} of the {num_edges} "
            f"training edges (edges i::{n}), not one full batch of {local} (--batch-size "
            f"{batch_size} / --num-processes); give fewer processes or a smaller --batch-size.")
    return steps


def shard_edges(config, edges, known, job, epoch, steps):
    """This process's batches of epoch `epoch`: its edges `i::N`, `steps` batches.

    `make_dataset` of `edges[i::N]` with `batch_size / N` edges a batch
    and the process's own seed (`job.process_seed`); the job's global
    batch `k` is every process's batch `k`, in process order.

    Example:

    >>> batches = shard_edges(config, split.train, split.train_index, job, 0, steps)  # doctest: +SKIP
    """
    from keras_gauss.hierarchy import make_dataset

    config = config.resolved()
    local = config.batch_size // job.num_processes
    data = make_dataset(edges[job.process_id::job.num_processes], known=known,
                        batch_size=local, negatives=config.negatives,
                        reversed_negatives=config.reversed_negatives,
                        sibling_negatives=config.sibling_negatives,
                        seed=job.process_seed(config.seed), first_pass=epoch,
                        drop_remainder=True)
    return job.local_batches(data, local, steps)


def hierarchy_digest(hierarchy, split=None):
    """The content digest of a hierarchy (`keras_gauss.job.Digest`): its node
    names in table order and its closure edges, whatever file or WordNet
    they came from; with a split read from files (`split.method ==
    "given"`), every part of it too, each pair in file order: the training
    pairs as given (they are trained as given, in their order), the
    validation and test positives and negatives (the run chooses on them).
    A split the run makes follows from the hierarchy and the settings.

    Example:

    >>> from keras_gauss.hierarchy.closure import hierarchy_from_parents
    >>> a = hierarchy_from_parents({"dog": ["mammal"], "cat": ["mammal"], "mammal": []})
    >>> b = hierarchy_from_parents({"dog": ["mammal"], "mammal": ["cat"], "cat": []})
    >>> hierarchy_digest(a) == hierarchy_digest(b)
    False
    """
    digest = Digest("hierarchy")
    digest.update_strings(hierarchy.nodes)
    digest.update(np.asarray(hierarchy.edges, np.int64))
    if split is not None and split.method == "given":
        for part in ("train", "val", "val_neg", "test", "test_neg"):
            pairs = np.asarray(getattr(split, part), np.int64).reshape(-1, 2)
            digest.update_strings([part])
            digest.update(np.array([len(pairs)], np.int64))  # where one part ends
            digest.update(pairs)
    return digest.hexdigest()
