"""The fused hierarchy step as a Keras trainer: the reference the layers are timed against.

`FusedKLTrainer` is what `train-wordnet` trained with before the layers'
compiled kernels (`keras_gauss.kernels`) made `model.fit` of
`build_kl_model` as fast (`benchmarks/fit_speed.py`,
`benchmarks/step_scaling.py`); the package no longer ships it.
"""

import keras
from keras import ops


class FusedKLTrainer(keras.Model):
    """Trains the table of a `build_kl_model` model with one fused op a step
    (what `train-wordnet` ran before the layers' kernels; the benchmarks'
    reference for the hierarchy model's `fit`).

    `fit` on this model updates the `"nodes"` table of `model` in place with
    `keras_gauss.fused.pair_ranking_step`: the KL energies of the positive
    and corrupted edges, the max-margin ranking loss averaged over the batch,
    its closed-form gradients and the sparse AdaGrad update with the row
    constraints, in one C++ kernel. One step equals one `model.fit` step with
    `MaxMarginRanking(margin)` and `SparseAdagrad`, up to float rounding,
    and allocates nothing the size of the batch's candidate lists or of the
    table. The AdaGrad accumulators are those of the optimizer passed to
    `compile`; compile `model` with the same optimizer object to save its
    state with `model` (save `model`; the trainer holds no state of its own).

    Args:
        model: a model from `build_kl_model`.
        margin: the ranking margin.
        **kwargs: `keras.Model` arguments (`name`).
    """

    def __init__(self, model, margin=1.0, **kwargs):
        kwargs.setdefault("name", "fused_kl_trainer")
        super().__init__(**kwargs)
        self.nodes = model.get_layer("nodes")
        self.margin = float(margin)
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
            max_variance=nodes.max_variance, energy="kl",
        )
        optimizer.iterations.assign_add(1)
        # Weighted by the batch size, as Keras's own loss tracker is.
        self.loss_tracker.update_state(loss, sample_weight=ops.shape(general)[0])
        return {"loss": self.loss_tracker.result()}

    @property
    def metrics(self):
        return [self.loss_tracker]
