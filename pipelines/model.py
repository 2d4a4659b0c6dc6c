"""The corpus model: separate word and context Gaussian tables ranked by energy.

The paper's unsupervised model (Sections 2 and 4): every word `w` has a
Gaussian in a `"words"` table and every context word `c` a Gaussian in a
separate `"contexts"` table. A training example is a word, its observed
context and `k` sampled negative contexts; the model returns the energies
`[E(w, c+), E(w, c1-), ..., E(w, ck-)]` and `MaxMarginRanking` asks the
positive to beat every negative by the margin.

Energies:

- `"el"`: the symmetric log expected likelihood
  `log N(0; mu_w - mu_c, Sigma_w + Sigma_c)` (`keras_gauss.ELEnergy`).
- `"kl"`: `E(w, c) = -KL(N_c || N_w)`: the **word is the general side** and
  the context the specific one (`KLEnergy(general=word, specific=context)`),
  so a word's Gaussian is trained to cover the Gaussians of the contexts it
  predicts: words seen in many different contexts grow broad. This is the
  paper's `-E(P_i, P_j) = KL(N_j || N_i)` with `i = w`, `j = c`.

The run directory (`keras_gauss.runs`) names `"words"` as the table used for
queries (similarity, entailment, neighbours).
"""

import keras

from keras_gauss import energies
from keras_gauss.layers import ENERGY_LAYERS
from keras_gauss.layers import GaussianEmbedding
from keras_gauss.layers import candidate_energies
from keras_gauss.models import GaussianModel

INPUTS = ("word", "context", "negatives")
WORDS = "words"
CONTEXTS = "contexts"


def build_corpus_model(vocab_size, dim=50, negatives=1, energy=energies.DEFAULTS["corpus"].name,
                       **tables):
    """Builds the paper's skip-gram Gaussian model as a Keras model.

    Two `GaussianEmbedding` tables, `"words"` and `"contexts"`, both of
    `vocab_size` rows. The context and its negatives are looked up together
    in one gather of `concat([context[:, None], negatives])`, and the energy
    is broadcast between the word `(B, 1, d)` and the candidates
    `(B, 1 + k, d)`.

    Args:
        vocab_size: rows of each table (the vocabulary size), `> 0`.
        dim: embedding dimension `d`.
        negatives: negative contexts per positive, `k >= 1`.
        energy: `"el"` (symmetric expected likelihood) or `"kl"`
            (`E(w, c) = -KL(N_c || N_w)`, word = general side).
        **tables: both tables' `GaussianEmbedding` arguments, with its
            defaults: `covariance`, `max_norm` (`C`), `min_variance` (`m`),
            `max_variance` (`M`), `mean_initializer`, `variance_initializer`.

    Returns:
        A `keras.Model` taking `{"word": (B,), "context": (B,), "negatives":
        (B, k)}` int32 ids and returning float32 energies `(B, 1 + k)`,
        the positive context first: what `MaxMarginRanking` with labels
        `[1, 0, ..., 0]` expects (the labels of
        `keras_gauss.pipelines.make_skipgram_dataset`).

    Raises:
        ValueError: bad `energy`, `negatives` or table arguments.

    Example:

    >>> from keras_gauss import MaxMarginRanking, SparseAdagrad
    >>> model = build_corpus_model(10_000, dim=50, negatives=1)
    >>> model.compile(optimizer=SparseAdagrad(0.1), loss=MaxMarginRanking(1.0))
    >>> # model.fit(make_skipgram_dataset(corpus, vocab, negatives=1))
    """
    energy = energies.get(energy, task="corpus", setting="`energy`").name
    if isinstance(negatives, bool) or not isinstance(negatives, int) or negatives < 1:
        raise ValueError(f"`negatives` must be an integer >= 1, got {negatives!r}.")
    words = GaussianEmbedding(vocab_size, dim, name=WORDS, **tables)
    contexts = GaussianEmbedding(vocab_size, dim, name=CONTEXTS, **tables)
    word = keras.Input((), dtype="int32", name="word")
    context = keras.Input((), dtype="int32", name="context")
    negative = keras.Input((negatives,), dtype="int32", name="negatives")

    # for KL the word is the general side: -KL(N_context || N_word)
    scores = candidate_energies(ENERGY_LAYERS[energy](name="energy"), words, contexts,
                                word, context, negative)
    inputs = {"word": word, "context": context, "negatives": negative}
    # GaussianModel: on JAX its train step updates the touched rows only.
    return GaussianModel(inputs, scores, name=f"corpus_{energy}")
