"""The reduction / HyperLex table of `benchmarks/wordnet_literature.py`, on
made-up metrics (nothing trained). Not part of the product's suite:
`python -m pytest benchmarks/test_wordnet_literature.py`."""

import argparse
import math

import pytest
import wordnet_literature as lit  # benchmarks/ (pytest puts it on the path)


def reduction_metrics(model, lookup=0.5, depth=0.7):
    """`metrics.json` of a `--split reduction` run: `model` accuracies per kind."""
    def scorer(accuracies):
        return {k: {"test_accuracy": a, "val_accuracy": 0.0} for k, a in zip(lit.KINDS, accuracies)}
    return {"evaluation": {"model": scorer(model), "closure_lookup": scorer([lookup] * 3),
                           "depth_difference": scorer([depth] * 3)}}


def test_cell_reads_every_scorer_and_kind_and_hyperlex():
    cell = lit.held_out_cell(reduction_metrics([0.98, 0.91, 0.6]), {"hyperlex_spearman": 0.7})
    assert cell["random"] == 0.98 and cell["reversed"] == 0.91 and cell["sibling"] == 0.6
    assert cell["lookup reversed"] == 0.5 and cell["depth sibling"] == 0.7
    assert cell["hyperlex"] == 0.7
    undefined = {"hyperlex_spearman": math.nan, "hyperlex_undefined": "all scores equal"}
    assert lit.held_out_cell(main=undefined) == {"hyperlex": None}


def test_table_rows_means_and_targets():
    cells = {("kl", 0): lit.held_out_cell(reduction_metrics([0.97, 0.90, 0.6]),
                                          {"hyperlex_spearman": 0.50}),
             ("kl", 1): lit.held_out_cell(reduction_metrics([0.99, 0.92, 0.6]),
                                          {"hyperlex_spearman": 0.70}),
             ("containment", 0): lit.held_out_cell(reduction_metrics([0.96, 0.8, 0.7]),
                                                   {"hyperlex_spearman": 0.69}),
             ("containment", 1): lit.held_out_cell(reduction_metrics([0.96, 0.8, 0.7]),
                                                   {"hyperlex_spearman": 0.69})}
    lines = lit.held_out_table(cells, ["kl", "containment"], [0, 1], ["reduction", "hyperlex"])
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:] for line in lines
            if line.startswith("| ")}
    assert rows["density order embeddings (published)"][-1] == ".590 |"
    assert rows["keras-gauss, kl (defaults; seeds 0, 1)"] == [
        ".980±.010", ".910±.010", ".600±.000", ".600±.100 |"]
    assert rows["closure lookup (same splits)"][:3] == [".500±.000"] * 3
    assert rows["depth difference (same splits)"][-1] == " |"  # no HyperLex baseline
    assert rows["target (issue 33)"] == [">= .975", ">= .900", "", ">= .690 |"]
    kl, containment = (line for line in lines if line.startswith("targets"))
    assert "reduction random .980 >= .975 met (lowest seed .970)" in kl
    assert "reduction reversed .910 >= .900 met" in kl and "HyperLex nouns .600 < .690 missed" in kl
    assert "reduction random .960 < .975 missed" in containment
    assert "HyperLex nouns .690 >= .690 met" in containment


def test_reduction_alone_has_no_hyperlex_column():
    cells = {("kl", 0): lit.held_out_cell(reduction_metrics([0.97, 0.90, 0.6]))}
    lines = lit.held_out_table(cells, ["kl"], [0], ["reduction"])
    assert "HyperLex" not in lines[0] and not any("published" in line for line in lines)
    assert "| keras-gauss, kl (defaults; seeds 0) | .970 | .900 | .600 |" in lines


def test_missing_hyperlex_file_is_one_line_and_trains_nothing(tmp_path, monkeypatch, capsys):
    def train(*args, **kwargs):
        raise AssertionError("trained")

    monkeypatch.setattr(lit, "run_config", train)
    args = argparse.Namespace(hyperlex=str(tmp_path / "absent.txt"), energies=["kl"], seeds=[0],
                              out=str(tmp_path), verbose=0)
    lit.held_out_tables(args, {}, ["hyperlex"], start=0.0)
    out = capsys.readouterr().out
    assert out == f"HyperLex column skipped: no file {tmp_path / 'absent.txt'} (--hyperlex)\n"
    with pytest.raises(AssertionError, match="trained"):  # the reduction runs still train
        lit.held_out_tables(args, {}, ["hyperlex", "reduction"], start=0.0)
