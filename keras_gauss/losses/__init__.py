from keras_gauss.losses.max_margin_ranking import MaxMarginRanking
from keras_gauss.losses.max_margin_ranking import max_margin_ranking
from keras_gauss.losses.thresholded_divergence import ThresholdedDivergence
from keras_gauss.losses.thresholded_divergence import thresholded_divergence

__all__ = [
    "MaxMarginRanking",
    "ThresholdedDivergence",
    "max_margin_ranking",
    "thresholded_divergence",
]
