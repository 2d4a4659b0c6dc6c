"""The run directory format shared by the trainers, evaluation and export.

A run directory holds:

- `model.keras`: the trained Keras model;
- a vocabulary file, one entry a line in table order: `word` or
  `word<TAB>count`;
- `run.json`: `{"kind": "wordnet" | "corpus", "energy": "kl" | "el",
  "table": <name of the GaussianEmbedding layer that embeds the vocabulary
  for queries and serving>, "vocabulary": <file name>, ...}`;
- optionally `metrics.json` (training metrics and config).

KL direction: `energy(query, candidate) = -KL(N_query || N_candidate)`, high
when the query lies inside the candidate, i.e. "query is-a candidate"
(`KLEnergy(general=candidate, specific=query)`).
"""

import dataclasses
import json
import math
import os
from pathlib import Path

import numpy as np

RUN_FILE = "run.json"


@dataclasses.dataclass
class Run:
    """A loaded run directory.

    Attributes:
        path: the directory.
        model: the Keras model.
        words: vocabulary entries in table order.
        counts: corpus counts (`None` when the vocabulary has none).
        kind: `"wordnet"` or `"corpus"`.
        energy: `"kl"` or `"el"`.
        table: the `GaussianEmbedding` layer of the vocabulary.
        info: the whole `run.json`.
        metrics: `metrics.json`, or `{}`.
    """

    path: Path
    model: object
    words: list
    counts: object
    kind: str
    energy: str
    table: object
    info: dict
    metrics: dict

    def tables(self):
        """Returns `(means, variances)` as float32 numpy arrays `(n, d)`."""
        means = self.table.means.numpy()
        variances = np.broadcast_to(self.table.variances.numpy(), means.shape)
        return means, np.ascontiguousarray(variances)

    def ids(self, words):
        """Maps words to table ids; raises `KeyError` naming unknown words."""
        index = self.index
        unknown = [w for w in words if w not in index]
        if unknown:
            raise KeyError(
                f"not in the vocabulary of {self.path}: {', '.join(map(repr, unknown[:5]))}"
                + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
            )
        return np.array([index[w] for w in words], dtype=np.int64)

    @property
    def index(self):
        if not hasattr(self, "_index"):
            self._index = {w: i for i, w in enumerate(self.words)}
        return self._index


def write_run_info(directory, kind, energy, table, vocabulary, **extra):
    """Writes `run.json` into `directory` (see the module docstring)."""
    from keras_gauss.layers.candidate_energies import ENERGIES

    if energy not in ENERGIES:
        raise ValueError(f"energy must be 'kl' or 'el', got {energy!r}.")
    info = {"kind": kind, "energy": energy, "table": table,
            "vocabulary": vocabulary, "format": 1, **extra}
    (Path(directory) / RUN_FILE).write_text(json.dumps(info, indent=2) + "\n")


class DamagedRunError(ValueError):
    """A run file is unreadable or inconsistent; the message names the file."""


def read_vocabulary(path):
    """Reads a vocabulary file: `(words, counts or None)`.

    Raises:
        DamagedRunError: not UTF-8 text, or a count that is not an integer
            (naming the file and line).
    """
    words, counts = [], []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise DamagedRunError(f"{path}: not UTF-8 text (invalid byte at offset "
                              f"{error.start}).") from None
    lines = text.split("\n")  # not splitlines: a word may hold \r, \x1c, ...
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, 1):
        word, _, count = line.rpartition("\t") if "\t" in line else (line, "", "")
        words.append(word)
        try:
            counts.append(int(count) if count else None)
        except ValueError:
            raise DamagedRunError(f"{path}, line {number}: the count {count!r} is not "
                                  "an integer.") from None
    has_counts = bool(counts) and all(c is not None for c in counts)
    return words, (np.array(counts, dtype=np.int64) if has_counts else None)


def _read_json(path):
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DamagedRunError(f"{path}: not valid JSON ({error}).") from None
    if not isinstance(value, dict):
        raise DamagedRunError(f"{path}: expected a JSON object, got "
                              f"{type(value).__name__}.")
    return value


def _load_model(path):
    import keras

    try:
        return keras.saving.load_model(path)
    except Exception as error:  # noqa: BLE001 - any failure names the file
        detail = str(error).strip().splitlines()
        detail = detail[0][:300] if detail else ""
        raise DamagedRunError(f"{path}: cannot load the model ({type(error).__name__}"
                              f"{': ' + detail if detail else ''}).") from None


def load_run(run_dir):
    """Loads a run directory written by `train-wordnet` or `train-corpus`.

    Args:
        run_dir: the run directory.

    Returns:
        A `Run`.

    Raises:
        FileNotFoundError: the directory holds no trained run, or a file
            `run.json` names is missing.
        DamagedRunError: a damaged `run.json`, vocabulary, `metrics.json` or
            `model.keras`, a vocabulary that does not match the table, or a
            table with non-finite means or non-finite or non-positive
            variances; the message names the file.

    Example:

    >>> run = load_run("runs/wordnet")
    >>> means, variances = run.tables()
    """
    from keras_gauss import register_serializables
    from keras_gauss.checks import check_tables_finite

    register_serializables()

    run_dir = Path(run_dir)
    if not (run_dir / RUN_FILE).is_file() or not (run_dir / "model.keras").is_file():
        raise FileNotFoundError(
            f"{run_dir} holds no trained run (expected {RUN_FILE} and model.keras; "
            "create one with `keras-gauss train-wordnet` or `train-corpus`)."
        )
    info_path = run_dir / RUN_FILE
    info = _read_json(info_path)
    for key in ("kind", "energy", "table", "vocabulary"):
        if not isinstance(info.get(key), str) or not info[key]:
            raise DamagedRunError(f"{info_path}: {key!r} is missing or not a string.")
    if info["energy"] not in ("kl", "el"):
        raise DamagedRunError(f"{info_path}: energy must be 'kl' or 'el', got "
                              f"{info['energy']!r}.")
    vocabulary = run_dir / info["vocabulary"]
    if Path(info["vocabulary"]).name != info["vocabulary"]:
        raise DamagedRunError(f"{info_path}: vocabulary must be a file name in the run "
                              f"directory, got {info['vocabulary']!r}.")
    if not vocabulary.is_file():
        raise FileNotFoundError(f"{vocabulary}: the vocabulary named in {info_path} is "
                                "missing.")
    words, counts = read_vocabulary(vocabulary)
    metrics_path = run_dir / "metrics.json"
    metrics = _read_json(metrics_path) if metrics_path.exists() else {}
    model_path = run_dir / "model.keras"
    model = _load_model(model_path)
    try:
        table = model.get_layer(info["table"])
    except ValueError:
        raise DamagedRunError(f"{info_path}: the model has no layer {info['table']!r} "
                              "(table).") from None
    if not hasattr(table, "means") or not hasattr(table, "variances"):
        raise DamagedRunError(f"{info_path}: layer {info['table']!r} is not a "
                              "GaussianEmbedding.")
    means, variances = table.means.numpy(), table.variances.numpy()
    if len(words) != means.shape[0]:
        raise DamagedRunError(f"{vocabulary}: {len(words):,} entries for a table of "
                              f"{means.shape[0]:,} rows in {model_path}.")
    try:
        check_tables_finite(means, variances, f"{model_path}, table {info['table']!r}")
    except ValueError as error:
        raise DamagedRunError(str(error)) from None
    return Run(path=run_dir, model=model, words=words, counts=counts,
               kind=info["kind"], energy=info["energy"],
               table=table, info=info, metrics=metrics)


INT32_MAX = 2**31 - 1


def check_config(config, positive):
    """Validates the settings every trainer shares; errors name the flag.

    Every number must be finite (and an integer field at most 2^31 - 1),
    the fields in `positive` `> 0`, and `min_variance <= max_variance`.

    Args:
        config: a config dataclass with `min_variance`, `max_variance` and
            `covariance` fields.
        positive: names of fields that must be `> 0`.

    Raises:
        ValueError: naming the first bad setting as its command-line flag.
    """
    from keras_gauss.checks import check_number

    def flag(name):
        return f"--{name.replace('_', '-')}"

    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if isinstance(value, bool) or value is None or isinstance(value, str):
            continue
        try:
            if isinstance(value, (int, np.integer)):
                check_number(value, flag(field.name), integer=True, at_most=INT32_MAX)
            else:
                check_number(value, flag(field.name))
        except TypeError as error:
            raise ValueError(str(error)) from None
    for name in positive:
        value = getattr(config, name)
        if isinstance(value, bool) or not value > 0:
            raise ValueError(f"{flag(name)} must be > 0, got {value}.")
    if config.min_variance > config.max_variance:
        raise ValueError(
            f"--min-variance ({config.min_variance}) must not exceed "
            f"--max-variance ({config.max_variance})."
        )
    if config.covariance not in ("diagonal", "spherical"):
        raise ValueError(
            f"--covariance must be 'diagonal' or 'spherical', got {config.covariance!r}."
        )


def check_table_memory(rows, dim, tables, what="--dim"):
    """Raises `ValueError` when `tables` float32 tables of `rows x dim` with
    their AdaGrad accumulators (and the variances') cannot fit in memory."""
    need = 4 * 4 * rows * dim * tables  # means + variances, each with an accumulator
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return
    if need > total:
        raise ValueError(
            f"{what} {dim}: {tables} table(s) of {rows:,} rows need "
            f"{need / 2**30:.1f} GiB, more than this machine's {total / 2**30:.1f} GiB "
            "of memory.")


def jsonable(value):
    """Converts numpy scalars (and NaN, to `None`) inside dicts and lists for JSON."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return None if math.isnan(value) else value
    if isinstance(value, np.integer):
        return int(value)
    return value
