"""The native trainer (plain C ABI, interleaved rows): its triples are the
documented draws (an independent Python implementation) and follow the
skip-gram rules; with one thread its tables are the `keras.ops` reference's
steps on those triples (`skipgram_reference`)."""

import subprocess
import sys

import numpy as np
import pytest

from keras_gauss.fused import alias_table
from keras_gauss.fused import native_available
from keras_gauss.fused import NativeTables
from keras_gauss.fused import skipgram_triples

from skipgram_reference import python_triples
from skipgram_reference import reference_training

VOCAB = 30
BOUNDS = dict(max_norm=0.3, min_variance=0.6, max_variance=1.4)

pytestmark = pytest.mark.skipif(not native_available(),
                                reason="the native trainer did not build")


def _chunk(seed=1):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, VOCAB, 200).astype("int32")
    # Empty, one-token and long sentences.
    splits = np.array([0, 3, 3, 50, 51, 120, 200], "int64")
    probs, alias = alias_table(rng.random(VOCAB) ** 2)
    keep = rng.random(VOCAB).astype("float32")
    return tokens, splits, probs, alias, keep


def _start(dim=6, spherical=False, seed=0):
    """Word and context tables inside `BOUNDS` (the reference projects every
    row of a batch, the trainer the rows with a gradient: inside the bounds
    both are the same), and their accumulators."""
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(2):
        values += [rng.uniform(-0.1, 0.1, (VOCAB, dim)).astype("float32"),
                   rng.uniform(0.7, 1.3, (VOCAB, 1 if spherical else dim)).astype("float32")]
    return values, [np.full(v.shape, 1e-6, "float32") for v in values]


def _native(values, accumulators, spherical=False):
    native = NativeTables(VOCAB, values[0].shape[1], spherical=spherical,
                          bounds=(BOUNDS["max_norm"], BOUNDS["min_variance"],
                                  BOUNDS["max_variance"]))
    for t in range(2):
        native.set(t, values[2 * t], values[2 * t + 1], accumulators[2 * t],
                   accumulators[2 * t + 1])
    return native


def _as_list(word, context, negatives):
    return list(zip(word.tolist(), context.tolist(), map(tuple, negatives.tolist())))


@pytest.mark.parametrize(
    "settings",
    [dict(window=5, dynamic_window=True, negatives=1, subsample=False),
     dict(window=3, dynamic_window=True, negatives=2, subsample=True),
     dict(window=2, dynamic_window=False, negatives=3, subsample=True),
     dict(window=4, dynamic_window=True, negatives=1, subsample=True, shuffle=True)],
)
def test_triples_follow_the_documented_draws(settings):
    tokens, splits, probs, alias, keep = _chunk()
    settings = dict(settings)  # parametrize shares the dict between runs
    keep = keep if settings.pop("subsample") else None
    got = _as_list(*skipgram_triples(VOCAB, tokens, splits, 11, probs, alias, keep=keep,
                                     **settings))
    expected = python_triples(tokens, splits, settings["window"], settings["dynamic_window"],
                              settings["negatives"], keep, probs, alias, 11,
                              settings.get("shuffle", False))
    assert got == expected
    assert len(got) > 100


def test_triples_follow_the_skip_gram_rules():
    rng = np.random.default_rng(3)
    n = 20_000
    tokens = rng.integers(0, 8, n).astype("int32")
    splits = np.array([0, n], "int64")
    counts = np.bincount(tokens, minlength=8).astype(np.float64)
    probs, alias = alias_table(counts ** 0.75)
    word, context, negs = skipgram_triples(8, tokens, splits, 5, probs, alias, window=5,
                                           negatives=2)
    # Reduced window: each centre reaches 1..5 words each side, uniformly:
    # 2 * (1 + 2 + 3 + 4 + 5) / 5 = 6 pairs per token; a full window 10.
    assert abs(len(word) / n - 6.0) < 0.1
    full, _, _ = skipgram_triples(8, tokens, splits, 5, probs, alias, window=5,
                                  dynamic_window=False)
    assert len(full) == 10 * n - 2 * (1 + 2 + 3 + 4 + 5)
    # Negatives follow unigram ** 0.75, whatever the pair.
    freq = np.bincount(negs.ravel(), minlength=8) / negs.size
    np.testing.assert_allclose(freq, counts ** 0.75 / (counts ** 0.75).sum(), atol=0.01)
    # Subsampling keeps each occurrence of a word with its keep probability:
    # with window 1 and no reduction every kept token but the ends has 2 pairs.
    keep = np.linspace(0.1, 0.8, 8).astype("float32")
    w, _, _ = skipgram_triples(8, tokens, splits, 5, probs, alias, keep=keep, window=1,
                               dynamic_window=False)
    kept = np.bincount(w, minlength=8) / 2
    np.testing.assert_allclose(kept / counts, keep, atol=0.03)


@pytest.mark.parametrize("energy", ["el", "kl"])
@pytest.mark.parametrize("batch_size", [1, 7])
@pytest.mark.parametrize("layout", ["diagonal", "spherical", "shuffled"])
def test_one_thread_equals_the_keras_ops_reference_on_its_triples(energy, batch_size, layout):
    # Some hundred sequential AdaGrad steps: float rounding (the two order
    # their sums differently) grows along the trajectory, so it stays short.
    tokens, _, probs, alias, keep = _chunk()
    tokens, splits = tokens[:80], np.array([0, 3, 3, 40, 41, 80], "int64")
    spherical = layout == "spherical"
    values, accumulators = _start(spherical=spherical)
    native = _native(values, accumulators, spherical)
    draws = dict(keep=keep, negatives=2, shuffle=layout == "shuffled")
    loss, pairs = native.train(tokens, splits, 3, 0.2, probs, alias, batch_size=batch_size,
                               num_threads=1, margin=1.0, energy=energy, **draws)
    triples = _as_list(*skipgram_triples(VOCAB, tokens, splits, 3, probs, alias, **draws))
    total, ref_values, ref_accs = reference_training(values, accumulators, triples,
                                                     batch_size, 0.2, 1.0, energy, **BOUNDS)
    assert pairs == len(triples) > 50
    np.testing.assert_allclose(loss, total, rtol=1e-5)
    for t in range(2):
        got = [native.means(t), native.variances(t), *native.accumulators(t)]
        want = [ref_values[2 * t], ref_values[2 * t + 1], ref_accs[2 * t],
                ref_accs[2 * t + 1]]
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    # The constraints bound (the reference's projection was compared), and hold.
    variances = np.concatenate([native.variances(0).ravel(), native.variances(1).ravel()])
    norms = np.linalg.norm(np.concatenate([native.means(0), native.means(1)]), axis=1)
    assert np.isclose(variances, 0.6).any() or np.isclose(variances, 1.4).any()
    assert (variances >= 0.6).all() and (variances <= 1.4).all()
    assert (norms <= 0.3 + 1e-6).all()


@pytest.mark.parametrize("spherical", [False, True])
def test_variance_learning_rate_moves_only_the_variances_as_the_reference(spherical):
    tokens, splits, probs, alias, keep = _chunk()
    draws = dict(keep=keep, negatives=2)
    triples = _as_list(*skipgram_triples(VOCAB, tokens, splits, 3, probs, alias, **draws))
    runs = {}
    for name, var_lr in (("same", None), ("explicit", 0.2), ("slow", 1e-3)):
        values, accumulators = _start(spherical=spherical)
        native = _native(values, accumulators, spherical)
        native.train(tokens, splits, 3, 0.2, probs, alias, batch_size=7, num_threads=1,
                     margin=1.0, variance_learning_rate=var_lr, **draws)
        if name != "explicit":
            _, ref_values, _ = reference_training(values, accumulators, triples, 7, 0.2, 1.0,
                                                  variance_learning_rate=var_lr, **BOUNDS)
            for t in range(2):
                np.testing.assert_allclose(native.means(t), ref_values[2 * t],
                                           rtol=1e-4, atol=1e-4)
                np.testing.assert_allclose(native.variances(t), ref_values[2 * t + 1],
                                           rtol=1e-4, atol=1e-4)
        runs[name] = (native, [values[1], values[3]])
    same, explicit, slow = runs["same"][0], runs["explicit"][0], runs["slow"][0]
    for t in range(2):
        # the variances' rate equal to the means' is the default, bit for bit
        np.testing.assert_array_equal(same.variances(t), explicit.variances(t))
        np.testing.assert_array_equal(same.means(t), explicit.means(t))
        # a 200x smaller rate moves the variances far less (the bounds cap the default)
        moved = np.abs(same.variances(t) - runs["same"][1][t]).max()
        moved_slow = np.abs(slow.variances(t) - runs["slow"][1][t]).max()
        assert moved > 0.3 and moved_slow < moved / 20, (moved, moved_slow)


def test_threads_train_and_learn():
    rng = np.random.default_rng(0)
    # Two "topics": words 0-9 and 10-19 never share a sentence.
    sentences = [rng.integers(0, 10, 30) + 10 * (i % 2) for i in range(400)]
    tokens = np.concatenate(sentences).astype("int32")
    splits = np.arange(0, len(tokens) + 1, 30).astype("int64")
    probs, alias = alias_table(np.ones(VOCAB))
    start = np.random.default_rng(0)
    native = NativeTables(VOCAB, 8, bounds=(2.0, None, None))
    for t in range(2):  # accumulators 1e-6 (SparseAdagrad's, the native engine's)
        native.set(t, start.uniform(-0.2, 0.2, (VOCAB, 8)), start.uniform(0.5, 1.5, (VOCAB, 8)),
                   np.full((VOCAB, 8), 1e-6), np.full((VOCAB, 8), 1e-6))

    def epoch(seed, learning_rate):
        # Two Hogwild threads on 20 rows collide all the time: lost
        # accumulator updates keep the steps large, and without the norm
        # bound the means can drift away (the loss then jumps now and then).
        loss, pairs = native.train(tokens, splits, seed, learning_rate, probs, alias,
                                   window=3, num_threads=2, margin=1.0)
        return loss / pairs

    before = epoch(99, 0.0)  # learning rate 0: the loss of the starting tables
    for seed in range(5):
        epoch(seed, 0.2)
    after = epoch(99, 0.0)
    assert after < 0.5 * before  # (3 starts, 1 or 2 threads: at most 0.34)
    means = native.means(0)
    assert np.isfinite(means).all()
    unit = means / np.linalg.norm(means, axis=1, keepdims=True)
    same = np.mean(unit[:10] @ unit[:10].T)
    other = np.mean(unit[:10] @ unit[10:20].T)
    assert same > other + 0.5  # (3 starts, 1 or 2 threads: at least 1.58)


def test_bad_chunks_and_settings_raise_clear_errors():
    tokens, splits, probs, alias, _ = _chunk()
    native = NativeTables(30, 4)
    before = native.means(0)
    def triples(tokens, splits, seed, learning_rate, probs, alias, **kwargs):
        return skipgram_triples(30, tokens, splits, seed, probs, alias, **kwargs)

    for train in (native.train, triples):
        with pytest.raises(ValueError, match=r"`tokens` holds id 30 .*outside \[0, 30\)"):
            train(np.append(tokens[:-1], 30), splits, 0, 0.1, probs, alias)
        with pytest.raises(ValueError, match="row_splits"):
            train(tokens, splits[:-1], 0, 0.1, probs, alias)
        with pytest.raises(ValueError, match="keep"):
            train(tokens, splits, 0, 0.1, probs, alias, keep=np.ones(3))
        with pytest.raises(ValueError, match="window"):
            train(tokens, splits, 0, 0.1, probs, alias, window=0)
        for wide in (np.array([1, 2**32 + 2], "int64"), np.array([1, 2**63 + 2], "uint64"),
                     np.array([1, -1], "int64")):  # never taken as row 2 (or -1)
            with pytest.raises(ValueError, match=r"`tokens` .*outside \[0, 30\)"):
                train(wide, [0, 2], 0, 0.1, probs, alias)
        with pytest.raises(ValueError, match="integer"):
            train(np.array([1.0, 2.0]), [0, 2], 0, 0.1, probs, alias)
    for setting in (dict(learning_rate=float("nan")), dict(learning_rate=-0.1),
                    dict(margin=float("inf")), dict(epsilon=float("nan")),
                    dict(variance_learning_rate=float("nan")), dict(batch_size=0),
                    dict(energy="cosine")):
        args = dict(learning_rate=0.1, **setting) if "learning_rate" not in setting else setting
        with pytest.raises(ValueError, match="finite|>= 0|>= 1|energy"):
            native.train(tokens, splits, 0, negative_probs=probs, negative_alias=alias, **args)
    np.testing.assert_array_equal(native.means(0), before)  # nothing was trained


def test_native_trainer_does_not_import_tensorflow():
    code = ("import sys, numpy as np; from keras_gauss.fused import NativeTables, alias_table;"
            "from keras_gauss.fused import skipgram_triples;"
            "t = NativeTables(4, 2); p, a = alias_table(np.ones(4));"
            "t.train(np.array([0, 1, 2, 3], 'int32'), np.array([0, 4]), 0, 0.1, p, a);"
            "skipgram_triples(4, np.array([0, 1, 2, 3], 'int32'), np.array([0, 4]), 0, p, a);"
            "print('tensorflow' in sys.modules, 'keras' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300)
    assert result.stdout.strip() == "False False", result.stderr[-2000:]


# In a child whose threads each reserve a 256 MiB stack (RLIMIT_STACK, read
# at its start) and whose address space then has room for three more.
_FEW_THREADS = """
import json, resource, warnings
import numpy as np
from keras_gauss.fused import NativeTables, alias_table
rng = np.random.default_rng(0)
tokens = rng.integers(0, 50, 20000).astype("int32")
splits = np.arange(0, 20001, 20, dtype="int64")
probs, alias = alias_table(np.ones(50))
one = NativeTables.initial(50, 4, seed=0)
pairs_one = one.train(tokens, splits, 0, 0.1, probs, alias, num_threads=1)[1]
tables = NativeTables.initial(50, 4, seed=0)
with open("/proc/self/status") as status:
    size = next(int(line.split()[1]) for line in status if line.startswith("VmSize")) * 1024
stack = resource.getrlimit(resource.RLIMIT_STACK)[0]
resource.setrlimit(resource.RLIMIT_AS, (size + 3 * stack + stack // 2, resource.RLIM_INFINITY))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    pairs = [tables.train(tokens, splits, seed, 0.1, probs, alias, num_threads=64)[1]
             for seed in (0, 1)]
print(json.dumps({"pairs_one": pairs_one, "pairs": pairs, "limit": tables.thread_limit,
                  "warnings": [str(w.message) for w in caught]}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and rlimits")
def test_threads_the_system_cannot_start_are_one_warning_and_the_rest_train_it_all():
    import json
    import resource

    def big_stacks():
        resource.setrlimit(resource.RLIMIT_STACK, (256 << 20, resource.RLIM_INFINITY))

    result = subprocess.run([sys.executable, "-c", _FEW_THREADS], capture_output=True,
                            text=True, timeout=300, preexec_fn=big_stacks)
    assert result.returncode == 0, result.stderr[-2000:]  # was: terminate, SIGABRT
    seen = json.loads(result.stdout)
    assert 1 <= seen["limit"] < 64
    assert seen["pairs"][0] == seen["pairs_one"]  # every block trained
    # One warning, though a loaded machine may start one thread fewer the second time.
    [warning] = seen["warnings"]
    started = int(warning.split()[1])
    assert started >= seen["limit"]
    assert warning == (f"only {started} threads could start (Resource temporarily "
                       f"unavailable); training on with {started}.")
