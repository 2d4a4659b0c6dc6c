from keras_gauss.constraints.norm_clip import NormClip
from keras_gauss.constraints.row_constraint import RowConstraint
from keras_gauss.constraints.variance_clip import VarianceClip

__all__ = ["NormClip", "RowConstraint", "VarianceClip"]
