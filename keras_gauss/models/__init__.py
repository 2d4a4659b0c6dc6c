from keras_gauss.models.gaussian_model import GaussianModel
from keras_gauss.models.row_lookups import RowGradient

__all__ = ["GaussianModel", "RowGradient"]
