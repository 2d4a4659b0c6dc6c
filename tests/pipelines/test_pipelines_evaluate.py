"""Evaluation: similarity with coverage, entailment direction, neighbours by variance."""

import math
import os

import numpy as np
import pytest

from keras_gauss.pipelines.evaluate import Embeddings
from keras_gauss.pipelines.evaluate import entailment
from keras_gauss.pipelines.evaluate import evaluate
from keras_gauss.pipelines.evaluate import format_table
from keras_gauss.pipelines.evaluate import graded_entailment
from keras_gauss.pipelines.evaluate import neighbors
from keras_gauss.pipelines.evaluate import read_similarity
from keras_gauss.pipelines.evaluate import similarity
from keras_gauss.pipelines.evaluate import specificity
from cli_errors import cli_error


def _angles(words, angles, variances=None):
    means = np.stack([np.cos(angles), np.sin(angles)], 1)
    if variances is None:
        variances = np.ones_like(means)
    return Embeddings(words, means, variances)


@pytest.fixture
def emb():
    # "a" at angle 0; the others further and further away.
    return _angles(["a", "b", "c", "d", "e"], np.array([0.0, 0.2, 0.6, 1.2, 2.5]),
                   np.array([[1.0, 1.0], [3.0, 3.0], [0.2, 0.2], [2.0, 2.0], [0.5, 0.5]]))


def test_similarity_spearman_and_coverage(tmp_path, emb):
    path = tmp_path / "sim.tsv"
    path.write_text("# comment\nA\tb\t9\na\tc\t7\n\na\td\t3\na\tzebra\t5\na\te\t1\n")
    result = similarity(emb, path)
    assert result["spearman_m"] == pytest.approx(1.0)
    assert result["n_pairs"] == 5 and result["n_covered"] == 4
    assert result["coverage"] == pytest.approx(0.8)
    assert -1 <= result["spearman_d"] <= 1


def test_unknown_words_are_named(tmp_path, emb):
    # Pairs with unknown words were counted (coverage 2/10) but the words
    # never named: a case or spelling mismatch had to be guessed.
    from keras_gauss.pipelines.evaluate import unknown_notes

    path = tmp_path / "sim.tsv"
    path.write_text("a\tb\t9\na\tZebra\t5\nyak\tb\t1\nzebra\tc\t2\na\tc\t4\n"
                    + "".join(f"w{i}\ta\t1\n" for i in range(5)))
    ent = tmp_path / "ent.tsv"
    ent.write_text("b\ta\tTrue\nc\tgnu\tFalse\n")
    results = evaluate(emb, [path], [ent])
    assert results["similarity"]["sim"]["unknown"] == ["zebra", "yak", "w0", "w1", "w2", "w3",
                                                      "w4"]
    assert unknown_notes(results) == [
        "sim: 8 of 10 pairs skipped, 7 words not in the vocabulary: 'zebra', 'yak', 'w0', "
        "'w1', 'w2' and 2 more.",
        "ent: 1 of 2 pairs skipped, 1 word not in the vocabulary: 'gnu'."]
    path.write_text("a\tb\t9\na\tc\t4\n")
    assert similarity(emb, path)["unknown"] == [] and unknown_notes(evaluate(emb, [path])) == []


def test_similarity_all_unknown_is_nan_not_error(tmp_path, emb):
    path = tmp_path / "sim.tsv"
    path.write_text("x\ty\t1\nu\tv\t2\n")
    result = similarity(emb, path)
    assert result["coverage"] == 0 and math.isnan(result["spearman_m"])


def test_malformed_similarity_line_names_file_and_line(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("# header\na\tb\t1\na\tb\n")
    with pytest.raises(ValueError, match=r"bad\.tsv, line 3"):
        read_similarity(path)
    path.write_text("a\tb\thigh\n")
    with pytest.raises(ValueError, match="line 1.*score"):
        read_similarity(path)


def test_similarity_files_may_be_comma_separated(tmp_path):
    # "cat,dog,7.5" was "expected word1<TAB>word2<TAB>score": CSV files
    # (wordsim353.csv) had to be converted first.
    path = tmp_path / "sim.csv"
    path.write_text('# word1,word2,score\nCat,dog,7.5\n"ice cream", cone ,6\n')
    assert read_similarity(path) == [("cat", "dog", 7.5), ("ice cream", "cone", 6.0)]
    path.write_text("cat,dog\n")
    with pytest.raises(ValueError, match=r"sim\.csv, line 1: expected word1, word2 and score "
                                         "separated by tabs, else commas, else spaces"):
        read_similarity(path)


def test_a_leading_bom_is_no_part_of_the_first_word(tmp_path):
    # before: the first pair of a file saved with a BOM (Excel, Notepad) was skipped
    # as unknown, '\ufeffcat', and the score left it out
    from keras_gauss.hierarchy.benchmark_data import read_entailment

    path = tmp_path / "sim.tsv"
    path.write_bytes("\ufeffcat\tdog\t7.5\r\ncat\tcar\t1.2\r\n".encode())
    assert read_similarity(path) == [("cat", "dog", 7.5), ("cat", "car", 1.2)]
    path.write_bytes("\ufeffcat\tanimal\tTrue\r\n".encode())
    assert read_entailment(path) == [("cat", "animal", True)]


def test_a_header_line_without_hash_says_how_to_mark_it(tmp_path):
    # "word1 word2 score" as the first line was "score (column 3) is not a
    # finite number: 'score'", with no word of how to keep such a line.
    from keras_gauss.hierarchy.benchmark_data import read_entailment

    path = tmp_path / "h.tsv"
    path.write_text("word1\tword2\tscore\na\tb\t1\n")
    with pytest.raises(ValueError, match="line 1: score .*'score'; a header line starts "
                                         "with '#'$"):
        read_similarity(path)
    path.write_text("word1\tword2\tentails\na\tb\tTrue\n")
    with pytest.raises(ValueError, match="line 1: label .*'entails'; a header line starts "
                                         "with '#'$"):
        read_entailment(path)
    path.write_text("a\tb\t1\nc\td\thigh\n")  # past the first pair: no such hint
    with pytest.raises(ValueError, match="line 2: .*'high'$"):
        read_similarity(path)


def test_entailment_direction(tmp_path):
    # broad "animal" contains narrow "dog" and "cat"; "rock" is elsewhere.
    emb = Embeddings(["animal", "dog", "cat", "rock"],
                     [[0.0, 0.0], [0.3, 0.0], [0.0, 0.3], [3.0, 3.0]],
                     [[4.0, 4.0], [0.2, 0.2], [0.2, 0.2], [0.2, 0.2]])
    path = tmp_path / "ent.tsv"
    path.write_text("dog\tanimal\tTrue\thyper\ncat\tanimal\tTrue\thyper\n"
                    "animal\tdog\tFalse\trev\nanimal\tcat\tFalse\trev\n"
                    "dog\tunicorn\tTrue\thyper\n")
    result = entailment(emb, path)
    assert result["kl_ap"] == pytest.approx(1.0)
    assert result["kl_f1"] == pytest.approx(1.0)
    assert result["cos_ap"] == pytest.approx(0.5)  # symmetric: ties everywhere
    assert result["n_covered"] == 4 and result["coverage"] == pytest.approx(0.8)
    path.write_text("dog\tanimal\tmaybe\n")
    with pytest.raises(ValueError, match="line 1"):
        entailment(emb, path)


def test_words_with_capitals_are_found(tmp_path):
    """A taxonomy's own node names keep their capitals (`Animal`); the files'
    words are read lowercased and still find them, unless two nodes differ
    only in case (`Rock`, `ROCK`: neither is guessed)."""
    emb = Embeddings(["Animal", "Dog", "cat", "Rock", "ROCK"],
                     [[0.0, 0.0], [0.3, 0.0], [0.0, 0.3], [3.0, 3.0], [3.0, 3.0]],
                     [[4.0, 4.0], [0.2, 0.2], [0.2, 0.2], [0.2, 0.2], [0.2, 0.2]])
    path = tmp_path / "ent.tsv"
    path.write_text("Dog\tAnimal\tTrue\ncat\tanimal\tTrue\nanimal\tdog\tFalse\n"
                    "rock\tanimal\tFalse\n")
    result = entailment(emb, path)
    assert result["n_covered"] == 3 and result["kl_ap"] == pytest.approx(1.0)
    assert emb.vector("DOG")[0].tolist() == [0.3, 0.0]
    with pytest.raises(KeyError, match="'rock'"):
        emb.id("rock")


def test_neighbors_by_similarity_and_variance(emb):
    by_sim = neighbors(emb, "a", k=3)
    assert [w for w, _, _ in by_sim] == ["b", "c", "d"]
    by_var = neighbors(emb, "A", k=3, by="variance")
    assert [w for w, _, _ in by_var] == ["b", "d", "c"]
    dets = [d for _, _, d in by_var]
    assert dets == sorted(dets, reverse=True)
    with pytest.raises(KeyError, match="zebra"):
        neighbors(emb, "zebra")
    with pytest.raises(ValueError):
        neighbors(emb, "a", by="size")


def test_specificity_spreads_over_the_variance_order(emb):
    rows = specificity(emb, "a", k=4, show=2)
    assert [w for w, _ in rows] == ["b", "c"]  # broadest and narrowest of b, c, d, e


def test_evaluate_names_rows_after_files(tmp_path, emb):
    sim = tmp_path / "mysim.tsv"
    sim.write_text("a\tb\t9\na\tc\t7\na\td\t3\n")
    ent = tmp_path / "myent.tsv"
    ent.write_text("b\ta\tTrue\nc\td\tFalse\n")
    results = evaluate(emb, [sim], [ent])
    assert list(results["similarity"]) == ["mysim"]
    assert list(results["entailment"]) == ["myent"]
    table = format_table(results)
    assert "mysim" in table and "myent" in table and "3/3" in table


def test_embeddings_from_run_directory(tmp_path):
    import json

    from keras_gauss.run_format import write_run_info
    from keras_gauss.pipelines.model import build_corpus_model

    model = build_corpus_model(3, dim=4)
    model.save(tmp_path / "model.keras")
    (tmp_path / "vocab.tsv").write_text("x\t5\ny\t3\nz\t1\n")
    write_run_info(tmp_path, kind="corpus", energy="el", table="words", vocabulary="vocab.tsv")
    emb = Embeddings.from_run(tmp_path)
    assert emb.words == ["x", "y", "z"] and emb.means.shape == (3, 4)
    np.testing.assert_allclose(emb.means, model.get_layer("words").means.numpy(), rtol=1e-6)
    assert json.loads((tmp_path / "run.json").read_text())["table"] == "words"


def _kl(m0, v0, m1, v1):
    """KL(N0 || N1) of diagonal Gaussians, written out."""
    return 0.5 * np.sum(v0 / v1 + (m1 - m0) ** 2 / v1 - 1.0 + np.log(v1 / v0))


def test_wordnet_senses_score_the_best_synset_pair(tmp_path):
    from keras_gauss.pipelines.evaluate import wordnet_senses

    nodes = ["animal.n.01", "dog.n.01", "frump.n.01", "cat.n.01", "puppy"]
    lemmas = {"animal": ("animal.n.01",), "dog": ("dog.n.01", "frump.n.01", "dog.n.99"),
              "cat": ("cat.n.01",), "unicorn": ("unicorn.n.01",)}
    senses = wordnet_senses(nodes, lemmas)
    assert senses == {"animal": (0,), "dog": (1, 2), "cat": (3,), "puppy": (4,)}
    means = np.array([[0.0, 0.0], [0.2, 0.1], [3.0, -2.0], [-0.3, 0.2], [0.1, 0.1]])
    variances = np.array([[4.0, 4.0], [0.5, 0.4], [0.3, 0.2], [0.6, 0.5], [0.2, 0.2]])
    emb = Embeddings(nodes, means, variances, senses=senses)
    path = tmp_path / "ent.tsv"
    path.write_text("dog\tanimal\tTrue\nanimal\tdog\tFalse\ncat\tanimal\tTrue\n"
                    "dog\tcat\tFalse\nunicorn\tanimal\tTrue\n")
    result = entailment(emb, path)
    assert (result["n_covered"], result["n_pairs"]) == (4, 5)
    # the best sense pair of each covered pair, by -KL(word1 || word2)
    best = [max(-_kl(means[i], variances[i], means[j], variances[j])
                for i in senses[a] for j in senses[b])
            for a, b in [("dog", "animal"), ("animal", "dog"), ("cat", "animal"), ("dog", "cat")]]
    from keras_gauss.hierarchy.evaluate import average_precision

    assert result["kl_ap"] == pytest.approx(average_precision([1, 0, 1, 0], best))
    sim = tmp_path / "sim.tsv"
    sim.write_text("dog\tpuppy\t9\ncat\tanimal\t5\ndog\tanimal\t6\n")
    assert similarity(emb, sim)["n_covered"] == 3


@pytest.mark.parametrize("energy", ["containment", "kl"])
def test_wordnet_run_agrees_with_the_hierarchy_benchmarks(tmp_path, energy):
    """`evaluate` on a WordNet run = keras_gauss.hierarchy.evaluate.baroni2012,
    both by the run's own energy."""
    from keras_gauss.hierarchy import build_hierarchy
    from keras_gauss.hierarchy.evaluate import baroni2012
    from keras_gauss.hierarchy.train import WordNetConfig
    from keras_gauss.hierarchy.train import train_wordnet
    from keras_gauss.runs import load_run

    config = WordNetConfig(root="mammal.n.01", dim=4, epochs=1, batch_size=512, val_size=0,
                           test_size=0, reconstruction_nodes=50, energy=energy)
    train_wordnet(config, tmp_path / "run", verbose=0)
    path = tmp_path / "ent.tsv"
    path.write_text("dog\tmammal\tTrue\nmammal\tdog\tFalse\ncat\tmammal\tTrue\n"
                    "horse\tdog\tFalse\nwhale\tmammal\tTrue\ndog\tcat\tFalse\n"
                    "unicorn\tmammal\tTrue\n")
    ours = entailment(tmp_path / "run", path)
    run = load_run(tmp_path / "run")
    reference = baroni2012(path, build_hierarchy("mammal.n.01"), *run.tables(), energy=energy)
    assert ours["energy"] == run.energy_name == energy
    assert ours["n_covered"] == reference["n_covered"] == 6
    assert ours[f"{energy}_ap"] == pytest.approx(reference["ap"])
    assert ours[f"{energy}_f1"] == pytest.approx(reference["best_f1"])
    table = format_table({"entailment": {"ent": ours}})
    assert table.splitlines()[0].split()[1] == {"kl": "AP(KL)", "containment": "AP(box)"}[energy]


def test_a_rank_correlation_that_is_undefined_says_why(tmp_path, emb):
    """Equal human scores, equal model scores or one covered pair: rho is
    undefined (scipy gives NaN and a warning); the result says so and why."""
    import warnings

    path = tmp_path / "flat.tsv"
    path.write_text("a\tb\t5\na\tc\t5\na\td\t5\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ConstantInputWarning
        result = similarity(emb, path)
    assert math.isnan(result["spearman_m"]) and math.isnan(result["spearman_d"])
    assert result["undefined"]["spearman_m"] == (
        "the human scores of the 3 covered pairs are all equal (5): nothing to rank")
    flat = Embeddings(["a", "b", "c", "d"], np.ones((4, 2)), np.ones((4, 2)))
    path.write_text("a\tb\t1\na\tc\t2\na\td\t3\n")
    result = similarity(flat, path)
    assert "the model gives all 3 covered pairs the same cosine between means" in \
        result["undefined"]["spearman_m"]
    path.write_text("a\tb\t1\n")
    assert "only 1 covered pair(s)" in similarity(emb, path)["undefined"]["spearman_m"]
    path.write_text("a\tb\t9\na\tc\t7\na\td\t3\n")
    assert similarity(emb, path)["undefined"] == {}
    path.write_text("a\tb\t1e308\na\tc\t-1e308\na\td\t1e308\n")  # no overflow warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert similarity(emb, path)["undefined"] == {}


def test_entailment_with_one_kind_of_label_is_undefined(tmp_path, emb):
    path = tmp_path / "ent.tsv"
    path.write_text("b\ta\tTrue\nc\ta\tTrue\n")
    result = entailment(emb, path)
    assert math.isnan(result["kl_ap"]) and math.isnan(result["cos_f1"])
    assert result["undefined"]["kl_ap"].startswith("all 2 covered pairs are labelled True")


def _kl(m0, v0, m1, v1):  # KL(N0 || N1), diagonal, by its formula
    return 0.5 * float(np.sum(v0 / v1 + (m1 - m0) ** 2 / v1 - 1 + np.log(v1 / v0)))


def test_graded_entailment_is_spearman_of_minus_kl(tmp_path, emb):
    path = tmp_path / "hl.txt"
    path.write_text("WORD1 WORD2 POS TYPE AVG_SCORE AVG_SCORE_0_10 STD\n"
                    "a b N hyp-1 8 8 .1\nb a N rhyp-1 2 2 .1\nc b N hyp-2 6 6 .1\n"
                    "d e N no-rel 0.5 .5 .1\na zebra N hyp-1 9 9 .1\nb c V hyp-1 1 1 .1\n")
    result = graded_entailment(emb, path)  # zebra: not covered; the verb: not read
    pairs, gold = [("a", "b"), ("b", "a"), ("c", "b"), ("d", "e")], [8, 2, 6, 0.5]
    scores = [-_kl(*emb.vector(x), *emb.vector(y)) for x, y in pairs]
    scipy_stats = pytest.importorskip("scipy.stats")
    assert result["spearman"] == pytest.approx(scipy_stats.spearmanr(scores, gold).statistic)
    assert (result["energy"], result["n_pairs"], result["n_covered"]) == ("kl", 5, 4)
    assert result["undefined"] == {}
    path.write_text("a b N hyp-1 5 5 .1\nb a N rhyp-1 5 5 .1\n")
    flat = graded_entailment(emb, path)
    assert math.isnan(flat["spearman"]) and "all equal (5)" in flat["undefined"]["spearman"]
    table = format_table(evaluate(emb, graded_files=[path]))
    assert table.splitlines() == ["graded  rho(KL)  coverage", "hl          n/a  2/2"]


def test_graded_scores_of_a_wordnet_table_are_the_hierarchys_word_pair_scores():
    from keras_gauss.hierarchy import hierarchy_from_parents
    from keras_gauss.hierarchy.evaluate import word_pair_scores
    from keras_gauss.pipelines.evaluate import graded_scores
    from keras_gauss.pipelines.evaluate import wordnet_senses

    h = hierarchy_from_parents({"dog.n.01": ["animal.n.01"], "frump.n.01": ["person.n.01"],
                                "person.n.01": ["organism.n.01"],
                                "animal.n.01": ["organism.n.01"]})
    lemmas = {"dog": ["dog.n.01", "frump.n.01"], "animal": ["animal.n.01"],  # 42 tags, none
              "person": ["person.n.01"], "organism": ["organism.n.01"]}
    rng = np.random.default_rng(0)
    means, variances = rng.normal(size=(h.num_nodes, 3)), rng.uniform(0.3, 3.0, (h.num_nodes, 3))
    emb = Embeddings(list(h.nodes), means, variances, senses=wordnet_senses(h.nodes, lemmas))
    pairs = [("dog", "animal"), ("dog", "person"), ("person", "dog"), ("dog", "organism"),
             ("animal", "organism"), ("dog", "cat")]
    scores, covered = graded_scores(emb, pairs)
    # KL's HyperLex settings: the generality term 0.75, the sense prior 4
    expected = word_pair_scores(pairs, h, means, variances, lemmas=lemmas, generality=0.75,
                                sense_prior=4.0)
    assert covered.tolist() == expected.covered.tolist() == [True] * 5 + [False]
    np.testing.assert_allclose(scores, expected.scores[:5], rtol=1e-12)


def test_graded_scores_with_lemma_nodes_are_the_hierarchys_word_pair_scores():
    """A run with word nodes (`--lemmas`): word1 by its own node, word2 by
    its synsets, with `HYPERLEX_LEMMA_SCORING`'s generality term, in both the
    hierarchy's and the run's scoring."""
    from keras_gauss.hierarchy import hierarchy_from_parents
    from keras_gauss.hierarchy.evaluate import word_pair_scores
    from keras_gauss.pipelines.evaluate import general_senses
    from keras_gauss.pipelines.evaluate import graded_scores
    from keras_gauss.pipelines.evaluate import wordnet_senses

    lemmas = {"dog": ["dog.n.01", "frump.n.01"], "animal": ["animal.n.01"],
              "person": ["person.n.01"], "organism": ["organism.n.01"]}
    synsets = {"dog.n.01": ["animal.n.01"], "frump.n.01": ["person.n.01"],
               "person.n.01": ["organism.n.01"], "animal.n.01": ["organism.n.01"]}
    names = sorted(set(synsets) | {"organism.n.01"})
    h = hierarchy_from_parents({**synsets, **lemmas}, nodes=names + sorted(lemmas),
                               num_synsets=len(names))
    rng = np.random.default_rng(0)
    means, variances = rng.normal(size=(h.num_nodes, 3)), rng.uniform(0.3, 3.0, (h.num_nodes, 3))
    senses = wordnet_senses(h.nodes, lemmas)
    emb = Embeddings(list(h.nodes), means, variances, senses=senses,
                     general_senses=general_senses(h.nodes, senses, lemmas))
    pairs = [("dog", "animal"), ("dog", "person"), ("person", "dog"), ("animal", "organism")]
    scores, covered = graded_scores(emb, pairs)
    expected = word_pair_scores(pairs, h, means, variances, lemmas=lemmas, generality=0.3)
    assert covered.all() and expected.covered.all()
    np.testing.assert_allclose(scores, expected.scores, rtol=1e-12)
    dog, animal = (list(h.nodes).index(name) for name in ("dog", "animal.n.01"))
    generality = np.log(variances[animal]).sum() - np.log(variances[dog]).sum()
    assert scores[0] == pytest.approx(-_kl(means[dog], variances[dog], means[animal],
                                           variances[animal]) + 0.3 * generality)


def test_cli_evaluate_undefined_is_explicit_and_nothing_scored_is_an_error(tmp_path,
                                                                           two_topic_corpus,
                                                                           capsys):
    """`keras-gauss evaluate` used to print `nan` and exit 0 on constant gold
    scores. Now: n/a in the table with a line saying why (exit 0) when
    something else was scored; one error line (exit 2, no eval.json) when
    nothing could be."""
    import json

    from keras_gauss.cli import main

    corpus = two_topic_corpus(120, 6)
    run = tmp_path / "run"
    assert main(["train-corpus", "--corpus", str(corpus), "--out", str(run), "--dim", "4",
                 "--epochs", "1", "--min-count", "1", "--checkpoint-every", "0"]) == 0
    flat = tmp_path / "flat.tsv"
    flat.write_text("cat\tdog\t5\ncat\thammer\t5\nsaw\tdrill\t5\n")
    good = tmp_path / "good.tsv"
    good.write_text("cat\tdog\t9\ncat\thammer\t1\nsaw\tdrill\t8\n")
    capsys.readouterr()
    err = cli_error(["evaluate", run, "--similarity", flat], capsys)
    assert "nan" not in err
    assert ("nothing could be scored: flat: rho(m), rho(d) undefined: the human scores of "
            "the 3 covered pairs are all equal (5): nothing to rank.") in err
    assert not (run / "eval.json").exists()
    assert main(["evaluate", str(run), "--similarity", str(flat), str(good)]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out and "n/a" in out
    assert "flat: rho(m), rho(d) undefined: the human scores" in out
    saved = json.loads((run / "eval.json").read_text())
    assert saved["similarity"]["flat"]["spearman_m"] is None
    assert "all equal" in saved["similarity"]["flat"]["undefined"]["spearman_d"]
    assert saved["similarity"]["good"]["spearman_m"] is not None
    partial = tmp_path / "partial.tsv"  # the words behind a coverage below 100%
    partial.write_text("cat\tdog\t9\ncat\thammer\t1\nsaw\tqwzx\t8\n")
    assert main(["evaluate", str(run), "--similarity", str(partial)]) == 0
    assert ("partial: 1 of 3 pairs skipped, 1 word not in the vocabulary: 'qwzx'."
            in capsys.readouterr().out.splitlines())
    unknown = tmp_path / "hyperlex.txt"
    unknown.write_text("qwzx vbnm N hyp-1 5 5 .1\n")
    err = cli_error(["evaluate", run, "--hyperlex", unknown], capsys)
    assert err.endswith(f"--hyperlex {unknown}: none of its 1 pairs has both words in the "
                        f"vocabulary of {run} (unknown: 'qwzx', 'vbnm'); nothing to score.")
    empty = tmp_path / "empty.txt"
    empty.write_text("WORD1 WORD2 POS TYPE AVG_SCORE AVG_SCORE_0_10 STD SCORES..\n")
    err = cli_error(["evaluate", run, "--hyperlex", empty], capsys)
    assert err.endswith(f"--hyperlex {empty}: the file holds no pairs; nothing to score.")


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory, two_topic_corpus):
    from keras_gauss.cli import main

    run = tmp_path_factory.mktemp("evaluate") / "run"
    assert main(["train-corpus", "--corpus", str(two_topic_corpus(120, 6)), "--out", str(run),
                 "--dim", "4", "--epochs", "1", "--min-count", "1", "--checkpoint-every",
                 "0", "--quiet"]) == 0
    good = run.parent / "good.tsv"
    good.write_text("cat\tdog\t9\ncat\thammer\t1\nsaw\tdrill\t8\n")
    return run, good


def _evaluate_error(run, good, capsys):
    from keras_gauss.cli import main

    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(run), "--similarity", str(good), "--quiet"])
    captured = capsys.readouterr()
    assert "rho(m)" in captured.out  # the table is printed first
    err = captured.err.strip()
    assert info.value.code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_evaluate_that_cannot_write_eval_json_is_one_line(corpus_run, capsys, monkeypatch):
    import contextlib
    import errno

    from keras_gauss import io

    run, good = corpus_run
    (run / "eval.json").mkdir()  # in the way
    try:
        err = _evaluate_error(run, good, capsys)
        assert "eval.json not written" in err and "is a directory" in err, err
    finally:
        (run / "eval.json").rmdir()

    @contextlib.contextmanager
    def full(path, **kwargs):  # the disk is full
        raise io.not_writable(path, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)),
                              "the file", f"{path} is left as it was")
        yield

    monkeypatch.setattr(io, "atomic_file", full)
    err = _evaluate_error(run, good, capsys)
    assert "eval.json not written" in err and "no space left on device" in err, err
    assert not (run / "eval.json").exists()


def test_evaluate_writes_into_the_run_it_read_or_not_at_all(corpus_run, capsys, monkeypatch):
    import fcntl
    import shutil

    import keras_gauss.pipelines.evaluate as evaluate_module
    from keras_gauss.io import LOCK_SUFFIX, atomic_directory

    run, good = corpus_run
    # Another writer holds the run (a training job into it): refused.
    lock = os.open(run.parent / f".{run.name}{LOCK_SUFFIX}", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        err = _evaluate_error(run, good, capsys)
        assert "is being written by another keras-gauss process" in err, err
    finally:
        os.close(lock)
    assert not (run / "eval.json").exists()
    # The run is replaced while evaluate scores it (train --overwrite):
    # the old run's scores never go into the new run.
    scored = evaluate_module.evaluate

    def evaluate_and_replace(*args, **kwargs):
        results = scored(*args, **kwargs)
        with atomic_directory(run, overwrite=True) as tmp:
            for name in os.listdir(run):
                if name != ".keras-gauss":
                    shutil.copy2(run / name, tmp / name)
        return results

    monkeypatch.setattr(evaluate_module, "evaluate", evaluate_and_replace)
    err = _evaluate_error(run, good, capsys)
    assert "was replaced while evaluate read it" in err, err
    assert not (run / "eval.json").exists()


def test_table_columns_line_up_under_their_titles_with_short_file_names(tmp_path, emb):
    # A file named "s.tsv" is shorter than the column title "similarity":
    # the scores still sit under rho(m) / AP(KL), not shifted left.
    sim, ent = tmp_path / "s.tsv", tmp_path / "e.tsv"
    sim.write_text("a\tb\t9\na\tc\t7\na\td\t3\n")
    ent.write_text("b\ta\tTrue\nc\td\tFalse\na\te\tTrue\n")
    results = evaluate(emb, [sim], [ent])
    lines = format_table(results).splitlines()
    header, row = lines[0], lines[1]
    at = header.index("rho(m)")
    assert row[at:at + 6] == f"{results['similarity']['s']['spearman_m']:6.3f}"
    header, row = lines[3], lines[4]
    at = header.index("AP(KL)")
    assert row[at:at + 6] == f"{results['entailment']['e']['kl_ap']:6.3f}"


def test_table_lines_up_file_names_with_combining_marks_and_wide_characters(tmp_path, emb):
    # Names were padded by len(): an accent written apart (NFD) counts one
    # character but takes no column, a CJK character two, so the scores of
    # such a file stood out of line (as the neighbours table's did).
    from keras_gauss.pipelines.evaluate import display_width

    names = ["cafe\u0301", "犬犬", "rg"]
    for name in names:
        (tmp_path / f"{name}.tsv").write_text("a\tb\t9\na\tc\t7\na\td\t3\n")
    results = evaluate(emb, [tmp_path / f"{name}.tsv" for name in names])
    lines = format_table(results).splitlines()
    at = display_width(lines[0][:lines[0].index("rho(m)")])
    for name, line in zip(names, lines[1:]):
        assert line.startswith(name)
        score = f"{results['similarity'][name]['spearman_m']:6.3f}"
        assert display_width(line[:line.index(score)]) == at, lines
