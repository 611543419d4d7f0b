"""qwen-lsp: a local coding agent (Qwen3.6 on vLLM) behind the Language Server Protocol."""

__version__ = "0.1.0"
