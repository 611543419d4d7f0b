"""Context-layer timings on a large real Python repository (the Django sdist).

Prints the repo-map build time cold (empty tag cache) and warm, and the time
of one `assemble()` per request, with the tokens used against the budget.
Figures only, no pass/fail.

    python bench/bench_context.py                 # downloads Django's sdist with pip
    python bench/bench_context.py /path/to/tree   # an already-extracted source tree
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qwen_lsp.context.ranking import GENERIC_NAMES, focus_imports
from qwen_lsp.context.treesitter import imports
from qwen_lsp.context.repomap import build_index, list_files, repo_map
from qwen_lsp.types import Task, TaskKind
from qwen_lsp.context.prompt import assemble
from qwen_lsp.settings import Settings
from qwen_lsp.llm.tokens import count_tokens

from figures import figure  # bench/figures.py

DJANGO = "django==5.1.4"
SYSTEM = "You are a coding agent working in the user's repository. Make the smallest correct fix."
TOOLS = [
    {"type": "function", "function": {"name": name, "description": desc, "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}
    for name, desc in [("read_file", "Read a file"), ("search", "Search the workspace"), ("edit_file", "Replace text in a file")]
]


def fetch_django(tmp: Path) -> Path:
    dl = tmp / "dl"
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:", DJANGO, "-d", str(dl)],
        check=True,
    )
    (sdist,) = dl.glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp / "src", filter="data")
    (root,) = (tmp / "src").iterdir()
    return root


def git_init(root: Path) -> None:
    env = ["-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    if not (root / ".git").exists():
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        subprocess.run(["git", "add", "-A"], cwd=root, check=True)
        subprocess.run(["git", *env, "commit", "-q", "-m", "import"], cwd=root, check=True)


def requests(root: Path, index) -> list[Task]:
    """A traceback through real Django code, a diagnostic and an instruction."""
    def def_line(rel: str, name: str) -> int:
        return next(d.line + 1 for d in index.files[rel].defs if d.name == name)

    q, base = "django/db/models/query.py", "django/core/handlers/base.py"
    tb = (
        "Traceback (most recent call last):\n"
        f'  File "{root}/{base}", line {def_line(base, "_get_response")}, in _get_response\n    response = wrapped_callback(request)\n'
        f'  File "{root}/{q}", line {def_line(q, "get")}, in get\n    clone = self._chain() if self.query.combinator else self.filter(*args, **kwargs)\n'
        "AttributeError: 'NoneType' object has no attribute 'combinator'\n"
    )
    return [
        Task(kind=TaskKind.traceback, description="Fix the crash", terminal_output=tb, command="python manage.py runserver", exit_code=1),
        Task(kind=TaskKind.diagnostic, description="Unused variable", path="django/http/request.py", start_line=def_line("django/http/request.py", "get_host"), end_line=None),
        Task(kind=TaskKind.instruction, description="Add type hints", path="django/utils/text.py", start_line=def_line("django/utils/text.py", "slugify"), end_line=None),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tree", nargs="?", type=Path, help="an extracted source tree (default: download Django's sdist)")
    ap.add_argument("--repeat", type=int, default=3, help="assemble() runs per request")
    ap.add_argument("--no-git", action="store_true", help="do not make the tree a git repository")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="qwen-lsp-bench-") as tmp_name:
        tmp = Path(tmp_name)
        root = args.tree.resolve() if args.tree else fetch_django(tmp)
        if not args.no_git and not args.tree:
            git_init(root)
        cache = tmp / "cache"
        settings = Settings(cache_dir=cache)
        budget = settings.budgets

        t = time.perf_counter()
        files = list_files(root)
        t_list = time.perf_counter() - t
        t = time.perf_counter()
        index = build_index(root, cache_dir=cache, files=files)
        t_cold = time.perf_counter() - t
        warm_times = []
        for _ in range(3):
            t = time.perf_counter()
            index = build_index(root, cache_dir=cache)
            warm_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        focus = "django/db/models/query.py"
        imported = focus_imports([focus], lambda rel: (root / rel).read_text())
        text = repo_map(root, budget.repo_map, focus_files=[focus], index=index, imported=imported, exclude=[focus])
        t_rank = time.perf_counter() - t
        n_defs = sum(len(v.defs) for v in index.files.values())
        lines = sum((root / f).read_bytes().count(b"\n") for f in files)

        print(f"tree: {root}  ({len(files)} source files, {lines:,} lines, {n_defs:,} definitions)")
        print(f"list files (.gitignore aware):   {t_list * 1000:8.0f} ms")
        print(f"repo-map tags, cold cache:       {t_cold:8.2f} s")
        print(f"repo-map tags, warm cache:       {statistics.median(warm_times):8.2f} s  (median of 3, includes listing)")
        print(f"rank + render map:               {t_rank:8.2f} s  ({count_tokens(text)}/{budget.repo_map} tokens)")
        figure("repo-map tags cold", t_cold, "s")
        figure("repo-map tags warm", statistics.median(warm_times), "s")
        figure("rank + render map", t_rank, "s")
        # Map quality: the workspace's classes and functions that query.py imports by name, and
        # definitions shown that are named like builtins (calls to those are almost never to them).
        stmts = [s for s in imports((root / focus).read_text(), "python") if s.startswith("from django")]
        wanted = {n.split(" as ")[0].strip(" ()\\") for s in stmts for n in s.split(" import ", 1)[1].replace("\n", " ").split(",")}
        wanted &= index.defined_in.keys()
        shown = {m.group(1) for m in re.finditer(r"(?:class|def) (\w+)", text)}
        print(f"query.py imports {len(wanted)} of Django's names by name; the map shows {len(wanted & shown)}"
              f" (missing: {', '.join(sorted(wanted - shown))})")
        print(f"builtin-like names among the map's {len(shown)} definitions: {', '.join(sorted(shown & GENERIC_NAMES))}")
        figure("query.py imports shown in the map", len(wanted & shown), f"of {len(wanted)}")
        print()
        print(f"{'request':<12} {'ms/assemble':>12} {'total tok':>10} {'budget':>7}  sections (tokens)")
        for task in requests(root, index):
            times = []
            prompt = None
            for _ in range(args.repeat):
                t = time.perf_counter()
                prompt = assemble(task, root, settings, system=SYSTEM, tools=TOOLS, cache_dir=cache)
                times.append(time.perf_counter() - t)
            assert prompt is not None
            st = prompt.section_tokens
            sections = ", ".join(f"{k} {st[k]}/{getattr(budget, k)}" for k in ("repo_map", "git", "files", "task"))
            print(f"{task.kind.value:<12} {statistics.median(times) * 1000:12.0f} {st['total']:>10} {budget.total_input:>7}  {sections}")
            figure(f"assemble {task.kind.value}", statistics.median(times) * 1000, "ms")
            figure(f"prompt tokens {task.kind.value} (budget {budget.total_input})", st["total"], "tokens")


if __name__ == "__main__":
    main()
