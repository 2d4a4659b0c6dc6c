from keras_gauss.callbacks.project_constraints import ProjectConstraints

__all__ = ["ProjectConstraints"]
