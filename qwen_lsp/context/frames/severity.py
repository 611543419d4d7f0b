"""One severity vocabulary for every recogniser: what a line of tool output says about how bad it is.

Tools spell it many ways (`error:`, `[ERROR]`, `✘`, `✖`, `::error`, `not ok`, `(E030)`; `warning`,
`WARN`, `[WARNING]`, `▲`, `⚠`, `style:`, `(W033)`, `DeprecationWarning`; `note:`, `... is here:`). The
first such token on a line decides, so `namespace warning : ... not absolute` is a warning and
`parser error : Entity 'y' not defined` an error. Build-tool summary lines that only wrap another
tool's error (`Compile failed; see the compiler error output`) are recognised separately so a
ranking can put the wrapped error first.
"""

from __future__ import annotations

import re

from .model import Severity

# Markers: words and signs a tool prints to say how bad a finding is. They decide first.
_E = r"\b(?:errors?|fatal|panic(?:ked)?|FAIL|critical)\b|[✘✖✗]|::error\b|\([EF]\d{3}\)|Severity: (?:High|Critical)"
_W = r"\bwarn(?:ing|ings)?\b|\bWARN\b|[▲⚠]|::warning\b|\b(?:style|portability|performance):|\(W\d{3}\)|\b\w+Warning\b|Severity: (?:Low|Medium)"
_I = r"\bnote:|\bhere:\s*$|::notice\b"
_MARKERS = re.compile(f"(?P<e>{_E})|(?P<w>{_W})|(?P<i>{_I})", re.IGNORECASE)
# Failure words: a message that describes a failure without a marker ("config missing", "KeyError:").
_FAILURE = re.compile(
    r"\b(?:died|failed|failure|exception|abort(?:ed)?|undefined|cannot|can't|unbound|not found|terminat\w*|missing|not ok|"
    r"segmentation fault)\b|\*\* \(|\w+(?:Error|Exception):",
    re.IGNORECASE,
)
_ERRORISH = re.compile(f"{_E}|{_FAILURE.pattern}", re.IGNORECASE)
_QUOTED = re.compile(r"'[^'\s]*'|\"[^\"\s]*\"")  # a quoted word is a name ("in function 'error'"), not a verdict
# A line that only reports that another tool failed: the other tool's diagnostic is the place to fix.
WRAPPER = re.compile(
    r"Compile failed|Compilation failure|see the compiler (?:error )?output|Failed to execute goal|"
    r"did not complete successfully|^BUILD FAILED|^FAILURE: Build failed|^make(?:\[\d+\])?: \*\*\*|^ninja: build stopped",
    re.IGNORECASE,
)


def line_severity(text: str) -> Severity | None:
    """The severity `text` states: its first marker, else error if it describes a failure, else None."""
    if "'" in text or '"' in text:
        text = _QUOTED.sub("", text)
    if m := _MARKERS.search(text):
        return "error" if m["e"] else "warning" if m["w"] else "info"
    return "error" if _FAILURE.search(text) else None


def has_error_word(text: str) -> bool:
    """Anywhere on the line, not only first: `Thread 3 received signal SIGSEGV, Segmentation fault`."""
    return _ERRORISH.search(text) is not None


_WORDS: dict[str, Severity] = {
    "error": "error", "fatal error": "error", "fatal": "error", "e": "error", "err": "error", "critical": "error",
    "warning": "warning", "warn": "warning", "w": "warning", "style": "warning", "portability": "warning",
    "performance": "warning",
}


def severity_word(word: str) -> Severity:
    """A severity printed as a word in a fixed column (`error`, `Warning`, `style`, `W`)."""
    return _WORDS.get(word.lower(), "info")
