"""Mutation operators for the recall corpus (pure: source text in, candidate mutations out).

Every mutation replaces ONE line by another, so line numbers stay valid and the manifest can name
the line: an operator swap (comparison, arithmetic, and/or), an off-by-one integer, a wrong
variable (another local of the same function), an inverted `if`/`while` condition, or a dropped
statement (the line becomes `pass`). Each candidate is checked to parse and to differ.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

COMPARE = {ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
           ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="), ast.In: ("in", "not in"), ast.NotIn: ("not in", "in"),
           ast.Is: ("is", "is not"), ast.IsNot: ("is not", "is")}
ARITH = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "//"), ast.FloorDiv: ("//", "*"),
         ast.BitAnd: ("&", "|"), ast.BitOr: ("|", "&"), ast.LShift: ("<<", ">>"), ast.RShift: (">>", "<<")}
BOOL = {ast.And: ("and", "or"), ast.Or: ("or", "and")}
DROPPABLE = (ast.Expr, ast.AugAssign, ast.Assign, ast.AnnAssign)


@dataclass(frozen=True)
class Function:
    qualname: str  # as Python's co_qualname spells it
    def_line: int  # the `def` line (1-based), after any decorators
    first_line: int  # co_firstlineno: the first decorator's line, else the def line
    end_line: int


@dataclass(frozen=True)
class Mutation:
    function: Function
    line: int  # 1-based
    original: str  # the whole line before
    mutated: str  # the whole line after
    operator: str


def functions(tree: ast.AST) -> list[tuple[Function, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method with its co_qualname, outermost first."""
    out: list[tuple[Function, ast.FunctionDef | ast.AsyncFunctionDef]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qual = prefix + child.name
                first = min([d.lineno for d in child.decorator_list] + [child.lineno])
                out.append((Function(qual, child.lineno, first, child.end_lineno or child.lineno), child))
                visit(child, qual + ".<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def _own_nodes(func: ast.AST) -> list[ast.AST]:
    """The nodes of `func`'s body that belong to it, not to a nested def, class or lambda."""
    out: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return sorted(out, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))


def _single_line(node: ast.AST) -> bool:
    return getattr(node, "lineno", None) is not None and node.lineno == node.end_lineno  # type: ignore[attr-defined]


def _swap_between(line: str, start: int, end: int, old: str, new: str) -> str | None:
    """`line` with the operator `old` between columns start..end replaced by `new`."""
    segment = line[start:end]
    if " ".join(segment.replace("(", " ").replace(")", " ").split()) != old:
        return None
    pattern = r"\s+".join(map(re.escape, old.split()))
    return line[:start] + re.sub(pattern, new, segment, count=1) + line[end:]


def _locals(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    names = [a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)]
    names += [a.arg for a in (func.args.vararg, func.args.kwarg) if a is not None]
    for node in _own_nodes(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.append(node.id)
    return sorted(set(names) - {"self", "cls"})


def mutations_of(lines: list[str], fn: Function, node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Mutation]:
    """Every single-line mutation of one function's own code (not its nested defs)."""
    out: list[Mutation] = []
    local_names = _locals(node)
    body_start = node.body[0].lineno

    def add(lineno: int, new: str | None, operator: str) -> None:
        old = lines[lineno - 1]
        if new is not None and new != old:
            out.append(Mutation(fn, lineno, old, new, operator))

    for n in _own_nodes(node):
        if getattr(n, "lineno", 0) < body_start:
            continue
        line = lines[n.lineno - 1]  # type: ignore[attr-defined]
        if isinstance(n, (ast.If, ast.While)) and _single_line(n.test) and n.test.lineno == n.lineno:
            test = line[n.test.col_offset:n.test.end_col_offset]
            if isinstance(n.test, ast.UnaryOp) and isinstance(n.test.op, ast.Not):
                inverted = line[n.test.operand.col_offset:n.test.operand.end_col_offset]
            else:
                inverted = f"not {test}" if isinstance(n.test, (ast.Name, ast.Call, ast.Attribute)) else f"not ({test})"
            add(n.lineno, line[:n.test.col_offset] + inverted + line[n.test.end_col_offset:], "inverted_condition")
        if not _single_line(n):
            continue
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and type(n.ops[0]) in COMPARE:
            old, new = COMPARE[type(n.ops[0])]
            add(n.lineno, _swap_between(line, n.left.end_col_offset, n.comparators[0].col_offset, old, new), "compare")
        elif isinstance(n, ast.BinOp) and type(n.op) in ARITH:
            if isinstance(n.left, ast.Constant) and isinstance(n.left.value, str):
                continue  # string concatenation/formatting: a TypeError at once, not a wrong value
            old, new = ARITH[type(n.op)]
            add(n.lineno, _swap_between(line, n.left.end_col_offset, n.right.col_offset, old, new), "arith")
        elif isinstance(n, ast.BoolOp) and len(n.values) == 2:
            old, new = BOOL[type(n.op)]
            add(n.lineno, _swap_between(line, n.values[0].end_col_offset, n.values[1].col_offset, old, new), "boolop")
        elif isinstance(n, ast.Constant) and type(n.value) is int:
            text = line[n.col_offset:n.end_col_offset]
            if text == str(n.value):
                add(n.lineno, line[:n.col_offset] + str(n.value + 1) + line[n.end_col_offset:], "off_by_one")
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in local_names \
                and line[n.col_offset:n.end_col_offset] == n.id:
            others = [x for x in local_names if x != n.id]
            if others:
                other = others[(len(n.id) + n.col_offset) % len(others)]  # deterministic pick
                add(n.lineno, line[:n.col_offset] + other + line[n.end_col_offset:], "wrong_variable")
        if isinstance(n, DROPPABLE) and not isinstance(getattr(n, "value", None), ast.Constant):
            indent = line[: len(line) - len(line.lstrip())]
            add(n.lineno, indent + "pass", "dropped_statement")  # type: ignore[attr-defined]
    return out


def candidates(source: str) -> list[Mutation]:
    """Every mutation of every function in `source` (check parses(apply(...)) before using one)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    return [m for fn, node in functions(tree) for m in mutations_of(lines, fn, node)]


def apply(source: str, m: Mutation) -> str:
    """`source` with mutation `m` (its original line must be there)."""
    lines = source.splitlines(keepends=True)
    current = lines[m.line - 1]
    if current.rstrip("\r\n") != m.original:
        raise ValueError(f"line {m.line} is not {m.original!r}")
    lines[m.line - 1] = m.mutated + current[len(current.rstrip("\r\n")):]
    return "".join(lines)


def parses(source: str) -> bool:
    try:
        compile(source, "<mutant>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True
