"""The defaults a `WordNetConfig` resolves to (`WordNetConfig.resolved`):
KL on the reduction split takes its own (`SPLIT_DEFAULTS`, setting B of
research/reduction_kl.md), a setting given wins, every other split and
energy resolves as before they existed, and a checkpoint of those concrete
values still resumes."""

import dataclasses

import numpy as np
import pytest

from keras_gauss.checkpoint import CheckpointError
from keras_gauss.checkpoint import load_for_resume
from keras_gauss.checkpoint import write_checkpoint
from keras_gauss.cli import build_parser
from keras_gauss.hierarchy.config import GPU_SETTINGS
from keras_gauss.hierarchy.config import WordNetConfig
from keras_gauss.hierarchy.train import RESUME_DEFAULTS
from keras_gauss.hierarchy.train import checkpoint_settings

FIELDS = ("init", "max_variance", "learning_rate", "generality", "epochs", "patience")
SETTING_B = ("tree-size", 50.0, 0.003, 0.3, 3, 5)


def _resolved(**fields):
    config = WordNetConfig(**fields).resolved()
    config.validate()
    return tuple(getattr(config, name) for name in FIELDS)


def _command(*flags):
    """The config `keras-gauss train-wordnet` builds from these flags on a
    CPU (the settings a GPU would fill in, `device_settings`, left to
    `WordNetConfig`'s defaults)."""
    args = build_parser().parse_args(["train-wordnet", "--out", "x", *flags])
    names = {f.name for f in dataclasses.fields(WordNetConfig)}
    return WordNetConfig(**{k: v for k, v in vars(args).items()
                            if k in names and not (k in GPU_SETTINGS and v is None)})


def test_kl_on_the_reduction_split_defaults_to_setting_b():
    assert _resolved(split="reduction") == SETTING_B
    assert _resolved(split="reduction", energy="kl", edges="taxonomy.tsv") == SETTING_B
    config = _command("--split", "reduction").resolved()
    config.validate()
    assert tuple(getattr(config, name) for name in FIELDS) == SETTING_B
    assert (config.energy, config.loss, config.threshold, config.margin, config.negatives,
            config.reversed_negatives, config.max_norm, config.min_variance) == (
        "kl", "threshold", 20.0, 20.0, 10, True, 10.0, 0.01)  # KL's own, unchanged


@pytest.mark.parametrize("flag, field, value", [
    ("--learning-rate", "learning_rate", 0.3), ("--max-variance", "max_variance", 5.0),
    ("--generality", "generality", 0.0), ("--init", "init", "tree"), ("--epochs", "epochs", 20)])
def test_a_setting_given_wins_over_the_split_default(flag, field, value):
    config = _command("--split", "reduction", flag, str(value)).resolved()
    assert getattr(config, field) == value  # the value of today's other splits, given
    others = [name for name in FIELDS if name not in (field, "patience")]
    assert [getattr(config, name) for name in others] == [
        b for name, b in zip(FIELDS, SETTING_B) if name in others]


@pytest.mark.parametrize("fields, expected", [
    ({"include_lemmas": False}, ("tree", 5.0, 0.3, 0.0, 10, 0)),
    ({}, ("tree", 5.0, 0.3, 0.1, 3, 0)),  # word nodes (WORD_NODES)
    ({"split": "closure", "energy": "containment"}, ("uniform", 5.0, 0.3, 0.0, 10, 0)),
    ({"split": "reduction", "energy": "containment"}, ("uniform", 5.0, 0.3, 0.0, 20, 5)),
    ({"split": "reduction", "val_size": 0, "test_size": 0}, ("tree", 5.0, 0.3, 0.0, 10, 0)),
    ({"split": "ganea", "non_basic_percent": 10}, ("tree", 5.0, 0.3, 0.0, 200, 20)),
    ({"split": "ganea", "non_basic_percent": 10, "energy": "containment"},
     ("uniform", 5.0, 0.3, 0.0, 200, 20)),
    ({"train_edges": "t", "val_edges": "v", "test_edges": "e"}, ("tree", 5.0, 0.3, 0.0, 200, 20)),
])
def test_other_splits_and_containment_resolve_as_before(fields, expected):
    assert _resolved(**fields) == expected
    config = WordNetConfig(**fields).resolved()
    assert config == config.resolved()  # resolving twice changes nothing


def test_containment_on_the_reduction_split_takes_no_generality_term():
    config = _command("--split", "reduction", "--energy", "containment").resolved()
    config.validate()
    assert config.generality == 0.0
    with pytest.raises(ValueError, match="generality"):  # given, it is refused as before
        WordNetConfig(split="reduction", energy="containment", generality=0.3).validate()


def _old_checkpoint(out, **changed):
    """A checkpoint whose settings hold the concrete values that
    `WordNetConfig()` had as defaults before they were `None`."""
    old = {**dataclasses.asdict(WordNetConfig(include_lemmas=False).resolved()),
           "learning_rate": 0.3, "max_variance": 5.0, "init": "tree", "epochs": 10, "patience": 0,
           "sibling_negatives": 0.0, **changed}
    old.pop("generality")
    write_checkpoint(out, {"format": 2, "kind": "hierarchy", "settings": old},
                     {"table/0": np.zeros(1)})


def test_a_checkpoint_of_the_old_concrete_defaults_resumes(tmp_path):
    _old_checkpoint(tmp_path)
    load_for_resume(tmp_path, "hierarchy", checkpoint_settings(
        WordNetConfig(sibling_negatives=0.0, include_lemmas=False).resolved()), RESUME_DEFAULTS)
    # without its old --sibling-negatives 0 (KL's closure default is now 0.1): one line
    with pytest.raises(CheckpointError, match="started with --sibling-negatives 0.0, this "
                                              "command has 0.1"):
        load_for_resume(tmp_path, "hierarchy", checkpoint_settings(
            WordNetConfig(include_lemmas=False).resolved()), RESUME_DEFAULTS)
    # with today's defaults (word nodes and their settings): one line naming every difference
    with pytest.raises(CheckpointError, match=r"started with --epochs 10 and --lemmas False and "
                                              r"--min-variance 0.01 and --sibling-negatives 0.0 "
                                              r"and --threshold 20.0, this command has 3 and "
                                              r"True and 0.05 and 0.1 and 40.0; resume"):
        load_for_resume(tmp_path, "hierarchy", checkpoint_settings(WordNetConfig().resolved()),
                        RESUME_DEFAULTS)
    # an old reduction run trained with those values: resumed when they are given
    _old_checkpoint(tmp_path, split="reduction", epochs=20, patience=5)
    given = WordNetConfig(split="reduction", init="tree", max_variance=5.0, learning_rate=0.3,
                          epochs=20).resolved()
    load_for_resume(tmp_path, "hierarchy", checkpoint_settings(given), RESUME_DEFAULTS)
    with pytest.raises(CheckpointError, match="started with --epochs 20 and --init tree and "
                                              "--learning-rate 0.3 and --max-variance 5.0, this "
                                              "command has 3 and tree-size and 0.003 and 50.0;"):
        load_for_resume(tmp_path, "hierarchy",
                        checkpoint_settings(WordNetConfig(split="reduction").resolved()),
                        RESUME_DEFAULTS)


def test_the_main_job_adds_word_nodes_and_no_other_run_does():
    config = _command().resolved()
    assert (config.include_lemmas, config.epochs, config.generality, config.threshold,
            config.min_variance) == (True, 3, 0.1, 40.0, 0.05)
    for flags in (["--energy", "containment"], ["--split", "reduction"], ["--pos", "v"],
                  ["--split", "ganea", "--non-basic-percent", "10"], ["--val-size", "0",
                  "--test-size", "0"], ["--drop-root", "entity.n.01"], ["--no-lemmas"]):
        assert not _command(*flags).resolved().include_lemmas, flags
    assert not WordNetConfig(edges="taxonomy.tsv").resolved().include_lemmas
    config = _command("--no-lemmas").resolved()  # the synset run, as before word nodes
    assert (config.epochs, config.generality, config.sibling_negatives, config.threshold,
            config.min_variance) == (10, 0.0, 0.1, 20.0, 0.01)
    given = _command("--lemmas", "--epochs", "5", "--generality", "0").resolved()
    assert (given.include_lemmas, given.epochs, given.generality) == (True, 5, 0.0)
    assert _command("--lemmas", "--energy", "containment").resolved().epochs == 10


def test_kl_on_the_closure_split_draws_a_tenth_of_its_negatives_as_siblings():
    assert WordNetConfig().resolved().sibling_negatives == 0.1
    for fields in ({"energy": "containment"}, {"split": "reduction"}, {"split": "ganea"},
                   {"val_size": 0}):
        assert WordNetConfig(**fields).resolved().sibling_negatives == 0.0, fields
    assert WordNetConfig(sibling_negatives=0.0).resolved().sibling_negatives == 0.0
    assert _command("--sibling-negatives", "0.5").resolved().sibling_negatives == 0.5


def test_a_run_resumes_with_its_files_named_from_another_directory(tmp_path):
    """`--resume` compares the edges files by content (the data digest), not
    by path: `--edges ../edges.tsv` resumes the run of `--edges edges.tsv`."""
    for started, again in (
            (dict(edges="edges.tsv"), dict(edges="../edges.tsv")),
            (dict(train_edges="t.tsv", val_edges="v.tsv", test_edges="e.tsv"),
             dict(train_edges="s/t.tsv", val_edges="s/v.tsv", test_edges="s/e.tsv"))):
        write_checkpoint(tmp_path, {"format": 2, "kind": "hierarchy", "settings":
                                    checkpoint_settings(WordNetConfig(**started).resolved())},
                         {"table/0": np.zeros(1)})
        load_for_resume(tmp_path, "hierarchy",
                        checkpoint_settings(WordNetConfig(**again).resolved()), RESUME_DEFAULTS)
        with pytest.raises(CheckpointError, match="started with --dim 50, this command has 8"):
            load_for_resume(tmp_path, "hierarchy", checkpoint_settings(
                WordNetConfig(**again, dim=8).resolved()), RESUME_DEFAULTS)
