"""A user's own taxonomy: is-a pairs read from a TSV or CSV file.

One pair a line, `child<TAB>parent` or `child,parent` (CSV quoting
allowed), meaning *child is-a parent*. Blank lines and lines starting with
`#` are skipped. The first pair is read as a header when neither of its
two names occurs anywhere else in the file (`child,parent`). Self-loops
(`a, a`) and repeated pairs are dropped and counted; a cycle is an error
that names one.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass

from keras_gauss.inputs import InputFileError
from keras_gauss.inputs import read_text

from .closure import CycleError, Hierarchy, hierarchy_from_parents

__all__ = ["EdgeFile", "EdgeFileError", "hierarchy_from_edge_file", "read_edge_file"]


# Header names that put the general node first (`parent<TAB>child`): such a
# file's pairs would train every link upside down.
GENERAL_FIRST = {("parent", "child"), ("hypernym", "hyponym"), ("superclass", "subclass"),
                 ("broader", "narrower"), ("general", "specific")}


class EdgeFileError(ValueError):
    """An edges file that cannot be used; the message names the file and the line or node."""


@dataclass(frozen=True)
class EdgeFile:
    """The is-a pairs of an edges file.

    Attributes:
        path: the file.
        pairs: unique `(child, parent)` name pairs, in file order, no self-loops.
        lines: the line number of each pair's first occurrence.
        header: the header line's two names, or `None`.
        self_loops: number of `a, a` lines dropped.
        duplicates: number of repeated pairs dropped.
    """

    path: str
    pairs: tuple[tuple[str, str], ...]
    lines: tuple[int, ...]
    header: tuple[str, str] | None
    self_loops: int
    duplicates: int

    def parents(self) -> dict[str, list[str]]:
        """`{child: [parents]}` of the pairs."""
        out: dict[str, list[str]] = {}
        for child, parent in self.pairs:
            out.setdefault(child, []).append(parent)
        return out

    def summary(self) -> str:
        """One line: pairs read, and what was dropped."""
        dropped = [f"{k} {what}" for k, what in ((self.self_loops, "self-loops"),
                                                 (self.duplicates, "duplicate pairs")) if k]
        header = f", header {self.header[0]!r}, {self.header[1]!r} skipped" if self.header else ""
        return (f"{self.path}: {len(self.pairs):,} is-a pairs{header}"
                + (f" ({', '.join(dropped)} dropped)" if dropped else ""))


def csv_rows(text, where):
    """`(line number, stripped line, delimiter, stripped fields)` of each line of
    an edge-like file that is not blank or a `#` comment: fields split by TAB
    when the first such line holds one, else by comma; a malformed line is an
    `EdgeFileError` naming `where` and the line.

    Example:
        >>> [fields for _, _, _, fields in csv_rows("# pairs\\ndog, animal\\n", "f")]
        [['dog', 'animal']]
    """
    delimiter = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if delimiter is None:
            delimiter = "\t" if "\t" in line else ","
        try:
            fields = next(csv.reader([line], delimiter=delimiter, strict=True))
        except csv.Error as error:
            raise EdgeFileError(f"{where}: line {number}: {error}.") from None
        yield number, stripped, delimiter, [f.strip() for f in fields]


def read_edge_file(path: str | os.PathLike) -> EdgeFile:
    """Reads the is-a pairs of a TSV or CSV file (see the module docstring).

    Args:
        path: the file; tab-separated if its first pair line holds a tab, else comma-separated.

    Returns:
        An `EdgeFile`.

    Raises:
        EdgeFileError: the file is missing, not a regular file (a FIFO, a
            device, a directory), holds a NUL byte or invalid UTF-8 anywhere,
            holds no pair or one line only, a line is not two non-empty names, or the header
            puts the general node first (`parent, child`: `GENERAL_FIRST`;
            the message names the line).

    Example:
        >>> with open("animals.tsv", "w") as f:
        ...     _ = f.write("dog\\tmammal\\ncat\\tmammal\\nmammal\\tanimal\\n")
        >>> read_edge_file("animals.tsv").pairs
        (('dog', 'mammal'), ('cat', 'mammal'), ('mammal', 'animal'))
    """
    name = str(path)
    try:
        text = read_text(path, "--edges", encoding="utf-8-sig")
    except InputFileError as error:
        raise EdgeFileError(str(error)) from None

    rows: list[tuple[int, list[str]]] = []
    for number, stripped, delimiter, fields in csv_rows(text, f"--edges {name}"):
        if len(fields) != 2 or not all(fields):
            form = "child<TAB>parent" if delimiter == "\t" else "child,parent"
            raise EdgeFileError(
                f"--edges {name}: line {number}: expected two names, {form}; got {stripped[:80]!r}."
            )
        if any("\t" in f for f in fields):
            raise EdgeFileError(f"--edges {name}: line {number}: a name holds a TAB; "
                                "names are written to TSV run files.")
        rows.append((number, fields))
    if not rows:
        raise EdgeFileError(f"--edges {name}: no is-a pairs (the file is empty or all comments).")
    if len(rows) == 1:  # (a header alone, or one pair: no third node to draw a negative from)
        number, (first, second) = rows[0]
        raise EdgeFileError(
            f"--edges {name}: its only line, line {number} ({first!r}, {second!r}), is a header "
            "with no pairs below it or a single pair, which has no node unrelated to it to "
            "train against; give more is-a pairs.")

    header = None
    if len(rows) > 1:
        first = set(rows[0][1])
        if not any(first & set(fields) for _, fields in rows[1:]):
            header = tuple(rows[0][1])
            if tuple(name.lower() for name in header) in GENERAL_FIRST:
                raise EdgeFileError(
                    f"--edges {name}: line {rows[0][0]}: the header {header[0]!r}, "
                    f"{header[1]!r} puts the general node first; pairs are child, parent "
                    "(specific first): swap the two columns.")
            rows = rows[1:]
    seen: dict[tuple[str, str], int] = {}
    self_loops = duplicates = 0
    for number, (child, parent) in rows:
        if child == parent:
            self_loops += 1
        elif (child, parent) in seen:
            duplicates += 1
        else:
            seen[child, parent] = number
    if not seen:
        raise EdgeFileError(f"--edges {name}: no is-a pairs besides self-loops.")
    return EdgeFile(name, tuple(seen), tuple(seen.values()), header, self_loops, duplicates)


def hierarchy_from_edge_file(path: str | os.PathLike, root: str | None = None) -> tuple[Hierarchy, EdgeFile]:
    """The transitive closure of an edges file, or of one node's subtree.

    Args:
        path: the edges file (see `read_edge_file`).
        root: keep only this node and its descendants.

    Returns:
        `(hierarchy, edge_file)`.

    Raises:
        EdgeFileError: as `read_edge_file`, and on a cycle (naming it and
            its lines), an unknown `root` or one without descendants.

    Example:
        >>> with open("animals.tsv", "w") as f:
        ...     _ = f.write("dog\\tmammal\\ncat\\tmammal\\nmammal\\tanimal\\nbird\\tanimal\\n")
        >>> h, _ = hierarchy_from_edge_file("animals.tsv", root="mammal")
        >>> sorted(h.nodes), len(h.edges)  # the part under mammal
        (['cat', 'dog', 'mammal'], 2)
    """
    edge_file = read_edge_file(path)
    parents = edge_file.parents()
    try:
        hierarchy = hierarchy_from_parents(parents)
    except CycleError as error:
        line = dict(zip(edge_file.pairs, edge_file.lines))
        steps = zip(error.cycle[:-1], error.cycle[1:])
        where = ", ".join(f"line {line[step]}" for step in steps)
        raise EdgeFileError(
            f"--edges {edge_file.path}: the is-a pairs have a cycle: "
            f"{' -> '.join(error.cycle)} ({where})."
        ) from None
    if root is not None:
        if root not in hierarchy.node_ids:
            raise EdgeFileError(f"--root {root!r} is not a node of {edge_file.path}.")
        try:
            hierarchy = hierarchy_from_parents(parents, root=root)
        except ValueError as error:
            raise EdgeFileError(f"--root {root!r} in {edge_file.path}: {error}.") from None
    return hierarchy, edge_file
