"""Users' own data: ``empirical.data.datasets.load_arrays`` (dataset ``npz``) and its spec wiring."""

from __future__ import annotations

import json

import numpy as np
import pytest

from audits.cli import main as cli_main
from audits.fields import SpecError
from audits.loader import spec_from_toml
from audits.spec import DatasetSpec
from empirical.data.datasets import load_arrays, load_dataset


def _write(path, **arrays):
    np.savez(path, **arrays)
    return path


def _two_blobs(n: int = 60, d: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = np.array([7, 2] * (n // 2))
    X = rng.normal(size=(n, d)) + np.where(y == 7, 1.0, -1.0)[:, None]
    return X, y


def test_arrays_become_a_unit_norm_pair_with_the_stated_first_label_positive(tmp_path):
    X, y = _two_blobs()
    data = load_arrays(_write(tmp_path / "mine.npz", X=X, y=y), classes=(7, 2))
    # no test split in the file: the last ceil(60 / 5) = 12 rows are held out
    assert (data.n, data.n_test, data.dim) == (48, 12, 3)
    assert np.allclose(np.linalg.norm(data.features, axis=1), 1.0)
    assert np.array_equal(data.labels, np.where(y[:48] == 7, 1.0, -1.0))
    assert np.array_equal(data.test_labels, np.where(y[48:] == 7, 1.0, -1.0))
    assert np.allclose(data.features[0], X[0] / np.linalg.norm(X[0]))
    assert "label 7 (+1) vs 2 (-1)" in data.provenance and "last 12 records" in data.provenance
    swapped = load_arrays(tmp_path / "mine.npz", classes=(2, 7))
    assert np.array_equal(swapped.labels, -data.labels)


def test_a_given_test_split_is_used_and_string_labels_work(tmp_path):
    X, y = _two_blobs()
    names = np.where(y == 7, "cat", "ship")
    path = _write(tmp_path / "s.npz", X=X[:40], y=names[:40], X_test=X[40:], y_test=names[40:])
    data = load_dataset("npz", path=path, classes=("ship", "cat"), n_train=30)
    assert (data.n, data.n_test) == (30, 20)
    assert np.array_equal(data.labels, np.where(names[:30] == "ship", 1.0, -1.0))


@pytest.mark.parametrize("arrays, message", [
    ({"X": np.ones((4, 2))}, "lacks array(s) y"),
    ({"X": np.ones(4), "y": np.zeros(4)}, "X must be a non-empty [n, d] array"),
    ({"X": np.ones((4, 2)), "y": np.zeros(3)}, "y must be a [n] array with one label per row"),
    ({"X": np.ones((4, 2)), "y": np.zeros((4, 1))}, "y must be a [n] array"),
    ({"X": np.array([[1.0, 2.0], [np.nan, 1.0], [1.0, 1.0], [2.0, 1.0]]), "y": [0, 1, 0, 1]},
     "NaN or infinite values in 1 row(s), the first at row 1"),
    ({"X": np.ones((5, 2)), "y": [0, 1, 3, 1, 9]},
     "2 label(s) outside the stated pair (0, 1), e.g. 3, 9 (first at row 2)"),
    ({"X": np.ones((5, 2)), "y": [0.0, 1.0, np.nan, 1.0, 0.0]}, "NaN or infinite labels"),
    ({"X": np.ones((5, 2)), "y": [0, 1, 0, 1, 0], "X_test": np.ones((2, 2))},
     "only one of X_test and y_test"),
    ({"X": np.ones((5, 2)), "y": [0, 1, 0, 1, 0], "X_test": np.ones((2, 3)), "y_test": [0, 1]},
     "X has 2 features per row, X_test 3"),
    ({"X": np.ones((5, 2)), "y": [0, 0, 0, 0, 1]}, "must contain both labels"),
])
def test_bad_arrays_are_refused_with_the_array_named(tmp_path, arrays, message):
    path = _write(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError) as caught:
        load_arrays(path, classes=(0, 1))
    assert message in str(caught.value) and str(path) in str(caught.value)


def test_a_file_that_is_not_npz_is_refused(tmp_path):
    text = tmp_path / "data.csv"
    text.write_text("1,2,0\n")
    with pytest.raises(ValueError, match="data.csv is not a zip/npz file"):
        load_arrays(text, classes=(0, 1))
    fake = tmp_path / "fake.npz"
    fake.write_bytes(b"not a zip archive")
    with pytest.raises(ValueError, match="fake.npz is not a zip/npz file"):
        load_arrays(fake, classes=(0, 1))


def test_a_spec_names_the_npz_fields_it_needs():
    with pytest.raises(SpecError, match=r"spec.dataset.classes: is required for the npz dataset"):
        DatasetSpec(name="npz", path="mine.npz")
    with pytest.raises(SpecError, match=r"spec.dataset.path: dataset 'npz' is read from your files"):
        DatasetSpec(name="npz", classes=(0, 1))
    with pytest.raises(SpecError, match=r"spec.dataset.classes: must be two different labels"):
        DatasetSpec(name="npz", path="mine.npz", classes=(1, 1))
    with pytest.raises(SpecError, match=r"spec.dataset.classes\[1\]: must be an integer or a string"):
        DatasetSpec(name="npz", path="mine.npz", classes=(1, 0.5))
    spec = DatasetSpec(name="npz", path="mine.npz", classes=(-1, 1), n_train=10)
    assert spec.loader_options() == {"path": "mine.npz", "classes": (-1, 1), "n_train": 10}


def test_an_audit_runs_on_users_arrays_from_a_spec(tmp_path, monkeypatch, capsys):
    X, y = _two_blobs(n=80, d=4)
    _write(tmp_path / "mine.npz", X=X, y=y)
    (tmp_path / "mine.toml").write_text(
        'name = "mine"\ntrials = 20\npilot_trials = 10\nchunk_size = 10\n'
        '[dataset]\nname = "npz"\npath = "mine.npz"\nclasses = [7, 2]\n')
    monkeypatch.chdir(tmp_path)
    spec = spec_from_toml(tmp_path / "mine.toml")
    assert spec.dataset.classes == (7, 2)
    code = cli_main(["audit", "run", "mine.toml", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code in (0, 4) and out["n_trials"] == 20
    report = json.loads((tmp_path / "audit-out" / "mine" / "report.json").read_text())
    assert report["spec"]["dataset"] == {**report["spec"]["dataset"], "name": "npz", "classes": [7, 2]}
    (tmp_path / "bad.npz").write_bytes(b"")
    (tmp_path / "bad.toml").write_text('[dataset]\nname = "npz"\npath = "missing.npz"\nclasses = [0, 1]\n')
    assert cli_main(["audit", "run", "bad.toml"]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: spec.dataset: cannot load 'npz': missing.npz: not found")
