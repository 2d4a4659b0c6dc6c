"""Writes the corpus model's `model.keras` without importing Keras.

The native engine's TensorFlow-free path (`keras_gauss.pipelines.native_corpus`)
ends with tables in NumPy; importing Keras (and TensorFlow with it) only to
save them would cost more than the epoch. `write_corpus_model` writes (with
`keras_gauss.keras_file.write_keras_file`) the file Keras writes for `build_corpus_model(...)` compiled with
`SparseAdagrad` and `MaxMarginRanking`: `config.json` from `_TEMPLATE` (the
model's serialized config for EL, diagonal, one negative, with `"@NAME"`
placeholders for the settings), `metadata.json`, and `model.weights.h5`
(the four tables and the optimizer's iterations, learning rate and four
accumulators, in Keras's layout). `tests/pipelines/test_pipelines_native_corpus.py`
(`test_model_file_equals_what_keras_writes`) checks the file against the one
Keras writes, for each energy and covariance, so a Keras release that changes the format fails there.

Example: see `write_corpus_model`.
"""

import json

import numpy as np

from keras_gauss import energies
from keras_gauss.keras_file import write_keras_file
from keras_gauss.optimizers.adagrad_floor import EPSILON
from keras_gauss.optimizers.adagrad_floor import INITIAL_ACCUMULATOR

# `keras.saving.serialize_keras_object(model)` of the compiled corpus model
# (EL, diagonal, 1 negative), with placeholders: @V rows, @D dimension, @K
# negatives, @K1 1 + negatives, @SEED, @MINV, @MAXV, @INITV, @MAXNORM, @LR,
# @MARGIN, @EPS, @ACC0.
_TEMPLATE = (
    '{"build_config":{"input_shape":null},"class_name":"GaussianModel","compile_config":{"jit'
    '_compile":false,"loss":{"class_name":"MaxMarginRanking","config":{"margin":"@MARGIN","na'
    'me":"max_margin_ranking","reduction":"sum_over_batch_size"},"module":"keras_gauss.losses'
    '.max_margin_ranking","registered_name":"keras_gauss>MaxMarginRanking"},"loss_weights":nu'
    'll,"metrics":null,"optimizer":{"class_name":"SparseAdagrad","config":{"clipnorm":null,"c'
    'lipvalue":null,"ema_momentum":0.99,"ema_overwrite_frequency":null,"epsilon":"@EPS","glob'
    'al_clipnorm":null,"gradient_accumulation_steps":null,"initial_accumulator_value":"@ACC0","'
    'learning_rate":"@LR","loss_scale_factor":null,"name":"sparse_adagrad","use_ema":false,"w'
    'eight_decay":null},"module":"keras_gauss.optimizers.sparse_adagrad","registered_name":"k'
    'eras_gauss>SparseAdagrad"},"run_eagerly":false,"steps_per_execution":1,"weighted_metrics'
    '":null},"config":{"input_layers":{"context":["context",0,0],"negatives":["negatives",0,0'
    '],"word":["word",0,0]},"layers":[{"class_name":"InputLayer","config":{"batch_shape":[nul'
    'l],"dtype":"int32","name":"context","optional":false,"ragged":false,"sparse":false},"inb'
    'ound_nodes":[],"module":"keras.layers","name":"context","registered_name":null},{"class_'
    'name":"InputLayer","config":{"batch_shape":[null],"dtype":"int32","name":"word","optiona'
    'l":false,"ragged":false,"sparse":false},"inbound_nodes":[],"module":"keras.layers","name'
    '":"word","registered_name":null},{"class_name":"ExpandDims","config":{"axis":-1,"name":"'
    'expand_dims"},"inbound_nodes":[{"args":[{"class_name":"__keras_tensor__","config":{"dtyp'
    'e":"int32","keras_history":["context",0,0],"shape":[null]}}],"kwargs":{}}],"module":"ker'
    'as.src.ops.numpy","name":"expand_dims","registered_name":"ExpandDims"},{"class_name":"In'
    'putLayer","config":{"batch_shape":[null,"@K"],"dtype":"int32","name":"negatives","option'
    'al":false,"ragged":false,"sparse":false},"inbound_nodes":[],"module":"keras.layers","nam'
    'e":"negatives","registered_name":null},{"build_config":{"input_shape":[null]},"class_nam'
    'e":"GaussianEmbedding","config":{"covariance":"diagonal","dtype":{"class_name":"DTypePol'
    'icy","config":{"name":"float32"},"module":"keras","registered_name":null},"input_dim":"@'
    'V","max_norm":"@MAXNORM","max_variance":"@MAXV","mean_initializer":{"class_name":"Random'
    'Uniform","config":{"maxval":0.05,"minval":-0.05,"seed":"@SEED"},"module":"keras.initiali'
    'zers","registered_name":null},"min_variance":"@MINV","name":"words","output_dim":"@D","t'
    'rainable":true,"variance_initializer":{"class_name":"Constant","config":{"value":"@INITV'
    '"},"module":"keras.initializers","registered_name":null}},"inbound_nodes":[{"args":[{"cl'
    'ass_name":"__keras_tensor__","config":{"dtype":"int32","keras_history":["word",0,0],"sha'
    'pe":[null]}}],"kwargs":{}}],"module":"keras_gauss.layers.gaussian_embedding","name":"wor'
    'ds","registered_name":"keras_gauss>GaussianEmbedding"},{"class_name":"Concatenate","conf'
    'ig":{"axis":-1,"name":"concatenate"},"inbound_nodes":[{"args":[[{"class_name":"__keras_t'
    'ensor__","config":{"dtype":"int32","keras_history":["expand_dims",0,0],"shape":[null,1]}'
    '},{"class_name":"__keras_tensor__","config":{"dtype":"int32","keras_history":["negatives'
    '",0,0],"shape":[null,"@K"]}}]],"kwargs":{}}],"module":"keras.src.ops.numpy","name":"conc'
    'atenate","registered_name":"Concatenate"},{"class_name":"ExpandDims","config":{"axis":1,'
    '"name":"expand_dims_1"},"inbound_nodes":[{"args":[{"class_name":"__keras_tensor__","conf'
    'ig":{"dtype":"float32","keras_history":["words",0,0],"shape":[null,"@D"]}}],"kwargs":{}}'
    '],"module":"keras.src.ops.numpy","name":"expand_dims_1","registered_name":"ExpandDims"},'
    '{"class_name":"ExpandDims","config":{"axis":1,"name":"expand_dims_2"},"inbound_nodes":[{'
    '"args":[{"class_name":"__keras_tensor__","config":{"dtype":"float32","keras_history":["w'
    'ords",0,1],"shape":[null,"@D"]}}],"kwargs":{}}],"module":"keras.src.ops.numpy","name":"e'
    'xpand_dims_2","registered_name":"ExpandDims"},{"build_config":{"input_shape":[null,"@K1"'
    ']},"class_name":"GaussianEmbedding","config":{"covariance":"diagonal","dtype":{"class_na'
    'me":"DTypePolicy","config":{"name":"float32"},"module":"keras","registered_name":null},"'
    'input_dim":"@V","max_norm":"@MAXNORM","max_variance":"@MAXV","mean_initializer":{"class_'
    'name":"RandomUniform","config":{"maxval":0.05,"minval":-0.05,"seed":"@SEED"},"module":"k'
    'eras.initializers","registered_name":null},"min_variance":"@MINV","name":"contexts","out'
    'put_dim":"@D","trainable":true,"variance_initializer":{"class_name":"Constant","config":'
    '{"value":"@INITV"},"module":"keras.initializers","registered_name":null}},"inbound_nodes'
    '":[{"args":[{"class_name":"__keras_tensor__","config":{"dtype":"int32","keras_history":['
    '"concatenate",0,0],"shape":[null,"@K1"]}}],"kwargs":{}}],"module":"keras_gauss.layers.ga'
    'ussian_embedding","name":"contexts","registered_name":"keras_gauss>GaussianEmbedding"},{'
    '"build_config":{"input_shape":[null,1,"@D"]},"class_name":"ELEnergy","config":{"dtype":{'
    '"class_name":"DTypePolicy","config":{"name":"float32"},"module":"keras","registered_name'
    '":null},"include_constant":true,"name":"energy","trainable":true},"inbound_nodes":[{"arg'
    's":[{"class_name":"__keras_tensor__","config":{"dtype":"float32","keras_history":["expan'
    'd_dims_1",0,0],"shape":[null,1,"@D"]}},{"class_name":"__keras_tensor__","config":{"dtype'
    '":"float32","keras_history":["expand_dims_2",0,0],"shape":[null,1,"@D"]}},{"class_name":'
    '"__keras_tensor__","config":{"dtype":"float32","keras_history":["contexts",0,0],"shape":'
    '[null,"@K1","@D"]}},{"class_name":"__keras_tensor__","config":{"dtype":"float32","keras_'
    'history":["contexts",0,1],"shape":[null,"@K1","@D"]}}],"kwargs":{}}],"module":"keras_gau'
    'ss.layers.el_energy","name":"energy","registered_name":"keras_gauss>ELEnergy"}],"name":"'
    'corpus_el","output_layers":["energy",0,0],"trainable":true},"module":"keras_gauss.models'
    '.gaussian_model","registered_name":"keras_gauss>GaussianModel"}'
)


def corpus_model_config(vocab_size, dim, negatives, energy, covariance, max_norm,
                        min_variance, max_variance, seed, init_variance, learning_rate,
                        margin, epsilon=EPSILON,
                        initial_accumulator=INITIAL_ACCUMULATOR):
    """The `config.json` dict of `build_corpus_model` with these settings,
    compiled with `SparseAdagrad(learning_rate, epsilon=epsilon,
    initial_accumulator_value=initial_accumulator)` and `MaxMarginRanking(margin)`
    (the mean initializer `RandomUniform(-0.05, 0.05, seed)`, the variance
    initializer `Constant(init_variance)`, as `train_corpus` builds it).

    Example:

    >>> config = corpus_model_config(
    ...     vocab_size=3, dim=2, negatives=1, energy="kl", covariance="spherical",
    ...     max_norm=4.0, min_variance=0.05, max_variance=5.0, seed=0,
    ...     init_variance=1.0, learning_rate=0.2, margin=0.5)
    >>> config["config"]["name"], config["compile_config"]["optimizer"]["class_name"]
    ('corpus_kl', 'SparseAdagrad')
    """
    values = {
        "@V": int(vocab_size), "@D": int(dim), "@K": int(negatives),
        "@K1": int(negatives) + 1, "@SEED": int(seed), "@MINV": float(min_variance),
        "@MAXV": float(max_variance), "@INITV": float(init_variance),
        "@MAXNORM": None if max_norm is None else float(max_norm),
        "@LR": float(np.float32(learning_rate)), "@MARGIN": float(margin),
        "@EPS": float(epsilon), "@ACC0": float(initial_accumulator),
    }

    def fill(node):
        if isinstance(node, dict):
            return {key: fill(value) for key, value in node.items()}
        if isinstance(node, list):
            return [fill(value) for value in node]
        if isinstance(node, str) and node in values:
            return values[node]
        return node

    spec = energies.get(energy, task="corpus")
    module, class_name = spec.layer.split(":")
    config = fill(json.loads(_TEMPLATE))
    for layer in config["config"]["layers"]:
        if layer["class_name"] == "GaussianEmbedding":
            layer["config"]["covariance"] = covariance
        if layer["name"] == "energy":  # the template's is EL's
            layer.update(class_name=class_name, module=module,
                         registered_name=f"keras_gauss>{class_name}")
            if "include_constant" not in spec.options:
                del layer["config"]["include_constant"]
    config["config"]["name"] = f"corpus_{energy}"
    return config


def _layers(tables, energy):
    """`keras_gauss.keras_file.write_keras_file`'s layers of the corpus model."""
    layers = [(f"{energy}_energy", "energy", [])]
    for group, layer, (means, variances) in (("gaussian_embedding", "words", tables[:2]),
                                             ("gaussian_embedding_1", "contexts", tables[2:])):
        layers.append((group, layer, [np.asarray(means, np.float32),
                                      np.asarray(variances, np.float32)]))
    for index, layer in enumerate(("context", "word", "negatives")):
        layers.append(("input_layer" + (f"_{index}" if index else ""), layer, []))
    return layers


def write_corpus_model(path, tables, accumulators, config, iterations=0):
    """Writes `model.keras` for the corpus model holding these tables.

    Args:
        path: the file to write.
        tables: `(word_means, word_variances, context_means,
            context_variances)` arrays.
        accumulators: their four AdaGrad accumulators.
        config: the `corpus_model_config` dict.
        iterations: the optimizer's step count.

    Example: a 3-word, 2-d EL model, loaded back with Keras.

    >>> import keras, keras_gauss
    >>> config = corpus_model_config(3, 2, 1, "el", "diagonal", 4.0, 0.05, 5.0, 0, 1.0,
    ...                              0.2, 0.5)
    >>> tables = [np.zeros((3, 2)), np.ones((3, 2))] * 2  # means, variances (x2)
    >>> write_corpus_model("model.keras", tables, [np.zeros((3, 2))] * 4, config)
    >>> model = keras.saving.load_model("model.keras")
    >>> model.get_layer("words").variances.numpy().tolist()
    [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]
    """
    layers = config["config"]["layers"]
    classes = {layer["class_name"] for layer in layers}
    energy = next(e.name for e in energies.ALL if e.layer.split(":")[1] in classes)
    learning_rate = config["compile_config"]["optimizer"]["config"]["learning_rate"]
    optimizer = [np.int64(iterations), np.float32(learning_rate),
                 *(np.asarray(a, np.float32) for a in accumulators)]
    write_keras_file(path, config, _layers(tables, energy), ("sparse_adagrad", optimizer),
                     config["config"]["name"])
