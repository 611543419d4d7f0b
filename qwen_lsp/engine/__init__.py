"""Think → patch, writing nothing: the loop, its tools, edit application, the in-memory overlay,
validation, the disk-cached plan, shell-command risk labels.

`Engine` is imported on first use: the language server and qfix import small pure modules of this
package (protected paths, thinking, comments) at start, and the loop's imports (the model client,
the tokenizer) cost most of a second that would delay their start."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from qwen_lsp.engine.loop import Engine

__all__ = ["Engine"]


def __getattr__(name: str) -> Any:
    if name == "Engine":
        from qwen_lsp.engine.loop import Engine

        return Engine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
