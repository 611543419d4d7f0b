"""Think → patch, writing nothing: the loop, its tools, edit application, the in-memory overlay,
validation, the disk-cached plan, shell-command risk labels."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from qwen_lsp.engine.loop import Engine

__all__ = ["Engine"]


def __getattr__(name: str) -> Any:
    # Lazy: the small pure modules here (thinking, comments) are imported by front ends at start-up,
    # which must not pay for the whole engine (openai, the tokenizer) before their first fix.
    if name == "Engine":
        from qwen_lsp.engine.loop import Engine

        return Engine
    raise AttributeError(name)
