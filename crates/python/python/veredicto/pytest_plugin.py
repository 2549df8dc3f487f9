"""The veredicto pytest plugin (registered through the ``pytest11`` entry point).

A test asks for the ``veredicto_exam`` fixture and calls it like :func:`veredicto.exam`::

    def test_knowledge_base(veredicto_exam):
        veredicto_exam("golden.jsonl", my_retriever, corpus="corpus.jsonl")

The exam runs; when it does not accept, the test fails with the verdict's reasons and one
line per failing case (each expected chunk with its rank). The fixture returns the
:class:`veredicto.Exam`. Arguments left out come from a ``@pytest.mark.veredicto(...)``
marker on the test (``golden=``, ``corpus=``, ``policy=``, ...).

Options:
  --veredicto-history PATH     record every exam in this history (a file or postgres:// URL)
  --veredicto-baseline RUN     compare with this baseline (``previous``, ``last-accepted``, a
                               run ID) and fail on a significant regression (needs a history:
                               ``--veredicto-history``, default ``.veredicto/history.db``)
  --veredicto-junit PATH       write each exam's JUnit report
  --veredicto-html PATH        write each exam's HTML report
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable, Dict, List, Optional

import pytest

import veredicto

_DEFAULT_HISTORY = os.path.join(".veredicto", "history.db")


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("veredicto", "veredicto golden-set exams")
    group.addoption(
        "--veredicto-history",
        metavar="PATH",
        default=None,
        help="record each exam in this run history (a file or a postgres:// URL)",
    )
    group.addoption(
        "--veredicto-baseline",
        metavar="RUN",
        default=None,
        help="compare each exam with this baseline (previous, last-accepted or a run ID) "
        "and fail on a significant regression",
    )
    group.addoption(
        "--veredicto-junit",
        metavar="PATH",
        default=None,
        help="write each exam's JUnit XML report to PATH",
    )
    group.addoption(
        "--veredicto-html",
        metavar="PATH",
        default=None,
        help="write each exam's self-contained HTML report to PATH",
    )


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers",
        "veredicto(**kwargs): defaults for the veredicto_exam fixture "
        "(golden=, corpus=, policy=, documents=, notes=, label=, depth=, concurrency=)",
    )
    config._veredicto_reports = 0


def failure_message(result: "veredicto.Exam") -> str:
    """What a failing exam says: the verdict, each reason, each failing case."""
    lines = [f"veredicto exam: {result.verdict.upper()}"]
    if result.regression:
        lines.append("  - regression against the baseline")
    lines.extend(f"  - {r}" for r in result.reasons)
    failing = result.failing_cases
    if failing:
        lines.append(f"failing cases ({len(failing)}):")
        lines.extend(f"  {c}" for c in failing)
    return "\n".join(lines)


def _report_path(config: Any, given: str, nodeid: str) -> str:
    """The path of one exam's report: the path given for the first exam of the session,
    then the path with the test's name before the extension."""
    n = config._veredicto_reports
    if n == 0:
        return given
    stem, ext = os.path.splitext(given)
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")
    return f"{stem}-{safe}{ext}"


@pytest.fixture
def veredicto_exam(request: Any) -> Callable[..., "veredicto.Exam"]:
    """Run a veredicto exam (arguments as :func:`veredicto.exam`); the test fails with the
    verdict's reasons and the failing cases unless the exam accepts."""
    config = request.config
    marker = request.node.get_closest_marker("veredicto")
    defaults: Dict[str, Any] = dict(marker.kwargs) if marker else {}

    def run(
        golden: Any = None, retriever: Any = None, **kwargs: Any
    ) -> "veredicto.Exam":
        args = dict(defaults)
        args.update(kwargs)
        if golden is None:
            golden = args.pop("golden", None)
        else:
            args.pop("golden", None)
        if retriever is None:
            retriever = args.pop("retriever", None)
        else:
            args.pop("retriever", None)
        if golden is None or retriever is None:
            raise TypeError("veredicto_exam needs a golden set and a retriever")
        history = args.pop("history", None) or config.getoption("veredicto_history")
        baseline = config.getoption("veredicto_baseline")
        if baseline is not None:
            history = history or _DEFAULT_HISTORY
            args.setdefault("baseline", baseline)
            args.setdefault("fail_on_regression", True)
        if history is not None and "://" not in str(history):
            parent = os.path.dirname(os.fspath(history))
            if parent:
                os.makedirs(parent, exist_ok=True)
        result = veredicto.exam(golden, retriever, history=history, **args)
        wrote = False
        junit = config.getoption("veredicto_junit")
        html = config.getoption("veredicto_html")
        for given, text in ((junit, result.to_junit), (html, result.to_html)):
            if given:
                path = _report_path(config, given, request.node.nodeid)
                parent = os.path.dirname(path)
                if parent:
                    os.makedirs(parent, exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text())
                wrote = True
        if wrote:
            config._veredicto_reports += 1
        if not result.accepted:
            pytest.fail(failure_message(result), pytrace=False)
        return result

    return run


def pytest_report_header(config: Any) -> Optional[List[str]]:
    return [f"veredicto {veredicto.__version__}"]
