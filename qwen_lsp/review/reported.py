"""Review that keeps quiet: what `qwen-review` leaves out of its report.

    fingerprint(finding, cited)   the same file, the same cited lines (hashed), the same message
    ReportedStore                 the fingerprints already reported in one repository (the user's cache)
    hold_back(result, ...)        drops the findings reported before (unless --all) and those past
                                  --max-findings (the least severe first); counts both on the result

The findings' code lines come from the caller (the staged version of each file), so a finding on
code that changed since is news again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from qwen_lsp.review.engine import SEVERITY_ORDER, Finding, ReviewResult

MAX_KEPT = 5_000  # fingerprints per repository; the oldest go first
MAX_CITED_LINES = 50
CitedLine = Callable[[str, int], str | None]  # (path, 1-based line) -> its text in the reviewed version


def fingerprint(finding: Finding, line_of: CitedLine) -> str:
    end = min(finding.end_line or finding.line, finding.line + MAX_CITED_LINES)
    cited = "\n".join((line_of(finding.path, n) or "").strip() for n in range(finding.line, end + 1))
    message = " ".join(finding.message.lower().split())
    return hashlib.sha256(f"{finding.path}\0{cited}\0{message}".encode("utf-8", "surrogateescape")).hexdigest()[:32]


class ReportedStore:
    """One repository's reported fingerprints, in a JSON file in the user's cache directory."""

    def __init__(self, cache_dir: Path, root: Path) -> None:
        key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
        self.path = cache_dir / "review-reported" / f"{key}.json"
        self.seen: list[str] = []
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if isinstance(data, list):
                self.seen = [str(x) for x in data]

    def __contains__(self, print_: str) -> bool:
        return print_ in self.seen

    def add(self, prints: list[str]) -> None:
        new = [p for p in prints if p not in self.seen]
        self.seen = (self.seen + new)[-MAX_KEPT:]

    def save(self) -> None:
        """Atomically; a cache that cannot be written only means repeats come back."""
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(self.seen, out)
            os.replace(tmp, self.path)


def hold_back(result: ReviewResult, line_of: CitedLine, store: ReportedStore | None, *,
              max_findings: int | None = None) -> ReviewResult:
    """`result` with repeats (when `store` is given) and findings past `max_findings` left out and
    counted; the findings it still reports are recorded in `store`."""
    if not result.reviewed:
        return result
    kept, context, repeated = [], [], 0
    shown: list[str] = []
    for bucket, out in ((result.findings, kept), (result.context_findings, context)):
        for finding in bucket:
            print_ = fingerprint(finding, line_of)
            if store is not None and (print_ in store or print_ in shown):
                repeated += 1
                continue
            shown.append(print_)
            out.append((finding, print_))
    over = 0
    if max_findings is not None:
        ranked = sorted(kept + context, key=lambda pair: SEVERITY_ORDER[pair[0].severity])  # stable: model order within
        allowed = {id(pair) for pair in ranked[:max(0, max_findings)]}
        over = len(ranked) - len(allowed)
        kept = [pair for pair in kept if id(pair) in allowed]
        context = [pair for pair in context if id(pair) in allowed]
    if store is not None:
        store.add([print_ for _, print_ in kept + context])
    return result.model_copy(update={
        "findings": [f for f, _ in kept], "context_findings": [f for f, _ in context],
        "held_back_repeated": result.held_back_repeated + repeated,
        "held_back_over_limit": result.held_back_over_limit + over,
    })
