"""(Re)generate the JavaScript part of the recall corpus: bench/recall/manifest_js.json (issue 34).

    .venv/bin/python bench/recall/jsbuild.py [--seed 34] [--cases 30]

The project is bench/recall/jsproject ("tally": money, carts, a rule language, invoices in formats
loaded by name, a schema validator that dispatches on `this['check' + type]`), several CommonJS
modules tested with `node --test`. Its functions are found with the same tree-sitter definitions the
context uses; single-line mutations (operator swaps, off-by-one integers, flipped booleans, a
dropped statement) of function bodies are tried one by one on a copy, in seeded random order, and a
mutation is kept when the mutant passes `node --check` and some test of the suite fails. The case's
test command is `node --test test/FILE` (the file of the first failing test), and its distance is
"frame" when the failing test's stack names a line of the mutated function, "direct" when the test
file calls the function by name, else "deep" (node gives no call probe: this is the textual guess).
One case per function. Needs `node` (>= 20) on PATH.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from qwen_lsp.context.treesitter import definitions  # noqa: E402

PROJECT = HERE / "jsproject"
MANIFEST = HERE / "manifest_js.json"
NAME, VERSION = "tally", "1.4.0"

# (operator, pattern, replacement): applied to one occurrence per candidate, outside strings.
SWAPS = [
    ("compare", r"===", "!=="), ("compare", r"!==", "==="), ("compare", r" < ", " <= "), ("compare", r" <= ", " < "),
    ("compare", r" > ", " >= "), ("compare", r" >= ", " > "), ("boolop", r" && ", " || "), ("boolop", r" \|\| ", " && "),
    ("arith", r" \+ ", " - "), ("arith", r" - ", " + "), ("arith", r" \* ", " / "), ("bool", r"\btrue\b", "false"),
    ("bool", r"\bfalse\b", "true"), ("off_by_one", r"(?<![\w.'\"])(\d+)(?![\w.'\"])", None),
]


def _strings(line: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`|/[^/\s][^/]*/[gimsuy]*", line)]


def line_mutations(line: str) -> list[tuple[str, str]]:
    """(operator, mutated line) for one source line: every swap at every place outside a string."""
    code = line.split("//")[0]
    if not code.strip() or code.strip().startswith(("*", "/*", "'use strict'")):
        return []
    quoted = _strings(line)
    out: list[tuple[str, str]] = []
    for op, pattern, new in SWAPS:
        for m in re.finditer(pattern, code):
            if any(a <= m.start() < b for a, b in quoted):
                continue
            rep = str(int(m.group(1)) + 1) if new is None else new
            out.append((op, line[: m.start()] + rep + line[m.end():]))
    stripped = line.strip()
    if stripped.endswith(";") and not stripped.startswith(("return", "const", "let", "var", "throw", "}")) \
            and "=>" not in stripped:
        out.append(("dropped_statement", line[: len(line) - len(line.lstrip())] + ";"))
    return out


def candidates(rel: str, text: str) -> list[dict]:
    lines = text.splitlines()
    out = []
    for d in definitions(text, "javascript"):
        if d.kind not in ("function", "method") or d.end_line <= d.line:
            continue
        for n in range(d.line + 1, d.end_line):
            for op, mutated in line_mutations(lines[n - 1]):
                out.append({"file": rel, "function": d.name, "def_line": d.line, "first_line": d.line,
                            "end_line": d.end_line, "line": n, "operator": op, "original": lines[n - 1],
                            "mutated": mutated})
    return out


def run_suite(tree: Path) -> list[dict]:
    """Failing tests of `node --test` in `tree`: {name, file, stack} from the TAP report."""
    done = subprocess.run(["node", "--test", "--test-reporter=tap", "test/"], cwd=tree, capture_output=True,
                          text=True, timeout=120)
    failed = []
    blocks = re.split(r"\n(?=\s*(?:not ok|ok) \d+ - )", done.stdout)
    for block in blocks:
        m = re.match(r"\s*not ok \d+ - (.*)", block)
        loc = re.search(r"location: '([^']+):(\d+):\d+'", block)
        if not m or not loc or "failureType: 'subtestsFailed'" in block:
            continue
        failed.append({"name": m.group(1).strip(), "file": Path(loc.group(1)).relative_to(tree).as_posix(),
                       "block": block})
    return failed


def build(seed: int, wanted: int, work: Path) -> list[dict]:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(PROJECT, work)
    rng = random.Random(seed)
    by_function: dict[tuple[str, str, int], list[dict]] = {}
    for path in sorted((work / "src").rglob("*.js")):
        rel = path.relative_to(work).as_posix()
        for c in candidates(rel, path.read_text(encoding="utf-8")):
            by_function.setdefault((rel, c["function"], c["def_line"]), []).append(c)
    order = sorted(by_function)
    rng.shuffle(order)
    cases: list[dict] = []
    for key in order:
        if len(cases) >= wanted:
            break
        tries = by_function[key][:]
        rng.shuffle(tries)
        for c in tries[:4]:
            path = work / c["file"]
            original = path.read_text(encoding="utf-8")
            lines = original.splitlines(keepends=True)
            lines[c["line"] - 1] = c["mutated"] + "\n"
            path.write_text("".join(lines), encoding="utf-8")
            try:
                if subprocess.run(["node", "--check", str(path)], capture_output=True).returncode != 0:
                    continue
                failed = run_suite(work)
            finally:
                path.write_text(original, encoding="utf-8")
            if not failed:
                continue
            first = failed[0]
            span = range(c["def_line"], c["end_line"] + 1)
            in_stack = any(int(n) in span for n in re.findall(re.escape(c["file"]) + r":(\d+):", first["block"]))
            test_text = (work / first["file"]).read_text(encoding="utf-8")
            distance = "frame" if in_stack else "direct" if re.search(rf"\b{re.escape(c['function'])}\(", test_text) else "deep"
            cases.append({"id": f"{NAME}-{len(cases) + 1:02d}", "package": NAME, "version": VERSION, "lang": "javascript",
                          "pythonpath": ".", **c, "test": first["file"], "test_name": first["name"],
                          "command": ["node", "--test", first["file"]], "distance": distance,
                          "traceback_functions": []})
            print(f"  {cases[-1]['id']}: {c['file']}:{c['line']} {c['function']} [{c['operator']}] {distance} <- "
                  f"{first['file']} {first['name']!r}", flush=True)
            break
    return cases


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=34)
    ap.add_argument("--cases", type=int, default=30)
    ap.add_argument("--out", type=Path, default=MANIFEST)
    args = ap.parse_args(argv)
    from build import CACHE  # noqa: PLC0415 - the recall cache

    cases = build(args.seed, args.cases, CACHE / "work" / f"{NAME}-{VERSION}")
    manifest = {"seed": args.seed, "lang": "javascript", "project": str(PROJECT.relative_to(ROOT)),
                "packages": [{"name": NAME, "version": VERSION, "lib": "src", "tests": ["test"]}],
                "cases": cases}
    args.out.write_text(json.dumps(manifest, indent=1) + "\n")
    by = {d: sum(c["distance"] == d for c in cases) for d in ("frame", "direct", "deep")}
    print(f"{len(cases)} cases {by} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())
