from keras_gauss.losses.max_margin_ranking import MaxMarginRanking
from keras_gauss.losses.max_margin_ranking import max_margin_ranking

__all__ = ["MaxMarginRanking", "max_margin_ranking"]
