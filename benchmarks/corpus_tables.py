"""The paper's two corpus tables (similarity, entailment) in one run, beside gensim.

Evaluates Gaussian runs trained on a corpus (learned spherical and diagonal
variances) beside gensim skip-gram (50-d and 100-d) trained on the same
tokens, and the paper's Section 3 baseline (empirical variances of the
50-d skip-gram vectors):

- similarity: Spearman rho on every file of `../shared/data/similarity`, by
  the cosine of means (m) and of distributions (d);
- entailment: Baroni et al. (2012) split by word into a validation and a
  test half (no word in both; pairs across the halves are dropped): AP, and
  F1 at the threshold chosen on validation (best F1 on test in brackets,
  the paper's protocol), by KL (`-KL(N_word1 || N_word2)`) and cosine; and a
  second, held-out hypernymy set: HyperLex nouns, hypernym pairs (hyp-1..4)
  against every other relation (reversed hypernyms, co-hyponyms, meronyms,
  synonyms, antonyms, no relation), AP and best F1. Settings (ridges,
  thresholds) are chosen on Baroni validation only.
- trivial baselines: frequency (`log count(word2) - log count(word1)` for
  entailment, `-|log count1 - log count2|` for similarity) and random.

Usage (from the repository root; `--work` keeps gensim's models and the
tokenized corpus between runs):

    python benchmarks/corpus_tables.py --corpus CORPUS.txt.gz --work DIR \\
        --run "LG spherical=RUN_DIR" --run "LG diagonal=RUN_DIR" [--epochs 5 --window 10]

`--validation-only` prints Baroni-validation figures of the runs only (for
choosing settings: no test half, no gensim). Current results are in
`benchmarks/README.md` ("The paper's corpus tables").
"""

import argparse
import hashlib
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DATA = Path(os.environ.get("KERAS_GAUSS_SHARED_DATA",
                           Path(__file__).resolve().parents[1].parent / "shared" / "data"))
if not DATA.exists():
    DATA = Path("/work/shared/data")
PAPER_SIM = {"wordsim353": (".6549 (S m)", ".6212 (D d)"), "men": (".7103", ".7003")}


# --------------------------------------------------------------------------- data


def word_half(word, salt="baroni-split-0"):
    """0 (validation) or 1 (test): a fixed hash of the word."""
    return hashlib.sha256(f"{salt}:{word}".encode()).digest()[0] & 1


def baroni_halves(path=None):
    """Baroni 2012 split by word: `(validation rows, test rows)` of `(w1, w2, label)`."""
    from keras_gauss.hierarchy.benchmark_data import read_entailment

    rows = read_entailment(path or DATA / "entailment" / "baroni2012.tsv")
    halves = ([], [])
    for a, b, label in rows:
        if word_half(a) == word_half(b):
            halves[word_half(a)].append((a, b, label))
    return halves


def hyperlex_hypernymy(path=None):
    """HyperLex nouns as `(w1, w2, is_hypernym_pair)`: hyp-1..hyp-4 against all other types."""
    rows = []
    with open(path or DATA / "hyperlex" / "hyperlex-nouns.txt", encoding="utf-8") as f:
        next(f)
        for line in f:
            fields = line.split()
            rows.append((fields[0].lower(), fields[1].lower(), fields[3].startswith("hyp-")))
    return rows


# --------------------------------------------------------------------------- scoring


def covered(emb, rows, vocab=None):
    """Rows whose two words are in `emb` (and in `vocab` when given)."""
    keep = []
    for row in rows:
        if row[0] in emb.index and row[1] in emb.index and (
                vocab is None or (row[0] in vocab and row[1] in vocab)):
            keep.append(row)
    return keep


def measure_scores(emb, rows, measure, counts=None):
    """Scores of `(w1, w2, ...)` rows: `kl`, `cos`, `d`, `logdet` (generality of
    w2 over w1), `freq` (log count2 - log count1), `freq_sim` (-|log c1 - log c2|)."""
    from keras_gauss.pipelines.evaluate import pair_scores

    left = np.array([emb.index[r[0]] for r in rows], dtype=np.int64)
    right = np.array([emb.index[r[1]] for r in rows], dtype=np.int64)
    if measure in ("freq", "freq_sim"):
        logc = np.log(np.asarray(counts, dtype=np.float64))
        diff = logc[right] - logc[left]
        return diff if measure == "freq" else -np.abs(diff)
    if measure == "logdet":
        ld = np.log(emb.variances).sum(axis=1)
        return ld[right] - ld[left]
    return pair_scores(emb, left, right, {"kl": "kl", "cos": "m", "d": "d"}[measure])


def entailment_figures(emb, measure, val, test, counts=None):
    """AP on validation and test, F1 on test at the validation threshold, best test F1."""
    from keras_gauss.metrics import average_precision
    from keras_gauss.metrics import best_f1

    out = {}
    for name, rows in (("val", val), ("test", test)):
        labels = np.array([r[2] for r in rows], dtype=bool)
        scores = measure_scores(emb, rows, measure, counts)
        out[f"{name}_ap"] = average_precision(labels, scores)
        out[f"{name}_best_f1"], threshold = best_f1(labels, scores)
        if name == "val":
            chosen = threshold
        else:
            predicted = scores >= chosen
            tp = float((predicted & labels).sum())
            out["test_f1"] = 2 * tp / (predicted.sum() + labels.sum())
    return out


def similarity_rho(emb, rows, measure, counts=None):
    from scipy.stats import spearmanr

    scores = measure_scores(emb, rows, measure, counts)
    return float(spearmanr(scores, [r[2] for r in rows]).statistic)


# --------------------------------------------------------------------------- gensim


def tokenized_file(corpus, vocab_words, work):
    """The corpus as in-vocabulary tokens, a line a sentence (gensim's corpus_file),
    lines cut to 10,000 tokens (gensim's limit)."""
    from keras_gauss.pipelines.native_corpus import corpus_files
    from keras_gauss.pipelines.native_corpus import in_vocabulary
    from keras_gauss.pipelines.native_corpus import read_corpus

    digest = hashlib.sha256(("\n".join(vocab_words) + str(Path(corpus).resolve())).encode())
    path = Path(work) / f"tokens-{digest.hexdigest()[:12]}.txt"
    if path.exists():
        return path
    types, counts, ids, splits = read_corpus(corpus_files(corpus))
    index = {w: i for i, w in enumerate(vocab_words)}
    remap = np.array([index.get(t, -1) for t in types], dtype=np.int32)
    ids, splits = in_vocabulary(ids, splits, remap)
    words = np.array(vocab_words, dtype=object)
    partial = path.with_suffix(".partial")
    with open(partial, "w", encoding="utf-8") as f:
        for s in range(len(splits) - 1):
            line = ids[splits[s]:splits[s + 1]]
            for start in range(0, len(line), 10000):
                f.write(" ".join(words[line[start:start + 10000]]) + "\n")
    partial.replace(path)
    return path


def gensim_model(tokens_file, dim, epochs, window, seed, work, min_count=1):
    from gensim.models import Word2Vec

    path = Path(work) / f"sg{dim}-e{epochs}-w{window}-s{seed}-{Path(tokens_file).stem}.model"
    if path.exists():
        return Word2Vec.load(str(path)), None
    start = time.perf_counter()
    model = Word2Vec(corpus_file=str(tokens_file), vector_size=dim, window=window, sg=1,
                     negative=5, sample=1e-3, min_count=min_count, epochs=epochs, workers=2,
                     seed=seed)
    seconds = time.perf_counter() - start
    model.save(str(path))
    return model, seconds


def empirical_embeddings(corpus, model, vocab_words, val, work, window=5):
    """The Section 3 baseline on gensim vectors: ridge chosen by Baroni-validation AP (KL)."""
    from keras_gauss.pipelines import Vocabulary
    from keras_gauss.pipelines.empirical import context_moments
    from keras_gauss.pipelines.empirical import empirical_variances
    from keras_gauss.pipelines.evaluate import Embeddings
    from keras_gauss.metrics import average_precision

    words = model.wv.index_to_key
    name = hashlib.sha256(str(Path(corpus).resolve()).encode()).hexdigest()[:8]
    cache = Path(work) / f"moments-{name}-{len(words)}-{model.vector_size}-w{window}.npz"
    if cache.exists():
        data = np.load(cache)
        moments = data["counts"], data["sum_c"], data["sum_c2"]
    else:
        vocab = Vocabulary(words, [model.wv.get_vecattr(w, "count") for w in words])
        moments = context_moments(corpus, vocab, model.syn1neg, window=window)
        np.savez(cache, counts=moments[0], sum_c=moments[1], sum_c2=moments[2])
    out = {}
    for covariance in ("diagonal", "spherical"):
        best = None
        for ridge in (0.001, 0.01, 0.1, 1.0, 10.0):
            emb = Embeddings(words, model.wv.vectors,
                             empirical_variances(model.wv.vectors, *moments, ridge=ridge,
                                                 covariance=covariance))
            rows = covered(emb, val)
            ap = average_precision([r[2] for r in rows], measure_scores(emb, rows, "kl"))
            if best is None or ap > best[0]:
                best = (ap, ridge, emb)
        out[covariance] = best
    return out


# --------------------------------------------------------------------------- main


def fmt(x):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def main(argv=None):
    from keras_gauss.pipelines.evaluate import Embeddings
    from keras_gauss.pipelines.evaluate import read_similarity

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True, help="the corpus the runs were trained on")
    parser.add_argument("--run", action="append", default=[], metavar="NAME=DIR",
                        help="a Gaussian run to evaluate (repeat)")
    parser.add_argument("--work", default=None, help="cache folder for gensim (default: temp)")
    parser.add_argument("--epochs", type=int, default=5, help="gensim epochs (the runs')")
    parser.add_argument("--window", type=int, default=10, help="gensim window (the runs')")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gensim-dims", type=int, nargs="*", default=[50, 100],
                        help="gensim skip-gram sizes to train beside (default: 50 100)")
    parser.add_argument("--empirical-corpus", default=None,
                        help="estimate the empirical variances on this (part of the) corpus "
                             "(default: --corpus)")
    parser.add_argument("--no-empirical", action="store_true",
                        help="leave out the Section 3 empirical-variance baseline")
    parser.add_argument("--validation-only", action="store_true",
                        help="Baroni validation and the similarity files other than WordSim353 "
                             "and MEN only, no gensim (for choosing settings)")
    args = parser.parse_args(argv)
    if not args.run:
        parser.error("give at least one --run NAME=DIR")

    import tempfile

    from keras_gauss.runs import load_run

    runs = {}
    for spec in args.run:
        name, _, path = spec.partition("=")
        run = load_run(path)
        means, variances = run.tables()
        runs[name] = (Embeddings(run.words, means, variances), run)
    first_run = next(iter(runs.values()))[1]
    words, counts = first_run.words, first_run.counts
    vocab = set(words)
    val, test = baroni_halves()
    hyper = hyperlex_hypernymy()
    sim_files = sorted((DATA / "similarity").glob("*.tsv"))
    if args.validation_only:  # the target files (WordSim353, MEN) are read once, at the end
        sim_files = [p for p in sim_files if not p.stem.startswith(("wordsim353", "men"))]

    models = {name: emb for name, (emb, _) in runs.items()}
    gensim_seconds = {}
    if not args.validation_only:
        work = Path(args.work or tempfile.mkdtemp(prefix="corpus_tables_"))
        work.mkdir(parents=True, exist_ok=True)
        tokens = tokenized_file(args.corpus, words, work)
        sg = {}
        for dim in args.gensim_dims:
            sg[dim], seconds = gensim_model(tokens, dim, args.epochs, args.window, args.seed,
                                            work)
            gensim_seconds[dim] = seconds
            models[f"SG {dim}-d"] = Embeddings(sg[dim].wv.index_to_key, sg[dim].wv.vectors, 1.0)
        empirical = {}
        if not args.no_empirical and sg:
            empirical = empirical_embeddings(args.empirical_corpus or args.corpus, sg[min(sg)],
                                             words, val, work)
    freq_emb = runs[next(iter(runs))][0]

    print(f"corpus {args.corpus}; {len(words):,} words; runs: "
          + "; ".join(f"{n} ({r.path})" for n, (_, r) in runs.items()))
    if gensim_seconds:
        print("gensim skip-gram (negative 5, sample 1e-3, window "
              f"{args.window}, {args.epochs} epochs): "
              + ", ".join(f"{d}-d {s:.0f} s" if s else f"{d}-d cached"
                          for d, s in gensim_seconds.items()))

    # ---- similarity
    print("\n### Similarity (Spearman rho; m: cosine of means, d: cosine of distributions)\n")
    names = list(runs)
    header = ["file (pairs covered)"] + [f"{n} m" for n in names] + [f"{n} d" for n in names]
    if not args.validation_only:
        header += [f"SG {d}-d" for d in args.gensim_dims]
    header += ["frequency"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for path in sim_files:
        rows = covered(freq_emb, read_similarity(path), vocab)
        cells = [f"{path.stem} ({len(rows)}/{len(read_similarity(path))})"]
        cells += [fmt(similarity_rho(models[n], rows, "cos")) for n in names]
        cells += [fmt(similarity_rho(models[n], rows, "d")) for n in names]
        if not args.validation_only:
            cells += [fmt(similarity_rho(models[f"SG {d}-d"], rows, "cos"))
                      for d in args.gensim_dims]
        cells.append(fmt(similarity_rho(freq_emb, rows, "freq_sim", counts)))
        print("| " + " | ".join(cells) + " |")

    # ---- entailment
    val_rows, test_rows = covered(freq_emb, val, vocab), covered(freq_emb, test, vocab)
    hyper_rows = covered(freq_emb, hyper, vocab)
    rate = lambda rows: float(np.mean([r[2] for r in rows]))  # noqa: E731
    print(f"\n### Entailment (Baroni 2012 by word: validation {len(val_rows)}/{len(val)} "
          f"pairs covered, test {len(test_rows)}/{len(test)}; HyperLex hypernymy "
          f"{len(hyper_rows)}/{len(hyper)}, {rate(hyper_rows):.0%} positive)\n")
    entries = []
    for n in names:
        for measure in ("kl", "cos"):
            entries.append((n, measure.upper() if measure == "kl" else "cos", models[n], measure))
        entries.append((n, "log det (w2 - w1)", models[n], "logdet"))
    if not args.validation_only:
        for d in args.gensim_dims:
            entries.append((f"SG {d}-d", "cos", models[f"SG {d}-d"], "cos"))
        for covariance, (ap, ridge, emb) in empirical.items():
            label = f"empirical {covariance} (ridge {ridge:g})"
            entries.append((label, "KL", emb, "kl"))
            entries.append((label, "cos", emb, "cos"))
    entries.append(("frequency", "log c2 - log c1", freq_emb, "freq"))
    if args.validation_only:
        print("| model | measure | val AP | val best F1 |\n|---|---|---|---|")
    else:
        print("| model | measure | Baroni val AP | Baroni test AP | test F1 (val threshold) "
              "[best] | HyperLex hyp. AP | HyperLex best F1 |\n|---|---|---|---|---|---|---|")
    for label, measure_name, emb, measure in entries:
        fig = entailment_figures(emb, measure, val_rows, test_rows if not args.validation_only
                                 else val_rows, counts)
        if args.validation_only:
            print(f"| {label} | {measure_name} | {fmt(fig['val_ap'])} | {fmt(fig['val_best_f1'])} |")
            continue
        hfig = entailment_figures(emb, measure, hyper_rows, hyper_rows, counts)
        print(f"| {label} | {measure_name} | {fmt(fig['val_ap'])} | {fmt(fig['test_ap'])} | "
              f"{fmt(fig['test_f1'])} [{fmt(fig['test_best_f1'])}] | {fmt(hfig['val_ap'])} | "
              f"{fmt(hfig['val_best_f1'])} |")
    if not args.validation_only:
        print(f"| random | - | {rate(val_rows):.3f} | {rate(test_rows):.3f} | - | "
              f"{rate(hyper_rows):.3f} | - |")
    print("\npaper (3 B tokens): Baroni AP learned (D) KL .80 / cos .73; empirical (D) KL .68 "
          "/ cos .71; WordSim353 rho S m .655 / D d .621; MEN .713 / .702")


if __name__ == "__main__":
    main()
