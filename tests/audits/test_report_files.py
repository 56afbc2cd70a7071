"""Tests of audits.report: schema validation, report.json round trip, HTML figures, browser."""

from __future__ import annotations

import base64
import copy
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest

from audits.report.html import render_html
from audits.report.schema import SCHEMA_VERSION, ReportPaths, load_report, validate_report
from audits.report.text import summary_text
from audits.report.write import write_report

SVG_PREFIX = "data:image/svg+xml;base64,"
ALL_FIGURES = {"fig-roc-linear", "fig-roc-log", "fig-epsilon", "fig-scores",
               "fig-per-example-epsilon", "fig-utility"}


# -- fixture factory ---------------------------------------------------------------------------


def _per_example(rng) -> dict:
    values = np.abs(rng.normal(0.3, 0.15, 60))
    return {"values": values.tolist(), "lower": (values * 0.5).tolist(),
            "upper": (values * 2.0).tolist(), "label": "per-example plug-in epsilon estimate"}


def _roc(positive: np.ndarray, negative: np.ndarray) -> dict:
    """Empirical ROC of the rule 'score >= t', thresholds from +inf down, AUC by Mann-Whitney."""
    thresholds = np.unique(np.concatenate([positive, negative]))[::-1]
    tpr = [0.0] + [float(np.mean(positive >= t)) for t in thresholds]
    fpr = [0.0] + [float(np.mean(negative >= t)) for t in thresholds]
    greater = (positive[:, None] > negative[None, :]).mean()
    ties = (positive[:, None] == negative[None, :]).mean()
    return {"fpr": fpr, "tpr": tpr, "auc": float(greater + 0.5 * ties)}


def _lower_bound(attack: str, statistic: str, epsilon: float) -> dict:
    return {
        "attack": attack, "statistic": statistic, "epsilon": epsilon, "kind": "lower bound",
        "method": "Clopper-Pearson upper bounds on FPR/FNR into the (epsilon, delta) test region",
        "confidence": 0.95,
        "details": {"delta": 1e-3, "false_positives": 3, "false_negatives": 41,
                    "n_positive": 200, "n_negative": 200, "strategy": "bonferroni-pareto"},
    }


def make_report(*, status: str = "CONSISTENT", n_trials: int = 200, seed: int = 0,
                shift: float | None = None, per_example: bool = True) -> dict:
    """A complete schema-v2 report with Gaussian attack scores (unlearned shifted by ``shift``)."""
    rng = np.random.default_rng(seed)
    if shift is None:
        shift = 0.5 if status == "CONSISTENT" else 1.5
    attacks = {"loss": shift, "gradient-norm": shift / 2}
    scores, roc = {}, {}
    for attack, mean in attacks.items():
        unlearned = rng.normal(mean, 1.0, n_trials)
        retrained = rng.normal(0.0, 1.0, n_trials)
        scores[attack] = {"unlearned": unlearned.tolist(), "retrained": retrained.tolist()}
        roc[attack] = _roc(unlearned, retrained)
    lower_bounds = [_lower_bound("loss", "epsilon-delta", 0.61),
                    _lower_bound("gradient-norm", "epsilon-delta", 0.23),
                    _lower_bound("loss", "gdp-mu", 0.47)]
    certified = 1.0 if status == "CONSISTENT" else 0.4
    violations = [copy.deepcopy(b) for b in lower_bounds if b["epsilon"] > certified]
    best = copy.deepcopy(lower_bounds[0])
    unlearned_acc = np.clip(rng.normal(0.95, 0.01, n_trials), 0, 1)
    retrained_acc = np.clip(rng.normal(0.955, 0.008, n_trials), 0, 1)
    return {
        "schema": "unlearn-verify/audit-report",
        "schema_version": 2,
        "created": "2025-01-02T03:04:05+00:00",
        "code_version": "59a8151",
        "toolkit_version": "0.1.0",
        "spec": {"algorithm": "pnsgd", "dataset": "digits-3v8", "target": {"epsilon": 1.0,
                 "delta": 1e-3}, "n_trials": n_trials, "seed": seed},
        "spec_hash": "3f9a0c",
        "certificate": {
            "bound": "chien2024:thm3.2", "epsilon": certified, "delta": 1e-3, "alpha": 12.5,
            "conversion": "balle2020",
            "calibration": {"parameter": "sigma", "value": 0.0731, "target_epsilon": certified,
                            "neighbour": 0.0730, "neighbour_epsilon": 1.0004},
            "inputs": {"sigma": 0.0731, "eta": "1/L", "n": 1000, "K": 1},
            "provenance": {
                "bound": "chien2024:thm3.2", "title": "Renyi unlearning of PNSGD",
                "citation": "Chien, Wang, Chen, Li. NeurIPS 2024, Theorem 3.2",
                "label": "Theorem 3.2",
                "assumptions": ["f is L-smooth and m-strongly convex", "fixed mini-batches"],
                "conversion_citation": "Balle et al. 2020, Theorem 21",
            },
        },
        "empirical": {
            "n_trials": n_trials, "confidence": 0.95, "device": "cpu",
            "lower_bounds": lower_bounds,
            "estimates": [
                {"name": "plug-in epsilon", "attack": "loss", "value": 1.37, "kind": "estimate",
                 "interval": None, "method": "largest epsilon over thresholds, raw rates"},
                {"name": "AUC", "attack": "loss", "value": roc["loss"]["auc"],
                 "kind": "estimate",
                 "interval": [roc["loss"]["auc"] - 0.05, roc["loss"]["auc"] + 0.05],
                 "method": "Mann-Whitney"},
                {"name": "plug-in epsilon", "attack": None, "value": "inf", "kind": "estimate",
                 "interval": None, "method": "perfect separation"},
            ],
            "max_certifiable_epsilon": 4.6,
            "direction": "both",
            "renyi": [],
        },
        "verdict": {
            "status": status, "certified_epsilon": certified, "max_lower_bound": 0.61,
            "best_lower_bound": best, "tightness": 0.61 / certified,
            "explanation": "synthetic report for the tests", "violations": violations,
            "renyi_violations": [], "exit_code": {"CONSISTENT": 0, "VIOLATION": 3}[status],
            "possible_causes": ["implementation", "assumption", "theorem"]
            if status == "VIOLATION" else [],
            "could_show_violation": True, "trials_needed": None,
            "tests": {"family_size": 3, "alpha_each": 0.05 / 3, "confidence_each": 1 - 0.05 / 3,
                      "overall_confidence": 0.95},
        },
        "utility": {
            "unlearned_accuracy": {"mean": float(unlearned_acc.mean()),
                                   "std": float(unlearned_acc.std())},
            "retrained_accuracy": {"mean": float(retrained_acc.mean()),
                                   "std": float(retrained_acc.std())},
            "accuracies": {"unlearned": unlearned_acc.tolist(),
                           "retrained": retrained_acc.tolist()},
        },
        "plots": {
            "scores": scores, "roc": roc,
            "per_example_epsilon": (_per_example(rng) if per_example else None),
        },
        "seeds": {"seed": seed, "trial_seeds": [seed, seed + 1]},
        "timing": {"wall_seconds": 12.5, "chunks": 4, "chunks_resumed": 1},
    }


# -- HTML parsing helpers ----------------------------------------------------------------------


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images: list[dict] = []
        self.figures: list[str] = []
        self.tags: set[str] = set()
        self._figure_stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.add(tag)
        if tag == "figure":
            self.figures.append(attrs.get("id", ""))
            self._figure_stack.append(attrs.get("id", ""))
        if tag == "img":
            attrs["figure"] = self._figure_stack[-1] if self._figure_stack else None
            self.images.append(attrs)

    def handle_endtag(self, tag):
        if tag == "figure" and self._figure_stack:
            self._figure_stack.pop()


def _parse(page: str) -> _Collector:
    collector = _Collector()
    collector.feed(page)
    return collector


def _svg_of(img: dict) -> ElementTree.Element:
    """The figure's SVG, parsed (well-formed XML or the parse fails)."""
    assert img["src"].startswith(SVG_PREFIX)
    text = base64.b64decode(img["src"][len(SVG_PREFIX):], validate=True).decode("utf-8")
    return ElementTree.fromstring(text)


# -- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["CONSISTENT", "VIOLATION"])
def test_factory_reports_are_valid_and_copied(status):
    report = make_report(status=status)
    plain = validate_report(report)
    assert plain == report
    assert plain is not report
    assert SCHEMA_VERSION == 2


def _drop(path):
    def mutate(report):
        *parents, last = path
        target = report
        for key in parents:
            target = target[key]
        del target[last]
    return mutate


def _set(path, value):
    def mutate(report):
        *parents, last = path
        target = report
        for key in parents:
            target = target[key]
        target[last] = value
    return mutate


def _consistent_above_certificate(report):
    report["certificate"]["epsilon"] = 0.5
    report["verdict"]["certified_epsilon"] = 0.5


def _violation_without_violations(report):
    report["verdict"]["status"] = "VIOLATION"
    report["verdict"]["exit_code"] = 3


BAD_REPORTS = [
    (_drop(["certificate"]), "'certificate' is missing"),
    (_drop(["certificate", "provenance"]), "'certificate.provenance' is missing"),
    (_drop(["empirical", "lower_bounds", 1, "method"]),
     "'empirical.lower_bounds[1].method' is missing"),
    (_set(["schema_version"], 1), "understands schema version 2 only"),
    (_set(["schema_version"], True), "'schema_version' must be the integer 2"),
    (_set(["schema"], "something-else"), "'schema' must be"),
    (_set(["created"], "yesterday"), "'created' must be an ISO-8601"),
    (_set(["verdict", "status"], "OK"),
     "'verdict.status' must be one of CONSISTENT, VIOLATION, INCONCLUSIVE"),
    (_set(["empirical", "lower_bounds", 2, "epsilon"], float("nan")),
     "'empirical.lower_bounds[2].epsilon' is nan"),
    (_set(["empirical", "lower_bounds", 0, "epsilon"], "inf"),
     "'empirical.lower_bounds[0].epsilon' must be a number"),
    (_set(["empirical", "lower_bounds", 0, "kind"], "estimate"),
     "'empirical.lower_bounds[0].kind' must be 'lower bound'"),
    (_set(["empirical", "estimates", 0, "kind"], "lower bound"),
     "'empirical.estimates[0].kind' must be 'estimate'"),
    (_set(["empirical", "confidence"], 1.5), "'empirical.confidence' must be < 1"),
    (_set(["empirical", "n_trials"], 0), "'empirical.n_trials' must be >= 1"),
    (_set(["certificate", "epsilon"], True), "'certificate.epsilon' must be a number"),
    (_set(["certificate", "delta"], 1.0), "'certificate.delta' must be < 1"),
    (_set(["plots", "roc", "loss", "tpr"], [0.0, 0.5, 1.0]),
     "'plots.roc.loss' has"),
    (_set(["plots", "scores", "loss", "unlearned"], []),
     "'plots.scores.loss.unlearned' must hold at least 1"),
    (_set(["utility", "accuracies", "retrained"], [0.9, 1.2]),
     "'utility.accuracies.retrained[1]' must be <= 1"),
    (_set(["verdict", "certified_epsilon"], 2.0),
     "'verdict.certified_epsilon' is 2.0 but certificate.epsilon is 1.0"),
    (_set(["verdict", "max_lower_bound"], 0.3),
     "'verdict.max_lower_bound' is 0.3 but the largest empirical lower bound is 0.61"),
    (_consistent_above_certificate, "'verdict.status' is CONSISTENT but max_lower_bound 0.61"),
    (_violation_without_violations,
     "'verdict.violations' is empty but verdict.status is VIOLATION"),
    (_set(["timing", "chunks_resumed"], 9), "'timing.chunks_resumed' is 9, more than"),
    (_set(["seeds"], {"trial_seeds": [1]}), "'seeds.seed' is missing"),
    (_set(["spec", "note"], object()), "'spec.note' has a value of type object"),
]


@pytest.mark.parametrize(("mutate", "message"), BAD_REPORTS,
                         ids=[m for _, m in BAD_REPORTS])
def test_validation_names_the_field(mutate, message):
    report = make_report()
    mutate(report)
    with pytest.raises(ValueError, match=re.escape(message)):
        validate_report(report)


def test_violation_must_exceed_certificate():
    report = make_report(status="VIOLATION")
    report["verdict"]["violations"][0]["epsilon"] = 0.3
    with pytest.raises(ValueError, match=re.escape("'verdict.violations[0].epsilon' is 0.3")):
        validate_report(report)


def test_not_a_mapping():
    with pytest.raises(ValueError, match="expected a mapping"):
        validate_report([1, 2])


# -- report.json -------------------------------------------------------------------------------


def test_a_report_validated_once_is_written_as_write_report_writes_it(tmp_path):
    from audits.report.schema import validate_report
    from audits.report.write import write_validated_report

    report = make_report()
    once = write_report(report, tmp_path / "a")
    validated = write_validated_report(validate_report(report), tmp_path / "b")
    for a, b in ((once.json_path, validated.json_path), (once.html_path, validated.html_path)):
        assert a.read_bytes() == b.read_bytes()


def test_write_and_load_round_trip(tmp_path):
    report = make_report()
    paths = write_report(report, tmp_path / "audit")
    assert isinstance(paths, ReportPaths)
    assert paths.json_path == tmp_path / "audit" / "report.json"
    assert paths.html_path == tmp_path / "audit" / "report.html"
    text = paths.json_path.read_text(encoding="utf-8")
    assert text == json.dumps(report, sort_keys=True, indent=2, allow_nan=False,
                              ensure_ascii=False) + "\n"
    assert load_report(tmp_path / "audit") == report
    assert load_report(paths.json_path) == report
    # No temporary files are left next to the report (only the folder's marker).
    assert sorted(p.name for p in (tmp_path / "audit").iterdir()) == [
        ".unlearn-verify", "report.html", "report.json"]


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_report_files_follow_the_umask(tmp_path, umask):
    # Issue 10: report files used to be created 0600 whatever the umask (mkstemp's mode).
    old = os.umask(umask)
    try:
        paths = write_report(make_report(), tmp_path / "audit")
    finally:
        os.umask(old)
    for path in (paths.json_path, paths.html_path):
        assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_numpy_values_are_converted(tmp_path):
    report = make_report()
    expected = copy.deepcopy(report)
    report["plots"]["scores"]["loss"]["unlearned"] = np.asarray(
        report["plots"]["scores"]["loss"]["unlearned"])
    report["empirical"]["n_trials"] = np.int64(report["empirical"]["n_trials"])
    report["verdict"]["tightness"] = np.float32(0.5)
    expected["verdict"]["tightness"] = float(np.float32(0.5))
    write_report(report, tmp_path)
    assert load_report(tmp_path) == expected


def test_invalid_report_writes_nothing(tmp_path):
    report = make_report()
    report["verdict"]["status"] = "MAYBE"
    with pytest.raises(ValueError, match="verdict.status"):
        write_report(report, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_load_rejects_nan_and_missing(tmp_path):
    text = json.dumps(make_report(), sort_keys=True)
    text = text.replace('"tightness": 0.61', '"tightness": NaN')
    assert "NaN" in text
    (tmp_path / "report.json").write_text(text)
    with pytest.raises(ValueError, match="NaN"):
        load_report(tmp_path)
    (tmp_path / "report.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_report(tmp_path)
    with pytest.raises(FileNotFoundError, match="no audit report"):
        load_report(tmp_path / "nowhere")


# -- HTML --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def consistent_page() -> str:
    return render_html(make_report())


def test_html_has_every_figure_as_valid_svg(consistent_page):
    parsed = _parse(consistent_page)
    assert set(parsed.figures) == ALL_FIGURES
    assert len(parsed.figures) == len(ALL_FIGURES)
    data_images = [img for img in parsed.images if img["src"].startswith(SVG_PREFIX)]
    assert len(data_images) == len(parsed.images) == len(ALL_FIGURES)
    assert {img["figure"] for img in data_images} == ALL_FIGURES
    ns = "{http://www.w3.org/2000/svg}"
    for img in data_images:
        assert len(img["alt"]) > 20, img["figure"]
        svg = _svg_of(img)
        assert svg.tag == f"{ns}svg"
        assert float(svg.get("width")) >= 300 and float(svg.get("height")) >= 200, img["figure"]
        marks = [e for e in svg.iter() if e.tag in (f"{ns}polyline", f"{ns}polygon",
                                                   f"{ns}rect", f"{ns}circle")]
        assert len(marks) >= 4, img["figure"]  # data marks beside the frame
        texts = [e.text for e in svg.iter(f"{ns}text")]
        assert len(texts) > 5, img["figure"]  # title, tick labels, axis labels
        # nothing outside the picture: no script, no external reference
        assert not [e for e in svg.iter() if e.tag in (f"{ns}script", f"{ns}image",
                                                       f"{ns}foreignObject")]
        assert not any(k.endswith("href") for e in svg.iter() for k in e.attrib)


def test_html_is_self_contained(consistent_page):
    parsed = _parse(consistent_page)
    assert "script" not in parsed.tags
    assert "link" not in parsed.tags
    assert "iframe" not in parsed.tags
    assert not re.search(r'(src|href)\s*=\s*"(?!data:)', consistent_page)
    assert "url(" not in consistent_page
    assert "@import" not in consistent_page


def test_html_content(consistent_page):
    page = consistent_page
    assert 'class="verdict consistent"' in page
    assert "CONSISTENT" in page and "VIOLATION" not in page
    for text in ("chien2024:thm3.2", "Chien, Wang, Chen, Li. NeurIPS 2024, Theorem 3.2",
                 "f is L-smooth and m-strongly convex", "balle2020",
                 "Balle et al. 2020, Theorem 21", "sigma", "0.0731", "59a8151", "3f9a0c",
                 "Plug-in estimates (not bounds)", "Empirical lower bounds",
                 "gradient-norm", "gdp-mu", "Clopper-Pearson", "95%", "perfect separation"):
        assert text in page, text
    # The plug-in estimates live in their own, labelled block, after the bounds table.
    estimates = page.index('id="estimates"')
    assert page.index("plug-in epsilon") > estimates
    assert page.index("gdp-mu") < estimates


def test_html_violation_is_flagged():
    page = render_html(make_report(status="VIOLATION"))
    assert 'class="verdict violation"' in page
    assert 'id="violations"' in page
    assert page.count('<tr class="violation">') == 4  # 2 violations, in both tables
    assert "exceeds certificate" in page


def test_html_without_optional_data():
    report = make_report(per_example=False)
    report["utility"] = None
    report["plots"]["scores"] = {}
    page = render_html(report)
    parsed = _parse(page)
    assert set(parsed.figures) == ALL_FIGURES - {"fig-per-example-epsilon", "fig-utility",
                                                 "fig-scores"}
    assert "plots.per_example_epsilon is null" in page
    assert "Utility was not measured" in page


def test_degenerate_report_renders():
    # No lower bounds at all and a vacuous (infinite) certificate: still a valid, readable report.
    report = make_report()
    report["empirical"]["lower_bounds"] = []
    report["certificate"]["epsilon"] = "inf"
    report["verdict"].update(certified_epsilon="inf", max_lower_bound=0.0, best_lower_bound=None,
                             tightness=0.0)
    page = render_html(report)
    assert "No lower bounds." in page
    assert len(_parse(page).images) == len(ALL_FIGURES)
    text = summary_text(report)
    assert "certified epsilon   inf" in text
    assert "best lower bound    none" in text


def test_html_escapes_all_text():
    evil = '<script>alert("x")</script>'
    report = make_report()
    report["verdict"]["explanation"] = evil
    report["code_version"] = evil
    report["spec"]["algorithm"] = evil
    report["certificate"]["provenance"]["citation"] = evil
    report["certificate"]["inputs"][evil] = evil
    report["empirical"]["lower_bounds"][1]["method"] = evil
    report["empirical"]["estimates"][0]["name"] = evil
    # Attack names also go into the figures' SVG text: escaped there, shown as written.
    for key in ("roc", "scores"):
        report["plots"][key]["$cost_" + evil] = report["plots"][key].pop("loss")
    page = render_html(report)
    assert "<script" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "$cost_&lt;script&gt;" in page
    images = _parse(page).images
    assert len(images) == len(ALL_FIGURES)
    shown = {img["figure"]: [e.text or "" for e in _svg_of(img).iter()] for img in images}
    for figure in ("fig-roc-linear", "fig-roc-log", "fig-scores"):
        assert any("$cost_" + evil in t for t in shown[figure]), figure
        assert not [e for e in _svg_of(next(i for i in images if i["figure"] == figure)).iter()
                    if e.tag.endswith("script")]


def test_html_is_deterministic():
    assert render_html(make_report(seed=3)) == render_html(make_report(seed=3))


# -- terminal summary --------------------------------------------------------------------------


def test_summary_consistent():
    text = summary_text(make_report())
    lines = text.splitlines()
    assert lines[0] == "Audit verdict: CONSISTENT"
    assert "certified epsilon   1 at delta 0.001 from chien2024:thm3.2, conversion balle2020" \
        in text
    assert "alpha 12.5" in text
    assert "epsilon >= 0.61 (attack loss, statistic epsilon-delta; Clopper-Pearson" in text
    assert "95% confidence" in text
    assert "tightness           0.61" in text
    assert "largest showable    epsilon 4.6: the largest lower bound N = 200 trials could show" in text
    assert "max certifiable" not in text
    assert re.search(r"accuracy unlearned 0\.9\d+ \+/- 0\.0\d+, retrained 0\.9\d+", text)
    assert "VIOLATION" not in text
    assert len(lines) <= 8


def test_summary_violation_lists_the_numbers():
    text = summary_text(make_report(status="VIOLATION"))
    assert text.splitlines()[0] == "Audit verdict: VIOLATION"
    violation_lines = [line for line in text.splitlines() if line.startswith("  VIOLATION")]
    assert len(violation_lines) == 2
    assert "epsilon >= 0.61 > certified 0.4 at delta 0.001 (attack loss, statistic epsilon-delta" \
        in violation_lines[0]
    assert "epsilon >= 0.47 > certified 0.4 at delta 0.001 (attack loss, statistic gdp-mu" \
        in violation_lines[1]
    assert "tightness           1.52" in text


def test_summary_warns_when_trials_cannot_refute():
    report = make_report()
    report["empirical"]["max_certifiable_epsilon"] = 0.8
    assert "cannot detect a violation" in summary_text(report)
    assert "cannot detect a violation" not in summary_text(make_report())
    report["utility"] = None
    assert "utility             not measured" in summary_text(report)


# -- real headless browser ---------------------------------------------------------------------


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("UNLEARN_REQUIRE_BROWSER") == "1":
        pytest.fail("UNLEARN_REQUIRE_BROWSER=1 but no chromium on PATH")
    pytest.skip("chromium is not installed (set UNLEARN_REQUIRE_BROWSER=1 to make this fail)")


def _run_chromium(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    command = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
               "--no-first-run", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}", *args]
    env = {**os.environ, "HOME": str(profile)}
    return subprocess.run(command, capture_output=True, text=True, timeout=90, env=env,
                          check=False)


def test_browser_renders_every_figure(tmp_path):
    binary = _chromium()
    PIL_Image = pytest.importorskip("PIL.Image")
    paths = write_report(make_report(status="VIOLATION"), tmp_path / "audit")
    url = paths.html_path.resolve().as_uri()
    screenshot = tmp_path / "screenshot.png"
    shot = _run_chromium(binary, tmp_path / "profile-shot", f"--screenshot={screenshot}",
                         "--window-size=1280,4000", url)
    assert screenshot.is_file(), f"no screenshot (rc {shot.returncode}): {shot.stderr[-2000:]}"
    with PIL_Image.open(screenshot) as image:
        rgb = np.asarray(image.convert("RGB"))
    assert rgb.shape == (4000, 1280, 3)
    non_background = np.any(np.abs(rgb.astype(int) - [244, 245, 247]) > 8, axis=2)
    non_white = np.any(rgb < 245, axis=2) & non_background
    assert non_white.mean() > 0.05
    distinct = np.unique(rgb.reshape(-1, 3), axis=0)
    assert len(distinct) > 500
    # The verdict banner (CSS applied): the top strip is mostly the VIOLATION red.
    top = rgb[5:60].reshape(-1, 3).astype(int)
    red = np.all(np.abs(top - [0xB3, 0x26, 0x1E]) <= 3, axis=1)
    assert red.mean() > 0.5

    dom = _run_chromium(binary, tmp_path / "profile-dom", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    parsed = _parse(dom.stdout)
    assert set(parsed.figures) == ALL_FIGURES
    assert len([i for i in parsed.images if i["src"].startswith(SVG_PREFIX)]) \
        == len(ALL_FIGURES)
    assert "VIOLATION" in dom.stdout


def _split_level(report: dict, family: int) -> dict:
    """The analysis's Bonferroni split: each of ``family`` bounds at 1 - 0.05 / family."""
    for entry in report["empirical"]["lower_bounds"]:
        entry["details"].update(family_size=family, confidence_each=1 - 0.05 / family)
    return report


def test_split_confidence_is_printed_per_bound():
    # Issue 10: labels said 95% for bounds that each hold at 1 - 0.05 / family.
    report = _split_level(make_report(), 4)
    page = render_html(report)
    assert "98.75% confidence each (95% jointly over 4 bounds)" in page
    assert "confidence of each lower bound (level split, Bonferroni)" in page
    assert "each on its own at 98.75%" in page
    single = render_html(_split_level(make_report(), 1))
    assert "confidence each" not in single and "level split" not in single


def test_subsampled_histograms_say_so():
    report = make_report(n_trials=200)
    assert "Subsampled" not in render_html(report)
    report["empirical"]["n_trials"] = 5000  # plots.scores keeps only the first 200 trials
    page = render_html(report)
    assert "Subsampled: the histograms show the first 200 of the 5000 trials" in page


def test_calibration_neighbour_epsilon_is_printed_in_full():
    # Issue 10: 1.0000000010384307 (the neighbour's epsilon, just above target 1) printed as "1".
    report = make_report()
    report["certificate"]["calibration"].update(
        value=0.0041000668588213685, target_epsilon=1.0, neighbour=0.004100066850621234,
        neighbour_epsilon=1.0000000010384307, certified_epsilon=0.9999999989614534)
    page = render_html(report)
    assert "1.0000000010384307" in page and "0.9999999989614534" in page
    assert "0.0041000668588213685" in page


def test_rows_of_one_attack_and_statistic_say_which_score_direction_they_read():
    report = make_report()
    first = report["empirical"]["lower_bounds"][0]
    for entry, direction in ((first, "higher score = unlearned"),
                             (copy.deepcopy(first), "lower score = unlearned")):
        entry["details"]["score_direction"] = direction
        if entry is not first:
            entry["epsilon"] = 0.12
            report["empirical"]["lower_bounds"].insert(1, entry)
    report["verdict"]["best_lower_bound"] = copy.deepcopy(first)
    page = render_html(report)
    rows = re.findall(r"<tr[^>]*><td>loss</td><td>epsilon-delta</td><td>([^<]*)</td>", page)
    assert rows[:2] == ["higher score = unlearned", "lower score = unlearned"]
    assert "<th>scores</th>" in page
    text = summary_text(report)
    assert "attack loss, statistic epsilon-delta, higher score = unlearned;" in text


def test_per_example_estimates_without_intervals_are_not_drawn_and_the_page_says_why():
    report = make_report()
    values = [0.2] * 12 + [1.5, 1.94]  # two estimates above the certified epsilon
    report["plots"]["per_example_epsilon"] = {"values": values, "label": "plug-in estimate"}
    page = render_html(report)
    parsed = _parse(page)
    assert "fig-per-example-epsilon" not in parsed.figures
    assert "The 14 per-example plug-in ε estimates (plug-in estimate) are not drawn" in page
    assert "no evidence of a violation" in page and "1.94" not in page
    with pytest.raises(ValueError, match=r"plots.per_example_epsilon.lower.*2 values for 14"):
        validate_report({**report, "plots": {**report["plots"], "per_example_epsilon": {
            "values": values, "label": "x", "lower": [0.0, 0.1], "upper": [1.0, 2.0]}}})


def _last_section(page: str) -> str:
    main = page[page.index("<main>"):page.index("</main>")]
    start = main.rindex("<section")
    assert 'id="next-steps"' in main[start:start + 40]  # the page ends with it
    return main[start:]


def test_every_report_ends_with_what_the_verdict_means_and_what_to_do_next():
    from audits.report.schema import EXIT_CODES

    violation = _last_section(render_html(make_report(status="VIOLATION")))
    assert "VIOLATION means" in violation and violation.count("Found by: ε ≥") == 2
    assert "confidence" in violation and "Next, check:" in violation

    consistent = make_report()
    page = _last_section(render_html(consistent))
    assert "CONSISTENT means" in page and "What this audit could have detected: with N = 200" in page

    consistent["verdict"]["detectable"] = {"smallest detectable epsilon": 0.75, "at power": 0.8}
    page = _last_section(render_html(consistent))
    assert ("What this audit could have detected: smallest detectable epsilon: 0.75; at power: "
            "0.8.") in page

    inconclusive = make_report()
    inconclusive["verdict"].update(status="INCONCLUSIVE", trials_needed=5000,
                                   exit_code=EXIT_CODES["INCONCLUSIVE"])
    page = _last_section(render_html(inconclusive))
    assert "INCONCLUSIVE means these 200 trials" in page
    assert "at least 5,000 trials per side (--trials 5000)" in page
