import pytest

from keras_gauss.io import OutputExistsError, atomic_directory, check_output_dir


def test_directory_appears_only_on_success(tmp_path):
    target = tmp_path / "run"
    with pytest.raises(RuntimeError):
        with atomic_directory(target) as tmp:
            (tmp / "model.keras").write_text("half")
            raise RuntimeError("crash while saving")
    assert list(tmp_path.iterdir()) == []
    with atomic_directory(target) as tmp:
        (tmp / "model.keras").write_text("whole")
    assert (target / "model.keras").read_text() == "whole"
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_existing_directory_needs_overwrite(tmp_path):
    target = tmp_path / "run"
    target.mkdir()
    (target / "old.txt").write_text("old")
    with pytest.raises(OutputExistsError, match="--overwrite"):
        with atomic_directory(target):
            pass
    with atomic_directory(target, overwrite=True) as tmp:
        (tmp / "new.txt").write_text("new")
    assert sorted(p.name for p in target.iterdir()) == ["new.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_a_file_is_not_an_output_directory(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(OutputExistsError, match="not a directory"):
        check_output_dir(path, overwrite=True)


def test_empty_directory_is_accepted(tmp_path):
    (tmp_path / "empty").mkdir()
    assert check_output_dir(tmp_path / "empty") == tmp_path / "empty"
