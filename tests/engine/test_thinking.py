"""engine/thinking.py: the live thinking tail is rate-limited, one line, short and sanitized."""

from __future__ import annotations

from qwen_lsp.engine.thinking import INTERVAL_SECONDS, WIDTH, Thought, ThinkingTail, decode, encode, tail_of


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_at_most_one_thought_per_interval():
    clock, sent = Clock(), []
    tail = ThinkingTail(sent.append, clock=clock, count=lambda piece: 1)
    for n in range(100):  # 100 pieces over 2.5 s: 0.025 s apart
        tail.feed(f"word{n} ")
        clock.now += 0.025
    assert 2.5 / INTERVAL_SECONDS <= len(sent) <= 2.5 / INTERVAL_SECONDS + 1
    assert [t.tokens for t in sent][:2] == [1, 11] and sent[-1].tail.endswith("word90")
    assert all(later.seconds - earlier.seconds >= INTERVAL_SECONDS - 1e-9 for earlier, later in zip(sent, sent[1:]))


def test_the_tail_is_one_short_visible_line():
    hostile = "I will\nnow \x1b[2J\x1b[31mclear the screen\r and \u202eflip text " + "and go on " * 40
    shown = tail_of(hostile)
    assert "\n" not in shown and "\r" not in shown and "\x1b" not in shown and "\u202e" not in shown
    assert len(shown) <= WIDTH + 1 and shown.startswith("…") and shown.endswith("go on")
    assert "␛" in tail_of("a \x1b[2J b")  # hidden characters are shown, not obeyed


def test_a_thought_survives_the_progress_callbacks():
    thought = Thought(312, 14.2, "…the last words")
    assert decode(encode(thought)) == Thought(312, 14.2, "…the last words")
    assert decode("planning") is None
    assert thought.line() == "thinking · 312 tokens · 14s · …the last words"
