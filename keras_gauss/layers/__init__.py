from keras_gauss.layers.candidate_energies import ENERGIES
from keras_gauss.layers.candidate_energies import ENERGY_LAYERS
from keras_gauss.layers.candidate_energies import candidate_energies
from keras_gauss.layers.containment_energy import ContainmentEnergy
from keras_gauss.layers.containment_energy import containment_energy
from keras_gauss.layers.el_energy import ELEnergy
from keras_gauss.layers.gaussian_embedding import GaussianEmbedding
from keras_gauss.layers.gaussian_energy import GaussianEnergy
from keras_gauss.layers.kl_energy import KLEnergy
from keras_gauss.layers.skipgram_sampler import SkipGramSampler
from keras_gauss.layers.skipgram_sampler import sample_skipgram

__all__ = [
    "ENERGIES",
    "ENERGY_LAYERS",
    "ContainmentEnergy",
    "ELEnergy",
    "GaussianEmbedding",
    "GaussianEnergy",
    "KLEnergy",
    "SkipGramSampler",
    "candidate_energies",
    "containment_energy",
    "sample_skipgram",
]
