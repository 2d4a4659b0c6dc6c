"""Readers for word-level hypernymy benchmarks: HyperLex and the Baroni et al. (2012) entailment set,
and a second real taxonomy, the EDAM ontology, shipped by the `edam-ontology` package.

Both readers skip blank lines and lines starting with `#`, lowercase the words,
and raise `ValueError` naming the file, the 1-based line number and the problem
on any malformed line, so a corrupt file never yields silently wrong numbers.
The file layouts are described in `shared/data/README.md`.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Iterator

from keras_gauss.inputs import HEADER_HINT
from keras_gauss.inputs import read_text

__all__ = ["EDAM_VERSION", "edam_pairs", "read_entailment", "read_hyperlex", "split_fields",
           "write_edam_edges"]

EDAM_VERSION = "1.25.3"
"""The `edam-ontology` release the tests and benchmarks pin (a test/benchmark extra)."""
_EDAM_IRI = "http://edamontology.org/"

_HYPERLEX_MIN_COLUMNS = 7  # WORD1 WORD2 POS TYPE AVG_SCORE AVG_SCORE_0_10 STD [SCORES..]
_TRUE = {"true": True, "false": False}


def _content_lines(path: str | os.PathLike, setting: str) -> Iterator[tuple[int, str]]:
    """Yield `(line_number, stripped_line)` for every non-blank, non-comment line.

    The file is read whole first (`keras_gauss.inputs.read_text`; a
    leading BOM dropped): a FIFO, device or directory, a NUL byte or
    invalid UTF-8 anywhere is an error naming `setting`, the file and the
    line.
    """
    text = read_text(path, setting, encoding="utf-8-sig")  # (Excel's BOM dropped)
    for number, line in enumerate(io.StringIO(text, newline=None), start=1):
        line = line.strip()
        if line and not line.startswith("#"):
            yield number, line


SEPARATORS = "tabs, else commas, else spaces"
"""How `split_fields` splits a line, for messages."""


def split_fields(line: str) -> list[str]:
    """The fields of a line of a word-pair file: split by tabs when the line
    holds one, else by commas when it holds one (CSV, quotes allowed), else
    by runs of whitespace; each field stripped.

    A tab-separated line may hold words with spaces (`ice cream`); a
    comma-separated one words with spaces too, or quoted commas.

    Example:
        >>> split_fields("ice cream\\tfood\\tTrue"), split_fields('dog, "animal" ,True')
        (['ice cream', 'food', 'True'], ['dog', 'animal', 'True'])
        >>> split_fields("dog  animal True")
        ['dog', 'animal', 'True']
    """
    if "\t" in line:
        return [field.strip() for field in line.split("\t")]
    if "," in line:
        return [field.strip() for field in next(csv.reader([line], skipinitialspace=True))]
    return line.split()


def read_hyperlex(path: str | os.PathLike, *, pos: str | None = "N") -> list[tuple[str, str, float]]:
    """Read HyperLex pairs (Vulić et al., 2017) with their mean human score.

    The file is whitespace separated with columns ``WORD1 WORD2 POS TYPE AVG_SCORE
    AVG_SCORE_0_10 STD SCORES..``; an optional header line (first column
    `WORD1`) is skipped. The score returned is `AVG_SCORE` (0-6, "to what
    degree is WORD1 a type of WORD2"); rank correlations are the same with
    `AVG_SCORE_0_10`.

    Args:
        path: The HyperLex file, e.g. `shared/data/hyperlex/hyperlex-nouns.txt`.
        pos: Keep only rows with this `POS` value (`"N"` for nouns, `"V"`
            for verbs); `None` keeps every row.

    Returns:
        A list of `(word1, word2, score)` with lowercased words, in file order,
        meaning "word1 is-a word2" to degree `score`.

    Raises:
        ValueError: On a row with fewer than 7 columns or a non-numeric (or
            non-finite) `AVG_SCORE`; the message names the file and line number.
            `keras_gauss.inputs.InputFileError` (a `ValueError`): not a
            regular file, or not UTF-8 text (naming `--hyperlex` and the line).

    Example:
        >>> with open("hyperlex.txt", "w") as f:
        ...     _ = f.write("WORD1 WORD2 POS TYPE AVG_SCORE AVG_SCORE_0_10 STD\\n"
        ...                 "conflict disagreement N hyp-1 5.2 8.67 0.4\\n"
        ...                 "run sprint V hyp-1 1.0 1.67 0.3\\n")
        >>> read_hyperlex("hyperlex.txt")  # the nouns only (pos="N")
        [('conflict', 'disagreement', 5.2)]
    """
    pairs = []
    first = True
    for number, line in _content_lines(path, "--hyperlex"):
        fields = line.split()
        if first and fields[0].upper() == "WORD1":
            first = False
            continue
        first = False
        if len(fields) < _HYPERLEX_MIN_COLUMNS:
            raise ValueError(
                f"{path}, line {number}: expected at least {_HYPERLEX_MIN_COLUMNS} whitespace-separated "
                f"columns (WORD1 WORD2 POS TYPE AVG_SCORE AVG_SCORE_0_10 STD ...), got {len(fields)}: {line!r}"
            )
        try:
            score = float(fields[4])
        except ValueError:
            score = math.nan
        if not math.isfinite(score):
            raise ValueError(f"{path}, line {number}: AVG_SCORE (column 5) is not a finite number: {fields[4]!r}")
        if pos is None or fields[2] == pos:
            pairs.append((fields[0].lower(), fields[1].lower(), score))
    return pairs


def read_entailment(path: str | os.PathLike) -> list[tuple[str, str, bool]]:
    """Read a lexical entailment file such as `entailment/baroni2012.tsv`.

    Each line is `word1 TAB word2 TAB True|False [TAB relation]`; `True`
    means word1 entails word2 (word1 is-a word2). A line without a tab may
    separate its fields by commas (CSV), or, without a comma either, by
    spaces (`split_fields`). The label is matched case-insensitively; any
    further columns (the relation) are ignored.

    Args:
        path: The file (tab-, comma- or space-separated).

    Returns:
        A list of `(word1, word2, entails)` with lowercased words, in file order.

    Raises:
        ValueError: On a line with fewer than 3 columns, an empty
            word, or a label other than True/False; the message names the file
            and line number. `keras_gauss.inputs.InputFileError` (a
            `ValueError`): not a regular file, or not UTF-8 text (naming
            `--entailment` and the line).

    Example:
        >>> with open("baroni2012.tsv", "w") as f:
        ...     _ = f.write("dog\\tanimal\\tTrue\\nanimal\\tdog\\tFalse\\n")
        >>> read_entailment("baroni2012.tsv")
        [('dog', 'animal', True), ('animal', 'dog', False)]
        >>> with open("pairs.csv", "w") as f:
        ...     _ = f.write("dog,animal,True\\n")
        >>> read_entailment("pairs.csv")
        [('dog', 'animal', True)]
    """
    pairs = []
    for number, line in _content_lines(path, "--entailment"):
        fields = split_fields(line)
        if len(fields) < 3:
            raise ValueError(
                f"{path}, line {number}: expected at least 3 columns (word1, word2, "
                f"True|False) separated by {SEPARATORS}; got {len(fields)}: {line!r}"
            )
        if not fields[0] or not fields[1]:
            raise ValueError(f"{path}, line {number}: empty word in {line!r}")
        label = _TRUE.get(fields[2].lower())
        if label is None:
            raise ValueError(f"{path}, line {number}: label (column 3) must be True or False, "
                             f"got {fields[2]!r}"
                             + ("" if pairs else HEADER_HINT))
        pairs.append((fields[0].lower(), fields[1].lower(), label))
    return pairs


def edam_pairs() -> list[tuple[str, str]]:
    """Is-a pairs of the EDAM ontology (bioinformatics operations, data, formats, topics).

    Read from `EDAM.tsv` inside the installed `edam-ontology` package (no
    download): every non-obsolete class and each of its EDAM parents, named by
    the short id (`operation_0004`). About 2,400 classes and 3,400 pairs, with
    multiple inheritance.

    Raises:
        ImportError: `edam-ontology` is not installed (`pip install edam-ontology==1.25.3`).

    Example:
        >>> ("operation_0226", "operation_0004") in edam_pairs()
        True
    """
    import csv
    import importlib.resources

    with importlib.resources.files("edam_ontology").joinpath("EDAM.tsv").open(encoding="utf-8") as f:
        rows = csv.reader(f, delimiter="\t")
        header = next(rows)
        cid, obsolete, parents = (header.index(k) for k in ("Class ID", "Obsolete", "Parents"))
        pairs = []
        for row in rows:
            if row[obsolete].strip().upper() == "TRUE" or not row[cid].startswith(_EDAM_IRI):
                continue
            child = row[cid][len(_EDAM_IRI):]
            pairs += [(child, p[len(_EDAM_IRI):]) for p in row[parents].split("|")
                      if p.startswith(_EDAM_IRI)]
    return pairs


def write_edam_edges(path: str | os.PathLike) -> int:
    """Writes `edam_pairs` as a `child<TAB>parent` file with a header; returns the pair count."""
    pairs = edam_pairs()
    with open(path, "w", encoding="utf-8") as f:
        f.write("# EDAM ontology is-a pairs (edam-ontology package)\nchild\tparent\n")
        f.writelines(f"{c}\t{p}\n" for c, p in pairs)
    return len(pairs)
