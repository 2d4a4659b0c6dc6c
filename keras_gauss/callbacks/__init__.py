from keras_gauss.callbacks.finite_loss import FiniteLoss
from keras_gauss.callbacks.project_constraints import ProjectConstraints

__all__ = ["FiniteLoss", "ProjectConstraints"]
