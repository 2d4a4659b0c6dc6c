"""The run directory format shared by the trainers, evaluation and export.

A leaf of the package: it reads and writes the files, nothing more
(`keras_gauss.runs` loads a run and answers queries).

A run directory holds:

- `model.keras`: the trained Keras model;
- a vocabulary file, one entry a line in table order: `word` or
  `word<TAB>count`;
- `run.json`: `{"kind": "wordnet" | "hierarchy" | "corpus", "energy": <a name of
  `keras_gauss.energies`>,
  "table": <name of the GaussianEmbedding layer that embeds the vocabulary
  for queries and serving>, "vocabulary": <file name>, ...}`;
- optionally `metrics.json` (training metrics and config; for hierarchy
  runs with validation edges, `threshold`: the energy above which a pair is
  predicted is-a, chosen on the validation edges);
- `.keras-gauss`, the marker that makes the directory a run of ours
  (`keras_gauss.io`), written last.

"""

import json
import math
from pathlib import Path

import numpy as np

from keras_gauss import energies
from keras_gauss.inputs import InputFileError
from keras_gauss.inputs import read_text

RUN_FILE = "run.json"
# The energies a run may record, and the hierarchy (is-a) ones.
ENERGY_NAMES = energies.names()
HIERARCHY_ENERGIES = energies.names(task="hierarchy")



class DamagedRunError(ValueError):
    """A run file is unreadable or inconsistent; the message names the file."""


def write_run_info(directory, kind, energy, table, vocabulary, **extra):
    """Writes `run.json` into `directory` (see the module docstring)."""
    energies.get(energy)  # without importing Keras
    info = {"kind": kind, "energy": energy, "table": table,
            "vocabulary": vocabulary, "format": 1, **extra}
    (Path(directory) / RUN_FILE).write_text(json.dumps(info, indent=2) + "\n")


def read_vocabulary(path):
    """Reads a vocabulary file: `(words, counts or None)`.

    Raises:
        DamagedRunError: not UTF-8 text, a count that is not an integer, or
            a word on two lines (naming the file and line).
    """
    words, counts, lines_of = [], [], {}
    text = read_run_file(path)
    lines = text.split("\n")  # not splitlines: a word may hold \r, \x1c, ...
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, 1):
        word, _, count = line.rpartition("\t") if "\t" in line else (line, "", "")
        if word in lines_of:  # one row a word: a repeat would answer for one of two rows
            raise DamagedRunError(f"{path}, line {number}: {word!r} repeats line "
                                  f"{lines_of[word]}; a word has one row.")
        lines_of[word] = number
        words.append(word)
        try:
            counts.append(int(count) if count else None)
        except ValueError:
            raise DamagedRunError(f"{path}, line {number}: the count {count!r} is not "
                                  "an integer.") from None
    has_counts = bool(counts) and all(c is not None for c in counts)
    return words, (np.array(counts, dtype=np.int64) if has_counts else None)


def read_run_file(path):
    """The text of a run file; `DamagedRunError` for a FIFO, device or
    directory (never opened for reading), a NUL byte or invalid UTF-8."""
    try:
        return read_text(path)
    except InputFileError as error:
        raise DamagedRunError(str(error)) from None


def read_json(path):
    """`path`'s JSON object; `DamagedRunError` when it is not one."""
    try:
        value = json.loads(read_run_file(path))
    except json.JSONDecodeError as error:
        raise DamagedRunError(f"{path}: not valid JSON ({error}).") from None
    if not isinstance(value, dict):
        raise DamagedRunError(f"{path}: expected a JSON object, got "
                              f"{type(value).__name__}.")
    return value


def generality_of(info, where=RUN_FILE):
    """`run.json`'s generality weight (0 when absent); `DamagedRunError` if not finite `>= 0`."""
    value = info.get("generality", 0.0)
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value < 0:
        raise DamagedRunError(f"{where}: 'generality' must be a finite number >= 0, "
                              f"got {value!r}.")
    return float(value)


def jsonable(value):
    """Converts numpy scalars inside dicts and lists for JSON, and NaN and
    infinite floats (an undefined score, a threshold below every score) to
    `None`: JSON has neither (`json.dumps` would write `NaN`, `-Infinity`,
    which strict readers refuse)."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value
