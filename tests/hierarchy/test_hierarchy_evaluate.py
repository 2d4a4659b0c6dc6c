import math
from pathlib import Path

import numpy as np
import pytest

from keras_gauss.fused import native_available
from keras_gauss.fused import scores as native_scores
from keras_gauss.hierarchy import evaluate, hierarchy_from_parents
from keras_gauss.metrics import average_ranks, threshold_classification
from keras_gauss.hierarchy.evaluate import (
    baroni2012,
    classification,
    edge_scores,
    hyperlex_spearman,
    reconstruction,
    scored_classification,
    word_pair_scores,
)

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def reference_kl(mp, vp, mq, vq):
    """KL(N_p || N_q) from the textbook formula with log-determinants, one pair at a time."""
    d = len(mp)
    return 0.5 * (
        np.sum(vp / vq) + np.sum((mq - mp) ** 2 / vq) - d + np.log(np.prod(vq)) - np.log(np.prod(vp))
    )


def reference_energy(ms, vs, mg, vg, beta):
    """-KL(N_s || N_g) + beta (log det Sigma_g - log det Sigma_s), log dets from full matrices."""
    log_det = lambda v: np.linalg.slogdet(np.diag(v))[1]  # noqa: E731
    return -reference_kl(ms, vs, mg, vg) + beta * (log_det(vg) - log_det(vs))


def random_tables(n, d, rng):
    return rng.normal(size=(n, d)), np.exp(rng.normal(scale=0.5, size=(n, d)))


# --------------------------------------------------------------------------- edge scores


def test_edge_scores_hand_checked():
    means = np.array([[0.0], [1.0], [0.0]])
    variances = np.array([[1.0], [1.0], [4.0]])
    # KL(N(0,1) || N(1,1)) = 0.5; KL(N(0,1) || N(0,4)) = 0.5 (1/4 - 1 + log 4)
    expected = [-0.5, -0.5 * (0.25 - 1 + math.log(4)), 0.0]
    np.testing.assert_allclose(edge_scores(means, variances, [0, 0, 1], [1, 2, 1]), expected, rtol=1e-12)
    np.testing.assert_allclose(edge_scores(means, variances, np.array([[0, 1], [0, 2], [1, 1]])), expected)
    # Asymmetric: the narrow Gaussian inside the broad one scores higher than the reverse.
    assert edge_scores(means, variances, [0], [2])[0] > edge_scores(means, variances, [2], [0])[0]


def test_edge_scores_match_reference_and_chunking():
    rng = np.random.default_rng(0)
    means, variances = random_tables(30, 5, rng)
    spec, gen = rng.integers(0, 30, size=(2, 200))
    expected = [-reference_kl(means[s], variances[s], means[g], variances[g]) for s, g in zip(spec, gen)]
    np.testing.assert_allclose(edge_scores(means, variances, spec, gen), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(
        edge_scores(means, variances, spec, gen, chunk_size=7), edge_scores(means, variances, spec, gen)
    )
    m32, v32 = means.astype(np.float32), variances.astype(np.float32)
    grid = edge_scores(m32, v32, spec.reshape(10, 20), gen.reshape(10, 20))
    assert grid.shape == (10, 20) and grid.dtype == np.float64


def test_generality_term_matches_an_independent_numpy_formula():
    rng = np.random.default_rng(3)
    means, variances = random_tables(20, 4, rng)
    spec, gen = rng.integers(0, 20, size=(2, 100))
    for beta in (0.0, 0.1, 2.0):
        expected = [reference_energy(means[s], variances[s], means[g], variances[g], beta)
                    for s, g in zip(spec, gen)]
        got = edge_scores(means, variances, spec, gen, generality=beta)
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(evaluate.kl_scorer(means, variances, beta)(np.stack([spec, gen], 1)),
                                   expected, rtol=1e-10, atol=1e-12)
    # beta 0 is the KL energy bit for bit; the term is antisymmetric in the pair
    np.testing.assert_array_equal(edge_scores(means, variances, spec, gen, generality=0.0),
                                  edge_scores(means, variances, spec, gen))
    term = (edge_scores(means, variances, spec, gen, generality=1.0)
            - edge_scores(means, variances, spec, gen))
    back = (edge_scores(means, variances, gen, spec, generality=1.0)
            - edge_scores(means, variances, gen, spec))
    np.testing.assert_allclose(term, -back, atol=1e-10)
    # classification picks its threshold on the same scores
    vp, vn, tp, tn = (rng.integers(0, 20, size=(15, 2)) for _ in range(4))
    ref = lambda pairs: np.array([reference_energy(means[s], variances[s], means[g],  # noqa: E731
                                                   variances[g], 0.3) for s, g in pairs])
    result = classification(vp, vn, tp, tn, means, variances, generality=0.3)
    expected = threshold_classification(ref(vp), ref(vn), ref(tp), ref(tn))
    assert result["test_accuracy"] == expected["test_accuracy"]
    assert result["threshold"] == pytest.approx(expected["threshold"], rel=1e-10)


@pytest.mark.parametrize("beta", [-0.1, math.nan, math.inf, "0.1", True])
def test_generality_must_be_finite_and_non_negative(beta):
    means, variances = np.zeros((2, 1)), np.ones((2, 1))
    with pytest.raises(ValueError, match="generality must be a finite number >= 0"):
        edge_scores(means, variances, [0], [1], generality=beta)
    with pytest.raises(ValueError, match="generality"):
        reconstruction(hierarchy_from_parents({"a": ["b"]}), means, variances, generality=beta)


def test_word_benchmarks_pass_the_generality_term_on(tmp_path, monkeypatch):
    h, means, _ = synset_world()
    variances = np.exp(np.random.default_rng(4).normal(size=means.shape))
    pairs = [("dog", "animal"), ("animal", "dog"), ("dog", "person")]
    scores = word_pair_scores(pairs, h, means, variances, lemmas=LEMMAS, generality=0.7).scores
    for (x, y), got in zip(pairs, scores):
        best = max(reference_energy(means[i], variances[i], means[j], variances[j], 0.7)
                   for i in h.ids(LEMMAS[x]) for j in h.ids(LEMMAS[y]))
        assert got == pytest.approx(best, rel=1e-10)
    seen = []
    real = evaluate.word_pair_scores
    monkeypatch.setattr(evaluate, "word_pair_scores",
                        lambda *a, **k: seen.append(k["generality"]) or real(*a, **k))
    (tmp_path / "hl.txt").write_text("dog animal N hyp-1 5.5 9.2 0.4\nanimal dog N r 0.5 0.8 0.3\n")
    (tmp_path / "b.tsv").write_text("dog\tanimal\tTrue\nanimal\tdog\tFalse\n")
    hyperlex_spearman(tmp_path / "hl.txt", h, means, variances, lemmas=LEMMAS, generality=0.7)
    baroni2012(tmp_path / "b.tsv", h, means, variances, lemmas=LEMMAS, generality=0.7)
    assert seen == [0.7, 0.7]


def test_edge_scores_validation():
    means, variances = np.zeros((3, 2)), np.ones((3, 2))
    with pytest.raises(ValueError, match="lie in"):
        edge_scores(means, variances, [3], [0])
    with pytest.raises(ValueError, match="> 0"):
        edge_scores(means, np.zeros((3, 2)), [0], [1])
    with pytest.raises(ValueError, match="same shape"):
        edge_scores(means, variances, [0, 1], [1])
    with pytest.raises(ValueError, match="num_nodes, d"):
        edge_scores(means, np.ones((3, 3)), [0], [1])


# --------------------------------------------------------------------------- classification


def test_classification_with_embeddings():
    # 1-d unit variances: score(s, g) = -(x_s - x_g)^2 / 2.
    x = np.array([0.0, 1.0, 2.0, 4.0])
    means, variances = x[:, None], np.ones((4, 1))
    val_pos, val_neg = np.array([[0, 1], [1, 2]]), np.array([[0, 2], [0, 3]])  # scores -.5 -.5 | -2 -8
    test_pos, test_neg = np.array([[1, 3]]), np.array([[2, 1]])  # scores -4.5 | -0.5
    result = classification(val_pos, val_neg, test_pos, test_neg, means, variances)
    assert result == {"threshold": -1.25, "val_accuracy": 1.0, "test_accuracy": 0.0,
                      # F1: the highest best-F1 threshold on validation, -0.5 (F1 1.0);
                      # the test edge scores below it, the test negative at it.
                      "f1_threshold": -0.5, "val_f1": 1.0, "test_f1": 0.0,
                      "test_precision": 0.0, "test_recall": 0.0, "test_auc": 0.0}


def test_f1_and_auc_against_a_brute_force_count():
    rng = np.random.default_rng(4)
    val_pos, val_neg = rng.normal(1, 1, 30), rng.normal(0, 1, 300)
    test_pos, test_neg = rng.normal(1, 1, 40), rng.normal(0, 1, 400)
    result = scored_classification(val_pos, val_neg, test_pos, test_neg)

    def f1(pos, neg, t):
        tp, fp = (pos >= t).sum(), (neg >= t).sum()
        return 2 * tp / (tp + fp + len(pos))

    candidates = np.r_[val_pos, val_neg]
    best = max(f1(val_pos, val_neg, t) for t in candidates)
    assert result["val_f1"] == pytest.approx(best)
    assert f1(val_pos, val_neg, result["f1_threshold"]) == pytest.approx(best)
    assert result["test_f1"] == pytest.approx(f1(test_pos, test_neg, result["f1_threshold"]))
    pairs = (test_pos[:, None] > test_neg[None, :]) + 0.5 * (test_pos[:, None] == test_neg[None, :])
    assert result["test_auc"] == pytest.approx(pairs.mean())


# --------------------------------------------------------------------------- reconstruction


def test_reconstruction_hand_checked():
    # b is-a a, c is-a b, x is-a a; ids a=0 b=1 c=2 x=3 at positions 0 1 3 2 on a line,
    # unit variances: score(u, v) = -(pos_u - pos_v)^2 / 2.
    h = hierarchy_from_parents({"b": ["a"], "c": ["b"], "x": ["a"]})
    means, variances = np.array([[0.0], [1.0], [3.0], [2.0]]), np.ones((4, 1))
    result = reconstruction(h, means, variances)
    # u=b: a ties with negative x -> rank 1.5, AP 1/2. u=c: x, b, a -> ranks 2, 2; AP (1/2 + 2/3)/2.
    # u=x: b, c tie above a -> rank 3, AP 1/3. The root a has no ancestors.
    assert result["mean_rank"] == pytest.approx((1.5 + 2 + 2 + 3) / 4)
    assert result["map"] == pytest.approx((1 / 2 + 7 / 12 + 1 / 3) / 3)
    assert (result["num_queries"], result["num_pairs"], result["subsampled"]) == (3, 4, False)
    assert result["nodes"].tolist() == [1, 2, 3]
    single = reconstruction(h, means, variances, nodes=["c"])
    assert (single["mean_rank"], single["map"]) == (2.0, pytest.approx(7 / 12))


def test_reconstruction_perfect_embedding():
    h = hierarchy_from_parents({"dog": ["mammal"], "cat": ["mammal"], "mammal": ["animal"], "fish": ["animal"]})
    ids = h.node_ids
    means, variances = np.zeros((5, 2)), np.ones((5, 2))
    for name, mean, var in [
        ("animal", [0, 0], 100.0),
        ("mammal", [2, 0], 10.0),
        ("dog", [3, 3], 1.0),
        ("cat", [3, -3], 1.0),
        ("fish", [-6, 0], 1.0),
    ]:
        means[ids[name]], variances[ids[name]] = mean, var
    result = reconstruction(h, means, variances)
    assert result["mean_rank"] == 1.0 and result["map"] == 1.0


def random_dag(rng, n):
    names = [f"n{i:02d}" for i in range(n)]
    parents = {names[0]: []}
    for i in range(1, n):
        k = rng.integers(1, 3)
        parents[names[i]] = sorted({names[j] for j in rng.integers(0, i, size=k)})
    return hierarchy_from_parents(parents)


def reference_containment(ms, vs, mg, vg):
    """Minus the squared lengths by which the interval [ms - sd_s, ms + sd_s] sticks out of
    [mg - sd_g, mg + sd_g], dimension by dimension, written with interval ends."""
    total = 0.0
    for m1, v1, m2, v2 in zip(ms, vs, mg, vg):
        lo1, hi1, lo2, hi2 = m1 - v1 ** 0.5, m1 + v1 ** 0.5, m2 - v2 ** 0.5, m2 + v2 ** 0.5
        total += max(0.0, lo2 - lo1, hi1 - hi2) ** 2
    return -total


def brute_force_reconstruction(h, means, variances, beta=0.0, energy="kl"):
    ranks, aps = [], []
    for u in range(h.num_nodes):
        ancestors = set(h.index.ancestors(u).tolist())
        if not ancestors:
            continue
        others = [v for v in range(h.num_nodes) if v != u]
        if energy == "containment":
            score = {v: reference_containment(means[u], variances[u], means[v], variances[v])
                     for v in others}
        else:
            score = {v: reference_energy(means[u], variances[u], means[v], variances[v], beta)
                     for v in others}
        negatives = [v for v in others if v not in ancestors]
        for a in ancestors:
            higher = sum(score[v] > score[a] for v in negatives)
            tied = sum(score[v] == score[a] for v in negatives)
            ranks.append(1 + higher + tied / 2)
        precisions = [
            sum(score[b] >= score[a] for b in ancestors) / sum(score[v] >= score[a] for v in others)
            for a in ancestors
        ]
        aps.append(np.mean(precisions))
    return np.mean(ranks), np.mean(aps)


def test_reconstruction_matches_brute_force_with_ties(monkeypatch):
    rng = np.random.default_rng(1)
    h = random_dag(rng, 40)
    # Coarse grid values and repeated rows create many exactly tied scores.
    means = rng.integers(-2, 3, size=(40, 3)).astype(float)
    variances = rng.choice([0.5, 1.0, 2.0], size=(40, 3))
    means[::4], variances[::4] = means[1], variances[1]
    expected_rank, expected_map = brute_force_reconstruction(h, means, variances)
    result = reconstruction(h, means, variances)
    assert result["mean_rank"] == pytest.approx(expected_rank, rel=1e-12)
    assert result["map"] == pytest.approx(expected_map, rel=1e-12)
    # Tiny blocks and work buffers (many query blocks and candidate chunks) change nothing.
    monkeypatch.setattr(evaluate, "_ELEMENTS_PER_CHUNK", 50)
    monkeypatch.setattr(evaluate, "_CACHE_ELEMENTS", 20)
    small = reconstruction(h, means, variances)
    assert (small["mean_rank"], small["map"]) == (result["mean_rank"], result["map"])


def test_reconstruction_with_the_generality_term_matches_brute_force():
    rng = np.random.default_rng(2)
    h = random_dag(rng, 30)
    means, variances = random_tables(30, 3, rng)
    plain = reconstruction(h, means, variances)
    expected_rank, expected_map = brute_force_reconstruction(h, means, variances, beta=0.5)
    result = reconstruction(h, means, variances, generality=0.5)
    assert result["mean_rank"] == pytest.approx(expected_rank, rel=1e-10)
    assert result["map"] == pytest.approx(expected_map, rel=1e-10)
    assert (result["mean_rank"], result["map"]) != (plain["mean_rank"], plain["map"])
    zero = reconstruction(h, means, variances, generality=0.0)
    assert (zero["mean_rank"], zero["map"]) == (plain["mean_rank"], plain["map"])


def test_containment_energy_is_how_far_the_one_sigma_intervals_stick_out():
    rng = np.random.default_rng(6)
    means, variances = random_tables(20, 3, rng)
    pairs = rng.integers(0, 20, size=(50, 2))
    want = [reference_containment(means[s], variances[s], means[g], variances[g])
            for s, g in pairs]
    got = edge_scores(means, variances, pairs, energy="containment")
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # Nested boxes score 0, and so do the pairs nesting implies (transitivity).
    means, variances = np.zeros((3, 2)), np.array([[4.0, 4.0], [1.0, 1.0], [0.25, 0.25]])
    means[2] = [0.4, -0.4]
    assert (edge_scores(means, variances, [[1, 0], [2, 1], [2, 0]], energy="containment") == 0).all()
    assert (edge_scores(means, variances, [[0, 1], [1, 2]], energy="containment") < 0).all()
    with pytest.raises(ValueError, match="--energy"):
        edge_scores(means, variances, [[0, 1]], energy="el")
    with pytest.raises(ValueError, match="--generality applies to --energy kl only"):
        edge_scores(means, variances, [[0, 1]], energy="containment", generality=0.1)


def test_reconstruction_with_containment_matches_brute_force(monkeypatch):
    rng = np.random.default_rng(3)
    h = random_dag(rng, 30)
    means = rng.integers(-2, 3, size=(30, 2)).astype(float)  # ties: many pairs nested exactly
    variances = rng.choice([0.25, 1.0, 4.0], size=(30, 2))
    expected_rank, expected_map = brute_force_reconstruction(h, means, variances,
                                                             energy="containment")
    result = reconstruction(h, means, variances, energy="containment")
    assert result["mean_rank"] == pytest.approx(expected_rank, rel=1e-12)
    assert result["map"] == pytest.approx(expected_map, rel=1e-12)
    monkeypatch.setattr(evaluate, "_ELEMENTS_PER_CHUNK", 50)
    monkeypatch.setattr(evaluate, "_CACHE_ELEMENTS", 20)
    small = reconstruction(h, means, variances, energy="containment")
    assert (small["mean_rank"], small["map"]) == (result["mean_rank"], result["map"])


def test_reconstruction_all_tied():
    h = hierarchy_from_parents({"b": ["a"], "c": ["b"], "d": ["a"], "e": ["d"]})
    means, variances = np.full((5, 3), 0.3), np.full((5, 3), 2.0)
    result = reconstruction(h, means, variances)
    # Every candidate ties: rank = 1 + #negatives / 2, AP = |A(u)| / 4.
    # Ancestors: b {a}, c {a, b}, d {a}, e {a, d}.
    assert result["mean_rank"] == pytest.approx((2.5 + 2 * 2.0 + 2.5 + 2 * 2.0) / 6)
    assert result["map"] == pytest.approx((1 + 2 + 1 + 2) / 4 / 4)


def test_reconstruction_subsample():
    rng = np.random.default_rng(2)
    h = random_dag(rng, 60)
    means, variances = random_tables(60, 4, rng)
    a = reconstruction(h, means, variances, max_nodes=10, seed=3)
    b = reconstruction(h, means, variances, max_nodes=10, seed=3)
    c = reconstruction(h, means, variances, max_nodes=10, seed=4)
    assert a["subsampled"] and a["num_queries"] == 10
    assert np.array_equal(a["nodes"], b["nodes"]) and a["map"] == b["map"]
    assert not np.array_equal(a["nodes"], c["nodes"])
    again = reconstruction(h, means, variances, nodes=a["nodes"])
    assert not again["subsampled"] and again["map"] == a["map"] and again["mean_rank"] == a["mean_rank"]
    full = reconstruction(h, means, variances, max_nodes=1000)
    assert not full["subsampled"] and full["num_queries"] == 59


def test_reconstruction_mammal_is_fast(mammal):
    import time

    rng = np.random.default_rng(0)
    means, variances = random_tables(mammal.num_nodes, 50, rng)
    start = time.perf_counter()
    result = reconstruction(mammal, means, variances)
    elapsed = time.perf_counter() - start
    assert result["num_queries"] == mammal.num_nodes - 1
    assert result["num_pairs"] == len(mammal.edges)
    # Random embeddings: ancestors land mid-list, MAP near the base rate.
    assert 0.3 * mammal.num_nodes < result["mean_rank"] < 0.7 * mammal.num_nodes
    assert result["map"] < 0.1
    assert elapsed < 5.0  # about 0.3 s; generous for busy CI machines


# --------------------------------------------------------------------------- word-level benchmarks

SYNSET_PARENTS = {
    "dog.n.01": ["canine.n.01"],
    "canine.n.01": ["animal.n.01"],
    "dog.n.02": ["person.n.01"],
    "person.n.01": ["organism.n.01"],
    "animal.n.01": ["organism.n.01"],
}
LEMMAS = {
    "dog": ["dog.n.01", "dog.n.02"],
    "canine": ["canine.n.01"],
    "animal": ["animal.n.01"],
    "person": ["person.n.01"],
    "organism": ["organism.n.01"],
    "hot_dog": ["dog.n.02"],
    "unicorn": ["unicorn.n.01"],  # a synset that is not in the hierarchy
}
POSITIONS = {
    "animal.n.01": 0.0,
    "canine.n.01": 1.0,
    "dog.n.01": 3.0,
    "dog.n.02": 7.0,
    "organism.n.01": 5.0,
    "person.n.01": 6.0,
}


def synset_world():
    h = hierarchy_from_parents(SYNSET_PARENTS)
    means = np.array([[POSITIONS[name]] for name in h.nodes])
    return h, means, np.ones_like(means)


def score(x, y):  # unit variance, 1-d
    return -0.5 * (POSITIONS[x] - POSITIONS[y]) ** 2


def test_word_pair_scores_best_synset_pair():
    h, means, variances = synset_world()
    pairs = [("dog", "animal"), ("Dog", "person"), ("dog", "qwzx"), ("unicorn", "animal"), ("hot dog", "organism")]
    scores, covered = word_pair_scores(pairs, h, means, variances, lemmas=LEMMAS)
    assert covered.tolist() == [True, True, False, False, True]
    expected = [
        max(score("dog.n.01", "animal.n.01"), score("dog.n.02", "animal.n.01")),  # -4.5
        max(score("dog.n.01", "person.n.01"), score("dog.n.02", "person.n.01")),  # -0.5
        np.nan,
        np.nan,
        score("dog.n.02", "organism.n.01"),
    ]
    np.testing.assert_allclose(scores, expected)
    mean_scores, _ = word_pair_scores(pairs[:1], h, means, variances, "mean", lemmas=LEMMAS)
    assert mean_scores[0] == pytest.approx((score("dog.n.01", "animal.n.01") + score("dog.n.02", "animal.n.01")) / 2)
    empty = word_pair_scores([], h, means, variances, lemmas=LEMMAS)
    assert empty.scores.shape == empty.covered.shape == (0,)
    with pytest.raises(ValueError, match="reduce"):
        word_pair_scores(pairs, h, means, variances, "min", lemmas=LEMMAS)


def test_word_pair_scores_with_lemma_nodes():
    synsets = sorted(set(SYNSET_PARENTS) | {p for ps in SYNSET_PARENTS.values() for p in ps})
    words = {"dog": ["dog.n.01", "dog.n.02"], "animal": ["animal.n.01"], "person": ["person.n.01"],
             "pup": ["dog.n.01"]}  # 'pup': a word node without synsets in LEMMAS
    h = hierarchy_from_parents(
        {**SYNSET_PARENTS, **words}, nodes=synsets + sorted(words), num_synsets=len(synsets)
    )
    positions = {**POSITIONS, "animal": 0.5, "dog": 2.0, "person": 10.0, "pup": 2.5}
    means = np.array([[positions[name]] for name in h.nodes])
    variances = np.ones_like(means)
    pairs = [("dog", "animal"), ("dog", "organism"), ("dog", "pup")]  # 'organism': no word node
    auto = word_pair_scores(pairs, h, means, variances, lemmas=LEMMAS)
    assert auto.covered.tolist() == [True, True, True]
    # word1 by its word node, word2 by its synsets (a word node is a leaf below them)
    assert auto.scores[0] == pytest.approx(-0.5 * 2.0**2)  # word node dog -> synset animal.n.01
    assert auto.scores[1] == pytest.approx(-0.5 * 3.0**2)  # word node dog -> synset organism.n.01
    assert auto.scores[2] == pytest.approx(-0.5 * 0.5**2)  # no synset: word node dog -> pup
    word = word_pair_scores(pairs, h, means, variances, mode="word", lemmas=LEMMAS)
    assert word.covered.tolist() == [True, False, True]
    assert word.scores[0] == pytest.approx(-0.5 * 1.5**2)  # word nodes dog -> animal
    synset = word_pair_scores(pairs, h, means, variances, mode="synset", lemmas=LEMMAS)
    assert synset.scores[0] == pytest.approx(-4.5)  # best synset pair, as without lemma nodes


def test_hyperlex_and_baroni_on_small_files(tmp_path):
    h, means, variances = synset_world()
    hyperlex = tmp_path / "hl.txt"
    hyperlex.write_text(
        "WORD1 WORD2 POS TYPE AVG_SCORE AVG_SCORE_0_10 STD SCORES..\n"
        "dog canine N hyp-1 5.5 9.2 0.5 5 6\n"  # -2
        "dog animal N hyp-2 5.0 8.3 0.5 5 5\n"  # -4.5
        "dog person N hyp-1 3.0 5.0 0.5 3 3\n"  # -0.5
        "animal dog N r-hyp-2 0.5 0.8 0.5 0 1\n"  # -4.5
        "dog zzz N no-rel 0.0 0.0 0.0 0 0\n"  # not covered
    )
    result = hyperlex_spearman(hyperlex, h, means, variances, lemmas=LEMMAS, generality=0.0,
                               sense_prior=0.0)
    scipy_stats = pytest.importorskip("scipy.stats")
    expected = scipy_stats.spearmanr([-2, -4.5, -0.5, -4.5], [5.5, 5.0, 3.0, 0.5]).statistic
    assert result["spearman"] == pytest.approx(expected)
    assert (result["coverage"], result["n_pairs"], result["n_covered"]) == (0.8, 5, 4)

    baroni = tmp_path / "b.tsv"
    baroni.write_text(
        "dog\tperson\tTrue\thyper\n"  # -0.5
        "dog\tcanine\tTrue\thyper\n"  # -2
        "animal\tdog\tFalse\trandom\n"  # -4.5
        "dog\tanimal\tTrue\thyper\n"  # -4.5
        "qq\tdog\tFalse\trandom\n"  # not covered
    )
    result = baroni2012(baroni, h, means, variances, lemmas=LEMMAS)
    # Ranking: T, T, {F, T} tied -> AP = (1 + 1 + 3/4) / 3; best F1 at -4.5: 2*3 / (4 + 3).
    assert result["ap"] == pytest.approx(2.75 / 3)
    assert result["best_f1"] == pytest.approx(6 / 7) and result["f1_threshold"] == -4.5
    assert (result["coverage"], result["n_covered"], result["positive_rate"]) == (0.8, 4, 0.75)


def test_sense_prior_weighs_a_words_synsets_by_wordnets_counts():
    from keras_gauss.hierarchy.wordnet import read_sense_counts

    counts = read_sense_counts()  # index.sense: "dog%1:05:00:: 02084071 1 42"
    assert counts["dog", "dog.n.01"] == 42 and counts["dog", "frump.n.01"] == 0
    h, means, variances = synset_world()  # "dog": dog.n.01 (42 tags), dog.n.02 (none here)
    pairs = [("dog", "person"), ("person", "organism")]
    plain = word_pair_scores(pairs, h, means, variances, lemmas=LEMMAS).scores
    assert plain.tolist() == [-0.5, -0.5]  # dog.n.02 -> person.n.01
    for prior, expected in ((0.1, -0.5 + 0.1 * math.log(1 / 44)),  # still dog.n.02
                            (2.0, -4.5 + 2.0 * math.log(43 / 44))):  # the common sense
        got = word_pair_scores(pairs, h, means, variances, lemmas=LEMMAS, sense_prior=prior)
        assert got.scores == pytest.approx([expected, -0.5], rel=1e-12)  # one sense: no prior
    for prior in (-1.0, math.nan):
        with pytest.raises(ValueError, match="sense_prior must be a finite number >= 0"):
            word_pair_scores(pairs, h, means, variances, lemmas=LEMMAS, sense_prior=prior)


def test_hyperlex_scores_kl_with_its_chosen_settings_unless_given(tmp_path, monkeypatch):
    h, means, variances = synset_world()
    (tmp_path / "hl.txt").write_text("dog animal N hyp-1 5.5 9.2 0.4\nanimal dog N r 0.5 0.8 0.3\n")
    seen = []
    real = evaluate.word_pair_scores
    monkeypatch.setattr(evaluate, "word_pair_scores", lambda *a, **k: seen.append(
        (k.get("generality", 0.0), k.get("sense_prior", 0.0))) or real(*a, **k))
    for scoring in ({}, {"energy": "kl"}, {"energy": "containment"}, {"sense_prior": 1.0}):
        hyperlex_spearman(tmp_path / "hl.txt", h, means, variances, lemmas=LEMMAS, **scoring)
    assert seen == [(0.75, 4.0), (0.75, 4.0), (0.0, 0.0), (0.75, 1.0)]


def test_spearman_is_pearson_on_average_ranks():
    x = np.array([1.0, 2.0, 2.0, 5.0, 3.0])
    y = np.array([2.0, 1.0, 4.0, 4.0, 9.0])
    rho, p = evaluate._spearman(x, y)
    expected = np.corrcoef(average_ranks(x), average_ranks(y))[0, 1]  # ties share their rank
    assert rho == pytest.approx(expected) and 0 < p < 1
    assert all(math.isnan(v) for v in evaluate._spearman(x, np.full(5, 3.0)))


@pytest.mark.skipif(not DATA.is_dir(), reason="shared data directory not available")
def test_real_benchmarks_against_wordnet(full):
    rng = np.random.default_rng(0)
    means, variances = random_tables(full.num_nodes, 4, rng)
    hyperlex = hyperlex_spearman(DATA / "hyperlex" / "hyperlex-nouns.txt", full, means, variances)
    assert hyperlex["n_pairs"] == 2163 and hyperlex["coverage"] > 0.99
    assert abs(hyperlex["spearman"]) < 0.15  # random embeddings
    baroni = baroni2012(DATA / "entailment" / "baroni2012.tsv", full, means, variances)
    assert baroni["n_pairs"] == 2770 and baroni["coverage"] > 0.99
    assert 0.35 < baroni["ap"] < 0.65


def test_baselines_and_split_classification():
    from keras_gauss.hierarchy import split_edges
    from keras_gauss.hierarchy.closure import EdgeIndex

    # chain 3 -> 2 -> 1 -> 0: depth = number of known ancestors
    chain = EdgeIndex(np.array([[1, 0], [2, 0], [2, 1], [3, 0], [3, 1], [3, 2]]), 4)
    pairs = np.array([[3, 1], [1, 3], [2, 2]])
    assert evaluate.lookup_scorer(chain)(pairs).tolist() == [1.0, 0.0, 0.0]
    assert evaluate.depth_scorer(chain)(pairs).tolist() == [2.0, -2.0, 0.0]
    # Each kind's threshold comes from its own validation part.
    h = hierarchy_from_parents({f"n{c}": [f"n{c // 2}"] for c in range(2, 64)})
    split = split_edges(h, method="reduction", seed=0)
    parts = split.parts()
    depth = evaluate.split_classification(parts, evaluate.depth_scorer(split.train_index))
    assert set(depth) == {"random", "reversed", "sibling"}
    for kind, suffix in (("random", ""), ("reversed", "_reversed")):
        (vp, vn), (tp, tn) = parts[f"val{suffix}"], parts[f"test{suffix}"]
        score = evaluate.depth_scorer(split.train_index)
        expected = threshold_classification(score(vp), score(vn), score(tp), score(tn))
        assert depth[kind]["threshold"] == expected["threshold"]
        assert depth[kind]["test_size"] == len(tp) + len(tn)
    # The lookup knows no reduction edge it was not given: chance on every kind.
    lookup = evaluate.split_classification(parts, evaluate.lookup_scorer(split.train_index))
    assert {r["test_accuracy"] for r in lookup.values()} == {0.5}


def test_hyperlex_with_equal_human_scores_is_undefined_and_says_why(tmp_path):
    import warnings

    import numpy as np

    from keras_gauss.hierarchy.evaluate import hyperlex_spearman
    from keras_gauss.hierarchy.synthetic import synthetic_hierarchy

    h = synthetic_hierarchy()
    means = np.random.default_rng(0).normal(size=(h.num_nodes, 2))
    lemmas = {"dog": ["dog"], "animal": ["animal"], "cat": ["cat"]}
    (tmp_path / "hl.txt").write_text("dog animal N hyp-1 3.0 5 0.4\ncat animal N hyp-1 3.0 5 0.3\n"
                                     "cat dog N cohyp 3.0 5 0.5\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ConstantInputWarning line
        result = hyperlex_spearman(tmp_path / "hl.txt", h, means, np.ones_like(means),
                                   lemmas=lemmas)
    assert result["spearman"] != result["spearman"]  # nan
    assert result["undefined"] == ("the human scores of the 3 covered pairs are all equal (3): "
                                   "nothing to rank")


# --------------------------------------------------------------------------- native score blocks

native = pytest.mark.skipif(not native_available(), reason="no C++ compiler")


def tied_tables(rng, n, d, spherical=False, scale=0.37, choices=(0.3, 1.0, 2.5)):
    """Coarse random tables with repeated rows (exact ties)."""
    means = rng.integers(-3, 4, size=(n, d)) * scale
    variances = rng.choice(choices, size=(n, 1 if spherical else d))
    means[::5], variances[::5] = means[3], variances[3]
    return means, np.broadcast_to(variances, (n, d)).astype(float)


def numpy_block(means, variances, q, energy):
    mu, var = means.astype(np.float64), variances.astype(np.float64)
    d = mu.shape[1]
    buffer = np.empty((7, 50, d))
    if energy == "containment":
        return evaluate._containment_block(mu, np.sqrt(var), q, 7, 50, buffer)
    return evaluate._kl_block(mu, var, 1.0 / var, np.log(var).sum(axis=1), q, 7, 50, buffer)


@native
@pytest.mark.parametrize("energy", ["containment", "kl"])
@pytest.mark.parametrize("spherical", [False, True])
def test_native_block_matches_the_numpy_block_and_keeps_ties(energy, spherical):
    rng = np.random.default_rng(11)
    n, d = 600, 5  # more nodes than one candidate tile, more queries than one row block
    means, variances = tied_tables(rng, n, d, spherical)
    q = np.sort(rng.choice(n, size=70, replace=False))
    want = numpy_block(means, variances, q, energy)
    got = native_scores.energy_block(means, variances, q, energy)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # Identical candidates score identically (columns), and so do identical queries (rows).
    same = np.arange(0, n, 5)
    assert (got[:, same] == got[:, [3]]).all()
    dup = np.isin(q, np.r_[same, 3])
    assert dup.sum() > 1 and (got[dup] == got[dup][:1]).all()
    # The thread count changes nothing.
    for threads in (1, 3):
        again = native_scores.energy_block(means, variances, q, energy, threads=threads)
        assert np.array_equal(again, got)


@native
def test_native_ancestor_counts_match_numpy():
    rng = np.random.default_rng(12)
    scores = rng.integers(0, 6, size=(9, 40)).astype(float)
    scores[np.arange(9), rng.integers(0, 40, size=9)] = -np.inf
    row = rng.integers(0, 9, size=30)
    ids = rng.integers(0, 40, size=30)
    gt, ge = native_scores.ancestor_counts(scores, row, ids)
    s = scores[row, ids][:, None]
    assert np.array_equal(gt, (scores[row] > s).sum(axis=1))
    assert np.array_equal(ge, (scores[row] >= s).sum(axis=1))


@native
@pytest.mark.parametrize("energy, beta", [("kl", 0.0), ("kl", 0.7), ("containment", 0.0)])
def test_reconstruction_is_the_same_with_and_without_the_native_library(monkeypatch, energy,
                                                                         beta):
    rng = np.random.default_rng(13)
    h = random_dag(rng, 60)
    # Exactly representable values: distinct nodes also tie exactly, whatever the summation order.
    means, variances = tied_tables(rng, 60, 4, scale=1.0, choices=(0.25, 1.0, 4.0))
    fallback = dict(energy=energy, generality=beta)

    def numpy_only(*args):
        raise AssertionError("the NumPy block ran with the native library available")

    with monkeypatch.context() as patch:  # the native path runs: the NumPy blocks are not called
        patch.setattr(evaluate, "_containment_block", numpy_only)
        patch.setattr(evaluate, "_kl_block", numpy_only)
        fast = reconstruction(h, means, variances, **fallback)
    slow = reconstruction(h, means, variances, native_scores=False, **fallback)
    monkeypatch.setattr(evaluate, "native_available", lambda: False)
    forced = reconstruction(h, means, variances, **fallback)
    assert (fast["mean_rank"], fast["map"]) == (slow["mean_rank"], slow["map"])
    assert (forced["mean_rank"], forced["map"]) == (slow["mean_rank"], slow["map"])
    assert fast["num_pairs"] == slow["num_pairs"] > 0
    expected_rank, expected_map = brute_force_reconstruction(h, means, variances, beta, energy)
    assert fast["mean_rank"] == pytest.approx(expected_rank, rel=1e-12)
    assert fast["map"] == pytest.approx(expected_map, rel=1e-12)
    # Continuous values with repeated rows: only the repeats tie, in both.
    means, variances = random_tables(60, 4, rng)
    means[::5], variances[::5] = means[3], variances[3]
    monkeypatch.undo()
    fast = reconstruction(h, means, variances, **fallback)
    slow = reconstruction(h, means, variances, native_scores=False, **fallback)
    assert (fast["mean_rank"], fast["map"]) == (slow["mean_rank"], slow["map"])


@pytest.mark.parametrize("energy, beta", [("kl", 0.0), ("kl", 0.7), ("containment", 0.0)])
def test_the_jax_scores_are_the_numpy_scores(monkeypatch, energy, beta):
    # The device path (JAX, here on the CPU) runs the energy's own formula in
    # float64: the same pair energies to rounding, the same reconstruction
    # metrics exactly where identical rows tie, and the same one line on a
    # non-finite score. (Distinct KL rows that tie only in exact arithmetic, as
    # tied_tables makes them, may break the tie otherwise: the formula sums
    # logs per dimension, the blocks log determinants.)
    pytest.importorskip("jax")
    from keras_gauss.hierarchy import device_scores

    # blocks of 8 queries, 64 pairs
    monkeypatch.setattr(device_scores, "DEVICE_ELEMENTS", 60 * 8)
    rng = np.random.default_rng(14)
    h = random_dag(rng, 60)
    options = dict(energy=energy, generality=beta)
    means, variances = random_tables(60, 4, rng)
    pairs = rng.integers(0, 60, size=(3, 50, 2))
    want = edge_scores(means, variances, pairs[..., 0], pairs[..., 1], backend="numpy", **options)
    got = edge_scores(means, variances, pairs[..., 0], pairs[..., 1], backend="jax", **options)
    assert got.shape == (3, 50) and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    means[::5], variances[::5] = means[3], variances[3]  # repeated rows: exact ties
    tied = tied_tables(rng, 60, 4, scale=1.0, choices=(0.25, 1.0, 4.0))
    for tables in ((means, variances), *([tied] if energy == "containment" else [])):
        slow = reconstruction(h, *tables, backend="numpy", **options)
        fast = reconstruction(h, *tables, backend="jax", **options)
        assert fast["num_pairs"] == slow["num_pairs"] > 0
        assert (fast["mean_rank"], fast["map"]) == (slow["mean_rank"], slow["map"])
    means[7, 0] = 1e300  # the squared distance overflows
    with pytest.raises(ValueError, match="non-finite KL scores"):
        reconstruction(h, means, variances, backend="jax", **options)


def test_the_scores_run_on_the_gpu_when_there_is_one(monkeypatch):
    from keras_gauss import job
    from keras_gauss.hierarchy.device_scores import score_backend

    monkeypatch.delenv("KERAS_GAUSS_SCORES", raising=False)
    assert score_backend(native=False) == "numpy"  # this machine: no GPU
    assert score_backend("numpy") == "numpy"
    monkeypatch.setenv("KERAS_GAUSS_SCORES", "jax")
    assert score_backend() == "jax"
    monkeypatch.setenv("KERAS_GAUSS_SCORES", "tpu")
    with pytest.raises(ValueError, match="^KERAS_GAUSS_SCORES must be one of jax, native, "
                                         "numpy, got 'tpu'.$"):
        score_backend()
    monkeypatch.delenv("KERAS_GAUSS_SCORES")
    monkeypatch.setattr(job, "jax_gpu", lambda: "Fake GPU")
    assert score_backend() == score_backend(native=False) == "jax"
    # a GPU: neither the NumPy nor the C++ blocks score the reconstruction
    seen = []

    class Device:
        def __init__(self, *args):
            seen.append(args[2:])

        def block_rows(self):
            return 8

        def rank_counts(self, q, row, columns):
            raise RuntimeError("on the device")

    def cpu_only(*args, **kwargs):
        raise AssertionError("a CPU block ran on a GPU")

    monkeypatch.setattr(evaluate, "JaxScores", Device)
    for name in ("_kl_block", "_containment_block"):
        monkeypatch.setattr(evaluate, name, cpu_only)
    monkeypatch.setattr(evaluate._native_scores, "energy_block", cpu_only)
    h = random_dag(np.random.default_rng(15), 20)
    with pytest.raises(RuntimeError, match="on the device"):
        reconstruction(h, np.zeros((20, 2)), np.ones((20, 2)), energy="containment")
    assert seen == [("containment", 0.0)]
