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


def read_vocabulary(path):
    """Reads a vocabulary file: `(words, counts or None)`."""
    words, counts = [], []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        word, _, count = line.partition("\t")
        words.append(word)
        counts.append(int(count) if count else None)
    has_counts = bool(counts) and all(c is not None for c in counts)
    return words, (np.array(counts, dtype=np.int64) if has_counts else None)


def load_run(run_dir):
    """Loads a run directory written by `train-wordnet` or `train-corpus`.

    Args:
        run_dir: the run directory.

    Returns:
        A `Run`.

    Raises:
        FileNotFoundError: the directory holds no trained run.

    Example:

    >>> run = load_run("runs/wordnet")
    >>> means, variances = run.tables()
    """
    import keras

    from keras_gauss import register_serializables

    register_serializables()

    run_dir = Path(run_dir)
    if not (run_dir / RUN_FILE).is_file() or not (run_dir / "model.keras").is_file():
        raise FileNotFoundError(
            f"{run_dir} holds no trained run (expected {RUN_FILE} and model.keras; "
            "create one with `keras-gauss train-wordnet` or `train-corpus`)."
        )
    info = json.loads((run_dir / RUN_FILE).read_text())
    model = keras.saving.load_model(run_dir / "model.keras")
    words, counts = read_vocabulary(run_dir / info["vocabulary"])
    metrics_path = run_dir / "metrics.json"
    metrics = json.loads(metrics_path.read_text()) if metrics_path.exists() else {}
    return Run(path=run_dir, model=model, words=words, counts=counts,
               kind=info["kind"], energy=info["energy"],
               table=model.get_layer(info["table"]), info=info, metrics=metrics)


def check_config(config, positive):
    """Validates the settings every trainer shares; errors name the flag.

    Args:
        config: a config dataclass with `min_variance`, `max_variance` and
            `covariance` fields.
        positive: names of fields that must be `> 0`.

    Raises:
        ValueError: naming the first bad setting as its command-line flag.
    """
    for name in positive:
        value = getattr(config, name)
        if isinstance(value, bool) or not value > 0:
            raise ValueError(f"--{name.replace('_', '-')} must be > 0, got {value}.")
    if config.min_variance > config.max_variance:
        raise ValueError(
            f"--min-variance ({config.min_variance}) must not exceed "
            f"--max-variance ({config.max_variance})."
        )
    if config.covariance not in ("diagonal", "spherical"):
        raise ValueError(
            f"--covariance must be 'diagonal' or 'spherical', got {config.covariance!r}."
        )


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
