"""The hierarchy model: one shared Gaussian table scored with asymmetric KL."""

import keras
from keras import ops

from keras_gauss.layers import ContainmentEnergy
from keras_gauss.layers import GaussianEmbedding
from keras_gauss.layers import KLEnergy
from keras_gauss.models import GaussianModel

INPUTS = ("general", "specific", "neg_general", "neg_specific")
ENERGY_LAYERS = {"kl": KLEnergy, "containment": ContainmentEnergy}


def build_kl_model(
    num_nodes,
    dim=50,
    negatives=1,
    covariance="diagonal",
    max_norm=2.0,
    min_variance=0.05,
    max_variance=5.0,
    mean_initializer="uniform",
    variance_initializer="ones",
    energy="kl",
):
    """Builds the paper's hierarchy model (Section 5.3) as a Keras model.

    One `GaussianEmbedding` table named `"nodes"` serves both sides of every
    pair: the paper notes that separate tables let KL training push the
    variances up without bound. A positive edge `(specific, general)` (for
    example `dog.n.01 is-a mammal.n.01`) is scored
    `E = -KL(N_specific || N_general)` (`keras_gauss.layers.KLEnergy`) and
    listed first, followed by its `negatives` corrupted edges. With
    `energy="containment"` the pairs are scored by
    `keras_gauss.layers.ContainmentEnergy` instead (nested one-sigma boxes).

    Args:
        num_nodes: number of nodes (rows of the table).
        dim: embedding dimension.
        negatives: corrupted edges per positive edge, `k`.
        covariance: `"diagonal"` or `"spherical"`.
        max_norm: the mean norm bound `C` (or `None`).
        min_variance: the variance lower bound `m`.
        max_variance: the variance upper bound `M`.
        mean_initializer: initializer of the means.
        variance_initializer: initializer of the variances.
        energy: `"kl"` or `"containment"`.

    Returns:
        A `keras.Model` taking a dict of int32 ids `{"general": (batch,),
        "specific": (batch,), "neg_general": (batch, k), "neg_specific":
        (batch, k)}` and returning energies `(batch, 1 + k)`, positive first:
        the shape `keras_gauss.losses.MaxMarginRanking` expects.

    Example:

    >>> from keras_gauss import MaxMarginRanking, SparseAdagrad
    >>> model = build_kl_model(num_nodes=100, dim=10, negatives=2)
    >>> model.compile(optimizer=SparseAdagrad(0.05), loss=MaxMarginRanking())
    """
    if isinstance(negatives, bool) or not isinstance(negatives, int) or negatives < 1:
        raise ValueError(f"`negatives` must be an integer >= 1, got {negatives!r}.")
    if energy not in ENERGY_LAYERS:
        raise ValueError(f"`energy` must be one of {', '.join(ENERGY_LAYERS)}, got {energy!r}.")
    nodes = GaussianEmbedding(
        num_nodes,
        dim,
        covariance=covariance,
        mean_initializer=mean_initializer,
        variance_initializer=variance_initializer,
        max_norm=max_norm,
        min_variance=min_variance,
        max_variance=max_variance,
        name="nodes",
    )
    general = keras.Input((), dtype="int32", name="general")
    specific = keras.Input((), dtype="int32", name="specific")
    neg_general = keras.Input((negatives,), dtype="int32", name="neg_general")
    neg_specific = keras.Input((negatives,), dtype="int32", name="neg_specific")
    general_ids = ops.concatenate([ops.expand_dims(general, -1), neg_general], -1)
    specific_ids = ops.concatenate([ops.expand_dims(specific, -1), neg_specific], -1)
    layer = ENERGY_LAYERS[energy](name=f"{energy}_energy")
    energy = layer(*nodes(general_ids), *nodes(specific_ids))
    inputs = {
        "general": general,
        "specific": specific,
        "neg_general": neg_general,
        "neg_specific": neg_specific,
    }
    # GaussianModel: on JAX its train step updates the touched rows only.
    return GaussianModel(inputs, energy, name="gaussian_hierarchy")


class FusedKLTrainer(keras.Model):
    """Trains the table of a `build_kl_model` model with one fused op a step.

    `fit` on this model updates the `"nodes"` table of `model` in place with
    `keras_gauss.fused.pair_ranking_step`: the KL energies of the positive
    and corrupted edges, the max-margin ranking loss averaged over the batch,
    its closed-form gradients and the sparse AdaGrad update with the row
    constraints, in one C++ kernel (or its pure TensorFlow equivalent when
    the op cannot be built). One step equals one `model.fit` step with
    `MaxMarginRanking(margin)` and `SparseAdagrad`, up to float rounding,
    and allocates nothing the size of the batch's candidate lists or of the
    table. The AdaGrad accumulators are those of the optimizer passed to
    `compile`; compile `model` with the same optimizer object to save its
    state with `model` (save `model`; the trainer holds no state of its own).

    Args:
        model: a model from `build_kl_model`.
        margin: the ranking margin.
        use_fused: True (require the C++ op), False (pure TensorFlow step)
            or None (the C++ op when available).
        **kwargs: `keras.Model` arguments (`name`).

    Example:

    >>> from keras_gauss import MaxMarginRanking, SparseAdagrad
    >>> from keras_gauss.hierarchy.dataset import make_dataset
    >>> from keras_gauss.hierarchy.synthetic import synthetic_hierarchy
    >>> h = synthetic_hierarchy()
    >>> model = build_kl_model(num_nodes=h.num_nodes, dim=2, negatives=2)
    >>> optimizer = SparseAdagrad(0.05)
    >>> model.compile(optimizer=optimizer, loss=MaxMarginRanking())
    >>> trainer = FusedKLTrainer(model)
    >>> trainer.compile(optimizer=optimizer)
    >>> dataset = make_dataset(h, batch_size=8, negatives=2)
    >>> history = trainer.fit(dataset, epochs=2, verbose=0)  # trains model's table
    >>> len(history.history["loss"])
    2
    """

    def __init__(self, model, margin=1.0, use_fused=None, **kwargs):
        kwargs.setdefault("name", "fused_kl_trainer")
        super().__init__(**kwargs)
        self.nodes = model.get_layer("nodes")
        self.margin = float(margin)
        self.use_fused = use_fused
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.built = True

    def compile(self, optimizer, **kwargs):
        """Configures training; `optimizer` is a `SparseAdagrad` (or Keras's
        `Adagrad`, whose update is the same)."""
        from keras_gauss.optimizers import SparseAdagrad

        if not isinstance(optimizer, (SparseAdagrad, keras.optimizers.Adagrad)):
            raise TypeError("FusedKLTrainer trains with SparseAdagrad or Adagrad, got "
                            f"{type(optimizer).__name__}.")
        kwargs.setdefault("jit_compile", False)
        super().compile(optimizer=optimizer, **kwargs)

    def train_step(self, data):
        from keras_gauss.fused import pair_ranking_step

        x, _, _ = keras.utils.unpack_x_y_sample_weight(data)
        nodes, optimizer = self.nodes, self.optimizer
        tables = [nodes.means, nodes.variances] * 2
        if not optimizer.built:
            optimizer.build([nodes.means, nodes.variances])
        accumulators = [optimizer._accumulators[optimizer._get_variable_index(v)]
                        for v in tables]
        general = ops.concatenate(
            [ops.expand_dims(ops.cast(x["general"], "int32"), -1),
             ops.cast(x["neg_general"], "int32")], -1)
        specific = ops.concatenate(
            [ops.expand_dims(ops.cast(x["specific"], "int32"), -1),
             ops.cast(x["neg_specific"], "int32")], -1)
        loss = pair_ranking_step(
            tables, accumulators, general, specific,
            learning_rate=ops.cast(optimizer.learning_rate, "float32"),
            margin=self.margin, epsilon=optimizer.epsilon,
            max_norm=nodes.max_norm or 0.0, min_variance=nodes.min_variance,
            max_variance=nodes.max_variance, energy="kl", use_fused=self.use_fused,
        )
        optimizer.iterations.assign_add(1)
        # Weighted by the batch size, as Keras's own loss tracker is.
        self.loss_tracker.update_state(loss, sample_weight=ops.shape(general)[0])
        return {"loss": self.loss_tracker.result()}

    @property
    def metrics(self):
        return [self.loss_tracker]
