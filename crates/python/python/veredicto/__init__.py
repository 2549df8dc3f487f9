"""veredicto: decides with numbers whether a RAG knowledge base may be deployed.

The Python package runs the same Rust code as the ``veredicto`` command:

- :class:`RelevanceEvaluator` and :data:`supported_measures`: pytrec_eval's API, measure
  names and dict shapes, with trec_eval 10.0's values (those of ``veredicto trec``);
- :func:`evaluate`: the summary of a run under ir_measures-style names (``nDCG@10``);
- :func:`exam`: the golden-set acceptance exam over a Python retriever (any callable
  ``(query, k) -> results``, LangChain and LlamaIndex retrievers included), a retriever URI
  or a run file, returning an :class:`Exam`;
- a pytest plugin (the ``veredicto_exam`` fixture), registered on install.

Errors are :class:`VeredictoError`; a file that does not parse is an :class:`InputError`
with ``.file``, ``.line`` and ``.field``. A gate that says stop is ``Exam.accepted ==
False``, never an exception.
"""

from __future__ import annotations

import datetime as _dt
import json as _json
import os as _os
import re as _re
import tempfile as _tempfile
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from veredicto import _native
from veredicto._native import InputError, VeredictoError

__all__ = [
    "Exam",
    "History",
    "compare",
    "InputError",
    "RelevanceEvaluator",
    "VeredictoError",
    "__version__",
    "evaluate",
    "exam",
    "supported_measures",
    "supported_nicknames",
]

__version__: str = _native.version()

#: trec_eval's measure names (pytrec_eval's ``supported_measures``).
supported_measures: frozenset = frozenset(_native.supported_measure_names())

#: trec_eval's measure sets, name -> measures (pytrec_eval's ``supported_nicknames``).
supported_nicknames: Dict[str, frozenset] = {
    name: frozenset(measures) for name, measures in _native.measure_sets()
}

Qrels = Mapping[str, Mapping[str, int]]
Run = Mapping[str, Mapping[str, float]]

_PARAMS = _re.compile(r"^[0-9.,=\-]+$")


def _combine_measures(measures: Iterable[str]) -> List[str]:
    """pytrec_eval's reading of measure names: sets expanded, ``P_5`` read as ``P.5``,
    the parameters of one measure combined (``P.5`` and ``P.10`` -> ``P.5,10``)."""
    if isinstance(measures, str):
        measures = [measures]
    expanded: List[str] = []
    for m in measures:
        if m in supported_nicknames and m not in supported_measures:
            expanded.extend(sorted(supported_nicknames[m]))
        else:
            expanded.append(m)
    order: List[str] = []
    params: Dict[str, List[str]] = {}
    by_length = sorted(supported_measures, key=len, reverse=True)
    for m in expanded:
        base, rest = m, None
        if m not in supported_measures:
            for b in by_length:
                if len(m) > len(b) + 1 and m.startswith(b) and m[len(b)] in "._":
                    tail = m[len(b) + 1 :]
                    if _PARAMS.match(tail):
                        base, rest = b, tail
                        break
        if base not in params:
            order.append(base)
            params[base] = []
        if rest is not None:
            for p in rest.split(","):
                if p not in params[base]:
                    params[base].append(p)
    return [b + ("." + ",".join(params[b]) if params[b] else "") for b in order]


class RelevanceEvaluator(_native.RelevanceEvaluator):
    """pytrec_eval's evaluator: ``RelevanceEvaluator(qrels, measures).evaluate(run)``.

    ``qrels`` is ``{qid: {docid: level}}``, ``run`` is ``{qid: {docid: score}}``; the result
    is ``{qid: {measure: value}}`` for each query with both judgements and results, with
    trec_eval's output names (``P_5``, ``ndcg_cut_10``, ``map``). Measures are trec_eval
    names with optional parameters (``P.5,10``, ``ndcg_cut.10``, ``recall``), sets
    (``official``, ``all_trec``) or canonical names (``nDCG@10``). Ties are broken as
    trec_eval breaks them (score descending, then document ID descending). The evaluation
    releases the GIL and runs on every core; its values do not depend on the thread count.

    One difference from pytrec_eval: the values are trec_eval 10.0's, whose interpolated
    precision (``iprec_at_recall``, ``11pt_avg``) no longer counts recall points beyond the
    last relevant document retrieved the way trec_eval 9 (and pytrec_eval) does.
    """

    def __new__(
        cls,
        query_relevance: Qrels,
        measures: Iterable[str],
        relevance_level: int = 1,
        judged_docs_only_flag: bool = False,
    ) -> "RelevanceEvaluator":
        return super().__new__(
            cls,
            dict(query_relevance),
            _combine_measures(measures),
            relevance_level,
            judged_docs_only_flag,
        )

    def __init__(
        self,
        query_relevance: Qrels,
        measures: Iterable[str],
        relevance_level: int = 1,
        judged_docs_only_flag: bool = False,
    ) -> None:
        pass


def evaluate(
    qrels: Qrels,
    run: Run,
    measures: Sequence[str],
    *,
    relevance_level: int = 1,
    judged_docs_only: bool = False,
) -> Dict[str, float]:
    """The summary of ``run`` over the queries it shares with ``qrels``, ir_measures-style:
    ``evaluate(qrels, run, ["nDCG@10", "R@100", "AP"]) -> {"nDCG@10": ..., ...}``.

    Names are veredicto's canonical names (``nDCG@10``, ``P@5``, ``R@100``, ``AP``, ``RR``)
    or trec_eval names (``ndcg_cut.10``); each key of the result is the name as given (a
    trec_eval name that gives several values, such as ``P``, gives one key per value).
    Values are those of ``veredicto trec`` on the same judgements and run.
    """
    if isinstance(measures, str):
        measures = [measures]
    names = {m: _native.output_names(m) for m in measures}
    ev = _native.RelevanceEvaluator(
        dict(qrels), list(measures), relevance_level, judged_docs_only
    )
    summary = ev.summary(dict(run))
    out: Dict[str, float] = {}
    for m in measures:
        outs = names[m]
        if len(outs) == 1:
            out[m] = summary[outs[0]]
        else:
            for o in outs:
                out[o] = summary[o]
    return out


class Exam:
    """What an exam concluded: ``accepted``, ``verdict``, ``reasons``, ``cases`` and the
    reports (``to_dict()``/``to_json()``: the exam JSON, the bytes ``veredicto exam
    --format json`` writes for the same inputs; ``to_markdown()``, ``to_junit()``,
    ``to_html()``, ``to_text()``)."""

    def __init__(self, native: Any) -> None:
        self._native = native
        self._dict: Optional[Dict[str, Any]] = None

    @property
    def accepted(self) -> bool:
        """Whether the knowledge base may be deployed (the command's exit code 0)."""
        return bool(self._native.accepted)

    @property
    def verdict(self) -> str:
        """``"accept"`` or ``"stop"``: the gate's verdict."""
        return str(self._native.verdict)

    @property
    def regression(self) -> bool:
        """Whether a regression against the baseline fails the exam."""
        return bool(self._native.regression)

    @property
    def reasons(self) -> List[str]:
        """Why the gate stopped, one sentence each (empty when it accepts)."""
        return list(self._native.reasons)

    @property
    def failing_cases(self) -> List[str]:
        """One line per failing case: why, its recall, each expected chunk with its rank."""
        return list(self._native.failing_cases)

    @property
    def cases(self) -> List[Dict[str, Any]]:
        """The per-case results, as in the exam JSON's ``cases``."""
        return list(self.to_dict()["cases"])

    @property
    def summary(self) -> Dict[str, Any]:
        """The summary numbers, as in the exam JSON's ``summary``."""
        return dict(self.to_dict()["summary"])

    @property
    def run_id(self) -> Optional[str]:
        """The recorded run's ID, when a history was given."""
        return self._native.run_id

    @property
    def notices(self) -> List[str]:
        """What the exam said while it ran (cases without results, the run recorded)."""
        return list(self._native.notices)

    def to_json(self) -> str:
        """The exam JSON (docs/exam-json.md)."""
        return str(self._native.render("json"))

    def to_dict(self) -> Dict[str, Any]:
        """The exam JSON as a dict."""
        if self._dict is None:
            self._dict = _json.loads(self.to_json())
        return self._dict

    def to_markdown(self) -> str:
        """The Markdown report."""
        return str(self._native.render("markdown"))

    def to_junit(self) -> str:
        """The JUnit XML report (one test case per golden case)."""
        return str(self._native.render("junit"))

    def to_text(self) -> str:
        """The report as the terminal shows it (without colours)."""
        return str(self._native.render("human"))

    def to_html(self) -> str:
        """The self-contained HTML report."""
        return str(self._native.to_html())

    def __bool__(self) -> bool:
        return self.accepted

    def __repr__(self) -> str:
        s = self.to_dict()["summary"]
        return f"<Exam {self.verdict.upper()}: {s.get('cases')} cases, {s.get('failing')} failing>"


class History:
    """The run history (an SQLite file or a ``postgres://`` URL), read-only.

    ``runs()`` lists the recorded runs (newest first, as ``veredicto runs list``), ``show(run)``
    gives one recorded run (provenance and report), ``trends()`` the headline numbers of each
    run oldest first, and ``compare(run, baseline)`` what ``veredicto compare`` reports.
    """

    def __init__(self, path_or_url: Any) -> None:
        self.spec = str(_os.fspath(path_or_url)) if hasattr(path_or_url, "__fspath__") else str(path_or_url)
        self._native = _native.NativeHistory(self.spec)

    def runs(self, limit: Optional[int] = None, label: Optional[str] = None) -> List[Dict[str, Any]]:
        """The recorded runs, newest first (ID, time, label, verdict, headline numbers)."""
        return list(_json.loads(self._native.runs_json(limit, label)))

    def show(self, run: str = "latest") -> Dict[str, Any]:
        """One recorded run (ID, unique prefix or ``latest``): ``meta`` and ``report``."""
        return dict(_json.loads(self._native.show_json(run)))

    def trends(self, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """Per run, oldest first: ID, time, label, verdict, mean QS, mean recall, MRR."""
        keys = ("id", "created_at", "label", "verdict", "mean_quality", "mean_recall", "mrr")
        return [{k: r.get(k) for k in keys} for r in reversed(self.runs(limit))]

    def compare(self, run: str = "latest", baseline: str = "previous", *, corpus: Any = None,
                seed: Optional[int] = None) -> Dict[str, Any]:
        """``run`` compared with ``baseline`` (``previous``, ``last-accepted``, a run ID):
        the JSON of ``veredicto compare --format json``."""
        return dict(_json.loads(self._native.compare_json(run, baseline, _path(corpus), seed)))

    def __repr__(self) -> str:
        return f"History({self.spec!r})"


def compare(history: Any, run: str = "latest", baseline: str = "previous", *,
            corpus: Any = None, seed: Optional[int] = None) -> Dict[str, Any]:
    """``veredicto compare``: a recorded run against its baseline (see :meth:`History.compare`)."""
    return History(history).compare(run, baseline, corpus=corpus, seed=seed)


Retriever = Union[Callable[[str, int], Any], str, "_os.PathLike[str]"]
Golden = Union[str, "_os.PathLike[str]", Sequence[Mapping[str, Any]]]


def _path(p: Any) -> Optional[str]:
    return None if p is None else _os.fspath(p)


def exam(
    golden: Golden,
    retriever: Retriever,
    *,
    corpus: Any = None,
    documents: Any = None,
    policy: Any = None,
    notes: Any = None,
    history: Any = None,
    label: Optional[str] = None,
    depth: int = 100,
    concurrency: int = 4,
    as_of: Optional[str] = None,
    baseline: Optional[str] = None,
    fail_on_regression: bool = False,
    seed: Optional[int] = None,
    duplicates: Optional[str] = None,
    model: Optional[str] = None,
) -> Exam:
    """Run the golden-set acceptance exam and return its :class:`Exam`.

    ``golden``: a golden set file (JSONL or a BEIR folder) or a list of case dicts (the
    JSONL lines). ``retriever``: a callable ``(query: str, k: int) -> list`` of ``(id,
    score)`` pairs, IDs, dicts with ``id`` (and ``score``), or objects with
    ``.metadata["id"]`` and an optional ``.score`` (LangChain ``Document``, LlamaIndex
    ``NodeWithScore``); an ``async`` callable; a retriever URI (``postgres://…``,
    ``http://…``, ``index:DIR``, ``cmd:…``) or a run file path. ``corpus``, ``documents``,
    ``policy`` and ``notes`` are files as for ``veredicto exam``; ``policy=None`` is the
    documented default policy. ``history`` (a file or ``postgres://`` URL) records the run;
    with ``baseline`` (``previous``, ``last-accepted`` or a run ID) it is compared, and
    ``fail_on_regression`` fails the exam on a significant drop. The callable is called from
    ``concurrency`` threads at once (each takes the GIL for the call). A URI is opened as
    ``veredicto exam --retriever URI`` opens it: a retriever that searches with query
    vectors (``index:DIR``, pgvector, Qdrant, …) gets its queries embedded by ``model`` (a
    known model's name or a model folder), else ``VEREDICTO_MODEL``, else the model the
    index was built with.
    """
    today = _dt.datetime.now(_dt.timezone.utc)
    created_at = today.strftime("%Y-%m-%dT%H:%M:%S.") + f"{today.microsecond // 1000:03d}Z"
    if as_of is None:
        as_of = today.strftime("%Y-%m-%d")
    tmp = None
    try:
        if isinstance(golden, (str, bytes)) or hasattr(golden, "__fspath__"):
            golden_path = _os.fspath(golden)
        else:
            tmp = _tempfile.TemporaryDirectory(prefix="veredicto-")
            golden_path = _os.path.join(tmp.name, "golden.jsonl")
            with open(golden_path, "w", encoding="utf-8") as f:
                for case in golden:
                    f.write(_json.dumps(dict(case), ensure_ascii=False))
                    f.write("\n")
        if hasattr(retriever, "__fspath__"):
            retriever = _os.fspath(retriever)
        elif not isinstance(retriever, str):
            retriever = _callable_of(retriever)
        native = _native.exam(
            golden_path,
            retriever,
            corpus=_path(corpus),
            documents=_path(documents),
            policy=_path(policy),
            notes=_path(notes),
            history=None if history is None else str(history),
            label=label,
            depth=depth,
            concurrency=concurrency,
            as_of=as_of,
            created_at=created_at,
            baseline=baseline,
            fail_on_regression=fail_on_regression,
            seed=seed,
            duplicates=duplicates,
            model=model,
        )
    finally:
        if tmp is not None:
            tmp.cleanup()
    return Exam(native)


def _callable_of(retriever: Any) -> Callable[[str, int], Any]:
    """A retriever object as a ``(query, k)`` callable: LangChain's ``BaseRetriever``
    (``invoke``), LlamaIndex's ``BaseRetriever`` (``retrieve``), or a plain callable
    (called as ``f(query, k)``, or ``f(query)`` when it takes one argument)."""
    import inspect

    if not callable(retriever) or _is_langchain(retriever):
        invoke = getattr(retriever, "invoke", None)
        if callable(invoke):
            return lambda query, k: invoke(query)
        retrieve = getattr(retriever, "retrieve", None)
        if callable(retrieve):
            return lambda query, k: retrieve(query)
        raise TypeError(
            "retriever must be a callable (query, k) -> results, a LangChain or LlamaIndex "
            "retriever, a retriever URI or a run file path"
        )
    try:
        params = [
            p
            for p in inspect.signature(retriever).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return retriever
    if len(params) == 1:
        if inspect.iscoroutinefunction(retriever):

            async def one(query: str, k: int) -> Any:
                return await retriever(query)

            return one
        return lambda query, k: retriever(query)
    return retriever


def _is_langchain(obj: Any) -> bool:
    return any(
        c.__module__.startswith("langchain_core") and c.__name__ == "BaseRetriever"
        for c in type(obj).__mro__
    )
