"""AdaGrad's floor is `SparseAdagrad`'s and every trainer's default, from one place."""

import inspect

from keras_gauss.fused.native import NativeTables
from keras_gauss.fused.pairs import NativePairTable
from keras_gauss.optimizers import SparseAdagrad
from keras_gauss.optimizers.adagrad_floor import EPSILON
from keras_gauss.optimizers.adagrad_floor import INITIAL_ACCUMULATOR
from keras_gauss.pipelines.model_file import corpus_model_config
from keras_gauss.pipelines.train import ADAGRAD_FLOOR
from keras_gauss.pipelines.train import CorpusConfig


def _default(function, name):
    return inspect.signature(function).parameters[name].default


def test_every_default_is_the_floor():
    config = SparseAdagrad().get_config()
    assert (config["initial_accumulator_value"], config["epsilon"]) == (INITIAL_ACCUMULATOR,
                                                                        EPSILON)
    assert ADAGRAD_FLOOR == {"initial_accumulator": INITIAL_ACCUMULATOR, "epsilon": EPSILON}
    corpus = CorpusConfig()
    assert (corpus.initial_accumulator, corpus.epsilon) == (INITIAL_ACCUMULATOR, EPSILON)
    assert _default(corpus_model_config, "initial_accumulator") == INITIAL_ACCUMULATOR
    assert _default(corpus_model_config, "epsilon") == EPSILON
    assert _default(NativePairTable.initial, "initial_accumulator") == INITIAL_ACCUMULATOR
    assert _default(NativePairTable, "epsilon") == EPSILON
    assert _default(NativeTables.train, "epsilon") == EPSILON
