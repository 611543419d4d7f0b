"""Operator subcommands of `qwen-lsp`: model-command (serving), doctor, stats."""
