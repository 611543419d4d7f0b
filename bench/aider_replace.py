"""Apply corpus cases with aider's `do_replace`; run by bench_edits.py with the python of a
separate venv that has aider-chat (never a qwen-lsp dependency).

Reads cases as JSON lines on stdin; writes {"id", "text"} lines (text null: not applied).
"""

from __future__ import annotations

import json
import sys

from aider.coders.editblock_coder import DEFAULT_FENCE, do_replace


def main() -> int:
    for line in sys.stdin:
        case = json.loads(line)
        try:
            text = do_replace(case["path"], case["text"], case["old"], case["new"], DEFAULT_FENCE)  # as its coder calls it
        except Exception as exc:  # noqa: BLE001 - aider raising is a refusal for this comparison
            text, error = None, f"{type(exc).__name__}: {exc}"
        else:
            error = None
        if text == case["text"]:
            text = None  # nothing changed: a refusal too
        print(json.dumps({"id": case["id"], "text": text, "error": error}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
