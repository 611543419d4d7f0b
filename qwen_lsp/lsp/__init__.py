"""The language server: pygls wiring, the engine thread, conversions to LSP types."""
