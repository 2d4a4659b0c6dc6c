"""Loaded runs: `load_run(DIR)` returns a `Run`, which answers queries with
numpy: `run.energy(a, b)`, `run.neighbors(x, by=..., k=...)`, `run.is_a(a, b)`.
The files are `keras_gauss.run_format`'s.

KL direction: `energy(query, candidate) = -KL(N_query || N_candidate)`, high
when the query lies inside the candidate, i.e. "query is-a candidate"
(`KLEnergy(general=candidate, specific=query)`). A hierarchy run trained with
`--generality BETA` (`run.json`: `"generality": BETA`) adds the generality
term `BETA * (log det Sigma_candidate - log det Sigma_query)` to that energy,
in `energy`, `neighbors`, `is_a` and the serving export alike; a run without
the entry uses 0. A hierarchy run trained with `--energy containment` scores
`energy(query, candidate) = -sum_d max(0, |mu_q - mu_c| + sigma_q -
sigma_c)^2` (`keras_gauss.layers.containment_energy`): 0 when the query's
one-sigma box lies inside the candidate's.
"""

import dataclasses
import os
import zipfile
from pathlib import Path

import numpy as np

from keras_gauss.checkpoint import interrupted_note
from keras_gauss.checks import listing
from keras_gauss.inputs import InputFileError
from keras_gauss.inputs import check_input_file
from keras_gauss.numpy_ops import containment_rank
from keras_gauss.numpy_ops import pair_energy
from keras_gauss import energies
from keras_gauss.run_format import HIERARCHY_ENERGIES
from keras_gauss.run_format import RUN_FILE
from keras_gauss.run_format import DamagedRunError
from keras_gauss.run_format import generality_of
from keras_gauss.run_format import read_json
from keras_gauss.run_format import read_vocabulary
from keras_gauss.run_format import write_run_info  # noqa: F401 - Run's example writes a run


class UnknownWordError(KeyError):
    """A word that is not in a run's vocabulary (a `KeyError`).

    Attributes:
        word: the word asked for.
        suggestions: vocabulary entries it may have meant (for a hierarchy
            run, the synsets of a lemma: `dog` -> `dog.n.01`, ...).
    """

    def __init__(self, message, word=None, suggestions=()):
        super().__init__(message)
        self.word = word
        self.suggestions = list(suggestions)

    def __str__(self):
        return self.args[0]


NEIGHBOR_ORDERS = ("energy", "similarity", "variance")


@dataclasses.dataclass(eq=False, repr=False)
class Run:
    """A loaded run directory, with numpy queries of its Gaussians.

    Attributes:
        path: the directory.
        model: the Keras model.
        words: vocabulary entries in table order.
        counts: corpus counts (`None` when the vocabulary has none).
        kind: `"wordnet"`, `"hierarchy"` or `"corpus"`.
        energy_name: the energy's name (`keras_gauss.energies`; `energy` is the
            method).
        table: the `GaussianEmbedding` layer of the vocabulary.
        info: the whole `run.json`.
        metrics: `metrics.json`, or `{}`.
        means, variances: the table as float32 numpy arrays `(n, d)`
            (variances broadcast when spherical), read once.
        generality: the weight `beta` of the generality term of a KL run's
            energy (`run.json`'s `"generality"`; 0 when absent, and for EL runs).

    Example: a hand-made run of three 2-d synsets (a trainer writes the
    same files), loaded and queried.

    >>> from keras_gauss.hierarchy.model import build_kl_model
    >>> path = "runs/hand-made"
    >>> os.makedirs(path)
    >>> model = build_kl_model(3, dim=2)
    >>> nodes = model.get_layer("nodes")
    >>> _ = nodes.means.assign([[0.0, 0.0], [0.2, 0.0], [0.3, 0.1]])
    >>> _ = nodes.variances.assign([[4.0, 4.0], [1.0, 1.0], [0.2, 0.2]])
    >>> model.save(f"{path}/model.keras")
    >>> with open(f"{path}/nodes.tsv", "w") as f:
    ...     _ = f.write("animal.n.01\\nmammal.n.01\\ndog.n.01\\n")
    >>> with open(f"{path}/metrics.json", "w") as f:
    ...     _ = f.write('{"threshold": -1.0}')  # is_a's default threshold
    >>> write_run_info(path, kind="wordnet", energy="kl", table="nodes",
    ...                vocabulary="nodes.tsv")
    >>> run = load_run(path)
    >>> run
    Run(path=..., kind='wordnet', energy_name='kl', words=3, dim=2)
    >>> run.energy("dog.n.01", ["mammal.n.01", "animal.n.01"]).round(2)  # -KL(dog || .)
    array([-0.82, -2.06])
    >>> run.generality  # no "generality" in run.json: the plain KL energy
    0.0
    >>> run.is_a(["dog.n.01", "mammal.n.01"], "animal.n.01")
    array([False,  True])
    >>> [(w, round(e, 2)) for w, e in run.neighbors("dog.n.01", k=2)]
    [('mammal.n.01', -0.82), ('animal.n.01', -2.06)]
    """

    path: str | os.PathLike
    model: object
    words: list
    counts: object
    kind: str
    energy_name: str
    table: object
    info: dict
    metrics: dict
    generality: float = dataclasses.field(init=False)

    def __post_init__(self):  # read (and checked) when the run is loaded
        self.generality = (generality_of(self.info)
                           if "generality" in energies.get(self.energy_name).options else 0.0)

    def __repr__(self):
        return (f"Run(path={str(self.path)!r}, kind={self.kind!r}, "
                f"energy_name={self.energy_name!r}, words={len(self.words)}, "
                f"dim={self.table.output_dim})")

    # ------------------------------------------------------------------ tables

    def tables(self):
        """Returns `(means, variances)` as float32 numpy arrays `(n, d)`."""
        if not hasattr(self, "_tables"):
            means = np.asarray(self.table.means.numpy(), np.float32)
            variances = np.broadcast_to(
                np.asarray(self.table.variances.numpy(), np.float32), means.shape)
            self._tables = means, np.ascontiguousarray(variances)
        return self._tables

    @property
    def means(self):
        """`(n, d)` float32 means, in vocabulary order."""
        return self.tables()[0]

    @property
    def variances(self):
        """`(n, d)` float32 variances (a spherical variance repeated)."""
        return self.tables()[1]

    @property
    def is_hierarchy(self):
        """Whether the run embeds a hierarchy (any kind but `"corpus"`)."""
        return self.kind != "corpus"

    def ids(self, words):
        """Maps words (`str`, or UTF-8 `bytes` as the serving signatures take
        them) to table ids; raises `UnknownWordError` naming unknown words."""
        index = self.index
        words = [_text(w) for w in words]
        unknown = [w for w in words if w not in index]
        if unknown:
            suggestions = (self.suggest(unknown[0])
                           if len(unknown) == 1 and isinstance(unknown[0], str) else [])
            message = f"not in the vocabulary of {self.path}: {listing(unknown)}"
            if suggestions:
                message += f"; did you mean {_listing(suggestions)}?"
            raise UnknownWordError(message, unknown[0], suggestions)
        return np.array([index[w] for w in words], dtype=np.int64)

    @property
    def index(self):
        if not hasattr(self, "_index"):
            self._index = {w: i for i, w in enumerate(self.words)}
        return self._index

    def suggest(self, word, limit=10):
        """Vocabulary entries `word` may stand for, best first.

        For a lemma, the synsets named after it (`dog` -> `dog.n.01`,
        `dog.n.03`, ...; spaces read as underscores); else the entry equal to
        `word` lowercased.

        Args:
            word: the string looked up.
            limit: the most entries returned.

        Returns:
            A list of vocabulary entries (empty when none fits).
        """
        key = word.strip().lower().replace(" ", "_")
        found = [w for w in self.words if _lemma(w) == key and w != word]
        if not found and key in self.index and key != word:
            found = [key]
        return found[:limit]

    # ------------------------------------------------------------------ queries

    def _side(self, words):
        single = isinstance(words, (str, bytes))  # (bytes: one word, not its byte values)
        ids = self.ids([words] if single else list(words))
        return ids, single

    def energy(self, a, b):
        """The run's energy of pairs, as its TF Serving signature computes it.

        KL runs: `energy(query, candidate) = -KL(N_query || N_candidate)`,
        high (near 0) when the query lies inside the candidate ("query is-a
        candidate"), plus `generality * (log det Sigma_candidate - log det
        Sigma_query)` for a run trained with `--generality`. Containment
        runs: `-sum_d max(0, |mu_q - mu_c| + sigma_q - sigma_c)^2`, 0 when
        the query's one-sigma box lies inside the candidate's. EL runs: the log expected-likelihood kernel
        `log N(0; mu_a - mu_b, Sigma_a + Sigma_b)` (with the `-d/2 log 2 pi`
        term when the model's `ELEnergy` keeps it). Computed with numpy in
        float64 from the query table on both sides.

        Args:
            a: a word or a sequence of words (the queries).
            b: a word or a sequence of words (the candidates); one side of
                length 1 is broadcast against the other.

        Returns:
            A float for two words, else a float64 array.

        Raises:
            UnknownWordError: a word is not in the vocabulary.

        Example: see `Run`.
        """
        left, single_a = self._side(a)
        right, single_b = self._side(b)
        left, right = np.broadcast_arrays(left, right)
        means, variances = self.tables()
        values = pair_energy(self.energy_name, means[left], variances[left],
                             means[right], variances[right],
                             include_constant=self._include_constant(),
                             generality=self.generality)
        return float(values[0]) if single_a and single_b else values

    def _include_constant(self):
        if "include_constant" not in energies.get(self.energy_name).options:
            return False
        return el_include_constant(self.model)

    def neighbors(self, x, by=None, k=10):
        """The `k` entries nearest to `x`, `x` itself left out.

        Args:
            x: a vocabulary entry.
            by: `"energy"` (highest `energy(x, candidate)` first, as the
                serving `neighbors` signature ranks them: with KL, what `x`
                most plausibly is-a; with containment, the boxes that hold
                `x` (energy at least the run's threshold, else 0) smallest
                first, so the nearest hypernyms lead, then the others by
                energy: `containment_rank`),
                `"similarity"` (cosine between means,
                most similar first) or `"variance"` (the `k` most similar by
                cosine, broadest first: the paper's specificity table).
                Default: `"energy"` for hierarchy runs, `"similarity"` for
                corpus runs.
            k: how many (at most the vocabulary size minus one).

        Returns:
            A list of `(entry, score)`: the energy, the cosine, or the log
            determinant of the covariance (`"variance"`).

        Raises:
            UnknownWordError: `x` is not in the vocabulary (with suggestions).
            ValueError: bad `by` or `k`.

        Example: see `Run`.
        """
        by = by or ("energy" if self.is_hierarchy else "similarity")
        if by not in NEIGHBOR_ORDERS:
            raise ValueError(f"by must be one of {', '.join(NEIGHBOR_ORDERS)}; got {by!r}.")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}.")
        (i,), _ = self._side([x])
        means, variances = self.tables()
        if by == "energy":
            scores = pair_energy(self.energy_name, means[i][None], variances[i][None],
                                 means, variances,
                                 include_constant=self._include_constant(),
                                 generality=self.generality)
        else:
            mean64 = means.astype(np.float64)
            norms = np.maximum(np.linalg.norm(mean64, axis=1), 1e-12)
            scores = mean64 @ mean64[i] / (norms * norms[i])
        scores[i] = -np.inf
        k = min(int(k), len(scores) - 1)
        if by == "energy" and energies.get(self.energy_name).rank_by_box:
            log_det = self.log_det()
            key = containment_rank(scores, log_det, self.threshold or 0.0, log_det[i])
            top = np.argsort(-key, kind="stable")[:k]
        else:
            top = np.argsort(-scores, kind="stable")[:k]
        if by == "variance":
            log_det = self.log_det()
            top = top[np.argsort(-log_det[top], kind="stable")]
            return [(self.words[j], float(log_det[j])) for j in top]
        return [(self.words[j], float(scores[j])) for j in top]

    def log_det(self):
        """`(n,)` float64 log determinants of the covariances (larger: broader)."""
        return np.log(self.variances.astype(np.float64)).sum(axis=1)

    @property
    def threshold(self):
        """The is-a threshold on `energy` chosen on the validation edges, or `None`."""
        value = self.metrics.get("threshold")
        return None if value is None else float(value)

    def is_a(self, a, b, threshold=None):
        """Whether `a` is-a `b`: `energy(a, b) >= threshold`.

        Args:
            a: a word or a sequence of words (the specific side).
            b: a word or a sequence of words (the general side).
            threshold: the energy threshold; default: the one chosen on the
                validation edges when the run was trained (`metrics.json`).

        Returns:
            A bool for two words, else a bool array.

        Raises:
            ValueError: not a KL or containment hierarchy run, or no
                threshold recorded (a run trained with `--val-size 0`) and
                none given.
            UnknownWordError: a word is not in the vocabulary.

        Example: see `Run`.
        """
        if self.energy_name not in HIERARCHY_ENERGIES:
            raise ValueError(f"is_a needs a KL or containment run; {self.path} uses "
                             f"{self.energy_name.upper()} energy.")
        if threshold is None:
            threshold = self.threshold
            if threshold is None:
                raise ValueError(
                    f"{self.path}/metrics.json records no validation threshold "
                    "(trained without validation edges); pass threshold=.")
        values = self.energy(a, b)
        return bool(values >= threshold) if np.ndim(values) == 0 else values >= threshold


def _text(word):
    """`word`, UTF-8 bytes decoded (undecodable bytes as they are: unknown)."""
    if isinstance(word, bytes):
        try:
            return word.decode("utf-8")
        except UnicodeDecodeError:
            return word
    return word


def _lemma(name):
    """The lemma of a synset name (`st._bernard.n.01` -> `st._bernard`), else the name."""
    parts = name.rsplit(".", 2)
    if len(parts) == 3 and len(parts[1]) == 1 and parts[2].isdigit():
        return parts[0].lower()
    return name.lower()


def _listing(words, limit=8):
    shown = ", ".join(words[:limit])
    return shown + (f" (and {len(words) - limit} more)" if len(words) > limit else "")


def _load_model(path):
    import keras

    try:
        check_input_file(path)  # keras opens it by name: never a FIFO
    except InputFileError as error:
        raise DamagedRunError(str(error)) from None
    if not zipfile.is_zipfile(path):  # keras would say 'File not found' of it
        raise DamagedRunError(f"{path}: cannot load the model: not a .keras file (a zip "
                              "archive), damaged or cut short.")
    try:
        return keras.saving.load_model(path)
    except Exception as error:  # noqa: BLE001 - any failure names the file
        detail = str(error).strip().splitlines()
        detail = detail[0][:300] if detail else ""
        if "FusedRankingModel" in detail:  # a run of the removed engine
            raise DamagedRunError(f"{path}: written by train-corpus --engine fused-step, "
                                  "which this version no longer has; train the run again "
                                  "(--engine native or keras).") from None
        raise DamagedRunError(f"{path}: cannot load the model ({type(error).__name__}"
                              f"{': ' + detail if detail else ''}).") from None


def load_run(run_dir):
    """Loads a run directory written by `train-wordnet`, `train-corpus` or `demo`.

    Args:
        run_dir: the run directory.

    Returns:
        A `Run` (vocabulary, means, variances; `energy`, `neighbors`,
        `is_a`).

    Raises:
        FileNotFoundError: the directory holds no trained run, or a file
            `run.json` names is missing.
        DamagedRunError: a damaged `run.json`, vocabulary, `metrics.json` or
            `model.keras` (also: a FIFO, device or directory in its place,
            never opened), a vocabulary that does not match the table, or a
            table with non-finite means or non-finite or non-positive
            variances, or values outside the bounds recorded with it (mean
            norms above its `max_norm`, variances outside `[min_variance,
            max_variance]`); the message names the file.

    Example: a tiny corpus run (`Run`'s example writes a hierarchy run by hand).

    >>> from keras_gauss.pipelines.train import demo_run
    >>> _ = demo_run("runs/tiny")  # a tiny corpus run, in well under a second
    >>> run = load_run("runs/tiny")
    >>> run
    Run(path='runs/tiny', kind='corpus', energy_name='el', words=7, dim=4)
    >>> run.words[:3], run.means.shape
    (['the', 'on', 'sat'], (7, 4))
    """
    from keras_gauss import register_serializables
    from keras_gauss.checks import check_table_bounds

    run_dir = Path(run_dir)
    if not all(os.path.lexists(run_dir / name) for name in (RUN_FILE, "model.keras")):
        interrupted = interrupted_note(run_dir)
        if interrupted is not None:
            raise FileNotFoundError(f"{interrupted}.")
        if not run_dir.is_dir():
            raise FileNotFoundError(f"{run_dir}: no such run directory.")
        raise FileNotFoundError(
            f"{run_dir} holds no trained run (expected {RUN_FILE} and model.keras; create "
            "one with `keras-gauss train-wordnet`, `train-hierarchy` or `train-corpus`)."
        )
    info_path = run_dir / RUN_FILE
    info = read_json(info_path)
    for key in ("kind", "energy", "table", "vocabulary"):
        if not isinstance(info.get(key), str) or not info[key]:
            raise DamagedRunError(f"{info_path}: {key!r} is missing or not a string.")
    try:
        energies.get(info["energy"])
    except ValueError as error:
        raise DamagedRunError(f"{info_path}: {error}") from None
    generality_of(info, info_path)
    vocabulary = run_dir / info["vocabulary"]
    if Path(info["vocabulary"]).name != info["vocabulary"]:
        raise DamagedRunError(f"{info_path}: vocabulary must be a file name in the run "
                              f"directory, got {info['vocabulary']!r}.")
    if not os.path.lexists(vocabulary):
        raise FileNotFoundError(f"{vocabulary}: the vocabulary named in {info_path} is "
                                "missing.")
    words, counts = read_vocabulary(vocabulary)
    metrics_path = run_dir / "metrics.json"
    metrics = read_json(metrics_path) if os.path.lexists(metrics_path) else {}
    model_path = run_dir / "model.keras"
    register_serializables()  # (Keras: only once the run's own files are there)
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
    try:  # finite, and inside the bounds the table was trained with
        check_table_bounds(means, variances, f"{model_path}, table {info['table']!r}",
                           table.max_norm, table.min_variance, table.max_variance)
    except ValueError as error:
        raise DamagedRunError(str(error)) from None
    return Run(path=run_dir, model=model, words=words, counts=counts,
               kind=info["kind"], energy_name=info["energy"],
               table=table, info=info, metrics=metrics)


def el_include_constant(model):
    """The `include_constant` of a model's `ELEnergy` layers (default True)."""
    from keras_gauss.layers import ELEnergy

    flags = {layer.include_constant for layer in walk_layers(model)
             if isinstance(layer, ELEnergy)}
    return flags != {False}


def walk_layers(layer):
    """`layer` and every layer inside it, depth first."""
    yield layer
    for child in getattr(layer, "layers", []) or []:
        if child is not layer:
            yield from walk_layers(child)
