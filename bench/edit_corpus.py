"""A reproducible corpus of edit_file calls with imperfect old_string copies, from real source.

Each case is a real file, a real block of it, a change to that block (the intended
result is known exactly), and the (old_string, new_string) a model might send for
it, damaged in one of the ways models damage them:

    exact           copied exactly
    indent          the block shifted left or right (both strings alike)
    tabs            tabs written as spaces, or spaces as tabs
    trailing_ws     trailing spaces or tabs on some copied lines
    typo_repeated   a typo in an unchanged line, repeated in new_string's copy of it
    line_omitted    an unchanged line left out of both strings
    elision         unchanged lines written as `...` / `# ...` / `// ...` (in both, or in new only)
    reindent_len    shifted, a typo, and new_string longer or shorter than old_string
    late_window     typos in the first two copied lines, the change at the end
    twice           old_string occurs twice in the file (the right answer is a refusal)
    absent          old_string is not in the file (the right answer is a refusal)
    indent_noise    one copied line indented wrongly (a column too far or too short, or a tab
                    for spaces or spaces for a tab), on the first, a middle or the last line,
                    in old_string only (new_string has it right) or in both; often a typo too

Sources are files already on this machine: Python from the project's site-packages,
JavaScript and TypeScript from the global npm packages and editors/vscode, Go from
the Go toolchain's standard library (apt-get install golang-go), C from pyenv's
sources and /usr/include. The same machine and seed give the same corpus.

    .venv/bin/python bench/edit_corpus.py --out /tmp/edit-corpus.jsonl
"""

from __future__ import annotations

import argparse
import difflib
import glob
import json
import random
import re
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SITE = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"

SOURCES: dict[str, list[str]] = {
    "python": [f"{SITE}/**/*.py"],
    "javascript": ["/usr/lib/node_modules/**/*.js"],
    "typescript": [f"{REPO}/editors/vscode/src/**/*.ts", f"{REPO}/editors/vscode/test/**/*.ts",
                   "/usr/lib/node_modules/typescript/lib/*.d.ts"],
    "go": ["/usr/lib/go*/src/**/*.go", "/usr/local/go/src/**/*.go"],
    "c": ["/root/.pyenv/**/*.c", "/usr/include/**/*.h"],
    "rust": ["/root/.rustup/toolchains/*/lib/rustlib/src/**/*.rs", f"{SITE}/**/*.rs"],
}
KINDS = ["exact", "indent", "tabs", "trailing_ws", "typo_repeated", "line_omitted", "elision",
         "reindent_len", "late_window", "twice", "absent", "indent_noise"]
FILES_PER_LANGUAGE = 400  # sampled (seeded) from each language's files
_IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{3,}\b")


@dataclass
class Case:
    id: str
    kind: str
    language: str
    path: str
    text: str
    old: str
    new: str
    expected: str | None  # None: the right answer is a refusal


# --- source files ---------------------------------------------------------------------


def source_files(rng: random.Random) -> dict[str, list[tuple[str, list[str]]]]:
    """Per language, a seeded sample of (path, lines) of ordinary hand-written files."""
    found: dict[str, list[tuple[str, list[str]]]] = {}
    for language, patterns in SOURCES.items():
        paths = sorted({p for pattern in patterns for p in glob.glob(pattern, recursive=True)})
        rng.shuffle(paths)
        files = []
        for path in paths:
            lines = _readable(path)
            if lines is not None:
                files.append((path, lines))
            if len(files) >= FILES_PER_LANGUAGE:
                break
        if files:
            found[language] = files
    return found


def _readable(path: str) -> list[str] | None:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if not 1500 <= len(text) <= 200_000 or "\r" in text or not text.endswith("\n"):
        return None
    lines = text.split("\n")[:-1]
    if max(len(line) for line in lines) > 200:  # minified or generated
        return None
    return lines


# --- what a model's copy gets wrong ---------------------------------------------------------


def typo(line: str, rng: random.Random) -> str | None:
    """The line with two adjacent letters of one identifier swapped."""
    words = [m for m in _IDENT.finditer(line) if len(set(m.group()[1:-1])) > 1]
    if not words:
        return None
    m = rng.choice(words)
    word = m.group()
    for _ in range(10):
        i = rng.randrange(1, len(word) - 2)
        if word[i] != word[i + 1]:
            swapped = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
            return line[: m.start()] + swapped + line[m.end() :]
    return None


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def shift(old: list[str], new: list[str], rng: random.Random) -> tuple[list[str], list[str]]:
    """Both strings moved left to column 0 when indented, else right by one step."""
    indents = [indent_of(line) for line in old + new if line.strip()]
    base = min(indents, key=len)
    if base and rng.random() < 0.7:
        return [_dedent(line, base) for line in old], [_dedent(line, base) for line in new]
    step = "\t" if any(i.startswith("\t") for i in indents) else "    "
    return [step + line if line.strip() else line for line in old], [step + line if line.strip() else line for line in new]


def _dedent(line: str, base: str) -> str:
    return line[len(base) :] if line.startswith(base) else line.lstrip()


def swap_tabs(lines: list[str]) -> list[str] | None:
    indents = [indent_of(line) for line in lines if line.strip()]
    if any("\t" in i for i in indents):
        return [_expand(line) for line in lines]
    if any(len(i) >= 4 for i in indents):
        return [_tabify(line) for line in lines]
    return None


def _expand(line: str) -> str:
    ind = indent_of(line)
    return ind.replace("\t", "    ") + line[len(ind) :]


def _tabify(line: str) -> str:
    ind = indent_of(line)
    return "\t" * (len(ind) // 4) + " " * (len(ind) % 4) + line[len(ind) :]


def elision_marker(language: str, rng: random.Random) -> str:
    if language == "python":
        return rng.choice(["...", "# ...", "# ... existing code ..."])
    return rng.choice(["// ...", "// ... existing code ...", "/* ... */", "..."])


# --- the intended change ------------------------------------------------------------------------


@dataclass
class Change:
    new_block: list[str]  # the block as it should be afterwards (the file's own spelling)
    touched: set[int]  # block indices of old lines the change replaces or deletes, or inserts next to
    lengthens: int  # len(new_block) - len(block)


def make_change(block: list[str], language: str, rng: random.Random, *, avoid: set[int], where: str = "any",
                length_change: bool = False) -> Change | None:
    """Rename one identifier on a line, insert lines, or delete one; not on lines in `avoid`."""
    candidates = [i for i, line in enumerate(block) if line.strip() and i not in avoid and len(line.strip()) > 3]
    if where == "end":
        candidates = [i for i in candidates if i >= len(block) - 2]
    if not candidates:
        return None
    i = rng.choice(candidates)
    how = rng.choice(["insert", "delete"] if length_change else ["rename", "rename", "insert", "delete"])
    if how == "rename":
        words = list(_IDENT.finditer(block[i]))
        if not words:
            return None
        m = rng.choice(words)
        line = block[i][: m.start()] + m.group() + "_v2" + block[i][m.end() :]
        return Change(block[:i] + [line] + block[i + 1 :], {i}, 0)
    if how == "insert":
        count = rng.choice([2, 3]) if length_change else rng.choice([1, 1, 2])
        ind = indent_of(block[i])
        stmt = {"python": 'log_event("edit", {n})', "go": 'logEvent("edit", {n})'}.get(language, 'logEvent("edit", {n});')
        added = [ind + stmt.format(n=n) for n in range(count)]
        return Change(block[: i + 1] + added + block[i + 1 :], {i, i + 1}, count)
    if i in (0, len(block) - 1) and not length_change:
        return None  # deleting a block's edge line makes the intended region ambiguous
    return Change(block[:i] + block[i + 1 :], {i}, -1)


# --- the cases ---------------------------------------------------------------------------------


def pick_block(lines: list[str], rng: random.Random, size: tuple[int, int]) -> tuple[int, list[str]] | None:
    n = rng.randint(*size)
    if len(lines) < n + 4:
        return None
    start = rng.randrange(2, len(lines) - n - 1)
    block = lines[start : start + n]
    nonblank = [line for line in block if line.strip()]
    if len(nonblank) < max(3, n - 2) or sum(len(line.strip()) for line in nonblank) < 12 * len(nonblank):
        return None
    if not block[0].strip() or not block[-1].strip():
        return None
    stripped = [line.strip() for line in lines]
    want = [line.strip() for line in block]
    if sum(stripped[s : s + n] == want for s in range(len(lines) - n + 1)) != 1:
        return None  # must be unique, even ignoring indentation
    return start, block


def render(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def build(kind: str, language: str, path: str, lines: list[str], others: list[list[str]],
          rng: random.Random) -> tuple[str, str, str | None] | None:
    """(old, new, expected) for one case of `kind`, or None if this file/block does not suit."""
    text = render(lines)
    if kind == "twice":
        return _twice(lines, language, rng)
    if kind == "absent":
        return _absent(lines, others, language, rng)
    size = (9, 14) if kind == "elision" else (4, 9)
    picked = pick_block(lines, rng, size)
    if picked is None:
        return None
    start, block = picked
    avoid: set[int] = set()
    old_block = list(block)
    if kind == "late_window":
        avoid = {0, 1}
    if kind == "line_omitted":
        omit = rng.randrange(1, len(block) - 1)
        if not block[omit].strip():
            return None
        avoid = {omit - 1, omit, omit + 1}
    change = make_change(block, language, rng, avoid=avoid, where="end" if kind == "late_window" else "any",
                         length_change=kind == "reindent_len")
    if change is None:
        return None
    expected = render(lines[:start] + change.new_block + lines[start + len(block) :])
    old, new = old_block, change.new_block

    def unchanged(i: int) -> bool:
        return i not in change.touched

    def in_new(i: int) -> int:  # where old line i is in new (only for lines before/after the change)
        first = min(change.touched)
        return i if i < first else i + change.lengthens

    if kind == "exact":
        pass
    elif kind == "indent":
        old, new = shift(old, new, rng)
    elif kind == "tabs":
        old2, new2 = swap_tabs(old), swap_tabs(new)
        if old2 is None or new2 is None:
            return None
        old, new = old2, new2
    elif kind == "trailing_ws":
        keep = [i for i in range(len(old)) if unchanged(i) and old[i].strip()]
        if not keep:
            return None
        old, new = list(old), list(new)
        for i in rng.sample(keep, min(len(keep), rng.randint(1, 3))):
            pad = rng.choice(["  ", " ", "\t", "    "])
            old[i] += pad
            if rng.random() < 0.5:
                new[in_new(i)] += pad
    elif kind in ("typo_repeated", "late_window"):
        targets = [0, 1] if kind == "late_window" else [
            rng.choice([i for i in range(len(old)) if unchanged(i) and old[i].strip()] or [0])]
        old, new = list(old), list(new)
        for i in targets:
            if not unchanged(i):
                return None
            bad = typo(old[i], rng)
            if bad is None:
                return None
            old[i] = bad
            new[in_new(i)] = bad
    elif kind == "line_omitted":
        omit = next(i for i in range(1, len(block) - 1) if i in avoid and i - 1 in avoid and i + 1 in avoid)
        if not unchanged(omit):
            return None
        j = in_new(omit)
        old, new = old[:omit] + old[omit + 1 :], new[:j] + new[j + 1 :]
    elif kind == "elision":
        # a run of 2+ unchanged lines, away from the change and the ends, becomes one `...` line
        first_change, last_change = min(change.touched), max(change.touched)
        runs = [(a, b) for a in range(1, len(old) - 2) for b in range(a + 2, len(old))
                if (b <= first_change - 1 or a > last_change + 1) and b - a <= 6]
        if not runs:
            return None
        a, b = rng.choice(runs)
        ind = indent_of(next((line for line in old[a:b] if line.strip()), old[a]))
        marker = ind + elision_marker(language, rng)
        na, nb = in_new(a), in_new(b - 1) + 1
        new = new[:na] + [marker] + new[nb:]
        if rng.random() < 0.7:  # in both strings; else only new_string elides
            old = old[:a] + [marker] + old[b:]
    elif kind == "reindent_len":
        old, new = shift(old, new, rng)
        keep = [i for i in range(len(old)) if unchanged(i) and old[i].strip()]
        if not keep:
            return None
        i = rng.choice(keep)
        bad = typo(old[i], rng)
        if bad is None:
            return None
        old[i] = bad  # a typo in old_string only: new_string has the line right
    elif kind == "indent_noise":
        noisy = _indent_noise(block, change, lines, rng)
        if noisy is None:
            return None
        old, new = noisy
    if render(old) == text or old == new:
        return None
    return render(old), render(new), expected


def _indent_noise(block: list[str], change: Change, lines: list[str],
                  rng: random.Random) -> tuple[list[str], list[str]] | None:
    """One line of the block copied with its indentation wrong, in old_string only or in both strings
    (then in new_string's copy of that line too), and half the time a typo in an unchanged line."""
    if not any(indent_of(line) for line in block if line.strip()):
        return None  # at module level the mistake would be an indented line, not one in a body
    old, new = list(block), list(change.new_block)
    # which new line is each old line's copy (renamed lines included, deleted ones not)
    partner: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            partner.update(zip(range(i1, i2), range(j1, j2), strict=True))
    nonblank = [i for i, line in enumerate(old) if line.strip()]
    where = rng.choice(["first", "middle", "last"])
    i = nonblank[0] if where == "first" else nonblank[-1] if where == "last" else rng.choice(nonblank[1:-1])
    wrong = _misindent(old[i], "\t" in "".join(lines[:200]), rng)
    if wrong is None:
        return None
    both = rng.random() < 0.5 and i in partner
    if both:
        new[partner[i]] = indent_of(wrong) + new[partner[i]].lstrip()
    old[i] = wrong
    if rng.random() < 0.5:
        unchanged = [k for k in nonblank if k in partner and old[k].strip() == new[partner[k]].strip()]
        k = rng.choice(unchanged) if unchanged else None
        bad = typo(old[k], rng) if k is not None else None
        if bad is not None:
            old[k] = bad
            new[partner[k]] = indent_of(new[partner[k]]) + bad.lstrip()
    return old, new


def _misindent(line: str, tab_file: bool, rng: random.Random) -> str | None:
    """`line` indented wrongly: one column more or less, or the other whitespace for its indentation."""
    ind, body = indent_of(line), line.lstrip()
    how = rng.choice(["more", "less", "swap"])
    if how == "more":
        return " " + line if not ind.startswith("\t") else ind + " " + body
    if how == "less":
        return ind[:-1] + body if ind else None
    if "\t" in ind:  # a tab for 2 spaces: the width changes
        return ind.replace("\t", "  ") + body
    if ind and not tab_file:  # spaces for tabs at 8 columns a tab
        return "\t" * (len(ind) // 8) + " " * (len(ind) % 8) + body if len(ind) >= 8 else "\t" + body
    return None


def _twice(lines: list[str], language: str, rng: random.Random) -> tuple[str, str, str | None] | None:
    """A block of 2-4 lines that occurs exactly twice, as written, in the file."""
    n = rng.choice([2, 3, 4])
    seen: dict[tuple[str, ...], list[int]] = {}
    for s in range(len(lines) - n + 1):
        key = tuple(lines[s : s + n])
        if all(k.strip() for k in key) and sum(len(k.strip()) for k in key) >= 12 * n and len(set(key)) == n:
            seen.setdefault(key, []).append(s)
    dupes = sorted(starts for starts in seen.values() if len(starts) == 2)
    if not dupes:
        return None
    s = rng.choice(dupes)[0]
    block = lines[s : s + n]
    change = make_change(block, language, rng, avoid=set())
    if change is None:
        return None
    old = block
    if rng.random() < 0.3:  # a copy with a typo: near two places at once
        bad = typo(old[0], rng)
        if bad is not None:
            old = [bad, *old[1:]]
    return render(old), render(change.new_block), None


def _absent(lines: list[str], others: list[list[str]], language: str,
            rng: random.Random) -> tuple[str, str, str | None] | None:
    """A block from another file of the same language, none of whose lines is in this file."""
    if not others:
        return None
    source = rng.choice(others)
    picked = pick_block(source, rng, (3, 7))
    if picked is None:
        return None
    _, block = picked
    have = {line.strip() for line in lines}
    if any(line.strip() in have for line in block if len(line.strip()) > 3):
        return None
    change = make_change(block, language, rng, avoid=set())
    if change is None:
        return None
    return render(block), render(change.new_block), None


def generate(seed: int = 14, per_kind: int = 30) -> Iterator[Case]:
    rng = random.Random(seed)
    files = source_files(rng)
    languages = sorted(files)
    for kind in KINDS:
        made = attempts = 0
        while made < per_kind and attempts < per_kind * 400:
            attempts += 1
            language = languages[made % len(languages)] if attempts % 50 else rng.choice(languages)
            path, lines = rng.choice(files[language])
            others = [other for p, other in rng.sample(files[language], min(3, len(files[language]))) if p != path]
            built = build(kind, language, path, lines, others, rng)
            if built is None:
                continue
            old, new, expected = built
            yield Case(f"{kind}-{made:03d}", kind, language, path, render(lines), old, new, expected)
            made += 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--per-kind", type=int, default=30)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    with args.out.open("w", encoding="utf-8") as out:
        for case in generate(args.seed, args.per_kind):
            out.write(json.dumps(asdict(case)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
