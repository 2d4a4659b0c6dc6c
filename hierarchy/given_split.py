"""A split given as files: train on exactly these is-a pairs, choose on these, test on these.

`--train-edges FILE` holds the training pairs, one `child<TAB>parent`
(or `child,parent`) a line as `--edges` does; they are trained exactly
as given: no closure edge is added. `--val-edges` and `--test-edges`
hold labelled pairs, `child<TAB>parent<TAB>label` (or commas) with label
`1` (is-a) or `0` (not), as a run's `split/val.tsv` and
`split/test.tsv` are written. Blank lines and `#` comments are skipped,
and a first line whose label is not `0`/`1` is a header.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from keras_gauss.inputs import InputFileError
from keras_gauss.inputs import read_text

from .closure import Hierarchy
from .edgefile import EdgeFileError, csv_rows, hierarchy_from_edge_file
from .split import EdgeSplit

__all__ = ["GivenSplit", "read_given_split", "read_labelled_pairs"]

_LABELS = {"1": 1, "0": 0, "true": 1, "false": 0}


@dataclass(frozen=True)
class LabelledPairs:
    """The labelled pairs of a file: `pairs` `(child, parent)` names, `labels` 1/0, `lines`."""

    path: str
    pairs: tuple[tuple[str, str], ...]
    labels: tuple[int, ...]
    lines: tuple[int, ...]


def _text(path, option: str) -> str:
    try:
        return read_text(path, option, encoding="utf-8-sig")
    except InputFileError as error:
        raise EdgeFileError(str(error)) from None


def read_labelled_pairs(path, option: str = "--val-edges") -> LabelledPairs:
    """Reads `child, parent, label` lines (see the module docstring).

    Args:
        path: the file.
        option: the command-line option that named it (used in messages).

    Returns:
        A `LabelledPairs` in file order (repeated lines kept: a
        published negative may repeat).

    Raises:
        EdgeFileError: a missing or non-text file, a line that is not two
            names and a 0/1 label, a self pair, or no pair (one line naming
            the file and line).

    Example:
        >>> with open("val.tsv", "w") as f:
        ...     _ = f.write("dog\\tanimal\\t1\\nanimal\\tdog\\t0\\n")
        >>> read_labelled_pairs("val.tsv").labels
        (1, 0)
    """
    where = f"{option} {path}"
    text = _text(path, option)
    pairs, labels, lines = [], [], []
    first, header = True, None
    for number, stripped, delimiter, fields in csv_rows(text, where):
        form = "child<TAB>parent<TAB>label" if delimiter == "\t" else "child,parent,label"
        if len(fields) != 3 or not all(fields):
            raise EdgeFileError(f"{where}: line {number}: expected {form} (label 1 or 0); "
                                f"got {stripped[:80]!r}.")
        label = _LABELS.get(fields[2].lower())
        if first and label is None:
            first, header = False, (number, stripped)
            continue
        first = False
        if label is None:
            raise EdgeFileError(f"{where}: line {number}: the label must be 1 (is-a) or 0 "
                                f"(not), got {fields[2][:20]!r}.")
        if fields[0] == fields[1]:
            raise EdgeFileError(f"{where}: line {number}: a self pair ({fields[0]!r}).")
        pairs.append((fields[0], fields[1]))
        labels.append(label)
        lines.append(number)
    if not pairs and header is not None:  # a lone line with a bad label
        raise EdgeFileError(f"{where}: no labelled pairs: its only line, line {header[0]} "
                            f"({header[1][:80]!r}), is read as a header, its label not 1 or 0.")
    if not pairs:
        raise EdgeFileError(f"{where}: no labelled pairs (the file is empty or all comments).")
    return LabelledPairs(str(path), tuple(pairs), tuple(labels), tuple(lines))


@dataclass(frozen=True)
class GivenSplit:
    """A split read from files: the hierarchy of the training pairs, the split and a summary line."""

    hierarchy: Hierarchy
    split: EdgeSplit
    summary: str


def read_given_split(train, val, test) -> GivenSplit:
    """Reads `--train-edges`, `--val-edges` and `--test-edges` into a split.

    The nodes are those of the training pairs; the hierarchy is the closure
    of the training pairs (what reconstruction and the baselines see);
    `split.train` is the training pairs exactly, without their closure.

    Args:
        train: the training pairs file (`child, parent`).
        val: the validation file (`child, parent, label`).
        test: the test file (`child, parent, label`).

    Returns:
        A `GivenSplit`; `split.method` is `"given"`.

    Raises:
        EdgeFileError: as `read_labelled_pairs`; a cycle in the
            training pairs; a validation or test node that is not a node of
            the training pairs; a held-out positive that is a training pair;
            a pair labelled both ways; a positive in both validation and
            test; a file without positives or negatives (one line naming the
            file and line).

    Example:
        >>> with open("train.tsv", "w") as f:
        ...     _ = f.write("dog\\tmammal\\ncat\\tmammal\\nmammal\\tanimal\\n")
        >>> with open("val.tsv", "w") as f:
        ...     _ = f.write("dog\\tanimal\\t1\\nanimal\\tdog\\t0\\n")
        >>> with open("test.tsv", "w") as f:
        ...     _ = f.write("cat\\tanimal\\t1\\ncat\\tdog\\t0\\n")
        >>> given = read_given_split("train.tsv", "val.tsv", "test.tsv")
        >>> len(given.split.train), len(given.hierarchy.edges)  # as given; the closure has 5
        (3, 5)
    """
    try:
        hierarchy, edge_file = hierarchy_from_edge_file(train)
    except EdgeFileError as error:
        raise EdgeFileError(str(error).replace("--edges", "--train-edges", 1)) from None
    ids = hierarchy.node_ids
    n = hierarchy.num_nodes
    train_pairs = np.array([[ids[c], ids[p]] for c, p in edge_file.pairs], dtype=np.int64)
    train_line = {int(c) * n + int(p): line
                  for (c, p), line in zip(train_pairs.tolist(), edge_file.lines)}
    seen: dict[int, tuple[str, int, int]] = {}  # key -> (option, line, label)
    parts = {}
    for option, path in (("--val-edges", val), ("--test-edges", test)):
        where = f"{option} {path}"
        given = read_labelled_pairs(path, option)
        rows = np.empty((len(given.pairs), 2), dtype=np.int64)
        for i, ((child, parent), label, line) in enumerate(zip(given.pairs, given.labels,
                                                               given.lines)):
            for name in (child, parent):
                if name not in ids:
                    raise EdgeFileError(f"{where}: line {line}: {name!r} is not a node of "
                                        f"--train-edges {train}.")
            key = ids[child] * n + ids[parent]
            rows[i] = ids[child], ids[parent]
            if key in train_line:
                what = ("is also a training pair" if label else
                        "is labelled 0 but is a training pair")
                raise EdgeFileError(f"{where}: line {line}: ({child}, {parent}) {what} "
                                    f"(--train-edges {train} line {train_line[key]}).")
            if key in seen:
                other, other_line, other_label = seen[key]
                if other_label != label:
                    raise EdgeFileError(f"{where}: line {line}: ({child}, {parent}) is labelled "
                                        f"{label} here and {other_label} in {other} line "
                                        f"{other_line}.")
                if label and other != where:
                    raise EdgeFileError(f"{where}: line {line}: the positive ({child}, {parent}) "
                                        f"is also in {other} line {other_line}: the splits "
                                        "overlap.")
            else:
                seen[key] = (where, line, label)
        labels = np.asarray(given.labels, dtype=bool)
        if labels.all() or not labels.any():
            raise EdgeFileError(f"{where}: needs both positives (label 1) and negatives "
                                f"(label 0), got only {'positives' if labels.all() else 'negatives'}.")
        parts[option] = (rows[labels].astype(np.int32), rows[~labels].astype(np.int32))
    (val_pos, val_neg), (test_pos, test_neg) = parts["--val-edges"], parts["--test-edges"]
    split = EdgeSplit(train=train_pairs.astype(np.int32), val=val_pos, val_neg=val_neg,
                      test=test_pos, test_neg=test_neg, num_nodes=n, method="given")
    summary = (f"--train-edges {train}: {len(train_pairs):,} is-a pairs over {n:,} nodes, trained "
               f"as given (no closure edge added); validation {len(val_pos):,} + "
               f"{len(val_neg):,} and test {len(test_pos):,} + {len(test_neg):,} labelled pairs "
               "(positives + negatives)")
    return GivenSplit(hierarchy, split, summary)
