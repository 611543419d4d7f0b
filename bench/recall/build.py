"""(Re)generate the recall corpus: bench/recall/manifest.json.

    .venv/bin/python bench/recall/build.py [--seed 24] [--per-package 11] [--packages click idna]

For each pinned package: its sdist (pip download, tests included) is unpacked in the cache
(~/.cache/qwen-lsp-bench/recall, or $RECALL_CACHE), its test suite runs once in the bench's own venv
under probe.py (which library functions each test calls, and how many calls down), then seeded
single-line mutations (mutate.py) of functions some passing test calls are tried one by one: a
mutation is kept when one of those tests now fails in its call phase. The distance recorded for a
case comes from that failing run itself: "frame" when the mutated function is a frame of the
failure's traceback (or of an exception it was chained to), else "direct" when the test function calls it itself, else "deep" (two or
more calls down). Cases not in a frame are preferred (at most --max-frame per package), one case
per function. Finally each case's test runs alone, unmutated (it must pass) and mutated (it must
fail), and that run gives the case's distance (`--verify` does only this, on the manifest).
Slow (minutes); the bench only needs the manifest and re-creates the rest.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from mutate import Mutation, apply, candidates, functions, parses  # noqa: E402

CACHE = Path(os.environ.get("RECALL_CACHE", Path.home() / ".cache" / "qwen-lsp-bench" / "recall"))
MANIFEST = HERE / "manifest.json"
TEST_DEPS = ["pytest==8.3.4", "pretend==1.0.9", "markupsafe==3.0.2", "simplejson==3.19.3"]


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    lib: str  # the library's code (a directory or one module), relative to the sdist's root
    tests: tuple[str, ...]  # what pytest collects
    pythonpath: str = "."  # where `import name` finds the library (src layouts: "src")

    @property
    def dirname(self) -> str:
        return f"{self.name}-{self.version}"


PACKAGES = [
    Package("click", "8.1.7", "src/click", ("tests",), "src"),
    Package("idna", "3.10", "idna", ("tests",)),
    Package("inflection", "0.5.1", "inflection", ("test_inflection.py",)),
    Package("jinja2", "3.1.4", "src/jinja2", ("tests",), "src"),
    Package("more-itertools", "10.5.0", "more_itertools", ("tests",)),
    Package("packaging", "24.2", "src/packaging",
            ("tests/test_version.py", "tests/test_specifiers.py", "tests/test_requirements.py",
             "tests/test_markers.py", "tests/test_utils.py", "tests/test_tags.py"), "src"),
    Package("parse", "1.20.2", "parse.py", ("tests",)),
    Package("toolz", "1.0.0", "toolz", ("toolz/tests",)),
]


# Issue 34's corpus (bench/recall/manifest_dispatch.json): packages whose code is reached through
# dispatch (dunders and operators, getattr visitors, handler tables, plug-ins named by strings).
DISPATCH_PACKAGES = [
    Package("cachetools", "5.5.0", "src/cachetools", ("tests",), "src"),
    Package("simpleeval", "1.0.3", "simpleeval.py", ("test_simpleeval.py",)),
    Package("pycparser", "2.22", "pycparser", ("tests/test_c_ast.py", "tests/test_c_generator.py",
                                               "tests/test_c_parser.py")),
    Package("boltons", "24.0.0", "boltons", ("tests/test_dictutils.py", "tests/test_setutils.py",
                                             "tests/test_cacheutils.py", "tests/test_listutils.py")),
    Package("tomlkit", "0.13.2", "tomlkit", ("tests/test_api.py", "tests/test_items.py", "tests/test_build.py",
                                            "tests/test_toml_document.py", "tests/test_write.py")),
    Package("pyparsing", "3.1.4", "pyparsing", ("tests/test_simple_unit.py",)),
]
# The harder dispatch corpus (manifest_dispatch_big.json): packages with LARGE modules (too long for the
# prompt's files section to show whole), mutated only in functions of such a module reached through
# dispatch (shapes.py: dunders, getattr visitors, handler tables and registries, names given as
# strings) or four and more calls below the test.
BIG_PACKAGES = [
    Package("pyflakes", "3.2.0", "pyflakes", ("pyflakes/test/test_other.py", "pyflakes/test/test_imports.py",
                                             "pyflakes/test/test_undefined_names.py",
                                             "pyflakes/test/test_type_annotations.py")),
    Package("sqlglot", "25.24.0", "sqlglot", ("tests/test_build.py", "tests/test_expressions.py",
                                             "tests/test_generator.py", "tests/test_parser.py",
                                             "tests/dialects/test_duckdb.py", "tests/dialects/test_postgres.py")),
    Package("marshmallow", "3.23.1", "src/marshmallow", ("tests/test_fields.py", "tests/test_schema.py",
                                                        "tests/test_serialization.py", "tests/test_deserialization.py",
                                                        "tests/test_decorators.py"), "src"),
    Package("lark", "1.2.2", "lark", ("tests/test_grammar.py", "tests/test_trees.py", "tests/test_lexer.py",
                                     "tests/test_reconstructor.py")),
    Package("docutils", "0.21.2", "docutils", (
        "test/test_nodes.py", "test/test_parsers/test_rst/test_bullet_lists.py",
        "test/test_parsers/test_rst/test_enumerated_lists.py", "test/test_parsers/test_rst/test_inline_markup.py",
        "test/test_parsers/test_rst/test_tables.py", "test/test_parsers/test_rst/test_footnotes.py",
        "test/test_parsers/test_rst/test_section_headers.py", "test/test_writers/test_html5_polyglot_parts.py",
        "test/test_transforms/test_footnotes.py")),
    Package("markdown", "3.7", "markdown", ("tests/test_syntax/inline", "tests/test_syntax/blocks",
                                           "tests/test_syntax/extensions/test_tables.py",
                                           "tests/test_syntax/extensions/test_abbr.py")),
    Package("pygments", "2.18.0", "pygments", ("tests/test_html_formatter.py", "tests/test_regexlexer.py",
                                              "tests/test_inherit.py", "tests/test_perllexer.py", "tests/test_sql.py",
                                              "tests/test_ruby.py", "tests/test_latex_formatter.py",
                                              "tests/test_terminal_formatter.py", "tests/test_func.py",
                                              "tests/test_mysql.py", "tests/test_basic_api.py::TestFilters")),
]
LARGE_BYTES = 35_000  # about 10k tokens: more than the files section shows whole (0.6 of its 16k budget)
DEEP = 4  # calls below the test function
CORPORA = {"default": (PACKAGES, MANIFEST), "dispatch": (DISPATCH_PACKAGES, HERE / "manifest_dispatch.json"),
           "dispatch-big": (BIG_PACKAGES, HERE / "manifest_dispatch_big.json")}
# Functions a test reaches only through dispatch are tried first in the dispatch corpus.
DISPATCHED = re.compile(r"(^|\.)(__(?!init__)\w+__|visit_\w*|on_\w+|_?eval_\w+|handle\w*|run|_?op_\w+)$")


def package(name: str) -> Package:
    return next(p for p in [*PACKAGES, *DISPATCH_PACKAGES, *BIG_PACKAGES] if p.name == name)


def run(argv: list[str], **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, text=True, capture_output=True, **kw)


def bench_python() -> Path:
    """The venv the packages' tests run in (pytest and their test dependencies, pinned)."""
    venv = CACHE / "venv"
    python = venv / "bin" / "python"
    if not (venv / "ready").exists():
        run([sys.executable, "-m", "venv", "--clear", str(venv)]).check_returncode()
        run([str(python), "-m", "pip", "install", "-q", *TEST_DEPS]).check_returncode()
        (venv / "ready").write_text("\n".join(TEST_DEPS))
    return python


def source(pkg: Package) -> Path:
    """The pristine unpacked sdist (downloaded once)."""
    tree = CACHE / "src" / pkg.dirname
    if tree.is_dir():
        return tree
    sdists = CACHE / "sdists"
    sdists.mkdir(parents=True, exist_ok=True)
    found = [p for p in sdists.glob("*.tar.gz") if p.name.lower().replace("_", "-") == f"{pkg.dirname}.tar.gz"]
    if not found:
        run([sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps",
             f"{pkg.name}=={pkg.version}", "-d", str(sdists)]).check_returncode()
        found = [p for p in sdists.glob("*.tar.gz") if p.name.lower().replace("_", "-") == f"{pkg.dirname}.tar.gz"]
    with tarfile.open(found[0]) as tar:
        top = tar.getnames()[0].split("/")[0]
        tar.extractall(CACHE / "src", filter="data")
    if top != pkg.dirname:
        (CACHE / "src" / top).rename(tree)
    for junk in tree.rglob(".pytest_cache"):
        shutil.rmtree(junk)
    return tree


def pytest_env(pkg: Package, tree: Path, out: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{tree / pkg.pythonpath}{os.pathsep}{HERE}", "PYTHONDONTWRITEBYTECODE": "1",
            "RECALL_PROBE_LIB": str(tree / pkg.lib), "RECALL_PROBE_OUT": str(out)}


def probe(pkg: Package, tree: Path, args: list[str], out: Path, timeout: float) -> list[dict]:
    """Run pytest with the probe plugin in `tree`; its records (see probe.py)."""
    out.unlink(missing_ok=True)
    try:
        subprocess.run([str(bench_python()), "-m", "pytest", "-q", "-p", "probe", "-p", "no:cacheprovider",
                        "-W", "ignore", *args], cwd=tree, env=pytest_env(pkg, tree, out), timeout=timeout,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pass
    if not out.exists():
        return []
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def prepass(pkg: Package) -> dict[str, dict]:
    """Each passing test of the unmutated package: {nodeid: {library function key: call depth}}."""
    cached = CACHE / "prepass" / f"{pkg.dirname}.jsonl"
    if not cached.exists():
        cached.parent.mkdir(parents=True, exist_ok=True)
        probe(pkg, source(pkg), list(pkg.tests), cached, timeout=1800)
    records = [json.loads(line) for line in cached.read_text().splitlines() if line.strip()]
    return {r["nodeid"]: r["calls"] for r in records if r["when"] == "call" and r["outcome"] == "passed"}


def lib_files(pkg: Package, tree: Path) -> list[str]:
    lib = tree / pkg.lib
    files = [lib] if lib.is_file() else sorted(lib.rglob("*.py"))
    return [f.relative_to(tree).as_posix() for f in files
            if not {"tests", "test"} & set(f.relative_to(tree).parts[:-1])]


def key(pkg: Package, rel: str, m: Mutation) -> str:
    """The probe's key of the mutated function (path relative to the library's parent)."""
    parent = Path(pkg.lib).parent.as_posix()
    path = rel if parent == "." else rel.removeprefix(parent + "/")
    return f"{path}::{m.function.qualname}::{m.function.first_line}"


def big_shapes(pkg: Package, tree: Path) -> dict[tuple[str, str], str]:
    """{(file, qualname): shape} of the package's functions in LARGE modules (see shapes.py)."""
    from shapes import shapes

    sources = {rel: (tree / rel).read_text(encoding="utf-8") for rel in lib_files(pkg, tree)}
    return {k: v for k, v in shapes(sources).items() if len(sources[k[0]].encode()) >= LARGE_BYTES}


def build_package(pkg: Package, rng: random.Random, per_package: int, max_frame: int, budget_s: float,
                  prefer: re.Pattern[str] | None = None, big: bool = False) -> list[dict]:
    """`big`: only functions of LARGE modules that are dispatch-shaped or DEEP calls down (--corpus dispatch-big)."""
    tree = source(pkg)
    callers = prepass(pkg)
    work = CACHE / "work" / pkg.dirname
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(tree, work)
    called: dict[str, dict[str, int]] = {}  # function key -> {test: depth}
    for test, calls in callers.items():
        for fkey, depth in calls.items():
            called.setdefault(fkey, {})[test] = depth
    sites: dict[str, tuple[str, list[Mutation]]] = {}
    shape_of = big_shapes(pkg, tree) if big else {}
    large = {rel for rel in lib_files(pkg, tree) if (tree / rel).stat().st_size >= LARGE_BYTES}
    for rel in lib_files(pkg, tree):
        if big and rel not in large:
            continue
        for m in candidates((tree / rel).read_text(encoding="utf-8")):
            k = key(pkg, rel, m)
            if k not in called:
                continue
            if big and (rel, m.function.qualname) not in shape_of and min(called[k].values()) < DEEP:
                continue
            sites.setdefault(k, (rel, []))[1].append(m)
    order = sorted(sites)
    rng.shuffle(order)
    if prefer is not None:  # stable: the preferred ones first, each group still shuffled
        order.sort(key=lambda k: not prefer.search(k.split("::")[1]))
    if big:  # the shapes taken in turn (each still shuffled), so no one shape fills the package's cases
        seen: dict[str, int] = {}
        turn = {}
        for k in order:
            shape = shape_of.get((sites[k][0], k.split("::")[1]), "deep")
            turn[k] = seen[shape] = seen.get(shape, -1) + 1
        order.sort(key=turn.__getitem__)
    cases: list[dict] = []
    frames = 0
    started = time.monotonic()
    for fkey in order:
        if len(cases) >= per_package or time.monotonic() - started > budget_s:
            break
        rel, muts = sites[fkey]
        operator = rng.choice(sorted({m.operator for m in muts}))
        m = rng.choice([m for m in muts if m.operator == operator])
        tests = sorted(called[fkey])
        tests = rng.sample(tests, min(12, len(tests)))
        path = work / rel
        original = path.read_text(encoding="utf-8")
        mutant = apply(original, m)
        if not parses(mutant):
            continue
        path.write_text(mutant, encoding="utf-8")
        try:
            records = probe(pkg, work, ["--maxfail=4", *tests], CACHE / "probe.jsonl", timeout=120)
        finally:
            path.write_text(original, encoding="utf-8")
        failed = []
        for r in records:
            if r["when"] != "call" or r["outcome"] != "failed":
                continue
            depth = r["calls"].get(fkey, called[fkey].get(r["nodeid"]))
            frames_all = r["frames"] + r.get("chained_frames", [])
            distance = "frame" if fkey in frames_all else "direct" if depth == 1 else "deep"
            failed.append((r["nodeid"], distance, depth, frames_all))
        if not failed:
            continue
        rank = {"deep": 0, "direct": 1, "frame": 2}
        nodeid, distance, depth, tb = min(failed, key=lambda f: (rank[f[1]], tests.index(f[0]) if f[0] in tests else 99))
        if distance == "frame":
            if frames >= max_frame:
                continue
            frames += 1
        shape = shape_of.get((rel, m.function.qualname)) or ("deep" if (depth or 0) >= DEEP else None)
        if big and shape is None:
            continue
        cases.append({
            "id": f"{pkg.name}-{len(cases) + 1:02d}", "package": pkg.name, "version": pkg.version,
            "pythonpath": pkg.pythonpath, "file": rel, "function": m.function.qualname,
            "def_line": m.function.def_line, "first_line": m.function.first_line, "end_line": m.function.end_line,
            "line": m.line,
            "operator": m.operator, "original": m.original, "mutated": m.mutated, "test": nodeid,
            "distance": distance, "depth": depth, "traceback_functions": tb, **({"shape": shape} if big else {}),
        })
        print(f"  {cases[-1]['id']}: {rel}:{m.line} {m.function.qualname} [{m.operator}] {distance} "
              f"{cases[-1].get('shape', '')} <- {nodeid}",
              flush=True)
    return cases


def verify(cases: list[dict]) -> list[dict]:
    """Each case once more on its own: its test passes on the pristine package and fails with the
    mutation, and its distance is taken from that failing run (frames of chained exceptions count:
    pytest prints them). Cases that do not hold are dropped, with a line saying why."""
    kept = []
    for case in cases:
        pkg = package(case["package"])
        tree = source(pkg)
        work = CACHE / "work" / pkg.dirname
        if not work.exists():
            shutil.copytree(tree, work)
        text = (tree / case["file"]).read_text(encoding="utf-8")
        fn = next(f for f, _ in functions(ast.parse(text)) if f.qualname == case["function"] and f.def_line == case["def_line"])
        m = Mutation(fn, case["line"], case["original"], case["mutated"], case["operator"])
        fkey = key(pkg, case["file"], m)
        path = work / case["file"]
        path.write_text(text, encoding="utf-8")
        before = probe(pkg, work, [case["test"]], CACHE / "probe.jsonl", timeout=120)
        path.write_text(apply(text, m), encoding="utf-8")
        try:
            after = probe(pkg, work, [case["test"]], CACHE / "probe.jsonl", timeout=120)
        finally:
            path.write_text(text, encoding="utf-8")
        passed = [r for r in before if r["when"] == "call" and r["outcome"] == "passed"]
        failed = [r for r in after if r["when"] == "call" and r["outcome"] == "failed"]
        if not passed or not failed:
            print(f"  {case['id']}: dropped (passes unmutated: {bool(passed)}, fails mutated: {bool(failed)})")
            continue
        r = failed[0]
        depth = r["calls"].get(fkey) or passed[0]["calls"].get(fkey) or case.get("depth")
        frames = r["frames"] + r.get("chained_frames", [])
        distance = "frame" if fkey in frames else "direct" if depth == 1 else "deep"
        if distance != case["distance"]:
            print(f"  {case['id']}: {case['distance']} -> {distance}")
        kept.append({**case, "first_line": fn.first_line, "depth": depth, "distance": distance,
                     "traceback_functions": frames})
    return kept


def write(seed: int, cases: list[dict], out: Path = MANIFEST, packages: list[Package] = PACKAGES) -> None:
    manifest = {"seed": seed, "test_deps": TEST_DEPS, "packages": [asdict(p) for p in packages],
                "cases": sorted(cases, key=lambda c: c["id"])}
    out.write_text(json.dumps(manifest, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument("--per-package", type=int, default=11)
    ap.add_argument("--max-frame", type=int, default=3, help="at most this many traceback-frame cases per package")
    ap.add_argument("--budget", type=float, default=420, help="seconds of mutation trials per package")
    ap.add_argument("--packages", nargs="*", help="only these (the manifest keeps the others' cases)")
    ap.add_argument("--verify", action="store_true", help="only re-check the manifest's cases (see verify())")
    ap.add_argument("--corpus", choices=sorted(CORPORA), default="default", help="which package list: dispatch is "
                    "issue 34's (manifest_dispatch.json; dispatch-shaped functions are tried first)")
    ap.add_argument("--out", type=Path, help="the manifest to write (e.g. a held-out set with another --seed); "
                    "default: the corpus's")
    args = ap.parse_args(argv)
    packages, default_out = CORPORA[args.corpus]
    args.out = args.out or default_out
    prefer = DISPATCHED if args.corpus == "dispatch" else None
    big = args.corpus == "dispatch-big"
    if args.verify:
        manifest = json.loads(args.out.read_text())
        cases = verify(manifest["cases"])
        write(manifest["seed"], cases, args.out, packages)
        print(f"{len(cases)} of {len(manifest['cases'])} cases hold")
        return 0
    old = json.loads(args.out.read_text()) if args.out.exists() and args.packages else {"cases": []}
    cases = [c for c in old["cases"] if c["package"] not in (args.packages or [])]
    for pkg in packages:
        if args.packages and pkg.name not in args.packages:
            continue
        print(f"{pkg.dirname}:", flush=True)
        cases += build_package(pkg, random.Random(f"{args.seed}-{pkg.name}"), args.per_package, args.max_frame,
                               args.budget, prefer, big)
        write(args.seed, cases, args.out, packages)  # after each package: an interrupted build keeps what it found
    print("verifying each case on its own:", flush=True)
    cases = verify(cases)
    write(args.seed, cases, args.out, packages)
    by = {d: sum(c["distance"] == d for c in cases) for d in ("frame", "direct", "deep")}
    print(f"{len(cases)} cases {by} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
