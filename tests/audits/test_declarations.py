"""Attacks, statistics and estimators are declared once; the enums and the execution options
read as the plain words the report shows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from audits.attacks import (
    DEFAULT_ATTACKS,
    Attack,
    AttackSource,
    attack,
    attack_names,
    generic_attacks,
    pilot_attacks,
    projects_statistics,
    register_attack,
)
from audits.estimators import estimator_summaries
from audits.options import Backend, ExecutionOptions
from audits.statistics import ScoreOrientation, statistic_names
from empirical.statistics import PrivacyDirection

ROOT = Path(__file__).resolve().parents[2]

# Quoted uses of a declared name outside its declaration that are not the attack, statistic or
# estimator: a kind of stored array, a key of the report's ROC plot, the empirical floor's own
# strategy names.
NOT_THE_DECLARATION = {
    ("projection", "audits/chunks.py"),
    ("auc", "audits/analysis.py"), ("auc", "audits/report/schema.py"),
    ("auc", "audits/report/figures.py"),
}


def _quoted(name: str) -> re.Pattern[str]:
    return re.compile(rf"[\"']{re.escape(name)}[\"']")


@pytest.mark.parametrize("module, names", [
    ("audits/attacks.py", attack_names()),
    ("audits/statistics.py", statistic_names()),
    ("audits/estimators.py", tuple(estimator_summaries())),
])
def test_each_name_is_written_only_in_its_declaration(module: str, names: tuple[str, ...]) -> None:
    assert names
    for name in names:
        declared = (ROOT / module).read_text(encoding="utf-8")
        assert len(_quoted(name).findall(declared)) == 1, (name, module)
        elsewhere = sorted(
            path.relative_to(ROOT).as_posix() for path in (ROOT / "audits").rglob("*.py")
            if path.relative_to(ROOT).as_posix() != module
            and (name, path.relative_to(ROOT).as_posix()) not in NOT_THE_DECLARATION
            and _quoted(name).search(path.read_text(encoding="utf-8")))
        assert not elsewhere, f"{name!r} is written outside {module}: {elsewhere}"


def test_a_name_is_declared_once_and_an_unknown_one_is_named_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="already declared"):
        register_attack(Attack(name=DEFAULT_ATTACKS[0], summary="again"))
    with pytest.raises(ValueError, match=r"unknown attack 'nope'; known: loss, projection"):
        attack("nope")


def test_the_declarations_say_where_scores_come_from() -> None:
    assert pilot_attacks() == ("projection",)
    assert attack("projection").source is AttackSource.PILOT_PROJECTION
    assert set(generic_attacks()) == {"loss", "projection"}
    assert [n for n in attack_names() if attack(n).needs_exact_laws] == ["likelihood-ratio"]
    # None: every score the trials give, and the projection where there are pilot trials
    assert projects_statistics(None) and projects_statistics(["loss", "projection"])
    assert not projects_statistics(["loss", "my-own-score"])


def test_a_spec_naming_the_projection_needs_pilot_trials_and_sample_split_four_trials() -> None:
    from audits.loader import demo_spec
    from audits.spec import SpecError

    spec = demo_spec(trials=100)
    with pytest.raises(SpecError, match="pilot_trials: must be at least 2 for the projection"):
        spec.replace(attacks=("projection",), pilot_trials=1)
    assert spec.replace(attacks=("loss",), pilot_trials=0).pilot_trials == 0
    with pytest.raises(SpecError, match="trials: must be at least 4 for the sample-split"):
        spec.replace(statistics=("sample-split",), trials=3)
    assert spec.replace(statistics=("sample-split",), trials=4).trials == 4


@pytest.mark.parametrize("member", [*ScoreOrientation, *PrivacyDirection, *Backend])
def test_the_enums_read_as_their_plain_words(member: str) -> None:
    word = member.value
    assert member == word and hash(member) == hash(word)
    assert json.dumps({"x": member}) == json.dumps({"x": word})
    assert f"{member}" == str(member) == word
    # seeds drawn from the repr of a design holding one are those of the plain word
    assert repr((member,)) == repr((word,))


def test_the_two_directions_are_named_apart() -> None:
    assert {m.value for m in ScoreOrientation} == {"greater", "less", "both"}
    assert {m.value for m in PrivacyDirection} == {"both", "forward"}
    assert not isinstance(ScoreOrientation.BOTH, PrivacyDirection)


def test_execution_options_take_a_backend_by_its_word_and_refuse_others() -> None:
    assert ExecutionOptions(backend="ray").backend is Backend.RAY
    assert ExecutionOptions().backend is Backend.LOCAL
    with pytest.raises(ValueError, match=r"backend must be one of 'local', 'ray', got 'dask'"):
        ExecutionOptions(backend="dask")


def test_the_code_version_hashes_the_files_that_decide_stored_numbers() -> None:
    from audits import versions

    for name in ("audits/chunks.py", "audits/execution.py", "audits/ray_runner.py",
                 "audits/attacks.py"):
        assert name in versions._CODE_FILES
    assert all((ROOT / name).is_file() for name in versions._CODE_FILES)
