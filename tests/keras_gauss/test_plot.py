"""`keras_gauss.plot`: ellipses at a probability mass, labels that do not overprint."""

import numpy as np
import pytest
from matplotlib.patches import Ellipse

from keras_gauss.plot import mass_radius, plot_gaussians


def test_ellipses_are_drawn_at_the_given_mass():
    ax = plot_gaussians([[0, 0], [1, 0]], [[4.0, 1.0], [0.25, 0.25]], ["a", "b"], mass=0.9)
    widths = sorted({(round(p.width, 6), round(p.height, 6)) for p in ax.patches
                     if isinstance(p, Ellipse)})
    r = mass_radius(0.9)
    assert widths == [(round(2 * r * 0.5, 6), round(2 * r * 0.5, 6)),
                      (round(2 * r * 2.0, 6), round(2 * r * 1.0, 6))]


@pytest.mark.parametrize("position", ["center", "top"])
def test_labels_do_not_overprint(position):
    # nested and coincident Gaussians: every label starts on top of others
    means = np.zeros((6, 2)) + np.linspace(0, 0.05, 6)[:, None]
    variances = np.geomspace(4.0, 0.1, 6)[:, None] * np.ones((6, 2))
    labels = ["mammal", "placental", "carnivore", "feline", "big_cat", "lion"]
    ax = plot_gaussians(means, variances, labels, mass=0.9, label_position=position)
    renderer = ax.figure.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.texts]
    assert len(boxes) == 6
    assert not any(boxes[i].overlaps(boxes[j]) for i in range(6) for j in range(i))


def test_bad_arguments():
    with pytest.raises(ValueError, match="mass"):
        mass_radius(1.0)
    with pytest.raises(ValueError, match="label_position"):
        plot_gaussians([[0, 0]], [[1, 1]], ["a"], label_position="left")



@pytest.mark.parametrize("position", ["center", "top"])
def test_labels_do_not_overprint_once_drawn_in_a_tall_panel(position):
    # an equal-aspect panel of a tall figure gets shorter when drawn: labels
    # stacked one step apart before that collide after, unless they are
    # placed in the drawn transform
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, 1, figsize=(3, 12))
    means = np.array([[0.0, 0.0], [0.0, -0.02], [0.0, 0.02]])
    variances = np.array([1.0, 0.01, 0.01])[:, None] * np.ones((3, 2))
    labels = ["mammal", "carnivore_a", "carnivore_b"]
    ax = plot_gaussians(means, variances, labels, ax=axes[0], mass=0.9, label_position=position)
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.texts]
    assert not any(boxes[i].overlaps(boxes[j]) for i in range(3) for j in range(i))
    plt.close(figure)
