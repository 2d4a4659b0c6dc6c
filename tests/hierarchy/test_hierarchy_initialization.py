"""The tree-shaped start of a hierarchy table (`keras_gauss.hierarchy.initialization`)."""

import numpy as np
import pytest

from keras_gauss.hierarchy.closure import closure_index
from keras_gauss.hierarchy.initialization import tree_depths
from keras_gauss.hierarchy.initialization import tree_initialization

# 0 and 5 are tops; 1, 2 under 0; 3 under 1 and 2 (two parents); 4 under 3; 6 under 5.
LINKS = np.array([[1, 0], [2, 0], [3, 1], [3, 2], [4, 3], [6, 5]])
INDEX = closure_index(LINKS, 7)


def start(**kwargs):
    settings = {"min_variance": 0.01, "max_variance": 4.0, "max_norm": 10.0, "seed": 0,
                **kwargs}
    return tree_initialization(INDEX, 8, **settings)


def test_depths_are_the_longest_path_from_a_top():
    assert tree_depths(LINKS, 7).tolist() == [0, 1, 1, 2, 3, 0, 1]


def test_variances_shrink_a_level_from_the_upper_to_the_lower_bound():
    means, variances = start()
    assert means.shape == variances.shape == (7, 8)
    assert means.dtype == variances.dtype == np.float32
    v = variances[:, 0]
    np.testing.assert_allclose(v[[0, 5]], 4.0)  # tops: the upper bound
    np.testing.assert_allclose(v[4], 0.01, rtol=1e-6)  # the deepest level: the lower bound
    for child, parent in LINKS:  # every child narrower than its parents: nested
        assert v[child] < v[parent]
    np.testing.assert_allclose(v[1] / v[0], v[3] / v[1], rtol=1e-5)  # one factor a level
    assert (variances == v[:, None]).all()  # diagonal, the same in every dimension


def test_a_child_sits_near_its_parents_mean_and_a_start_follows_the_seed():
    means, _ = start(spread=0.0)  # no noise: a child is its parents' mean
    np.testing.assert_allclose(means[3], (means[1] + means[2]) / 2, atol=1e-6)
    np.testing.assert_allclose(means[1], means[0], atol=1e-6)
    assert not np.allclose(means[0], means[5])  # the tops apart
    a, b, c = start(seed=1)[0], start(seed=1)[0], start(seed=2)[0]
    assert np.array_equal(a, b) and not np.allclose(a, c)
    far, _ = start(spread=50.0, max_norm=1.5)
    assert np.linalg.norm(far, axis=1).max() <= 1.5 + 1e-5


def test_spherical_has_one_variance_a_node_and_bad_bounds_fail_in_one_line():
    _, variances = start(spherical=True)
    assert variances.shape == (7, 1)
    with pytest.raises(ValueError, match="needs 0 < --min-variance <= --max-variance"):
        start(min_variance=0.0)
    with pytest.raises(ValueError, match="spread must be a finite number >= 0"):
        start(spread=-1.0)


def test_kl_runs_start_from_the_tree_and_containment_from_uniform():
    from keras_gauss.hierarchy.native_training import pair_table
    from keras_gauss.hierarchy.train import WordNetConfig

    config = WordNetConfig(dim=8, seed=3).resolved()
    assert (config.energy, config.init, config.loss) == ("kl", "tree", "threshold")
    table = pair_table(config, 7, total_steps=1, index=INDEX)
    means, variances = tree_initialization(INDEX, 8, min_variance=config.min_variance,
                                           max_variance=config.max_variance,
                                           max_norm=config.max_norm, seed=3)
    assert np.array_equal(table.means, means) and np.array_equal(table.variances, variances)
    boxes = pair_table(WordNetConfig(dim=8, energy="containment").resolved(), 7, 1, INDEX)
    assert (boxes.variances == 1.0).all() and np.abs(boxes.means).max() <= 0.05
    with pytest.raises(ValueError, match="--init must be one of uniform, tree, tree-size, got 'ring'"):
        WordNetConfig(init="ring").validate()


def test_tree_size_makes_the_node_with_more_below_it_the_broader_one_at_one_depth():
    # 1 and 2 are at depth 1 and 6 too; 1 and 2 have 3 and 4 below them, 6 nothing.
    _, depth_only = start()
    _, sized = start(size_weight=0.25)
    d, s = depth_only[:, 0], sized[:, 0]
    assert d[1] == d[6] and s[1] > s[6]  # equal by depth, apart by what lies below
    for child, parent in LINKS:  # still nested along every link
        assert s[child] < s[parent]
    np.testing.assert_allclose(s[[0, 4, 6]], [4.0, 0.01, 0.2], rtol=1e-5)  # level 1, 0, 0.75 * 2 / 3
    assert np.array_equal(start(size_weight=0.0)[1], depth_only)  # 0: today's start, bit for bit
    with pytest.raises(ValueError, match=r"size_weight must lie in \[0, 1\], got 1.5"):
        start(size_weight=1.5)


def test_init_tree_size_starts_from_the_sized_tree():
    from keras_gauss.hierarchy.initialization import SIZE_WEIGHT
    from keras_gauss.hierarchy.native_training import pair_table
    from keras_gauss.hierarchy.train import WordNetConfig

    config = WordNetConfig(dim=8, seed=3, init="tree-size").resolved()
    config.validate()
    table = pair_table(config, 7, total_steps=1, index=INDEX)
    means, variances = tree_initialization(INDEX, 8, min_variance=config.min_variance,
                                           max_variance=config.max_variance,
                                           max_norm=config.max_norm, seed=3,
                                           size_weight=SIZE_WEIGHT)
    assert np.array_equal(table.means, means) and np.array_equal(table.variances, variances)
    assert not np.array_equal(table.variances, pair_table(WordNetConfig(dim=8, seed=3).resolved(),
                                                          7, 1, INDEX).variances)
