"""Type stubs of the extension module ``veredicto._native``."""

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

class VeredictoError(Exception):
    """An error of veredicto (what the command line reports with exit code 2)."""

class InputError(VeredictoError):
    """Input that does not parse."""

    file: str
    line: int
    field: Optional[str]

class RelevanceEvaluator:
    def __new__(
        cls,
        query_relevance: Mapping[str, Mapping[str, int]],
        measures: Sequence[str],
        relevance_level: int = 1,
        judged_docs_only_flag: bool = False,
    ) -> "RelevanceEvaluator": ...
    def evaluate(
        self, scores: Mapping[str, Mapping[str, float]]
    ) -> Dict[str, Dict[str, float]]: ...
    def summary(self, scores: Mapping[str, Mapping[str, float]]) -> Dict[str, float]: ...

class NativeExam:
    @property
    def accepted(self) -> bool: ...
    @property
    def verdict(self) -> str: ...
    @property
    def regression(self) -> bool: ...
    @property
    def run_id(self) -> Optional[str]: ...
    @property
    def notices(self) -> List[str]: ...
    @property
    def reasons(self) -> List[str]: ...
    @property
    def failing_cases(self) -> List[str]: ...
    def render(self, format: str) -> str: ...
    def to_html(self) -> str: ...

def run_cli(args: List[str]) -> int: ...
def version() -> str: ...
def supported_measure_names() -> List[str]: ...
def measure_sets() -> List[Tuple[str, List[str]]]: ...
def output_names(measure: str) -> List[str]: ...
def exam(
    golden: str,
    retriever: Any,
    *,
    corpus: Optional[str] = None,
    documents: Optional[str] = None,
    policy: Optional[str] = None,
    notes: Optional[str] = None,
    history: Optional[str] = None,
    label: Optional[str] = None,
    depth: int = 100,
    concurrency: int = 4,
    as_of: str,
    created_at: str,
    baseline: Optional[str] = None,
    fail_on_regression: bool = False,
    seed: Optional[int] = None,
    duplicates: Optional[str] = None,
    model: Optional[str] = None,
) -> NativeExam: ...

class NativeHistory:
    def __init__(self, spec: str) -> None: ...
    def runs_json(self, limit: Optional[int] = None, label: Optional[str] = None) -> str: ...
    def show_json(self, run: str) -> str: ...
    def compare_json(
        self,
        run: str = "latest",
        baseline: str = "previous",
        corpus: Optional[str] = None,
        seed: Optional[int] = None,
    ) -> str: ...
