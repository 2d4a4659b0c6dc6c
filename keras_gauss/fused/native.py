"""The skip-gram trainer without TensorFlow: `native.cc` through ctypes.

`NativeTables` holds a word and a context table in the native trainer's
layout: one float32 block per row, `[mean | variance | mean accumulator |
variance accumulator]`, padded to whole 64-byte cache lines, so training a
word touches one contiguous block instead of four rows of four tables.
`NativeTables.train` trains them on a chunk of sentences given as token ids
(subsampling, reduced windows and negatives drawn in C++ from the seed, then
max-margin ranking steps with AdaGrad and the row constraints), and
`means` / `variances` / `accumulators` give the Keras tables back (copies)
once training is done. `skipgram_triples` returns the `(word, context,
negatives)` triples `train(num_threads=1)` trains on, in its order.

Example:

>>> from keras_gauss.fused.sampling import alias_table
>>> tables = NativeTables.initial(5, 2, seed=0)  # 5 words, 2-d
>>> probs, alias = alias_table(np.ones(5))
>>> ids, splits = np.arange(5, dtype=np.int32), np.array([0, 5])  # one sentence
>>> loss, pairs = tables.train(ids, splits, seed=0, learning_rate=0.2,
...                            negative_probs=probs, negative_alias=alias,
...                            window=1, dynamic_window=False)
>>> int(pairs), tables.means(0).shape
(8, (5, 2))
"""

import ctypes
import unicodedata
import warnings

import numpy as np

from keras_gauss import energies
from keras_gauss.checks import check_number
from keras_gauss.fused import build as _build
from keras_gauss.optimizers.adagrad_floor import EPSILON

_LINE = 16  # floats in a 64-byte cache line
_P = ctypes.c_void_p
_I64 = ctypes.c_int64
_SIGNATURE = [
    _P, _P, _I64, _I64, _I64, ctypes.c_int,  # tables, rows, stride, d, spherical
    _P, _P, _I64,  # tokens, splits, sentences
    _P, _P, _P, _I64,  # keep, probs, alias, outcomes
    ctypes.c_uint64, _I64, ctypes.c_int, _I64, ctypes.c_int,  # seed, window, dynamic, k, shuffle
    _I64, _I64, ctypes.c_int,  # batch_size, threads, energy
    ctypes.c_float, ctypes.c_float, ctypes.c_float,  # learning_rate, margin, epsilon
    _P, _P, _P,  # max_norm, min_variance, max_variance
    ctypes.POINTER(ctypes.c_double), ctypes.POINTER(_I64), ctypes.c_char_p, _I64,
    ctypes.c_float,  # variance_learning_rate (< 0: learning_rate)
    ctypes.POINTER(_I64),  # started: the threads that trained
]
_TRIPLES_SIGNATURE = [
    _I64, _P, _P, _I64,  # rows, tokens, splits, sentences
    _P, _P, _P, _I64,  # keep, probs, alias, outcomes
    ctypes.c_uint64, _I64, ctypes.c_int, _I64, ctypes.c_int,  # seed, window, dynamic, k, shuffle
    _P, _P, _P, _I64, ctypes.POINTER(_I64),  # word, context, negatives, capacity, count
    ctypes.c_char_p, _I64,
]


_SIGNATURES = {
    "kg_skipgram_train": (_SIGNATURE, ctypes.c_int),
    "kg_skipgram_triples": (_TRIPLES_SIGNATURE, ctypes.c_int),
    "kg_tokenizer_new": ([], _P),
    "kg_tokenizer_free": ([_P], None),
    "kg_codepoints": ([ctypes.c_char_p, _I64, _P, _I64], _I64),
    "kg_tokenizer_set_word": ([_P, _P, _I64], None),
    "kg_tokenize": ([_P, ctypes.c_char_p, _I64], None),
    "kg_tokenizer_sizes": ([_P, _P], None),
    "kg_tokenizer_export": ([_P, _P, _P, _P], None),
}


def _library():
    return _build.native_functions("kg_skipgram", _SIGNATURES)


class NativeTokenizer:
    """`keras_gauss.pipelines.tokenize`'s tokens of lowercased text, numbered
    in C++ (`native.cc`): ids in order of first appearance.

    Python classifies the non-ASCII characters (letters, numbers and
    combining marks are word characters: `str.isalnum`, category M); the
    C++ side splits and hashes.

    Example:

    >>> tokenizer = NativeTokenizer()
    >>> tokenizer.add("don't 'quote' it\\nit")
    >>> tokenizer.result()
    (["don't", 'quote', 'it'], array([0, 1, 2, 2], dtype=int32), array([3, 1]))
    """

    def __init__(self):
        self._library = _library()
        self._handle = self._library.kg_tokenizer_new()
        self._classified = set()

    def __del__(self):
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            self._library.kg_tokenizer_free(handle)

    def add(self, text):
        """Tokenizes lowercased `text`: lines separated by `"\\n"`, the last
        one ending with the text."""
        data = text.encode("utf-8")
        if not text.isascii():
            found = np.zeros(4096, np.int32)
            count = self._library.kg_codepoints(data, len(data), found.ctypes.data, len(found))
            if count > len(found):
                found = np.zeros(count, np.int32)
                self._library.kg_codepoints(data, len(data), found.ctypes.data, len(found))
            new = [int(c) for c in found[:count] if int(c) not in self._classified]
            self._classified.update(new)
            words = np.array([c for c in new if chr(c).isalnum()
                              or unicodedata.category(chr(c))[0] == "M"], np.int32)
            if len(words):
                self._library.kg_tokenizer_set_word(self._handle, words.ctypes.data, len(words))
        self._library.kg_tokenize(self._handle, data, len(data))

    def __len__(self):
        """Tokens so far."""
        sizes = np.zeros(4, np.int64)
        self._library.kg_tokenizer_sizes(self._handle, sizes.ctypes.data)
        return int(sizes[0])

    def result(self):
        """`(types, ids, lengths)`: the distinct tokens, the int32 ids of all
        tokens, the int64 number of tokens of every line."""
        sizes = np.zeros(4, np.int64)
        self._library.kg_tokenizer_sizes(self._handle, sizes.ctypes.data)
        ids = np.zeros(sizes[0], np.int32)
        lengths = np.zeros(sizes[1], np.int64)
        types = ctypes.create_string_buffer(int(sizes[3]) + 1)
        self._library.kg_tokenizer_export(self._handle, ids.ctypes.data, lengths.ctypes.data,
                                          types)
        names = types.raw[:int(sizes[3])].decode("utf-8").split("\n")[:-1] if sizes[2] else []
        return names, ids, lengths


def native_available():
    """Whether the native trainers build and load here (compiles them once)."""
    return _build.native_available()


def native_unavailable():
    """None when the native trainers build and load here, else why not (a
    phrase): the test `keras_gauss.job.choose_engine` takes.

    Example:

    >>> native_unavailable() is None  # where g++ builds the trainer
    True
    """
    return None if native_available() else str(_build.native_error())


def _aligned(shape):
    """A zeroed float32 array of `shape` whose data starts on a 64-byte line."""
    count = int(np.prod(shape))
    raw = np.zeros(count + _LINE, np.float32)
    offset = (-raw.ctypes.data % 64) // 4
    return raw[offset:offset + count].reshape(shape)


def _chunk(rows, tokens, row_splits, negative_probs, negative_alias, keep, window,
           negatives):
    """The chunk's arrays, checked: `(tokens, splits, probs, alias, keep)`."""
    tokens = _ids(tokens, "tokens", rows)
    splits = np.ascontiguousarray(row_splits, np.int64)
    probs = np.ascontiguousarray(negative_probs, np.float32)
    alias = np.ascontiguousarray(negative_alias, np.int32)
    if splits.ndim != 1 or len(splits) < 1 or splits[-1] != len(tokens):
        raise ValueError(f"`row_splits` must be a vector ending at {len(tokens)} (the "
                         "number of tokens).")
    if len(probs) != len(alias) or not 1 <= len(probs) <= rows:
        raise ValueError("`negative_probs` and `negative_alias` must have the same "
                         f"length, between 1 and {rows}.")
    if keep is not None:
        keep = np.ascontiguousarray(keep, np.float32)
        if keep.shape != (rows,):
            raise ValueError(f"`keep` must have {rows} values (one per word).")
    for name, value in (("window", window), ("negatives", negatives)):
        if int(value) < 1:
            raise ValueError(f"`{name}` must be an integer >= 1, got {value!r}.")
    return tokens, splits, probs, alias, keep


def skipgram_triples(rows, tokens, row_splits, seed, negative_probs, negative_alias,
                     keep=None, window=5, dynamic_window=True, negatives=1, shuffle=False):
    """The `(word, context, negatives)` triples `NativeTables.train` trains on
    with `num_threads=1`, in training order (same arguments; the draws are
    those documented in `native.cc`).

    Args:
        rows: the vocabulary size (ids must lie in `[0, rows)`).
        tokens, row_splits: the chunk's int32 token ids and its `S + 1`
            sentence boundaries.
        seed: the chunk's seed.
        negative_probs, negative_alias: the negatives' alias table
            (`alias_table` of the unigram counts ** 0.75).
        keep: `(rows,)` keep probabilities (subsampling), or None.
        window: the largest distance between a word and its context.
        dynamic_window: draw each centre's reach from `1..window`.
        negatives: negatives per pair.
        shuffle: the order of `train(shuffle=True)`.

    Returns:
        `(word, context, negatives)`: int32 arrays `(n,)`, `(n,)`,
        `(n, negatives)`.

    Example:

    >>> from keras_gauss.fused.sampling import alias_table
    >>> probs, alias = alias_table(np.ones(4))
    >>> w, c, n = skipgram_triples(4, [0, 1, 2, 3], [0, 4], 0, probs, alias,
    ...                            window=1, dynamic_window=False)
    >>> w.tolist(), c.tolist()
    ([0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2])
    """
    library = _library()
    rows = int(rows)
    tokens, splits, probs, alias, keep = _chunk(rows, tokens, row_splits, negative_probs,
                                                negative_alias, keep, window, negatives)
    error = ctypes.create_string_buffer(512)
    count = _I64()
    outputs = [np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros((0, int(negatives)),
                                                                       np.int32)]
    for _ in range(2):  # first the count, then the triples
        status = library.kg_skipgram_triples(
            rows, tokens.ctypes.data, splits.ctypes.data, len(splits) - 1,
            None if keep is None else keep.ctypes.data, probs.ctypes.data, alias.ctypes.data,
            len(probs), int(seed) & (2**64 - 1), int(window), int(bool(dynamic_window)),
            int(negatives), int(bool(shuffle)), outputs[0].ctypes.data, outputs[1].ctypes.data,
            outputs[2].ctypes.data, len(outputs[0]), ctypes.byref(count), error, len(error))
        if status:
            raise ValueError(f"skipgram_triples: {error.value.decode()}")
        if len(outputs[0]) == count.value:
            break
        outputs = [np.zeros(count.value, np.int32), np.zeros(count.value, np.int32),
                   np.zeros((count.value, int(negatives)), np.int32)]
    return tuple(outputs)


def _ids(ids, name, rows):
    """`ids` as int32; ids of another integer dtype are checked to lie in
    `[0, rows)` first (an int64 2^32 + 3 must not become row 3)."""
    ids = np.asarray(ids)
    if ids.dtype == np.int32:
        return np.ascontiguousarray(ids)
    if ids.size and not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"`{name}` must be integer ids, got dtype {ids.dtype.name}.")
    bad = (ids < 0) | (ids >= rows)
    if bad.any():
        at = int(np.flatnonzero(bad.ravel())[0])
        raise ValueError(f"`{name}` holds id {ids.ravel()[at]} (at flat position {at}), "
                         f"outside [0, {rows})")
    return np.ascontiguousarray(ids, np.int32)


class NativeTables:
    """A word and a context table of Gaussians in the native trainer's layout.

    Args:
        rows: rows of each table (the vocabulary size).
        dim: embedding dimension `d`.
        spherical: one variance per row instead of `d`.
        bounds: `(max_norm, min_variance, max_variance)`, each a number or a
            `(word, context)` pair (`max_norm` 0 or None: no bound).

    Example:

    >>> tables = NativeTables(3, 2)
    >>> tables.set(0, means=np.ones((3, 2)), variances=np.ones((3, 2)))
    >>> tables.means(0).tolist()
    [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]
    """

    def __init__(self, rows, dim, spherical=False, bounds=(None, None, None)):
        self.rows, self.dim, self.spherical = int(rows), int(dim), bool(spherical)
        self.dv = 1 if spherical else self.dim
        self.stride = -(-2 * (self.dim + self.dv) // _LINE) * _LINE
        self.data = [_aligned((self.rows, self.stride)) for _ in range(2)]
        inf = float("inf")
        pairs = [_pair(value, default)
                 for value, default in zip(bounds, (0.0, -inf, inf))]
        self.bounds = [np.asarray(pair, np.float32) for pair in pairs]
        self.thread_limit = None  # the threads that started when fewer than asked did

    @classmethod
    def initial(cls, rows, dim, seed=0, init_variance=1.0, mean_range=0.05, **kwargs):
        """Tables initialised from `seed`: means uniform in +-`mean_range`,
        variances `init_variance`, accumulators zero (NumPy's generator; not
        the Keras initialisers' numbers)."""
        tables = cls(rows, dim, **kwargs)
        rng = np.random.default_rng(seed)
        for t in range(2):
            tables.set(t, means=rng.uniform(-mean_range, mean_range, (tables.rows, tables.dim)),
                       variances=np.full((tables.rows, tables.dv), init_variance))
        return tables

    def _view(self, t, start, width):
        return self.data[t][:, start:start + width]

    def means(self, t):
        """Table `t`'s (0 words, 1 contexts) means, `(rows, d)` (a copy)."""
        return self._view(t, 0, self.dim).copy()

    def variances(self, t):
        """Table `t`'s variances, `(rows, d)` or `(rows, 1)` (a copy)."""
        return self._view(t, self.dim, self.dv).copy()

    def accumulators(self, t):
        """Table `t`'s AdaGrad accumulators `(means', variances')` (copies)."""
        return (self._view(t, self.dim + self.dv, self.dim).copy(),
                self._view(t, 2 * self.dim + self.dv, self.dv).copy())

    def set(self, t, means=None, variances=None, mean_accumulator=None,
            variance_accumulator=None):
        """Copies the given arrays into table `t` (0 words, 1 contexts)."""
        starts = (0, self.dim, self.dim + self.dv, 2 * self.dim + self.dv)
        widths = (self.dim, self.dv, self.dim, self.dv)
        for value, start, width in zip((means, variances, mean_accumulator,
                                        variance_accumulator), starts, widths):
            if value is not None:
                self._view(t, start, width)[...] = np.asarray(value, np.float32).reshape(
                    self.rows, width)

    def train(self, tokens, row_splits, seed, learning_rate, negative_probs, negative_alias,
              keep=None, window=5, dynamic_window=True, negatives=1, batch_size=1,
              shuffle=False, num_threads=0, margin=1.0, epsilon=EPSILON, energy=energies.EL.name,
              variance_learning_rate=None):
        """Trains the tables on a chunk of sentences, in place.

        The triples are those of `skipgram_triples` (with several threads,
        each thread's block of sentences is drawn and shuffled alike); every
        `batch_size` of them make one max-margin ranking step on the mean
        hinge loss: AdaGrad on every row with a nonzero gradient, then the
        row constraints (`bounds`). Several threads update the tables
        without locks (Hogwild); one thread is deterministic.

        Args:
            tokens, row_splits, seed, negative_probs, negative_alias, keep,
                window, dynamic_window, negatives, shuffle: the chunk and its
                draws, as in `skipgram_triples`.
            learning_rate: AdaGrad's learning rate (>= 0; 0: the loss alone).
            batch_size: triples per step.
            num_threads: threads (0: the machine's cores). When the system
                starts fewer, those that start train the whole chunk (one
                `RuntimeWarning`), and later calls ask for no more.
            margin: the hinge's margin.
            epsilon: AdaGrad's epsilon.
            energy: an energy the native corpus trainer runs (`keras_gauss.energies`:
                expected likelihood, default, or KL).
            variance_learning_rate: the variances' AdaGrad learning rate
                (None: `learning_rate`).

        Returns:
            `(loss, pairs)`: the summed hinge loss and the pairs trained.

        Raises:
            ValueError: ids outside the tables, bad row splits or settings.
        """
        library = _library()
        tokens, splits, probs, alias, keep = _chunk(self.rows, tokens, row_splits,
                                                    negative_probs, negative_alias, keep,
                                                    window, negatives)
        energy = energies.get(energy, engine="native-corpus", setting="`energy`")
        if int(batch_size) < 1:
            raise ValueError(f"`batch_size` must be an integer >= 1, got {batch_size!r}.")
        for name, value in (("learning_rate", learning_rate), ("margin", margin),
                            ("epsilon", epsilon),
                            ("variance_learning_rate", variance_learning_rate)):
            if value is not None:
                check_number(value, f"`{name}`", at_least=0)
        threads = int(num_threads)
        if self.thread_limit is not None and not 0 < threads <= self.thread_limit:
            threads = self.thread_limit  # what started before: no new try every chunk
        loss, pairs, started = ctypes.c_double(), _I64(), _I64()
        error = ctypes.create_string_buffer(512)
        status = library.kg_skipgram_train(
            self.data[0].ctypes.data, self.data[1].ctypes.data, self.rows, self.stride,
            self.dim, int(self.spherical), tokens.ctypes.data, splits.ctypes.data,
            len(splits) - 1, None if keep is None else keep.ctypes.data, probs.ctypes.data,
            alias.ctypes.data, len(probs), int(seed) & (2**64 - 1), int(window),
            int(bool(dynamic_window)), int(negatives), int(bool(shuffle)), int(batch_size),
            threads, energy.code, float(learning_rate), float(margin),
            float(epsilon), self.bounds[0].ctypes.data, self.bounds[1].ctypes.data,
            self.bounds[2].ctypes.data, ctypes.byref(loss), ctypes.byref(pairs), error,
            len(error), -1.0 if variance_learning_rate is None else float(variance_learning_rate),
            ctypes.byref(started))
        if status:
            raise ValueError(f"NativeTables.train: {error.value.decode()}")
        if error.value:  # fewer threads started than asked: they trained it all
            first, self.thread_limit = self.thread_limit is None, started.value
            if first:  # one warning; a later, lower count (memory in use) says nothing new
                warnings.warn(f"only {started.value} threads could start "
                              f"({error.value.decode(errors='replace')}); training on with "
                              f"{started.value}.", RuntimeWarning, stacklevel=2)
        return loss.value, pairs.value


def _pair(value, default):
    if value is None:
        return (default, default)
    if np.ndim(value) == 0:
        return (float(value), float(value))
    word, context = value
    return (default if word is None else float(word), default if context is None else float(context))
