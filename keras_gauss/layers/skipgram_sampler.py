"""Skip-gram pairs drawn on the device, inside the compiled train step.

The corpus is held on the device as token ids (`corpus`, line after line)
and a line number per token (`lines`); every call draws one batch of
`(word, context, negatives)` from the step number alone, with word2vec's
rules: frequent-word subsampling (keep probabilities), a reduced window
(distance `d` with `P(d) ~ window - d + 1`), pairs that never cross a line,
and negatives from a table of the unigram^0.75 distribution
(`keras_gauss.pipelines.negative_table`).

Positions are drawn at random, with replacement, instead of a pass over
the corpus: every pair is drawn with the probability it has of being one
of an epoch's pairs in the streaming pipeline (a centre kept with its keep
probability, a distance kept by the reduced window, the `d`-th kept
neighbour in one direction within the line, each neighbour kept with its
own keep probability), so the distribution of pairs is the same; an
"epoch" is as many pairs as an epoch of that pipeline has, in expectation.

The random numbers are a counter-based hash (murmur3's 32-bit finaliser of
a Weyl sequence, as SplitMix) of `(seed, step, stream, position)` in `uint32` `keras.ops`: the
same seed and step give the same batch, bit for bit, on every backend, and
a resumed run draws exactly the pairs the uninterrupted one drew.
"""

import math

import keras
import numpy as np
from keras import ops

_GOLDEN = 0x9E3779B9
_STREAMS = {"position": 1, "keep": 2, "distance": 3, "reach": 4, "side": 5, "scan": 6,
            "negative": 7}


def _u32(value):
    return ops.convert_to_tensor(value & 0xFFFFFFFF, "uint32")


def _wrap(x):
    """`x` modulo 2^32. Keras on torch holds "uint32" as int64 (torch has no
    uint32 arithmetic), so sums and products there keep their high bits;
    elsewhere uint32 wraps by itself."""
    if keras.backend.backend() == "torch":
        return ops.bitwise_and(x, 0xFFFFFFFF)
    return x


def _add32(a, b):
    return _wrap(ops.add(a, b))


def _mul32(a, b):
    return _wrap(ops.multiply(a, b))


def _mix32(x):
    """murmur3's finaliser: a bijection of uint32 with full avalanche."""
    x = ops.bitwise_xor(x, ops.right_shift(x, _u32(16)))
    x = _mul32(x, _u32(0x85EBCA6B))
    x = ops.bitwise_xor(x, ops.right_shift(x, _u32(13)))
    x = _mul32(x, _u32(0xC2B2AE35))
    return ops.bitwise_xor(x, ops.right_shift(x, _u32(16)))


def step_key(seed, step):
    """The uint32 key of draw `step` of a stream seeded by `seed` (ints or int tensors)."""
    seed = _wrap(ops.cast(ops.convert_to_tensor(seed), "uint32"))
    step = _wrap(ops.cast(ops.convert_to_tensor(step), "uint32"))
    return _mix32(_add32(_mix32(_add32(seed, _u32(0x632BE5AB))),
                         _mul32(step, _u32(_GOLDEN))))


def hash_bits(key, stream, shape):
    """uint32 random bits of `shape`, a function of `(key, stream, position)` only.

    Args:
        key: a uint32 scalar (`step_key`).
        stream: an int naming an independent stream.
        shape: the output shape (ints).

    Example:

    >>> bits = hash_bits(step_key(0, 5), 1, (2, 3))
    >>> tuple(bits.shape), keras.backend.standardize_dtype(bits.dtype)
    ((2, 3), 'uint32')
    """
    base = _mix32(_add32(key, _u32(stream * 0x7FEB352D + 1)))
    counter = ops.cast(ops.arange(math.prod(shape), dtype="int32"), "uint32")
    return ops.reshape(_mix32(_add32(_mul32(counter, _u32(_GOLDEN)), base)), shape)


def hash_uniform(key, stream, shape):
    """float32 uniforms in `[0, 1)` on a grid of `2^-24` (`hash_bits`)."""
    bits = ops.right_shift(hash_bits(key, stream, shape), _u32(8))
    return ops.multiply(ops.cast(bits, "float32"), 2.0 ** -24)


def hash_integers(key, stream, shape, n):
    """int32 integers in `[0, n)` (bits modulo `n`: a bias below `n / 2^32`)."""
    return ops.cast(ops.mod(hash_bits(key, stream, shape), _u32(n)), "int32")


def first_true(mask, n):
    """Indices of the first `n` true entries of the 1-D `mask`, in order.

    With fewer than `n` true entries they repeat cyclically (all zeros when
    none is true). Returns `(indices, count)`: int32 `(n,)` and the number of
    true entries.
    """
    mask = ops.cast(mask, "int32")
    count = ops.sum(mask)
    slot = ops.cumsum(mask) - 1
    slot = ops.where(ops.logical_and(mask > 0, slot < n), slot, n)
    index = ops.arange(ops.shape(mask)[0], dtype="int32")
    picked = ops.scatter(ops.expand_dims(slot, -1), ops.where(slot < n, index, 0), (n + 1,))
    cycle = ops.mod(ops.arange(n, dtype="int32"), ops.maximum(count, 1))
    return ops.take(picked[:n], cycle), count


def sample_skipgram(key, corpus, lines, offsets, token_keep, negative_table, window,
                    batch_size, negatives=1, dynamic_window=True, draws=None, candidates=None,
                    scan=None):
    """One batch of skip-gram pairs drawn from the corpus held in tensors.

    Two stages of rejection, with fixed shapes: `draws` random positions,
    each a centre kept with its keep probability and a distance `d`
    (uniform in `1..window`) kept by the reduced window (`d <= b`, `b`
    uniform in `1..window`); the first `candidates` kept ones look `scan`
    tokens to one side (drawn) for their `d`-th kept neighbour in the same
    line; the first `batch_size` found are the batch. Too few kept (the
    sizes of `plan_draws` make it about `1e-9` likely) repeat the first
    ones cyclically.

    Args:
        key: uint32 scalar (`step_key(seed, step)`).
        corpus: `(N,)` int32 token ids, line after line.
        lines: `(N,)` int32 line of every token (non-decreasing).
        offsets: `(lines + 1,)` int32 first token of every line, then `N`.
        token_keep: `(N,)` float32 keep probability of every token.
        negative_table: `(S,)` int32 word ids (`negative_table`).
        window: largest distance; dynamic_window: word2vec's reduced window.
        batch_size: pairs drawn; negatives: negatives per pair.
        draws, candidates, scan: the sizes of the stages (`None`:
            `4 * batch_size`, `2 * batch_size`, `2 * window`).

    Returns:
        `{"word": (B,), "context": (B,), "negatives": (B, k)}` int32.
    """
    draws = draws or 4 * batch_size
    candidates = candidates or 2 * batch_size
    scan = scan or 2 * window
    size = ops.shape(corpus)[0]
    # 1. centres kept by subsampling, distances kept by the reduced window
    position = hash_integers(key, _STREAMS["position"], (draws,), size)
    kept = hash_uniform(key, _STREAMS["keep"], (draws,)) < ops.take(token_keep, position)
    distance = hash_integers(key, _STREAMS["distance"], (draws,), window) + 1
    if dynamic_window:
        reach = hash_integers(key, _STREAMS["reach"], (draws,), window) + 1
        kept = ops.logical_and(kept, distance <= reach)
    chosen, _ = first_true(kept, candidates)
    centre, distance = ops.take(position, chosen), ops.take(distance, chosen)
    # 2. the distance-th kept neighbour on one side, in the centre's line
    side = hash_integers(key, _STREAMS["side"], (candidates,), 2) * 2 - 1
    line = ops.take(lines, centre)
    first, last = ops.take(offsets, line), ops.take(offsets, line + 1)
    steps = ops.arange(1, scan + 1, dtype="int32")
    at = ops.expand_dims(centre, 1) + ops.expand_dims(side, 1) * ops.expand_dims(steps, 0)
    inside = ops.logical_and(at >= ops.expand_dims(first, 1), at < ops.expand_dims(last, 1))
    kept = ops.logical_and(inside, hash_uniform(key, _STREAMS["scan"], (candidates, scan))
                           < ops.take(token_keep, ops.clip(at, 0, size - 1)))
    count = ops.cumsum(ops.cast(kept, "int32"), axis=1)
    hit = ops.logical_and(kept, count == ops.expand_dims(distance, 1))
    found = ops.any(hit, axis=1)
    reached = ops.argmax(ops.cast(hit, "int32"), axis=1) + 1
    chosen, _ = first_true(found, batch_size)
    context = ops.take(centre, chosen) + ops.take(side * ops.cast(reached, "int32"), chosen)
    table = ops.shape(negative_table)[0]
    return {
        "word": ops.take(corpus, ops.take(centre, chosen)),
        "context": ops.take(corpus, ops.clip(context, 0, size - 1)),
        "negatives": ops.take(negative_table, hash_integers(
            key, _STREAMS["negative"], (batch_size, negatives), table)),
    }


def _enough(target, rate, z=6.0):
    """Fewest Bernoulli(`rate`) draws giving `target` successes but with
    probability about that of `z` standard deviations."""
    rate = min(max(rate, 1e-6), 1.0)
    if rate >= 1.0:
        return int(target)
    spread = z * math.sqrt(rate * (1 - rate))
    root = (spread + math.sqrt(spread * spread + 4 * rate * target)) / (2 * rate)
    return int(math.ceil(root * root)) + 1


def expected_pairs(lines, keep, window, dynamic_window):
    """`(kept_tokens, pairs)`: the expected tokens kept by subsampling and the
    expected pairs of one pass over a corpus (`line_pairs` of every line, as
    `keras_gauss.pipelines.epoch_size` counts).

    Args:
        lines: `(N,)` line of every token (non-decreasing).
        keep: `(N,)` keep probability of every token.
        window, dynamic_window: as for `sample_skipgram`.

    Example:

    >>> import numpy as np
    >>> expected_pairs(np.array([0, 0, 0]), np.ones(3), 1, False)  # a-b, b-a, b-c, c-b
    (3.0, 4.0)
    """
    import numpy as np

    lines = np.asarray(lines)
    keep = np.asarray(keep, np.float64)
    if not len(lines):
        return 0.0, 0.0
    lengths = np.bincount(lines, weights=keep)
    with np.errstate(divide="ignore"):  # a token always kept: log(0), no line left empty
        none_kept = np.exp(np.bincount(lines, weights=np.log1p(-keep)))
    return float(lengths.sum()), float(line_pairs(lengths, none_kept, window,
                                                  dynamic_window).sum())


def line_pairs(lengths, none_kept, window, dynamic_window):
    """The expected pairs of lines of expected kept length `lengths`, each
    keeping none of its tokens with probability `none_kept`.

    A line keeping `K` tokens has `2 * max(K - d, 0)` pairs at distance
    `d`; the distance-1 term is taken exactly (`E[max(K - 1, 0)] =
    E[K] - 1 + P(K = 0)`), the others at the expected length. So a corpus
    whose lines have two tokens or more has pairs however heavy the
    subsampling, as the streaming pipeline draws some (at the expected
    length alone, lines keeping less than one token on average would have
    none). Without subsampling (`none_kept` 0 on every line with a token)
    the count is exact.

    Args:
        lengths: `(L,)` expected kept tokens of every line.
        none_kept: `(L,)` probability that a line keeps no token (1 for an
            empty line).
        window, dynamic_window: as for `sample_skipgram`.

    Returns:
        `(L,)` float64 expected pairs of every line.

    Example:

    >>> import numpy as np
    >>> line_pairs(np.array([3.0, 0.2]), np.array([0.0, 0.81]), 2, False).round(3).tolist()
    [6.0, 0.02]
    """
    import numpy as np

    lengths = np.asarray(lengths, np.float64)
    offsets = np.arange(1, window + 1)
    weights = (window - offsets + 1) / window if dynamic_window else np.ones(window)
    pairs = 2 * weights[0] * np.maximum(lengths - 1 + np.asarray(none_kept, np.float64), 0)
    for offset, weight in zip(offsets[1:], weights[1:]):  # (a loop: a window may be large)
        pairs = pairs + 2 * weight * np.maximum(lengths - offset, 0)
    return pairs


def plan_draws(batch_size, window, dynamic_window, tokens, kept_tokens, pairs,
               longest_line=None):
    """The stage sizes `(draws, candidates, scan)` of `sample_skipgram` for a corpus.

    Args:
        batch_size, window, dynamic_window: as for `sample_skipgram`.
        tokens: tokens of the corpus `N`.
        kept_tokens: their expected number after subsampling (sum of keep).
        pairs: expected pairs of an epoch (`keras_gauss.pipelines.epoch_size`).
        longest_line: tokens of the longest line, if known (the scan never
            needs to go further).

    `scan` is `window` without subsampling, else enough tokens to find
    `window` kept ones at the mean keep rate but with 6 standard deviations
    to spare (a neighbour further away is taken as missing).

    Example:

    >>> plan_draws(1024, 5, True, tokens=10_000, kept_tokens=10_000, pairs=58_000)
    (2194, 1178, 5)
    """
    reach = (window + 1) / (2 * window) if dynamic_window else 1.0
    candidates = _enough(batch_size,
                         0.95 * min(1.0, pairs / max(2.0 * kept_tokens * window * reach, 1.0)))
    draws = _enough(candidates, kept_tokens / max(tokens, 1) * reach)
    rate = kept_tokens / max(tokens, 1)
    scan = window if rate >= 1.0 else int(math.ceil(
        (window + 6 * math.sqrt(window) + 6) / max(rate, 1e-3)))
    if longest_line:
        scan = max(1, min(scan, longest_line - 1))
    return draws, candidates, scan


@keras.saving.register_keras_serializable(package="keras_gauss")
class SkipGramSampler(keras.layers.Layer):
    """Draws a batch of skip-gram pairs on the device from the step number.

    Holds the corpus token ids, the line of every token, the lines' first
    tokens, the keep probability of every token and the negative table as
    non-trainable weights (so they live on the device and are not fed each
    step); `call(step)` returns the batch `sample_skipgram` draws for
    `step_key(seed, step)`. Put it in front of a model taking `{"word",
    "context", "negatives"}` and fit on the step numbers: the pairs never
    leave the device.

    Args:
        corpus_size: tokens `N` of the corpus.
        line_count: lines of the corpus.
        window: largest distance between a word and its context.
        batch_size: pairs a call.
        negatives: negatives a pair (1).
        dynamic_window: word2vec's reduced window (True).
        seed: the seed of the draws (0).
        table_size: length of the negative table (1,000,000).
        draws, candidates, scan: stage sizes (`plan_draws`; `None`:
            `sample_skipgram`'s defaults).

    Build one from arrays with `SkipGramSampler.from_arrays(corpus, lines,
    keep, negative_table, ...)` (it plans the stage sizes).

    Example:

    >>> import numpy as np
    >>> sampler = SkipGramSampler.from_arrays(
    ...     np.array([0, 1, 2, 0, 1], "int32"), np.array([0, 0, 0, 1, 1], "int32"),
    ...     np.ones(3, "float32"), np.array([0, 1, 2], "int32"), window=1, batch_size=4)
    >>> batch = sampler(np.array([7], "int32"))
    >>> tuple(batch["word"].shape), tuple(batch["negatives"].shape)
    ((4,), (4, 1))
    """

    def __init__(self, corpus_size, line_count, window, batch_size, negatives=1,
                 dynamic_window=True, seed=0, table_size=1_000_000, draws=None,
                 candidates=None, scan=None, **kwargs):
        super().__init__(**kwargs)
        for name, value in (("corpus_size", corpus_size), ("line_count", line_count),
                            ("window", window), ("batch_size", batch_size),
                            ("negatives", negatives), ("table_size", table_size)):
            if (isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer))
                    or value < 1):
                raise ValueError(f"`{name}` must be an integer >= 1, got {value!r}.")
        # NumPy integers too (`len`s and settings read with NumPy), kept as ints
        corpus_size, line_count, window, batch_size, negatives, table_size = map(
            int, (corpus_size, line_count, window, batch_size, negatives, table_size))
        if corpus_size >= 2**31:
            raise ValueError(f"`corpus_size` must be < 2^31, got {corpus_size}.")
        self.corpus_size, self.line_count = corpus_size, line_count
        self.window, self.batch_size, self.negatives = window, batch_size, negatives
        self.dynamic_window, self.seed, self.table_size = bool(dynamic_window), int(seed), table_size
        self.draws, self.candidates, self.scan = draws, candidates, scan

        def weight(shape, name, dtype="int32"):
            return self.add_weight(shape, "zeros", dtype=dtype, trainable=False, name=name)

        self.corpus = weight((corpus_size,), "corpus")
        self.lines = weight((corpus_size,), "lines")
        self.offsets = weight((line_count + 1,), "offsets")
        self.token_keep = weight((corpus_size,), "token_keep", "float32")
        self.negative_table = weight((table_size,), "negative_table")
        self.built = True

    @classmethod
    def from_arrays(cls, corpus, lines, keep, negative_table, **kwargs):
        """A sampler holding a corpus.

        Args:
            corpus: `(N,)` token ids, line after line.
            lines: `(N,)` line of every token (non-decreasing, from 0).
            keep: `(V,)` keep probability of every word.
            negative_table: `(S,)` word ids.
            **kwargs: as for the constructor (`window` and `batch_size`
                required); the stage sizes not given are planned for this
                corpus (`plan_draws` of `expected_pairs`).
        """
        import numpy as np

        corpus, lines = np.asarray(corpus, "int32"), np.asarray(lines, "int32")
        keep, table = np.asarray(keep, "float32"), np.asarray(negative_table, "int32")
        if corpus.ndim != 1 or corpus.shape != lines.shape or len(corpus) == 0:
            raise ValueError("`corpus` and `lines` must be 1-D, of one length > 0, got "
                             f"{corpus.shape} and {lines.shape}.")
        if corpus.min() < 0 or corpus.max() >= len(keep) or table.min() < 0 \
                or table.max() >= len(keep):
            raise ValueError(f"token ids must lie in [0, {len(keep)}) (the rows of `keep`).")
        if lines[0] < 0 or np.any(np.diff(lines) < 0):
            raise ValueError("`lines` must be non-decreasing from 0 (tokens line after line).")
        token_keep = keep[corpus]
        if not all(kwargs.get(name) for name in ("draws", "candidates", "scan")):
            dynamic = kwargs.get("dynamic_window", True)
            kept, pairs = expected_pairs(lines, token_keep, kwargs["window"], dynamic)
            plan = plan_draws(kwargs["batch_size"], kwargs["window"], dynamic, len(corpus),
                              kept, pairs, longest_line=int(np.bincount(lines).max()))
            for name, value in zip(("draws", "candidates", "scan"), plan):
                kwargs[name] = kwargs.get(name) or value
        count = int(lines[-1]) + 1
        sampler = cls(len(corpus), count, table_size=len(table), **kwargs)
        sampler.corpus.assign(corpus)
        sampler.lines.assign(lines)
        sampler.offsets.assign(np.searchsorted(lines, np.arange(count + 1)).astype("int32"))
        sampler.token_keep.assign(token_keep)
        sampler.negative_table.assign(table)
        return sampler

    def call(self, step):
        step = ops.reshape(step, (-1,))[0]
        return sample_skipgram(
            step_key(self.seed, step), self.corpus, self.lines, self.offsets,
            self.token_keep, self.negative_table, self.window, self.batch_size,
            negatives=self.negatives, dynamic_window=self.dynamic_window, draws=self.draws,
            candidates=self.candidates, scan=self.scan)

    def compute_output_spec(self, step):
        return {"word": keras.KerasTensor((self.batch_size,), "int32"),
                "context": keras.KerasTensor((self.batch_size,), "int32"),
                "negatives": keras.KerasTensor((self.batch_size, self.negatives), "int32")}

    def get_config(self):
        config = super().get_config()
        config.update({
            "corpus_size": self.corpus_size, "line_count": self.line_count,
            "window": self.window, "batch_size": self.batch_size,
            "negatives": self.negatives, "dynamic_window": self.dynamic_window,
            "seed": self.seed, "table_size": self.table_size, "draws": self.draws,
            "candidates": self.candidates, "scan": self.scan})
        return config
