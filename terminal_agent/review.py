"""Kept so that hooks installed by earlier versions (`python -m terminal_agent.review`) still run."""

from qwen_lsp.review.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
