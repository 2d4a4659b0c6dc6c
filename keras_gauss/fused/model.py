"""A Keras model whose `train_step` is the fused ranking step."""

import keras
from keras import ops

from keras_gauss.fused.step import ranking_step
from keras_gauss.layers.candidate_energies import ENERGIES
from keras_gauss.layers.candidate_energies import ENERGY_LAYERS
from keras_gauss.layers.candidate_energies import candidate_energies
from keras_gauss.layers.gaussian_embedding import GaussianEmbedding
from keras_gauss.optimizers.sparse_adagrad import SparseAdagrad


@keras.saving.register_keras_serializable(package="keras_gauss")
class FusedRankingModel(keras.Model):
    """Gaussian embeddings trained by one fused op per minibatch.

    The model owns a `words` and a `contexts` `GaussianEmbedding` (or one
    shared table) and an energy layer. `call(x)` is the ordinary Keras
    forward pass, so `predict`, `evaluate` and saving work as usual: it
    returns energies `(B, 1 + k)`, the positive context first. `train_step`
    does not backpropagate through `call`: it runs
    `keras_gauss.fused.ranking_step` (the C++ op, or its pure TensorFlow
    equivalent when the op cannot be built), which computes the max-margin
    ranking loss averaged over the batch, its closed-form gradients, and the
    sparse AdaGrad update with the row constraints in place. One step equals
    one `fit` step of the Keras model (`GaussianEmbedding` + energy layer +
    `MaxMarginRanking` + `SparseAdagrad`), up to float rounding.

    The AdaGrad accumulators are the optimizer's own (`SparseAdagrad` or
    `keras.optimizers.Adagrad`, whose update is the same): its
    `learning_rate` (schedules too, evaluated at `optimizer.iterations`),
    `epsilon` and `initial_accumulator_value` are used, and `iterations`
    advances by one per step. So the optimizer state is saved with the model
    and training can continue with the plain Keras path (for example the
    same tables in a functional model compiled with this optimizer).

    For `energy="kl"` the word is the general side and the context the
    specific one: `E = -KL(N_context || N_word)`.

    Args:
        input_dim: vocabulary size of the word table.
        output_dim: dimension `d`.
        context_input_dim: vocabulary size of the context table (default
            `input_dim`); ignored with `shared_table=True`.
        energy: `"el"` or `"kl"`.
        covariance: `"diagonal"` or `"spherical"`.
        shared_table: one table for words and contexts.
        margin: hinge margin `m`.
        max_norm: `C` for `||mu|| <= C`, or None.
        min_variance: `m` for variances.
        max_variance: `M` for variances.
        mean_initializer: initializer of the means.
        variance_initializer: initializer of the variances.
        use_fused: True (require the C++ op), False (pure TensorFlow step)
            or None (the C++ op when available).
        **kwargs: `keras.Model` arguments (`name`).

    Call arguments:
        inputs: dict with `"word"` `(B,)`, `"context"` `(B,)` and
            `"negatives"` `(B, k)` int32 ids.

    Returns:
        `(B, 1 + k)` energies (the `-d/2 log 2pi` constant of EL included,
        as in `ELEnergy`).

    Example:

    >>> import numpy as np
    >>> from keras_gauss.optimizers import SparseAdagrad
    >>> model = FusedRankingModel(10, 4)
    >>> model.compile(optimizer=SparseAdagrad(0.1), steps_per_execution=4)
    >>> rng = np.random.default_rng(0)
    >>> x = {"word": rng.integers(0, 10, 64, dtype="int32"),
    ...      "context": rng.integers(0, 10, 64, dtype="int32"),
    ...      "negatives": rng.integers(0, 10, (64, 2), dtype="int32")}
    >>> history = model.fit(x, np.zeros((64, 3)), batch_size=16, epochs=2, verbose=0)
    >>> len(history.history["loss"]), tuple(model(x).shape)  # (B, 1 + k) energies
    (2, (64, 3))
    """

    def __init__(
        self,
        input_dim,
        output_dim,
        context_input_dim=None,
        energy="el",
        covariance="diagonal",
        shared_table=False,
        margin=1.0,
        max_norm=2.0,
        min_variance=0.05,
        max_variance=5.0,
        mean_initializer="uniform",
        variance_initializer="ones",
        use_fused=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if energy not in ENERGIES:
            raise ValueError(f"`energy` must be one of {ENERGIES}, got {energy!r}.")
        if isinstance(margin, bool) or not isinstance(margin, (int, float)):
            raise TypeError(f"`margin` must be a number, got {margin!r}.")
        if not margin > 0 or margin == float("inf"):
            raise ValueError(f"`margin` must be finite and > 0, got {margin}.")
        self.input_dim = input_dim
        self.output_dim = output_dim
        self.context_input_dim = None if shared_table else context_input_dim
        self.energy = energy
        self.covariance = covariance
        self.shared_table = bool(shared_table)
        self.margin = float(margin)
        self.use_fused = use_fused
        table_kwargs = dict(
            covariance=covariance,
            mean_initializer=mean_initializer,
            variance_initializer=variance_initializer,
            max_norm=max_norm,
            min_variance=min_variance,
            max_variance=max_variance,
        )
        self.words = GaussianEmbedding(input_dim, output_dim, name="words", **table_kwargs)
        self.words.build()
        if self.shared_table:
            self.contexts = None
        else:
            self.contexts = GaussianEmbedding(
                context_input_dim or input_dim, output_dim, name="contexts", **table_kwargs
            )
            self.contexts.build()
        self.energy_layer = ENERGY_LAYERS[energy](name="energy")
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.built = True

    @property
    def context_table(self):
        """The `GaussianEmbedding` of the contexts (`words` when shared)."""
        return self.words if self.contexts is None else self.contexts

    def call(self, inputs):
        return candidate_energies(self.energy_layer, self.words, self.context_table,
                                  inputs["word"], inputs["context"], inputs["negatives"])

    def compile(self, optimizer=None, **kwargs):
        """Configures training; `optimizer` must be an AdaGrad.

        Args:
            optimizer: `keras_gauss.SparseAdagrad` (default
                `SparseAdagrad()`) or `keras.optimizers.Adagrad`.
            **kwargs: other `keras.Model.compile` arguments
                (`steps_per_execution`, `metrics` are ignored by training).
        """
        if optimizer is None:
            optimizer = SparseAdagrad()
        optimizer = keras.optimizers.get(optimizer)
        if not isinstance(optimizer, (SparseAdagrad, keras.optimizers.Adagrad)):
            raise TypeError(
                "FusedRankingModel trains with AdaGrad: pass "
                "keras_gauss.SparseAdagrad (or keras.optimizers.Adagrad), got "
                f"{type(optimizer).__name__}."
            )
        for name in ("clipnorm", "clipvalue", "global_clipnorm"):
            if getattr(optimizer, name, None) is not None:
                raise ValueError(f"FusedRankingModel does not support `{name}`.")
        kwargs.setdefault("jit_compile", False)
        super().compile(optimizer=optimizer, **kwargs)

    def compile_from_config(self, config):
        """Recompiles a loaded model (optimizer state is restored after)."""
        config = keras.saving.deserialize_keras_object(config)
        self.compile(**config)
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def _tables(self):
        contexts = self.context_table
        return [self.words.means, self.words.variances, contexts.means, contexts.variances]

    def _accumulators(self, tables):
        optimizer = self.optimizer
        if not optimizer.built:
            optimizer.build(self.trainable_variables)
        return [optimizer._accumulators[optimizer._get_variable_index(v)] for v in tables]

    def train_step(self, data):
        x, _, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        if sample_weight is not None:
            raise ValueError("FusedRankingModel does not support sample weights.")
        tables = self._tables()
        accumulators = self._accumulators(tables)
        contexts = self.context_table
        optimizer = self.optimizer
        loss = ranking_step(
            tables,
            accumulators,
            x["word"],  # ranking_step checks that wider ids fit in int32
            x["context"],
            x["negatives"],
            learning_rate=ops.cast(optimizer.learning_rate, "float32"),
            margin=self.margin,
            epsilon=optimizer.epsilon,
            max_norm=(self.words.max_norm or 0.0, contexts.max_norm or 0.0),
            min_variance=(self.words.min_variance, contexts.min_variance),
            max_variance=(self.words.max_variance, contexts.max_variance),
            energy=self.energy,
            use_fused=self.use_fused,
        )
        optimizer.iterations.assign_add(1)
        self.loss_tracker.update_state(loss)
        return {"loss": self.loss_tracker.result()}

    def test_step(self, data):
        x, _, _ = keras.utils.unpack_x_y_sample_weight(data)
        energies = self(x, training=False)
        hinge = ops.relu(self.margin - energies[:, :1] + energies[:, 1:])
        self.loss_tracker.update_state(ops.mean(ops.sum(hinge, axis=-1)))
        return {"loss": self.loss_tracker.result()}

    @property
    def metrics(self):
        return [self.loss_tracker]

    def get_config(self):
        return {
            "name": self.name,
            "input_dim": self.input_dim,
            "output_dim": self.output_dim,
            "context_input_dim": self.context_input_dim,
            "energy": self.energy,
            "covariance": self.covariance,
            "shared_table": self.shared_table,
            "margin": self.margin,
            "max_norm": self.words.max_norm,
            "min_variance": self.words.min_variance,
            "max_variance": self.words.max_variance,
            "mean_initializer": keras.initializers.serialize(self.words.mean_initializer),
            "variance_initializer": keras.initializers.serialize(
                self.words.variance_initializer
            ),
            "use_fused": self.use_fused,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("mean_initializer", "variance_initializer"):
            config[key] = keras.initializers.deserialize(config[key])
        return cls(**config)
