from keras_gauss.layers.el_energy import ELEnergy
from keras_gauss.layers.gaussian_embedding import GaussianEmbedding
from keras_gauss.layers.kl_energy import KLEnergy

__all__ = ["ELEnergy", "GaussianEmbedding", "KLEnergy"]
