"""The closing part of every report: what the verdict means and what to do next.

* INCONCLUSIVE: the trials were too few to show any violation; how many would be needed.
* VIOLATION: which test found it, at which confidence, and what to check.
* CONSISTENT: what the audit could have detected (``verdict.detectable`` when the verdict
  carries it, shown as given; otherwise the largest lower bound the trials could show) and how
  to test harder.

Plain text paragraphs, shared by the HTML page and the terminal summary.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from audits.report.text import describe_bound, fmt, percent_text

__all__ = ["detectable_lines", "next_steps"]


def detectable_lines(value: Any) -> list[str]:
    """``verdict.detectable`` as lines of text, whatever JSON shape it has (empty when absent)."""
    if value is None:
        return []
    if isinstance(value, Mapping):
        return [f"{key}: {_inline(item)}" for key, item in value.items()]
    if isinstance(value, list):
        return [_inline(item) for item in value]
    return [_inline(value)]


def _inline(value: Any) -> str:
    if isinstance(value, Mapping):
        return "; ".join(f"{k} {_inline(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_inline(v) for v in value)
    if isinstance(value, float):
        return fmt(value, 4)
    return str(value)


def next_steps(report: Mapping) -> list[str]:
    """Paragraphs saying what the verdict means and what to do next."""
    verdict, emp, cert = report["verdict"], report["empirical"], report["certificate"]
    status, n = verdict["status"], emp["n_trials"]
    certified = fmt(cert["epsilon"])
    if status == "INCONCLUSIVE":
        needed = verdict.get("trials_needed")
        return [
            f"INCONCLUSIVE means these {n} trials could not have shown a violation of ε = "
            f"{certified} even against a mechanism that breaks it: the largest lower bound they "
            f"could ever show is {fmt(emp['max_certifiable_epsilon'])}. It is no evidence for "
            "or against the certificate.",
            ("Next: run the audit again with at least " + f"{needed:,} trials per side "
             f"(--trials {needed}); a rerun in the same folder reuses the trials already "
             "computed." if needed else
             "Next: run the audit again with more trials (no count could be computed from "
             "this run); a rerun in the same folder reuses the trials already computed."),
        ]
    if status == "VIOLATION":
        lines = ["VIOLATION means an empirical lower bound on ε exceeds what the certificate "
                 "allows, at the stated confidence: the mechanism as run does not meet its "
                 "certificate (or a test's assumption failed; see below)."]
        for entry in verdict["violations"]:
            lines.append(f"Found by: ε ≥ {fmt(entry['epsilon'])} > certified ε = {certified}; "
                         f"{describe_bound(entry)}.")
        for entry in verdict.get("renyi_violations", []):
            orders = ", ".join(fmt(a, 4) for a in entry.get("orders", []))
            lines.append(f"Found by: the Rényi test of attack {entry['attack']} at orders "
                         f"{orders or '(see the Rényi table)'}, confidence "
                         f"{percent_text(entry['confidence'])}.")
        causes = verdict.get("possible_causes") or []
        lines.append("Next, check: " + "; ".join(causes) + "." if causes else
                     "Next, check the certificate's inputs and the mechanism as run.")
        lines.append("Then rerun with a new seed: a real violation is found again, a false "
                     "alarm (at most 1 minus the confidence, by chance) is not.")
        return lines
    found = verdict.get("detectable")
    summary = found.get("summary") if isinstance(found, Mapping) else None
    shown = [summary] if isinstance(summary, str) else detectable_lines(found)
    lines = ["CONSISTENT means no attack found evidence against the certificate at the stated "
             "confidence. It does not prove the certificate: a leak smaller than what these "
             "trials and attacks can detect would pass unseen."]
    if shown:
        lines.append("What this audit could have detected: " + "; ".join(shown) + ".")
    else:
        lines.append(f"What this audit could have detected: with N = {n} trials no lower bound "
                     f"can exceed {fmt(emp['max_certifiable_epsilon'])}, so it could flag only "
                     "a mechanism whose leak its attacks turn into a lower bound above ε = "
                     f"{certified}.")
    lines.append("Next: to test harder, run more trials (the largest showable lower bound grows "
                 "with N), add stronger attacks, or forget worst-case records.")
    return lines
