"""TensorFlow Serving exports: SavedModels that take strings.

An export is a SavedModel whose graph holds the vocabulary (a
`tf.lookup.StaticHashTable` read from `assets/vocabulary.txt`), the mean and
variance tables (as variables) and three endpoints, so loading it needs
TensorFlow only, never `keras_gauss`:

- `serving_default` (also `energy`): inputs `query`, `candidate` (string
  vectors of the same length, or one of them of length 1, which is
  broadcast; other lengths fail the request with one line naming both);
  outputs `energy` (float32: `Run.energy`'s float64 formula,
  `keras_gauss.numpy_ops.pair_energy`, in TensorFlow ops whatever Keras's
  backend), `query_in_vocabulary` and
  `candidate_in_vocabulary` (bool). With EL energy it is the symmetric log
  expected-likelihood kernel `log N(0; mu_q - mu_c, Sigma_q + Sigma_c)`; with
  KL it is `-KL(N_query || N_candidate)`, high (close to 0) when the query
  lies inside the candidate, i.e. "query is-a candidate"
  (`energy(["dog.n.01"], ["mammal.n.01"])` is high, the reverse is low),
  plus `generality * (log det Sigma_candidate - log det Sigma_query)` for a
  hierarchy run trained with `--generality` (the same numbers as
  `keras_gauss.load_run(DIR).energy`); with containment energy (a hierarchy
  run trained with `--energy containment`) it is `-sum_d max(0, |mu_q -
  mu_c| + sigma_q - sigma_c)^2`, 0 when the query's one-sigma box lies
  inside the candidate's.
- `embed`: input `word`; outputs `mean` and `variance` (float32,
  `(batch, d)`, a spherical variance repeated over the `d` columns) and
  `in_vocabulary`.
- `neighbors`: input `query`; outputs `candidates` (string, `(batch, k)`) and
  `energies` (float32, `(batch, k)`), the `k` vocabulary entries with the
  highest `energy(query, candidate)` in decreasing order (with containment,
  the boxes holding the query smallest first, the nearest hypernyms, as
  `keras_gauss.load_run(DIR).neighbors`), the query itself left out, and
  `in_vocabulary`. `k` is fixed when exporting (at most the
  vocabulary size minus one). With KL these are the entries the query most
  plausibly is-a: its hypernyms.

Out-of-vocabulary strings never fail a request. Their rows report
`in_vocabulary = false`, an energy of `OOV_ENERGY` (the lowest finite
float32, `-3.4028235e38`: valid JSON, and it sorts below every real energy,
so an unknown word ranks last), a zero mean and variance in `embed` (a zero
variance never occurs in a trained table), and empty-string candidates with
`OOV_ENERGY` energies in `neighbors`. Energies are never NaN or infinite.
"""

import json
import tempfile
from pathlib import Path

import numpy as np

from keras_gauss.checks import check_tables_finite
from keras_gauss.checks import utf8_words
from keras_gauss.io import SERVING
from keras_gauss.io import atomic_directory
from keras_gauss.io import check_output_dir
from keras_gauss.numpy_ops import check_generality
from keras_gauss.numpy_ops import pair_energy
from keras_gauss import energies
from keras_gauss.runs import el_include_constant
from keras_gauss.runs import load_run
from keras_gauss.runs import walk_layers

OOV_ENERGY = float(np.finfo(np.float32).min)
"""Energy reported for a pair with an out-of-vocabulary string."""

DEFAULT_K = 10
# TF Serving reads a version directory's name as an int64, and skips one that is not.
MAX_VERSION = 2**63 - 1
VOCABULARY_ASSET = "vocabulary.txt"
EXPORT_INFO = "keras_gauss_export.json"


def check_vocabulary(words, size=None):
    """Checks a vocabulary for a string lookup table.

    Args:
        words: entries in table order.
        size: the number of table rows they must match, or `None`.

    Returns:
        The words as a list of `str`.

    Raises:
        ValueError: a word is not a non-empty string without line breaks, is
            not UTF-8 (`utf8_words`), a word is repeated, or the count differs
            from `size`.
    """
    words = utf8_words(words, "serving vocabulary")
    bad = [w for w in words if not isinstance(w, str) or not w
           or "\n" in w or "\r" in w]
    if bad:
        raise ValueError(
            "vocabulary entries must be non-empty strings without line "
            f"breaks; got {', '.join(map(repr, bad[:5]))}."
        )
    if len(set(words)) != len(words):
        seen, repeated = set(), []
        for w in words:
            if w in seen:
                repeated.append(w)
            seen.add(w)
        raise ValueError(
            f"vocabulary entries must be unique; repeated: "
            f"{', '.join(map(repr, repeated[:5]))}."
        )
    if size is not None and len(words) != size:
        raise ValueError(
            f"the vocabulary has {len(words)} entries but the table has "
            f"{size} rows."
        )
    return words


def check_version(version, name="version"):
    """Returns `version` when TF Serving can serve it: an integer from 1 to
    `MAX_VERSION` (2^63 - 1); raises `ValueError` naming `name` otherwise.

    Example:

    >>> check_version(3)
    3
    """
    if isinstance(version, bool) or not isinstance(version, (int, np.integer)) \
            or not 1 <= version <= MAX_VERSION:
        raise ValueError(f"{name} must be an integer from 1 to 2^63 - 1 (TF Serving reads "
                         f"the version directory as an int64), got {version!r}.")
    return int(version)


def _write_vocabulary_asset(words, directory):
    path = Path(directory) / VOCABULARY_ASSET
    path.write_text("".join(w + "\n" for w in words), encoding="utf-8")
    return str(path)


def _make_vocabulary(asset_path, size):
    """A `tf.Module` mapping strings to ids (`-1` when unknown) and back."""
    import tensorflow as tf

    class Vocabulary(tf.Module):
        def __init__(self):
            super().__init__(name="vocabulary")
            whole, number = (tf.lookup.TextFileIndex.WHOLE_LINE,
                             tf.lookup.TextFileIndex.LINE_NUMBER)
            self.ids = tf.lookup.StaticHashTable(
                tf.lookup.TextFileInitializer(
                    asset_path, tf.string, whole, tf.int64, number,
                    vocab_size=size),
                default_value=-1)
            self.words = tf.lookup.StaticHashTable(
                tf.lookup.TextFileInitializer(
                    asset_path, tf.int64, number, tf.string, whole,
                    vocab_size=size),
                default_value="")

        def lookup(self, strings):
            ids = self.ids.lookup(strings)
            known = ids >= 0
            return tf.where(known, ids, tf.zeros_like(ids)), known

    return Vocabulary()


def _endpoint_functions(vocabulary, gather_query, gather_candidate,
                        all_candidates, energy, k, include_constant=True,
                        generality=0.0, rank_threshold=0.0):
    """Builds the endpoint bodies (plain Python functions of string tensors).

    Args:
        vocabulary: from `_make_vocabulary`.
        gather_query: `ids (batch,) -> (mean, variance)`, each `(batch, d)`.
        gather_candidate: the same for the candidate side.
        all_candidates: `() -> (means, variances)`, each `(n, d)`.
        energy: an energy's name (`keras_gauss.energies`).
        k: neighbours returned by `neighbors`.
        include_constant: keep EL's `-d/2 log 2 pi` term.
        generality: with `"kl"`, the weight of the generality term
            `generality * (log det Sigma_candidate - log det Sigma_query)`.
        rank_threshold: with containment energy, the energy from which a
            candidate holds the query (`keras_gauss.numpy_ops.containment_rank`).

    Returns:
        `{"energy": fn(query, candidate), "embed": fn(word),
        "neighbors": fn(query)}`.
    """
    import tensorflow as tf
    import tensorflow.experimental.numpy as tnp

    spec = energies.get(energy)

    def score(query_mean, query_var, cand_mean, cand_var):
        # `Run.energy`'s formula in TensorFlow ops whatever Keras's backend (a
        # run trained and exported on JAX): the query is the specific side,
        # -KL(N_query || N_candidate), the query's box inside the candidate's.
        return pair_energy(spec, query_mean, query_var, cand_mean, cand_var,
                           include_constant=include_constant, generality=generality, xp=tnp)

    oov = tf.constant(OOV_ENERGY, tf.float32)

    def energy_fn(query, candidate):
        # Lengths that do not pair up fail the request with this line, not
        # with the broadcast's "Incompatible shapes: [2] vs. [3]".
        lengths = tf.stack([tf.size(query), tf.size(candidate)])
        paired = tf.logical_or(tf.equal(lengths[0], lengths[1]),
                               tf.reduce_any(tf.equal(lengths, 1)))
        check = tf.debugging.Assert(paired, [tf.strings.format(
            "energy: `query` has {} strings and `candidate` {}: give them the same "
            "length, or one of them length 1", [lengths[0], lengths[1]])])
        with tf.control_dependencies([check]):
            shape = tf.broadcast_dynamic_shape(tf.shape(query), tf.shape(candidate))
        query = tf.broadcast_to(query, shape)
        candidate = tf.broadcast_to(candidate, shape)
        query_ids, query_known = vocabulary.lookup(query)
        cand_ids, cand_known = vocabulary.lookup(candidate)
        values = score(*gather_query(query_ids), *gather_candidate(cand_ids))
        values = tf.cast(values, tf.float32)
        known = tf.logical_and(query_known, cand_known)
        return {
            "energy": tf.where(known, values, oov),
            "query_in_vocabulary": query_known,
            "candidate_in_vocabulary": cand_known,
        }

    def embed_fn(word):
        ids, known = vocabulary.lookup(word)
        mean, var = gather_query(ids)
        mean, var = tf.cast(mean, tf.float32), tf.cast(var, tf.float32)
        mask = known[:, tf.newaxis]
        return {
            "mean": tf.where(mask, mean, tf.zeros_like(mean)),
            "variance": tf.where(mask, var, tf.zeros_like(var)),
            "in_vocabulary": known,
        }

    def neighbors_fn(query):
        ids, known = vocabulary.lookup(query)
        query_mean, query_var = gather_query(ids)
        cand_mean, cand_var = all_candidates()
        log_det = tf.reduce_sum(tf.math.log(tf.cast(cand_var, tf.float64)), axis=-1)

        def one(args):
            mean, var, own = args
            values = tf.cast(score(mean[tf.newaxis], var[tf.newaxis],
                                   cand_mean, cand_var), tf.float32)
            # Leave the query itself out.
            values = tf.tensor_scatter_nd_update(
                values, tf.reshape(own, (1, 1)),
                tf.constant([-np.inf], tf.float32))
            key = values
            if spec.rank_by_box:  # keras_gauss.numpy_ops.containment_rank
                wide = tf.cast(values, tf.float64)
                own_log_det = tf.gather(log_det, own)
                holds = tf.logical_and(wide >= rank_threshold, log_det >= own_log_det)
                key = tf.where(holds, 1e6 - log_det, wide)
            top = tf.math.top_k(key, k=k)
            return tf.gather(values, top.indices), tf.cast(top.indices, tf.int64)

        values, indices = tf.map_fn(
            one, (query_mean, query_var, ids),
            fn_output_signature=(tf.TensorSpec([k], tf.float32),
                                 tf.TensorSpec([k], tf.int64)))
        words = vocabulary.words.lookup(indices)
        mask = known[:, tf.newaxis]
        return {
            "candidates": tf.where(mask, words, tf.fill(tf.shape(words), "")),
            "energies": tf.where(mask, values, tf.fill(tf.shape(values), oov)),
            "in_vocabulary": known,
        }

    return {"energy": energy_fn, "embed": embed_fn, "neighbors": neighbors_fn}


def _input_signatures():
    import tensorflow as tf

    def spec(name):
        return tf.TensorSpec([None], tf.string, name=name)

    return {
        "energy": [spec("query"), spec("candidate")],
        "embed": [spec("word")],
        "neighbors": [spec("query")],
    }


def _check_options(energy, k, size, generality=0.0):
    spec = energies.get(energy)
    if check_generality(generality) and "generality" not in spec.options:
        raise ValueError(f"generality applies to KL energy only, not {energy!r}.")
    if size < 2:
        raise ValueError(f"a vocabulary of {size} entries has no neighbours to serve.")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}.")
    return int(min(k, size - 1))


def _export_info(energy, k, size, dim, generality=0.0, **extra):
    direction = "energy(query, candidate) = -KL(N_query || N_candidate)"
    if energies.get(energy) is energies.CONTAINMENT:
        direction = ("energy(query, candidate) = -sum_d max(0, |mu_query - mu_candidate| "
                     "+ sigma_query - sigma_candidate)^2")
    if generality:
        direction += (f" + {generality!r} * (log det Sigma_candidate "
                      "- log det Sigma_query)")
    return {
        "format": 1,
        "energy": energy,
        "kl_direction": direction,
        "generality": float(generality),
        "k": k,
        "vocabulary_size": size,
        "dim": dim,
        "oov_energy": OOV_ENERGY,
        "signatures": ["serving_default", "energy", "embed", "neighbors"],
        **extra,
    }


def _write_info(directory, info):
    extra = Path(directory) / "assets.extra"
    extra.mkdir(exist_ok=True)
    (extra / EXPORT_INFO).write_text(json.dumps(info, indent=2) + "\n")


def export_tables(means, variances, words, path, energy, *, k=DEFAULT_K,
                  candidate_means=None, candidate_variances=None,
                  include_constant=True, overwrite=False, info=None, generality=0.0,
                  rank_threshold=0.0):
    """Exports Gaussian tables as a SavedModel with string endpoints.

    The SavedModel is built from a `tf.Module` holding the tables as
    `tf.Variable`s and the vocabulary as a lookup table, saved with
    `tf.saved_model.save`; it needs no `keras_gauss` code to load or serve.
    It is written to a temporary sibling of `path` and renamed when complete,
    so `path` never holds a half-written export.

    Args:
        means: `(n, d)` means, in vocabulary order.
        variances: `(n, d)` or `(n, 1)` variances.
        words: the `n` vocabulary entries (unique, no line breaks).
        path: the SavedModel directory to write (for TF Serving,
            `SERVE_DIR/<version>`).
        energy: `"el"` or `"kl"` (see the module docstring for the KL
            direction).
        k: neighbours returned by the `neighbors` signature (capped at
            `n - 1`).
        candidate_means: means of a separate candidate table (e.g. the
            corpus model's context table), or `None` for the same table.
        candidate_variances: variances of the candidate table.
        include_constant: keep EL's `-d/2 log 2 pi` term.
        overwrite: replace a serving export of ours in `path` (never anything else).
        info: extra entries for `assets.extra/keras_gauss_export.json`.
        generality: with `"kl"`, the weight `beta >= 0` of the generality
            term added to the energy (`beta * (log det Sigma_candidate -
            log det Sigma_query)`; a hierarchy run's `--generality`);
            default 0.
        rank_threshold: with containment energy, the energy from which a
            candidate's box holds the query: `neighbors` lists those first,
            smallest first (a run's validation threshold; default 0).

    Returns:
        The export directory as a `Path`.

    Raises:
        ValueError: bad shapes, vocabulary, `energy` or `k`.
        keras_gauss.io.OutputExistsError: `path` holds files and `overwrite`
            is False.

    Example:

    >>> import numpy as np
    >>> export_tables(np.zeros((3, 2)), np.ones((3, 2)), ["a", "b", "c"],
    ...               "tables/1", "el", k=2)
    PosixPath('tables/1')
    """
    import tensorflow as tf


    means, variances = _checked_table(means, variances, "means", "variances")
    if candidate_means is None:
        candidate_means, candidate_variances = means, variances
        separate = False
    else:
        candidate_means, candidate_variances = _checked_table(
            candidate_means, candidate_variances, "candidate_means", "candidate_variances")
        if candidate_means.shape != means.shape:
            raise ValueError("the candidate table must have the query table's shape.")
        separate = True
    check_tables_finite(means, variances, "export: the query table")
    if separate:
        check_tables_finite(candidate_means, candidate_variances,
                            "export: the candidate table")
    size, dim = means.shape
    words = check_vocabulary(words, size)
    k = _check_options(energy, k, size, generality)
    check_output_dir(path, overwrite, content=SERVING)

    with tempfile.TemporaryDirectory() as scratch:
        asset = _write_vocabulary_asset(words, scratch)

        class GaussianServing(tf.Module):
            def __init__(self):
                super().__init__(name="gaussian_serving")
                self.vocabulary = _make_vocabulary(asset, size)
                self.means = tf.Variable(means, trainable=False, name="means")
                self.variances = tf.Variable(variances, trainable=False,
                                             name="variances")
                if separate:
                    self.candidate_means = tf.Variable(
                        candidate_means, trainable=False, name="candidate_means")
                    self.candidate_variances = tf.Variable(
                        candidate_variances, trainable=False,
                        name="candidate_variances")
                else:
                    self.candidate_means = self.means
                    self.candidate_variances = self.variances

                def gather(table_means, table_variances):
                    def fn(ids):
                        mean = tf.gather(table_means, ids)
                        var = tf.broadcast_to(tf.gather(table_variances, ids),
                                              tf.shape(mean))
                        return mean, var
                    return fn

                def all_candidates():
                    mean = tf.convert_to_tensor(self.candidate_means)
                    var = tf.broadcast_to(self.candidate_variances, tf.shape(mean))
                    return mean, var

                bodies = _endpoint_functions(
                    self.vocabulary, gather(self.means, self.variances),
                    gather(self.candidate_means, self.candidate_variances),
                    all_candidates, energy, k, include_constant, float(generality),
                    float(rank_threshold))
                specs = _input_signatures()
                self.energy = tf.function(bodies["energy"], input_signature=specs["energy"])
                self.embed = tf.function(bodies["embed"], input_signature=specs["embed"])
                self.neighbors = tf.function(bodies["neighbors"],
                                             input_signature=specs["neighbors"])

        module = GaussianServing()
        signatures = {
            "serving_default": module.energy.get_concrete_function(),
            "energy": module.energy.get_concrete_function(),
            "embed": module.embed.get_concrete_function(),
            "neighbors": module.neighbors.get_concrete_function(),
        }
        with atomic_directory(path, overwrite, content=SERVING) as tmp:
            tf.saved_model.save(module, str(tmp), signatures=signatures)
            _write_info(tmp, _export_info(energy, k, size, dim, float(generality),
                                          separate_candidate_table=separate,
                                          include_constant=include_constant,
                                          **(info or {})))
    return Path(path)


def _checked_table(means, variances, mean_name, variance_name):
    """`(means, variances)` as float32 arrays, checked to be `(n, d)` with
    `d >= 1` and `(n, d)` or `(n, 1)` (a candidate table's variances of
    another width failed the export with a traced graph's error)."""
    means = np.asarray(means, np.float32)
    variances = np.asarray(variances, np.float32)
    if means.ndim != 2 or not means.shape[1] or variances.ndim != 2 \
            or variances.shape[0] != means.shape[0] or variances.shape[1] not in (1, means.shape[1]):
        raise ValueError(
            f"{mean_name} must be (n, d) with d >= 1 and {variance_name} (n, d) or (n, 1); "
            f"got {means.shape} and {variances.shape}.")
    return means, variances


def export_run(run_dir, serve_dir, version=1, k=DEFAULT_K, overwrite=False,
               candidate_table=None):
    """Exports a run directory for TensorFlow Serving.

    Writes `serve_dir/<version>/` (`saved_model.pb`, `variables/`,
    `assets/vocabulary.txt`, `assets.extra/keras_gauss_export.json`) with the
    signatures `serving_default` (= `energy`), `embed` and `neighbors`
    described in this module's docstring, using the run's `table` and
    `energy` (see `keras_gauss.runs`), and a hierarchy run's generality
    term (`Run.generality`), so the `energy` signature gives the numbers of
    `load_run(run_dir).energy`. The version directory appears only once
    complete.

    Args:
        run_dir: a run directory written by `train-wordnet` or `train-corpus`.
        serve_dir: TF Serving's model base path.
        version: the model version, an integer from 1 to 2^63 - 1.
        k: neighbours returned by the `neighbors` signature.
        overwrite: replace a serving export of ours in the version directory.
        candidate_table: the name of another `GaussianEmbedding` layer of
            the model to embed candidates with (e.g. `"contexts"` of a
            corpus run, to serve the trained word-context energy); default:
            the run's `table` on both sides (word-word similarity).

    Returns:
        The version directory as a `Path`.

    Raises:
        FileNotFoundError: `run_dir` holds no trained run.
        keras_gauss.io.OutputExistsError: the version exists and `overwrite`
            is False.
        ValueError: bad `version` or `k`.

    Example:

    >>> from keras_gauss.pipelines.train import demo_run
    >>> _ = demo_run("runs/tiny")  # a tiny corpus run, in well under a second
    >>> export_run("runs/tiny", "serving/tiny", version=1, k=3)
    PosixPath('serving/tiny/1')
    """
    target = Path(serve_dir) / str(check_version(version))
    check_output_dir(target, overwrite, content=SERVING)  # fail before loading the model
    run = load_run(run_dir)
    means, variances = run.tables()
    cand_means = cand_vars = None
    if candidate_table is not None and candidate_table != run.table.name:
        try:
            layer = _find_table(run.model, candidate_table)
        except ValueError as error:
            raise ValueError(f"--candidate-table {candidate_table}: {error}") from None
        cand_means = layer.means.numpy()
        cand_vars = layer.variances.numpy()
    return export_tables(
        means, variances, run.words, target, run.energy_name, k=k,
        candidate_means=cand_means, candidate_variances=cand_vars,
        include_constant=el_include_constant(run.model), overwrite=overwrite,
        generality=run.generality, rank_threshold=run.threshold or 0.0,
        info={"run": str(Path(run_dir).resolve()), "kind": run.kind,
              "table": run.table.name,
              "candidate_table": candidate_table or run.table.name})


def _find_table(source, name=None):
    from keras_gauss.layers import GaussianEmbedding

    if isinstance(source, GaussianEmbedding):
        if name is not None and name != source.name:
            raise ValueError(f"table {name!r} given with the layer {source.name!r}.")
        return source
    if isinstance(name, GaussianEmbedding):
        return name
    tables = [layer for layer in walk_layers(source)
              if isinstance(layer, GaussianEmbedding)]
    if name is not None:
        matching = [layer for layer in tables if layer.name == name]
        if not matching:
            raise ValueError(
                f"the model has no GaussianEmbedding layer named {name!r} "
                f"(it has: {', '.join(t.name for t in tables) or 'none'}).")
        return matching[0]
    if len(tables) != 1:
        raise ValueError(
            f"the model has {len(tables)} GaussianEmbedding layers "
            f"({', '.join(t.name for t in tables)}); pass `table=` to choose one.")
    return tables[0]


def export_energy_model(source, vocabulary, path, energy=energies.EL.name, *, table=None,
                        candidate_table=None, k=DEFAULT_K,
                        include_constant=None, overwrite=False, generality=0.0):
    """Exports a model you composed with `GaussianEmbedding` layers.

    Built on Keras 3's `keras.export.ExportArchive`: the embedding layer(s)
    and the vocabulary lookup tables are tracked and the endpoints `energy`
    (also `serving_default`), `embed` and `neighbors` are added with
    `add_endpoint`; inputs and outputs are described in this module's
    docstring. The result is a SavedModel that TF Serving,
    `tf.saved_model.load` and `saved_model_cli` read without `keras_gauss`.

    Args:
        source: a built `GaussianEmbedding` layer, or a Keras model holding
            one or more.
        vocabulary: the strings of the table's rows, in order (unique, no
            line breaks).
        path: the SavedModel directory to write (for TF Serving,
            `SERVE_DIR/<version>`); written to a temporary sibling first and
            renamed when complete.
        energy: `"el"` (symmetric) or `"kl"`
            (`energy(query, candidate) = -KL(N_query || N_candidate)`).
        table: with a model, the name of the layer that embeds queries
            (needed when it has several `GaussianEmbedding` layers).
        candidate_table: the name of (or the) layer that embeds candidates,
            e.g. the context table of a word/context model; default: `table`.
        k: neighbours returned by `neighbors` (capped at the vocabulary size
            minus one).
        include_constant: keep EL's `-d/2 log 2 pi` term (default: as the
            model's `ELEnergy` layers do; True without one).
        overwrite: replace a serving export of ours in `path` (never anything else).
        generality: with `"kl"`, the weight `beta >= 0` of the generality
            term (`beta * (log det Sigma_candidate - log det Sigma_query)`);
            default 0.

    Returns:
        `path` as a `Path`.

    Raises:
        ValueError: no such table, an unbuilt layer, a vocabulary of the
            wrong size, bad `energy` or `k`.
        keras_gauss.io.OutputExistsError: `path` holds files and `overwrite`
            is False.

    Example:

    >>> import numpy as np, tensorflow as tf
    >>> import keras_gauss as kg
    >>> words = kg.GaussianEmbedding(3, 2, name="words")
    >>> _ = words(np.array([0]))  # build the tables
    >>> export_energy_model(words, ["cat", "dog", "car"], "serve/1", "el", k=2)
    PosixPath('serve/1')
    >>> served = tf.saved_model.load("serve/1")
    >>> out = served.signatures["serving_default"](
    ...     query=tf.constant(["cat", "cat"]), candidate=tf.constant(["dog", "cow"]))
    >>> out["candidate_in_vocabulary"].numpy()
    array([ True, False])

    With a word/context model, serve the word table against the contexts:
    `export_energy_model(model, vocab, "serve/1", "el", table="words",
    candidate_table="contexts")`.
    """
    import keras
    import tensorflow as tf

    if keras.backend.backend() != "tensorflow":
        raise ValueError("export_energy_model needs the TensorFlow backend.")
    if include_constant is None:
        include_constant = el_include_constant(source)
    query_layer = _find_table(source, table)
    cand_layer = (query_layer if candidate_table is None
                  else _find_table(source, candidate_table))
    for layer in (query_layer, cand_layer):
        if not layer.built:
            raise ValueError(f"the layer {layer.name!r} is not built; call it once first.")
    size = query_layer.input_dim
    if cand_layer.input_dim != size or cand_layer.output_dim != query_layer.output_dim:
        raise ValueError("the query and candidate tables differ in shape.")
    words = check_vocabulary(vocabulary, size)
    k = _check_options(energy, k, size, generality)
    check_output_dir(path, overwrite, content=SERVING)

    def gather(layer):
        # The variables' rows as float32, not a call's: under `mixed_float16`
        # a call gives float16 rows (means off by 1e-3, and unlike the
        # tables `neighbors` reads); the vocabulary's ids never lie outside.
        def fn(ids):
            mean = tf.cast(tf.gather(layer.means.value, ids), tf.float32)
            var = tf.cast(tf.gather(layer.variances.value, ids), tf.float32)
            return mean, tf.broadcast_to(var, tf.shape(mean))
        return fn

    def all_candidates():
        # The whole table: read the variables (a call would check every id).
        mean = tf.cast(keras.ops.convert_to_tensor(cand_layer.means), tf.float32)
        var = tf.cast(keras.ops.convert_to_tensor(cand_layer.variances), tf.float32)
        return mean, tf.broadcast_to(var, tf.shape(mean))

    with tempfile.TemporaryDirectory() as scratch:
        vocab = _make_vocabulary(_write_vocabulary_asset(words, scratch), size)
        archive = keras.export.ExportArchive()
        archive.track(query_layer)
        if cand_layer is not query_layer:
            archive.track(cand_layer)
        archive.track(vocab)
        bodies = _endpoint_functions(vocab, gather(query_layer), gather(cand_layer),
                                     all_candidates, energy, k, include_constant,
                                     float(generality))
        for name, spec in _input_signatures().items():
            archive.add_endpoint(name, bodies[name], input_signature=spec)
        with atomic_directory(path, overwrite, content=SERVING) as tmp:
            archive.write_out(str(tmp), verbose=False)
            _write_info(tmp, _export_info(
                energy, k, size, query_layer.output_dim, float(generality),
                separate_candidate_table=cand_layer is not query_layer,
                include_constant=include_constant,
                table=query_layer.name, candidate_table=cand_layer.name))
    return Path(path)
