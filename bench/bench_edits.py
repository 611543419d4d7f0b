"""Edit application benchmark: correct / wrong / refused per corruption class, ours vs aider.

Builds the corpus of bench/edit_corpus.py (real files in several languages, a known
intended result per case), applies every case with qwen-lsp's `apply_edit` and, when
given the python of a separate venv with aider-chat installed, with aider's
`do_replace`, and prints both side by side. A case is

    correct  the file became exactly the intended text (or, for `twice`/`absent`, was refused)
    wrong    the file changed, but not as intended: the outcome that must not happen
    refused  nothing was written (the model gets an error and can retry)

    .venv/bin/python bench/bench_edits.py [--aider-python /work/aider-venv/bin/python] [--show-wrong]
                                          [--save corpus.jsonl | --load corpus.jsonl]

Benchmark-only setup (never project dependencies):
    python3.11 -m venv /work/aider-venv && /work/aider-venv/bin/pip install aider-chat==0.86.2
    apt-get install -y golang-go      # Go sources for the corpus; without it Go is left out
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from edit_corpus import KINDS, Case, generate  # noqa: E402  (bench/edit_corpus.py)
from figures import figure  # noqa: E402  (bench/figures.py)

from qwen_lsp.engine.edits import EditError, apply_edit  # noqa: E402

HERE = Path(__file__).resolve().parent


def verdict(case: Case, result: str | None) -> str:
    if result is None:
        return "correct" if case.expected is None else "refused"
    return "correct" if result == case.expected else "wrong"


def ours(case: Case) -> str | None:
    try:
        return apply_edit(case.text, case.old, case.new, path=Path(case.path).name).text
    except EditError:
        return None


def aiders(cases: list[Case], python: str) -> dict[str, str | None]:
    payload = "".join(json.dumps({k: v for k, v in asdict(c).items() if k in ("id", "path", "text", "old", "new")}) + "\n"
                      for c in cases)
    done = subprocess.run([python, str(HERE / "aider_replace.py")], input=payload, capture_output=True, text=True,
                          check=True)
    return {row["id"]: row["text"] for row in map(json.loads, done.stdout.splitlines())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--per-kind", type=int, default=30)
    parser.add_argument("--aider-python", default=os.environ.get("AIDER_PYTHON"),
                        help="python of a venv with aider-chat (or $AIDER_PYTHON); without it aider is skipped")
    parser.add_argument("--show-wrong", action="store_true", help="print every wrong case of ours")
    parser.add_argument("--save", type=Path, help="also write the corpus here (JSON lines)")
    parser.add_argument("--load", type=Path, help="run a saved corpus instead of generating one "
                        "(the generated one depends on the files installed on this machine)")
    args = parser.parse_args(argv)

    if args.load:
        cases = [Case(**json.loads(line)) for line in args.load.read_text(encoding="utf-8").splitlines() if line]
    else:
        cases = list(generate(args.seed, args.per_kind))
    if args.save:
        args.save.write_text("".join(json.dumps(asdict(c)) + "\n" for c in cases), encoding="utf-8")
    languages = Counter(c.language for c in cases)
    source = f"loaded from {args.load}" if args.load else f"seed {args.seed}"
    print(f"{len(cases)} cases, {source}: " + ", ".join(f"{n} {lang}" for lang, n in sorted(languages.items())))
    mine = {c.id: verdict(c, ours(c)) for c in cases}

    theirs: dict[str, str] | None = None
    if args.aider_python and Path(args.aider_python).exists():
        applied = aiders(cases, args.aider_python)
        theirs = {c.id: verdict(c, applied.get(c.id)) for c in cases}
    else:
        print("aider comparison SKIPPED: pass --aider-python PATH (a separate venv with aider-chat installed)")

    head = f"{'class':<14} {'n':>4} | {'qwen-lsp correct':>16} {'wrong':>5} {'refused':>7}"
    if theirs is not None:
        head += f" | {'aider correct':>13} {'wrong':>5} {'refused':>7}"
    print(head)
    print("-" * len(head))
    for kind in [*KINDS, "all"]:
        ids = [c.id for c in cases if kind in ("all", c.kind)]
        if kind == "all":
            print("-" * len(head))
        row = f"{kind:<14} {len(ids):>4} | " + _counts(mine, ids, 16)
        if theirs is not None:
            row += " | " + _counts(theirs, ids, 13)
        print(row)

    total = Counter(mine.values())
    figure("edits correct", total["correct"], "cases")
    figure("edits wrong", total["wrong"], "cases")
    figure("edits refused", total["refused"], "cases")
    if theirs is not None:
        figure("aider correct", Counter(theirs.values())["correct"], "cases")
        figure("aider wrong", Counter(theirs.values())["wrong"], "cases")

    if args.show_wrong:
        for c in cases:
            if mine[c.id] == "wrong":
                print(f"\n== {c.id} {c.language} {c.path}\n-- old\n{c.old}-- new\n{c.new}")
    return 0


def _counts(verdicts: dict[str, str], ids: list[str], width: int) -> str:
    n = Counter(verdicts[i] for i in ids)
    return f"{n['correct']:>{width}} {n['wrong']:>5} {n['refused']:>7}"


if __name__ == "__main__":
    sys.exit(main())
