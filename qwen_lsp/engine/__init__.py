"""Think → patch, writing nothing: the loop, its tools, edit application, the in-memory overlay,
validation, the disk-cached plan, shell-command risk labels."""

from qwen_lsp.engine.loop import Engine

__all__ = ["Engine"]
