"""The failure's own words, for ranking the code it reaches (issue 34: a bug no commit points at).

Pure functions over text. A failing test's name says what it exercises (`test_simple_select` ->
select: `sync_do_select`), and a literal the failure quotes may spell a definition's name
(`assert 'No such option: --foo' in output` -> NoSuchOption). Words are compared stemmed, so
that `dates` meets `date`, `parsing` meets `parse` and `slicing` meets `slice`."""

from __future__ import annotations

import re

_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_QUOTED = re.compile(r"'([^'\n]{3,200})'|\"([^\"\n]{3,200})\"")
MAX_PHRASES = 8  # quoted literals of a message looked at


def stem(word: str) -> str:
    """A crude stem, the same for a word's usual forms: dates/date -> dat, parsing/parse -> pars."""
    w = word.lower()
    if len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def name_parts(name: str) -> list[str]:
    """A definition's name in lower-cased words: `_eval_BinOp` -> [eval, bin, op], `IMPORTFROM` -> [importfrom]."""
    return [p.lower() for p in _PARTS.findall(name)]


def name_stems(name: str) -> frozenset[str]:
    """Stems of a name's words of three letters or more, and of the whole name run together
    (`selectattr` is one word in `do_selectattr`, two in `test_select_attr`)."""
    parts = name_parts(name)
    out = {stem(p) for p in parts if len(p) >= 3}
    if len(parts) > 1:
        out.add(stem("".join(parts)))
    return frozenset(out)


def stems_of_test_name(words: list[str], ignore: frozenset[str] = frozenset()) -> frozenset[str]:
    """Stems of a test name's words (callsites.words_of_test_name) and of each two neighbours run
    together (`select attr` -> selectattr); words in `ignore` (stop words, common parts) left out."""
    kept = [w for w in words if len(w) >= 3 and w not in ignore]
    pairs = ["".join(words[i : i + 2]) for i in range(len(words) - 1) if len(words[i]) >= 2 and len(words[i + 1]) >= 2]
    return frozenset(stem(w) for w in [*kept, *pairs])


def message_phrases(message: str) -> list[list[str]]:
    """The words of each literal a failure message quotes (`assert 'No such option: --foo' in …` ->
    [no, such, option, foo]), the first few literals only."""
    out: list[list[str]] = []
    for m in _QUOTED.finditer(message):
        words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", m.group(1) or m.group(2) or "")]
        if len(words) >= 2:
            out.append(words)
        if len(out) >= MAX_PHRASES:
            break
    return out
