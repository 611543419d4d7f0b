"""Think → patch, writing nothing: the loop, its tools, edit application, the in-memory overlay,
validation, the disk-cached plan, shell-command risk labels.

`Engine` is imported on first use: the language server imports small modules of this package
(protected paths) at start, and the loop's imports (the model client) cost most of a second that
would delay its `initialize`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qwen_lsp.engine.loop import Engine

__all__ = ["Engine"]


def __getattr__(name: str):
    if name == "Engine":
        from qwen_lsp.engine.loop import Engine

        return Engine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
