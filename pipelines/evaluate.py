"""Evaluating Gaussian word embeddings: similarity, entailment, specificity.

Every function takes an `Embeddings` (words with means and variances): build
one from a run directory (`Embeddings.from_run`, or pass the directory / a
loaded `keras_gauss.runs.Run` straight to any function), from raw arrays
(`Embeddings(words, means, variances)`), or from
`keras_gauss.pipelines.empirical.empirical_gaussians`.

Measures, as in the paper (Section 6):

- similarity: Spearman rho between human scores and the cosine between
  means (`"m"`) or between distributions (`"d"`,
  `keras_gauss.ops.distribution_cosine`, the normalised expected-likelihood
  kernel). Pairs with a word outside the vocabulary are skipped and
  reported through `coverage`; they never raise.
- entailment (Baroni et al. 2012 format): average precision and best F1 of
  two scores: the embeddings' entailment energy (`Embeddings.energy`: by
  default `"kl"`, `-KL(N_word1 || N_word2)`, high when word1's Gaussian lies
  inside word2's: word1 specific, word2 general; a hierarchy run trained
  with `--energy containment` is scored by that energy) and `"cos"`, the
  cosine between means.
- specificity: a word's nearest neighbours by cosine between means, shown
  sorted by descending variance (log det of the covariance), the paper's
  Table 1.

All words are lowercased before lookup (the corpus tokenizer lowercases).
A WordNet run's rows are synsets: a word stands for its synsets (or its
lemma node) and a pair is scored by its best synset pair (`wordnet_senses`);
in an entailment pair the general word2 stands for its synsets, never for
its lemma node, a leaf below them (as `word_pair_scores`).
"""

import collections
import dataclasses
import io
import math
import os
import re
from pathlib import Path

import numpy as np

from keras_gauss import energies
from keras_gauss.checks import listing
from keras_gauss.inputs import HEADER_HINT
from keras_gauss.inputs import read_text
from keras_gauss.numpy_ops import pair_energy
from keras_gauss.run_format import HIERARCHY_ENERGIES


@dataclasses.dataclass
class Embeddings:
    """Gaussian embeddings of a vocabulary.

    Attributes:
        words: the words, in row order.
        means: `(n, d)` float array.
        variances: `(n, d)` float array (spherical ones broadcast).
        senses: optional `word -> row ids` for tables whose rows are word
            senses (a WordNet run's synsets, see `wordnet_senses`): a word
            pair is then scored by its best pair of senses. `None`: one row
            per word, looked up by name.
        general_senses: optional `word -> row ids` of a word as the general
            side of an entailment pair (a WordNet run with lemma nodes: its
            synsets, `wordnet_senses(synsets_only=True)`); default `senses`.
        generality: the weight `beta >= 0` of a hierarchy run's generality
            term (`--generality`): the `"kl"` measure scores "a entails b"
            by `-KL(N_a || N_b) + beta * (log det Sigma_b - log det
            Sigma_a)`. Default 0 (`from_run` takes the run's).
        energy: the entailment energy, `"kl"` (default) or
            containment (`keras_gauss.numpy_ops.pair_energy`);
            `from_run` takes a hierarchy run's own energy and `"kl"` for
            a corpus run (the paper's entailment score).

    Example:

    >>> emb = Embeddings(["cat", "dog"], np.eye(2), np.ones((2, 2)))
    >>> emb.vector("dog")[0].tolist()
    [0.0, 1.0]
    """

    words: list
    means: np.ndarray
    variances: np.ndarray
    senses: dict | None = None
    generality: float = 0.0
    energy: str = energies.KL.name
    general_senses: dict | None = None

    def __post_init__(self):
        energies.get(self.energy, task="hierarchy")
        self.words = list(self.words)
        self.means = np.asarray(self.means, dtype=np.float64)
        self.variances = np.ascontiguousarray(
            np.broadcast_to(np.asarray(self.variances, dtype=np.float64), self.means.shape))
        if self.means.ndim != 2 or len(self.means) != len(self.words):
            raise ValueError(f"means must be (len(words)={len(self.words)}, d), "
                             f"got {self.means.shape}.")
        if (self.variances <= 0).any():
            raise ValueError("variances must be positive.")
        self.index = {w: i for i, w in enumerate(self.words)}
        # The benchmark files' words are read lowercased: a word with capitals
        # (a node `Hund` of one's own taxonomy) is found by its lowercased
        # name too, unless two words lowercase alike.
        lowered = collections.Counter(w.lower() for w in self.words)
        self.index.update({w.lower(): i for i, w in enumerate(self.words)
                           if w.lower() != w and lowered[w.lower()] == 1})

    @classmethod
    def from_run(cls, run):
        """The query table of a run directory (a path or a loaded `Run`)."""
        if isinstance(run, (str, os.PathLike)):
            from keras_gauss.runs import load_run

            run = load_run(run)
        means, variances = run.tables()
        senses = general = None
        if run.kind == "wordnet":
            senses = wordnet_senses(run.words)
            general = general_senses(run.words, senses)
        energy = (run.energy_name if run.energy_name in HIERARCHY_ENERGIES
                  else energies.KL.name)
        return cls(run.words, means, variances, senses, getattr(run, "generality", 0.0),
                   energy, general)

    def id(self, word):
        """Row of `word` (lowercased); raises `KeyError` naming an unknown word."""
        key = word.lower()
        if key not in self.index:
            raise KeyError(f"{word!r} is not in the vocabulary ({len(self.words):,} words)")
        return self.index[key]

    def vector(self, word):
        """`(mean, variance)` of `word`."""
        i = self.id(word)
        return self.means[i], self.variances[i]

    def log_det(self):
        """`(n,)` log determinants of the covariances (larger: broader)."""
        return np.log(self.variances).sum(axis=1)


# How the table names each entailment energy's columns.
ENERGY_LABELS = {name: energies.get(name).label for name in HIERARCHY_ENERGIES}

_SYNSET = re.compile(r".+\.[a-z]\.\d+$")


def wordnet_senses(nodes, lemmas=None, synsets_only=False):
    """Maps words to the rows of a WordNet run's nodes (synsets, maybe lemmas).

    A word's rows are its own node when the table has one (a lemma node of
    `--lemmas`, or any node not named like a synset), else every synset
    node with the word among its lemma names (WordNet's `lemma -> synsets`:
    `keras_gauss.hierarchy.evaluate.word_senses`, the rule of
    `keras_gauss.hierarchy.evaluate.word_pair_scores`).

    Args:
        nodes: node names in row order (`dog.n.01`, `dog`, ...).
        lemmas: optional `word -> synset names` (lowercased words, `_` for
            spaces); default: read from WordNet when a node is a synset.
        synsets_only: map each word to its synsets even where it has a node
            of its own (the general side of an entailment pair).

    Returns:
        A dict `word -> tuple of row ids`.

    Example:

    >>> wordnet_senses(["dog.n.01", "frump.n.01"], {"dog": ("dog.n.01", "frump.n.01")})
    {'dog': (0, 1)}
    """
    from keras_gauss.hierarchy.evaluate import word_senses

    index = {name: i for i, name in enumerate(nodes)}
    own = {name: i for name, i in index.items() if not _SYNSET.match(name)}
    if lemmas is None and len(own) < len(index):
        from keras_gauss.hierarchy.wordnet import read_noun_lemmas

        lemmas = read_noun_lemmas()
    lemmas, lemma_nodes = lemmas or {}, set() if synsets_only else set(own.values())
    senses = {}
    for word in (*lemmas, *([] if synsets_only else own)):
        rows = word_senses(word, index, lemma_nodes, lemmas=lemmas)
        if rows:
            senses[word] = rows
    return senses


def general_senses(nodes, senses, lemmas=None):
    """`Embeddings.general_senses` of a WordNet run's nodes: a word as the
    general side of an entailment pair stands for its synsets, or for its
    own node when it has none; None when no word has a node of its own
    (`senses`, the nodes' `wordnet_senses(nodes, lemmas)`, then serve both
    sides).

    Example:

    >>> nodes, lemmas = ["dog.n.01", "dog", "pup"], {"dog": ("dog.n.01",)}
    >>> senses = wordnet_senses(nodes, lemmas)
    >>> general_senses(nodes, senses, lemmas), senses
    ({'dog': (0,), 'pup': (2,)}, {'dog': (1,), 'pup': (2,)})
    """
    if all(_SYNSET.match(name) for name in nodes):
        return None
    return {**senses, **wordnet_senses(nodes, lemmas, synsets_only=True)}


def as_embeddings(source):
    """An `Embeddings` from an `Embeddings`, a `Run` or a run directory."""
    if isinstance(source, Embeddings):
        return source
    return Embeddings.from_run(source)


# --------------------------------------------------------------------------- readers


def read_similarity(path):
    """Reads a word similarity file: `word1 TAB word2 TAB score` lines.

    Blank lines and lines starting with `#` are skipped; a line without a
    tab may separate its fields by commas (CSV), or, without a comma
    either, by spaces (`keras_gauss.hierarchy.benchmark_data.split_fields`);
    words are lowercased.

    Args:
        path: the file.

    Returns:
        A list of `(word1, word2, score)`.

    Raises:
        ValueError: a line without 3 fields or with a non-numeric score; the
            message names the file and the 1-based line number.
            `keras_gauss.inputs.InputFileError` (a `ValueError`): not a
            regular file, or not UTF-8 text (naming `--similarity` and the line).

    Example:

    >>> with open("sim.tsv", "w") as f:
    ...     _ = f.write("# word1 word2 score\\nCat\\tdog\\t7.5\\ncat car 1.2\\ncat,cow,3\\n")
    >>> read_similarity("sim.tsv")
    [('cat', 'dog', 7.5), ('cat', 'car', 1.2), ('cat', 'cow', 3.0)]
    """
    from keras_gauss.hierarchy.benchmark_data import SEPARATORS
    from keras_gauss.hierarchy.benchmark_data import split_fields

    pairs = []
    text = read_text(path, "--similarity", encoding="utf-8-sig")  # (Excel's BOM dropped)
    for number, line in enumerate(io.StringIO(text, newline=None), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = split_fields(line)
        if len(fields) < 3 or not fields[0] or not fields[1]:
            raise ValueError(f"{path}, line {number}: expected word1, word2 and score "
                             f"separated by {SEPARATORS}; got {line!r}")
        try:
            score = float(fields[2])
        except ValueError:
            score = math.nan
        if not math.isfinite(score):
            raise ValueError(f"{path}, line {number}: score (column 3) is not a finite "
                             f"number: {fields[2]!r}" + ("" if pairs else HEADER_HINT))
        pairs.append((fields[0].lower(), fields[1].lower(), score))
    return pairs


# --------------------------------------------------------------------------- scores


def _rows(emb, word, general=False):
    if emb.senses is None:
        i = emb.index.get(word)
        return () if i is None else (i,)
    senses = emb.general_senses if general and emb.general_senses is not None else emb.senses
    return senses.get("_".join(word.split()), ())


def _pair_ids(emb, pairs, log_probs=None, entailment=False):
    """Row pairs of word pairs (`keras_gauss.hierarchy.evaluate.SensePairs`).

    Each covered pair contributes every (row of word1, row of word2), one
    block that starts at `starts[k]` (one row a word: blocks of one); with
    `log_probs` (`(word, rows) -> log p(row | word)`), `log_prior` holds
    the senses' weights. With `entailment` ("word1 is-a word2"), word2
    stands for `emb.general_senses`.
    """
    from keras_gauss.hierarchy.evaluate import sense_pairs

    return sense_pairs(pairs, lambda word: _rows(emb, word), log_probs,
                       (lambda word: _rows(emb, word, True)) if entailment else None)


def unknown_words(emb, pairs, entailment=False):
    """The words of `pairs` without a row in `emb` (the words that leave a
    pair uncovered), each once, in the order the pairs name them. With
    `entailment`, word2 is looked up as the general side
    (`Embeddings.general_senses`).

    Example:

    >>> emb = Embeddings(["cat", "dog"], np.eye(2), np.ones((2, 2)))
    >>> unknown_words(emb, [("cat", "cow", 1.0), ("yak", "dog", 2.0), ("cow", "cat", 3.0)])
    ['cow', 'yak']
    """
    words = {}
    for pair in pairs:
        for word, general in ((pair[0], False), (pair[1], entailment)):
            if word not in words and not _rows(emb, word, general):
                words[word] = None
    return list(words)


def _best_scores(emb, pairs, measure):
    """`pair_scores` of each block's best row pair (the best sense pair)."""
    if not len(pairs.left):
        return np.zeros(0)
    return pairs.reduce(pair_scores(emb, pairs.left, pairs.right, measure))


def _cosine(a, b):
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    return (a * b).sum(-1) / np.maximum(norms, 1e-12)


def pair_scores(emb, left, right, measure):
    """Scores of word pairs given by row ids.

    Args:
        emb: an `Embeddings`.
        left, right: `(n,)` row ids.
        measure: `"m"` (cosine between means), `"d"` (cosine between
            distributions), `"kl"` (`-KL(N_left || N_right)`: high when left
            lies inside right, i.e. left entails right; plus the generality
            term with `emb.generality > 0`), containment (0 when left's
            one-sigma box lies inside right's) or `"el"` (log expected
            likelihood).

    Returns:
        `(n,)` float64 scores, higher = more similar / more entailing.
    """
    from keras_gauss import ops as gauss_ops

    ml, vl = emb.means[left], emb.variances[left]
    mr, vr = emb.means[right], emb.variances[right]
    if measure == "m":
        return _cosine(ml, mr)
    if measure == "d":
        return np.asarray(gauss_ops.distribution_cosine(ml, vl, mr, vr), dtype=np.float64)
    if measure in energies.BY_NAME:  # general = right, specific = left
        return pair_energy(measure, ml, vl, mr, vr, generality=emb.generality)
    raise ValueError(f"measure must be one of m, d, {', '.join(energies.names())}, "
                     f"got {measure!r}.")


def _spearman(x, y):
    from scipy.stats import spearmanr

    if len(x) < 2 or _constant(x) or _constant(y):
        return math.nan  # undefined (`_undefined_rank` says why)
    return float(spearmanr(x, y).statistic)


def _constant(values):
    return bool(len(values)) and values.min() == values.max()  # (no overflow, unlike ptp)


def _undefined_rank(scores, gold, what):
    """Why Spearman's rho of `scores` against `gold` is undefined, or None."""
    if len(gold) < 2:
        return f"only {len(gold)} covered pair(s): a rank correlation needs 2"
    if _constant(gold):
        return (f"the human scores of the {len(gold)} covered pairs are all equal "
                f"({gold[0]:g}): nothing to rank")
    if _constant(scores):
        return (f"the model gives all {len(gold)} covered pairs the same {what} "
                f"({scores[0]:.6g}): nothing to rank")
    return None


def similarity(source, path):
    """Spearman rho of a similarity file, by cosine of means and of distributions.

    Args:
        source: an `Embeddings`, a `Run` or a run directory.
        path: a `word1 TAB word2 TAB score` file (see `read_similarity`).

    Returns:
        `{"spearman_m", "spearman_d", "coverage", "n_pairs", "n_covered",
        "unknown", "undefined"}`; rho over the covered pairs, `unknown`
        the words that left pairs uncovered (`unknown_words`). A rho that
        is undefined (fewer than 2 covered pairs, equal human scores, or
        equal model scores, where scipy would give NaN and a warning) is
        `nan` and `undefined` maps its name to the reason (`{}` when all
        are defined).

    Example:

    >>> emb = Embeddings(["cat", "dog", "car"], [[1.0, 0.0], [0.9, 0.2], [0.0, 1.0]],
    ...                  np.ones((3, 2)))
    >>> with open("sim.tsv", "w") as f:
    ...     _ = f.write("cat\\tdog\\t7.5\\ncat\\tcar\\t1.2\\ndog\\tcar\\t2.0\\ncat\\tcow\\t6.0\\n")
    >>> scores = similarity(emb, "sim.tsv")  # cow is not covered
    >>> round(scores["spearman_m"], 2), scores["n_covered"], scores["n_pairs"]
    (1.0, 3, 4)
    """
    emb = as_embeddings(source)
    pairs = read_similarity(path)
    ids = _pair_ids(emb, pairs)
    covered = ids.covered
    gold = np.array([s for _, _, s in pairs], dtype=np.float64)[covered]
    result, undefined = {}, {}
    for measure, what in (("m", "cosine between means"), ("d", "cosine between "
                                                              "distributions")):
        scores = _best_scores(emb, ids, measure)
        result[f"spearman_{measure}"] = _spearman(scores, gold)
        reason = _undefined_rank(scores, gold, what)
        if reason:
            undefined[f"spearman_{measure}"] = reason
    n = int(covered.sum())
    result.update(coverage=n / len(pairs) if pairs else math.nan, n_pairs=len(pairs),
                  n_covered=n, unknown=unknown_words(emb, pairs), undefined=undefined)
    return result


def entailment(source, path):
    """Entailment detection (Baroni et al. 2012 format): AP and best F1, by
    the embeddings' entailment energy and by cosine.

    A pair `word1 TAB word2 TAB True` means word1 entails word2 (word1 is a
    kind of word2). The energy score (`Embeddings.energy`) is high when the
    specific word1 lies inside the general word2: `-KL(N_word1 || N_word2)`
    by default, the containment energy for a hierarchy run trained with it;
    the cosine score is the cosine between means. AP and best F1
    (`keras_gauss.metrics`) are taken over the covered pairs.

    Args:
        source: an `Embeddings`, a `Run` or a run directory.
        path: the entailment file (see `keras_gauss.hierarchy.benchmark_data.read_entailment`).

    Returns:
        `{"energy", "<energy>_ap", "<energy>_f1", "cos_ap", "cos_f1",
        "positive_rate", "coverage", "n_pairs", "n_covered", "unknown",
        "undefined"}` with `<energy>` the energy's name (`"kl"`: `"kl_ap"`)
        and `unknown` the words that left pairs uncovered (`unknown_words`).
        AP and F1 are undefined (`nan`, and `undefined` maps each name to
        the reason) unless the covered pairs hold both kinds, entailing and
        not (with one kind they are 1 or nothing, whatever the model).

    Example:

    >>> emb = Embeddings(["dog", "animal", "car"], [[0.0, 0.0], [0.1, 0.0], [3.0, 0.0]],
    ...                  [[0.5, 0.5], [2.0, 2.0], [0.5, 0.5]])
    >>> with open("entail.tsv", "w") as f:
    ...     _ = f.write("dog\\tanimal\\tTrue\\ncar\\tanimal\\tFalse\\n")
    >>> scores = entailment(emb, "entail.tsv")
    >>> round(scores["kl_ap"], 2)  # KL ranks dog-animal above car-animal
    1.0
    """
    from keras_gauss.hierarchy.benchmark_data import read_entailment
    from keras_gauss.metrics import average_precision
    from keras_gauss.metrics import best_f1

    emb = as_embeddings(source)
    rows = read_entailment(path)
    ids = _pair_ids(emb, rows, entailment=True)
    covered = ids.covered
    labels = np.array([label for _, _, label in rows], dtype=bool)[covered]
    result, undefined = {"energy": emb.energy}, {}
    reason = None
    if not labels.any() or labels.all():
        reason = (f"all {len(labels)} covered pairs are labelled "
                  f"{bool(labels.all()) if len(labels) else 'neither'}: AP and F1 need "
                  "entailing and non-entailing pairs")
    for name, measure in ((emb.energy, emb.energy), ("cos", "m")):
        if reason is None:
            scores = _best_scores(emb, ids, measure)
            result[f"{name}_ap"] = average_precision(labels, scores)
            result[f"{name}_f1"] = best_f1(labels, scores)[0]
        else:
            result[f"{name}_ap"] = result[f"{name}_f1"] = math.nan
            undefined[f"{name}_ap"] = undefined[f"{name}_f1"] = reason
    n = int(covered.sum())
    result.update(positive_rate=float(labels.mean()) if n else math.nan,
                  coverage=n / len(rows) if rows else math.nan, n_pairs=len(rows),
                  n_covered=n, unknown=unknown_words(emb, rows, entailment=True),
                  undefined=undefined)
    return result


def graded_entailment(source, path):
    """Spearman rho of a graded entailment file (HyperLex, Vulić et al.,
    2017: `WORD1 WORD2 POS TYPE SCORE ...`, its nouns) by the embeddings'
    entailment energy: "to what degree is word1 a type of word2".

    On a WordNet run a pair scores its best synset pair, KL graded as
    `keras-gauss train-wordnet --hyperlex` grades it
    (`keras_gauss.hierarchy.evaluate.hyperlex_scoring`: the generality term
    and the sense prior); elsewhere the energy alone, `-KL(N_word1 ||
    N_word2)` on a corpus run.

    Args:
        source: an `Embeddings`, a `Run` or a run directory.
        path: the file (see `keras_gauss.hierarchy.benchmark_data.read_hyperlex`).

    Returns:
        `{"energy", "spearman", "coverage", "n_pairs", "n_covered",
        "unknown", "undefined"}`: rho over the covered pairs (`nan`, and
        `undefined` maps `"spearman"` to why, when it is undefined);
        `unknown` the words that left pairs uncovered (`unknown_words`).

    Example:

    >>> emb = Embeddings(["dog", "animal", "car"], [[0.0, 0.0], [0.1, 0.0], [3.0, 0.0]],
    ...                  [[0.5, 0.5], [2.0, 2.0], [0.5, 0.5]])
    >>> with open("hyperlex.txt", "w") as f:
    ...     _ = f.write("dog animal N hyp-1 5.5 9.1 .4\\nanimal dog N rhyp-1 1.5 2.5 .4\\n"
    ...                 "car animal N no-rel 0.1 0.2 .1\\n")
    >>> round(graded_entailment(emb, "hyperlex.txt")["spearman"], 2)
    1.0
    """
    from keras_gauss.hierarchy.benchmark_data import read_hyperlex

    emb = as_embeddings(source)
    rows = read_hyperlex(path)
    scores, covered = graded_scores(emb, rows)
    gold = np.array([score for *_, score in rows], dtype=np.float64)[covered]
    reason = _undefined_rank(scores, gold, f"{ENERGY_LABELS[emb.energy]} score")
    n = int(covered.sum())
    return {"energy": emb.energy, "spearman": _spearman(scores, gold),
            "coverage": n / len(rows) if rows else math.nan, "n_pairs": len(rows),
            "n_covered": n, "unknown": unknown_words(emb, rows, entailment=True),
            "undefined": {"spearman": reason} if reason else {}}


def graded_scores(emb, pairs):
    """`graded_entailment`'s scores of word pairs `(word1, word2, ...)`:
    `(scores of the covered pairs, covered mask)`.

    Example:

    >>> emb = Embeddings(["dog", "animal"], [[0.0], [0.5]], [[1.0], [1.0]])
    >>> scores, covered = graded_scores(emb, [("dog", "animal"), ("dog", "cat")])
    >>> scores.tolist(), covered.tolist()  # -KL(N(0, 1) || N(0.5, 1))
    ([-0.125], [True, False])
    """
    from keras_gauss.hierarchy.evaluate import hyperlex_scoring
    from keras_gauss.hierarchy.evaluate import sense_log_probs

    scoring = (hyperlex_scoring(emb.energy, emb.general_senses is not None)
               if emb.senses is not None else {})
    prior = scoring.get("sense_prior", 0.0)

    def log_probs(word, rows):
        return sense_log_probs(word, [emb.words[i] for i in rows])

    ids = _pair_ids(emb, pairs, log_probs if prior else None, entailment=True)
    if not len(ids.left):
        return np.zeros(0), ids.covered
    flat = pair_energy(emb.energy, emb.means[ids.left], emb.variances[ids.left],
                       emb.means[ids.right], emb.variances[ids.right],
                       generality=scoring.get("generality", emb.generality))
    if prior:
        flat = flat + prior * ids.log_prior
    return ids.reduce(flat), ids.covered


# --------------------------------------------------------------------------- neighbours


def nearest(source, word, k=10):
    """The `k` nearest neighbours of `word` by cosine between means.

    Args:
        source: an `Embeddings`, a `Run` or a run directory.
        word: the query word.
        k: number of neighbours (the word itself excluded).

    Returns:
        A list of `(word, cosine)`, most similar first.

    Raises:
        KeyError: `word` is not in the vocabulary.
    """
    emb = as_embeddings(source)
    i = emb.id(word)
    norms = np.maximum(np.linalg.norm(emb.means, axis=1), 1e-12)
    cos = emb.means @ emb.means[i] / (norms * norms[i])
    cos[i] = -np.inf
    k = min(k, len(cos) - 1)
    top = np.argpartition(-cos, k - 1)[:k] if k > 0 else np.zeros(0, dtype=int)
    top = top[np.argsort(-cos[top], kind="stable")]
    return [(emb.words[j], float(cos[j])) for j in top]


def neighbors(source, word, k=10, by="similarity"):
    """A word's `k` nearest neighbours (cosine between means), in a chosen order.

    Args:
        source: an `Embeddings`, a `Run` or a run directory.
        word: the query word.
        k: number of neighbours.
        by: `"similarity"` (most similar first) or `"variance"` (the same
            neighbours, broadest first: descending log det of the covariance,
            the paper's specificity ordering).

    Returns:
        A list of `(word, cosine, log_det)`.

    Raises:
        KeyError: `word` is not in the vocabulary.
        ValueError: bad `by`.

    Example:

    >>> emb = Embeddings(["music", "songs", "jazz", "car"],
    ...                  [[1.0, 0.0], [0.9, 0.1], [0.8, 0.3], [0.0, 1.0]],
    ...                  [[1.0, 1.0], [2.0, 2.0], [0.5, 0.5], [1.0, 1.0]])
    >>> [(w, round(c, 2), round(d, 2)) for w, c, d in neighbors(emb, "music", k=2)]
    [('songs', 0.99, 1.39), ('jazz', 0.94, -1.39)]
    """
    if by not in ("similarity", "variance"):
        raise ValueError(f"by must be 'similarity' or 'variance', got {by!r}.")
    emb = as_embeddings(source)
    found = nearest(emb, word, k)
    log_det = emb.log_det()
    rows = [(w, c, float(log_det[emb.index[w]])) for w, c in found]
    if by == "variance":
        rows.sort(key=lambda row: -row[2])
    return rows


def specificity(source, word, k=100, show=12):
    """The paper's Table 1: `show` of the `k` nearest neighbours by descending variance.

    The `k` nearest neighbours by cosine between means are sorted by
    descending log det of the covariance; `show` of them, evenly spaced over
    that order (so the broadest and the most specific are both shown), are
    returned.

    Args:
        source: an `Embeddings`, a `Run` or a run directory.
        word: the query word.
        k: size of the neighbour set (the paper: 100).
        show: how many to return (`None`: all `k`).

    Returns:
        A list of `(word, log_det)`, broadest first.

    Raises:
        KeyError: `word` is not in the vocabulary.
    """
    rows = neighbors(source, word, k=k, by="variance")
    if show is not None and len(rows) > show:
        picks = np.unique(np.linspace(0, len(rows) - 1, show).round().astype(int))
        rows = [rows[i] for i in picks]
    return [(w, d) for w, _, d in rows]


# --------------------------------------------------------------------------- whole runs


def evaluate(source, similarity_files=(), entailment_files=(), graded_files=()):
    """Scores embeddings on several files.

    Args:
        source: an `Embeddings`, a `Run` or a run directory.
        similarity_files: similarity files (`similarity`).
        entailment_files: entailment files (`entailment`).
        graded_files: graded entailment files, HyperLex's format (`graded_entailment`).

    Returns:
        `{"similarity": {name: result}, "entailment": {name: result}}` (and
        `"graded"` with graded files) with `name` the file name without its
        extension (the full name where two files share a stem).

    Example:

    >>> emb = Embeddings(["cat", "dog", "animal"], [[1.0, 0.0], [0.9, 0.2], [1.0, 0.1]],
    ...                  [[0.5, 0.5], [0.5, 0.5], [2.0, 2.0]])
    >>> with open("sim.tsv", "w") as f:
    ...     _ = f.write("cat\\tdog\\t7.5\\ncat\\tanimal\\t5.0\\n")
    >>> with open("entail.tsv", "w") as f:
    ...     _ = f.write("cat\\tanimal\\tTrue\\nanimal\\tdog\\tFalse\\n")
    >>> results = evaluate(emb, ["sim.tsv"], ["entail.tsv"])
    >>> results["similarity"]["sim"]["n_covered"], round(results["entailment"]["entail"]["kl_ap"], 2)
    (2, 1.0)
    """
    emb = as_embeddings(source)
    results = {
        "similarity": {name: similarity(emb, path)
                       for name, path in file_names(similarity_files).items()},
        "entailment": {name: entailment(emb, path)
                       for name, path in file_names(entailment_files).items()},
    }
    if graded_files:
        results["graded"] = {name: graded_entailment(emb, path)
                             for name, path in file_names(graded_files).items()}
    return results


def file_names(paths):
    """`{name: path}`: the name `evaluate`'s results and table give each of
    `paths`, its file name without the extension (the path as given where
    two files share a stem). Messages about a file name its path.

    Example:

    >>> file_names(["data/sim.tsv", "a/rg65.tsv", "b/rg65.tsv"])
    {'sim': PosixPath('data/sim.tsv'), 'a/rg65.tsv': PosixPath('a/rg65.tsv'), 'b/rg65.tsv': PosixPath('b/rg65.tsv')}
    """
    paths = [Path(p) for p in paths]
    stems = [p.stem for p in paths]
    names = {}
    for path, stem in zip(paths, stems):
        name = stem if stems.count(stem) == 1 else str(path)
        names[name] = path
    return names


# The kinds of files `evaluate` scores, in the order of its table.
KINDS = ("similarity", "entailment", "graded")


def undefined_notes(results):
    """One line per file with undefined measures: which, and why.

    Example:

    >>> undefined_notes({"similarity": {"rg65": {"undefined": {
    ...     "spearman_m": "the human scores ... are all equal (5)",
    ...     "spearman_d": "the human scores ... are all equal (5)"}}}})
    ['rg65: rho(m), rho(d) undefined: the human scores ... are all equal (5).']
    """
    names = {"spearman_m": "rho(m)", "spearman_d": "rho(d)", "cos_ap": "AP(cos)",
             "cos_f1": "F1(cos)"}
    for energy, label in ENERGY_LABELS.items():
        names.update({f"{energy}_ap": f"AP({label})", f"{energy}_f1": f"F1({label})"})
    lines = []
    for kind in KINDS:
        for name, result in results.get(kind, {}).items():
            by_reason = {}
            for metric, reason in result.get("undefined", {}).items():
                if kind == "graded":
                    metric = f"rho({ENERGY_LABELS[result['energy']]})"
                by_reason.setdefault(reason, []).append(names.get(metric, metric))
            for reason, metrics in by_reason.items():
                lines.append(f"{name}: {', '.join(metrics)} undefined: {reason}.")
    return lines


def unknown_notes(results):
    """One line per file with pairs skipped for unknown words: how many,
    and the first few of those words (as gensim's `evaluate_word_pairs`
    reports its out-of-vocabulary ratio).

    Example:

    >>> unknown_notes({"similarity": {"rg65": {"n_pairs": 65, "n_covered": 62,
    ...                                        "unknown": ["cock", "rooster"]}}})
    ["rg65: 3 of 65 pairs skipped, 2 words not in the vocabulary: 'cock', 'rooster'."]
    """
    lines = []
    for kind in KINDS:
        for name, result in results.get(kind, {}).items():
            words = result.get("unknown", [])
            skipped = result["n_pairs"] - result["n_covered"]
            if skipped and words:
                lines.append(f"{name}: {skipped} of {result['n_pairs']} pairs skipped, "
                             f"{len(words)} word{'s' if len(words) > 1 else ''} not in the "
                             f"vocabulary: {listing(words)}.")
    return lines


def scored_anything(results):
    """Whether at least one measure of one file is defined."""
    measures = {"spearman_m", "spearman_d", "cos_ap", "cos_f1", "spearman"}
    measures.update(f"{energy}_{m}" for energy in ENERGY_LABELS for m in ("ap", "f1"))
    return any(set(result) & measures - set(result.get("undefined", {}))
               for kind in KINDS for result in results.get(kind, {}).values())


def format_table(results):
    """Formats `evaluate`'s result as a text table, one row per file; an
    undefined measure shows as `n/a` (`undefined_notes` says why). The
    file names are padded to the columns they take in a terminal
    (`display_width`)."""
    lines = []
    sim, ent = results.get("similarity", {}), results.get("entailment", {})
    if sim:
        width = max(len("similarity"), *(display_width(n) for n in sim))
        lines.append(f"{'similarity':<{width}}  rho(m)  rho(d)  coverage")
        for name, r in sim.items():
            lines.append(f"{pad_to_width(name, width)}  {_f(r['spearman_m'])}  {_f(r['spearman_d'])}  "
                         f"{r['n_covered']}/{r['n_pairs']}")
    if ent:
        if lines:
            lines.append("")
        width = max(len("entailment"), *(display_width(n) for n in ent))
        energy = next(iter(ent.values())).get("energy", energies.KL.name)  # one source
        label = ENERGY_LABELS[energy]
        lines.append(f"{'entailment':<{width}}  {f'AP({label})':>7} {f'F1({label})':>7}  "
                     "AP(cos) F1(cos) coverage")
        for name, r in ent.items():
            lines.append(f"{pad_to_width(name, width)}   {_f(r[f'{energy}_ap'])}  "
                         f"{_f(r[f'{energy}_f1'])}  "
                         f"{_f(r['cos_ap'])}  {_f(r['cos_f1'])}  "
                         f"{r['n_covered']}/{r['n_pairs']}")
    graded = results.get("graded", {})
    if graded:
        if lines:
            lines.append("")
        width = max(len("graded"), *(display_width(n) for n in graded))
        label = f"rho({ENERGY_LABELS[next(iter(graded.values()))['energy']]})"
        lines.append(f"{'graded':<{width}}  {label:>7}  coverage")
        for name, r in graded.items():
            lines.append(f"{pad_to_width(name, width)}   {_f(r['spearman'])}  "
                         f"{r['n_covered']}/{r['n_pairs']}")
    return "\n".join(lines)


def _f(value):
    return "   n/a" if value is None or math.isnan(value) else f"{value:6.3f}"


def pad_to_width(text, width):
    """`text` padded with spaces to `width` terminal columns (`display_width`).

    Example:

    >>> pad_to_width("犬", 4) + "|"
    '犬  |'
    """
    return text + " " * (width - display_width(text))


def display_width(text):
    """Columns `text` takes in a terminal: combining marks (a Hindi vowel
    sign, an accent written apart) none, wide East Asian characters two.

    Example:

    >>> display_width("cafe\u0301"), display_width("犬")
    (4, 2)
    """
    import unicodedata

    return sum(0 if unicodedata.category(ch) in ("Mn", "Me", "Cf")  # as wcwidth counts
               else 2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)
