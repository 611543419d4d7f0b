"""Live thinking: a short, rate-limited, sanitized tail of the plan's reasoning while it streams.

The engine feeds every reasoning piece of the thinking call to a `ThinkingTail`; at most once per
`interval` it sends the engine's progress callback one *thought*: the token count, the seconds since
the call started and the last words of the reasoning on one line, with every hidden character shown
(qwen_lsp.sanitize) and no newline. Thoughts travel through the same progress callbacks as the phase
names (the editor's `$/progress`, qfix's spinner, the warm process's socket), encoded by `encode`;
`decode` tells a callback which one it got. The `live_thinking` setting turns them off.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from qwen_lsp.sanitize import one_line

TAG = "\x1ethought\x1e"  # a record separator: no phase name has one, and sanitized text cannot
INTERVAL_SECONDS = 0.25  # at most four thoughts a second
WIDTH = 72  # characters of reasoning shown
KEPT_CHARS = 4_096  # the end of the reasoning kept to cut the tail from


@dataclass(frozen=True)
class Thought:
    tokens: int
    seconds: float
    tail: str  # one line, sanitized, at most WIDTH characters (+ a leading "…")

    def line(self) -> str:
        """How front ends show it: "thinking · 312 tokens · 14s · …the last words"."""
        return f"thinking · {self.tokens} tokens · {self.seconds:.0f}s · {self.tail}"


def encode(thought: Thought) -> str:
    return f"{TAG}{thought.tokens}\t{thought.seconds:.1f}\t{thought.tail}"


def decode(message: str) -> Thought | None:
    """The thought a progress message carries; None for a phase name."""
    if not message.startswith(TAG):
        return None
    try:
        tokens, seconds, tail = message[len(TAG):].split("\t", 2)
        return Thought(int(tokens), float(seconds), tail)
    except ValueError:
        return None


def tail_of(text: str, width: int = WIDTH) -> str:
    """The last words of `text` on one line: whitespace runs collapsed, hidden characters shown,
    cut at a word boundary when one is near."""
    flat = " ".join(text.split())
    shown = one_line(flat)
    if len(shown) <= width:
        return shown
    cut = shown[-width:]
    space = cut.find(" ")
    if 0 <= space < width // 4:
        cut = cut[space + 1:]
    return "…" + cut


class ThinkingTail:
    """Collects reasoning pieces; sends `emit` a Thought at most every `interval` seconds."""

    def __init__(self, emit: Callable[[Thought], None], *, interval: float = INTERVAL_SECONDS,
                 count: Callable[[str], int] | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.emit, self.interval, self.clock = emit, interval, clock
        self.count = count or _count
        self.started = clock()
        self.last_sent: float | None = None
        self.tokens = 0
        self.text = ""

    def feed(self, piece: str) -> None:
        self.tokens += self.count(piece)
        self.text = (self.text + piece)[-KEPT_CHARS:]
        now = self.clock()
        if self.last_sent is not None and now - self.last_sent < self.interval:
            return
        tail = tail_of(self.text)
        if not tail:
            return
        self.last_sent = now
        self.emit(Thought(self.tokens, now - self.started, tail))


def _count(piece: str) -> int:
    from qwen_lsp.llm.tokens import count_tokens

    return max(1, count_tokens(piece)) if piece else 0
