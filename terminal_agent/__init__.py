"""Terminal entry points to the qwen-lsp engine: `qfix` and `qwen-review`."""
