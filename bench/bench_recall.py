"""Does the thinking plan's prompt contain the code that has to change? (issue 24)

The corpus (bench/recall/manifest.json, made by bench/recall/build.py) holds single-line mutations
of real pure-Python packages, each with a real test of the package failing because of it, and the
mutated function's distance from the test: a traceback "frame", a "direct" callee of the test
function, or "deep" (two or more calls down). Each case is run in three git repositories:

    uncommitted  the mutation is an edit in the working tree
    latest       the mutation is the latest commit
    old          the mutation's commit is followed by four commits touching other files
    imported     (only with --variants) the mutation is in the import commit itself, followed by the
                 same four: no commit points at it

In each, qfix runs as a user runs it, `qfix --json --dry-run -- python -m pytest -x TEST`, against
the vLLM test double (in this process; it answers the plan and then `finish`, so nothing changes).
By default qfix's main() gets that argv and environment in one long-lived process of the checkout
under test (bench/recall/driver.py; each run in its own repository directory), since importing the
engine is most of a run on a shared machine; `--fresh-process` starts `python -m terminal_agent.qfix`
per run instead.
The FIRST request qfix sends (the thinking plan's prompt) is scored: found when it shows the mutated
function's code around the mutated line (bench/recall/score.py says exactly when), and its tokens are
counted (system + user messages + tool schemas, qwen_lsp.llm.tokens.count_tokens).

    .venv/bin/python bench/bench_recall.py                       # the whole corpus, this checkout's qfix
    .venv/bin/python bench/bench_recall.py --python ../other/.venv/bin/python --checkout ../other --save after.json
    .venv/bin/python bench/bench_recall.py --limit 16 --variants uncommitted

Sdists, the packages' test venv and the repositories live in ~/.cache/qwen-lsp-bench/recall
($RECALL_CACHE). Figures only, no pass/fail. Goals (issue 24): >= 95% uncommitted and latest,
>= 75% old, callee cases (direct + deep) >= 70% in every variant, median prompt <= 12k tokens.

    .venv/bin/python bench/bench_recall.py --corpus dispatch js --variants old    # issue 34's corpora
    .venv/bin/python bench/bench_recall.py --corpus dispatch-big --variants old   # the harder one

Issue 34's corpora (--corpus dispatch, js): six packages whose code is reached through dispatch
(recall/manifest_dispatch.json) and a JavaScript project tested with `node --test`
(recall/jsproject, recall/manifest_js.json; a case then runs its own command, `node --test FILE`).
Goals there, old variant: >= 85% overall, >= 75% away from the traceback, >= 80% JavaScript.
--corpus dispatch-big (recall/manifest_dispatch_big.json, build.py --corpus dispatch-big): seven more
packages, each mutation in a module too long for the files section to show whole, in a function
reached through a dunder, a getattr visitor, a handler table or registry, a name given as a string,
or four and more calls below the test (the report adds recall by shape).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "recall"))

from build import CACHE, MANIFEST, Package, bench_python, source  # noqa: E402
from figures import figure  # noqa: E402
from mutate import Mutation, apply  # noqa: E402
from score import function_lines, shown  # noqa: E402

from qwen_lsp.llm.tokens import count_tokens  # noqa: E402
from tests.vllm_double import Reply, VLLMDouble  # noqa: E402

VARIANTS = ("uncommitted", "latest", "old")
# imported: the mutation is in the package's first commit (four later commits touch other files), so no
# commit points at it: a bug older than the history shown (the old variant's commit is still the last
# one to touch the mutated file, and the changes section shows it)
ALL_VARIANTS = (*VARIANTS, "imported")
JS_PROJECT = ROOT / "bench" / "recall" / "jsproject"
# --corpus: the manifests of bench/recall (default: issue 24's packages; dispatch and js: issue 34's)
CORPORA = {"default": MANIFEST, "dispatch": MANIFEST.parent / "manifest_dispatch.json",
           "dispatch-big": MANIFEST.parent / "manifest_dispatch_big.json", "js": MANIFEST.parent / "manifest_js.json"}
DISTANCES = ("frame", "direct", "deep")
PLAN = {"hypotheses": ["bench"], "evidence": [], "steps": ["none"], "verify_command": None}
GIT_ENV = {"GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com", "GIT_COMMITTER_NAME": "Dev",
           "GIT_COMMITTER_EMAIL": "dev@example.com", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null"}


def git(repo: Path, *args: str, date: int = 0) -> str:
    stamp = f"{1_700_000_000 + date * 3600} +0000"
    # an empty config file of our own, not /dev/null: a sandbox test elsewhere on a shared machine may
    # replace /dev/null for a moment, and git then refuses to run
    empty = CACHE / "empty.gitconfig"
    if not empty.exists():
        empty.parent.mkdir(parents=True, exist_ok=True)
        empty.write_text("")
    env = {**os.environ, **GIT_ENV, "GIT_CONFIG_GLOBAL": str(empty), "GIT_CONFIG_SYSTEM": str(empty),
           "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    for attempt in range(3):
        done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)
        if done.returncode == 0 or attempt == 2:
            break
        time.sleep(1)
    done.check_returncode()
    return done.stdout


_BASE_LOCK = threading.Lock()


def case_source(case: dict) -> Path:
    """The pristine tree of the case's package: its unpacked sdist, or the JavaScript project kept here."""
    if case.get("lang") == "javascript":
        return JS_PROJECT
    return source(Package(case["package"], case["version"], "", ()))


def base_repo(case: dict) -> Path:
    """The package's pristine sdist as one commit (made once, cloned per case)."""
    pkg = Package(case["package"], case["version"], "", ())
    repo = CACHE / "repos" / pkg.dirname
    with _BASE_LOCK:
        if not (repo / ".git" / "refs" / "heads" / "main").exists():
            _import(case_source(case), repo, pkg.dirname)
    return repo


def _import(tree: Path, repo: Path, name: str) -> None:
    shutil.rmtree(repo, ignore_errors=True)
    shutil.copytree(tree, repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"Import {name}", date=0)


def others(repo: Path, case: dict, n: int) -> list[str]:
    """`n` other library files of the package (not the mutated one), deterministically."""
    lib = Path(case["file"]).parent
    files = sorted(p.relative_to(repo).as_posix() for p in (repo / lib).glob("*" + Path(case["file"]).suffix)
                   if p.relative_to(repo).as_posix() != case["file"] and p.stat().st_size > 0)
    files += sorted(p.name for p in repo.glob("*.rst")) + sorted(p.name for p in repo.glob("*.md"))
    return [files[(i * 7 + len(case["function"])) % len(files)] for i in range(n)] if files else []


def make_variant(case: dict, variant: str, dest: Path) -> Path:
    """A clone of the package with the case's mutation as `variant` says."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", str(base_repo(case)), str(dest)], check=True, capture_output=True)
    (dest / ".git" / "info" / "exclude").write_text("__pycache__/\n.pytest_cache/\n*.egg-info/\n")
    path = dest / case["file"]
    path.write_text(apply(path.read_text(encoding="utf-8"), mutation(case)), encoding="utf-8")
    if variant == "uncommitted":
        return dest
    if variant == "imported":
        git(dest, "commit", "-qa", "--amend", "--no-edit", date=0)
    else:
        git(dest, "commit", "-qam", f"Update {Path(case['file']).name}", date=1)
    if variant in ("old", "imported"):
        for i, other in enumerate(dict.fromkeys(others(dest, case, 4)), start=2):
            target = dest / other
            comment = ("\n.. revised\n" if other.endswith(".rst") else "\n<!-- revised -->\n" if other.endswith(".md")
                       else "\n// revised\n" if other.endswith(".js") else "\n# revised\n")
            target.write_text(target.read_text(encoding="utf-8") + comment, encoding="utf-8")
            git(dest, "commit", "-qam", f"Tidy {Path(other).name}", date=i)
    return dest


def mutation(case: dict) -> Mutation:
    from mutate import Function

    fn = Function(case["function"], case["def_line"], case["def_line"], case["end_line"])
    return Mutation(fn, case["line"], case["original"], case["mutated"], case["operator"])


def responder(body: dict[str, Any]) -> Reply:
    """Harmless answers: a plan, then `finish` (qfix ends with "no fix found", changing nothing)."""
    if (body.get("chat_template_kwargs") or {}).get("enable_thinking", True):
        return Reply(reasoning="bench", content=json.dumps(PLAN))
    return Reply(tool_calls=[("finish", {"summary": "bench: no change"})])


def qfix_caches(python: str) -> Path:
    """qfix's cache dirs for one interpreter in this bench process (removed when the run ends: no plan
    of an earlier or a concurrent run is ever reused)."""
    return CACHE / "qfix-cache" / f"{os.getpid()}-{hashlib.sha256(python.encode()).hexdigest()[:12]}"


class Driver:
    """One long-lived process of the checkout under test running qfix's main() per job (recall/driver.py)."""

    def __init__(self, python: str, log: Path, checkout: Path | None = None) -> None:
        self.python, self.log, self.checkout = python, log, checkout
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self.done_r, done_w = os.pipe()
        out = open(self.log, "a", encoding="utf-8")  # noqa: SIM115 - the child holds it
        env = {**os.environ, "PYTHONPATH": str(self.checkout)} if self.checkout else None
        self.proc = subprocess.Popen([self.python, str(ROOT / "bench" / "recall" / "driver.py"), str(done_w)],
                                     stdin=subprocess.PIPE, stdout=out, stderr=out, text=True, pass_fds=(done_w,),
                                     cwd="/", env=env)
        os.close(done_w)
        out.close()

    def run(self, cwd: Path, env: dict[str, str], argv: list[str], timeout: float) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"cwd": str(cwd), "env": env, "argv": argv}) + "\n")
        self.proc.stdin.flush()
        line = b""
        deadline = time.monotonic() + timeout
        while not line.endswith(b"\n"):
            ready, _, _ = select.select([self.done_r], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(self.done_r, 64) if ready else b""
            if not chunk:  # timed out, or the driver died (qfix exits the process when a command passes)
                self.stop()
                return None
            line += chunk
        return int(line)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            os.close(self.done_r)
            self.proc = None


def qfix_command(python: str, checkout: Path | None) -> list[str]:
    """A new qfix process of `python` (its own imports only: -E; the checkout's code first if given)."""
    if checkout is None:
        return [python, "-E", "-m", "terminal_agent.qfix"]
    return [python, "-E", "-c", f"import sys; sys.path.insert(0, {str(checkout)!r}); "
            "from terminal_agent.qfix import main; sys.exit(main())"]


def code_under_test(python: str, checkout: Path | None) -> str:
    """Where the qfix that runs imports qwen_lsp from (so a run says which code it measured)."""
    code = "import qwen_lsp, terminal_agent; print(qwen_lsp.__file__, terminal_agent.__file__)"
    env = {**os.environ, "PYTHONPATH": str(checkout)} if checkout else {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([python, "-c", code], env=env, capture_output=True, text=True, cwd="/").stdout.strip()


def run_qfix(python: str, repo: Path, case: dict, double: VLLMDouble, timeout: float,
             prompts: Path | None = None, variant: str = "", driver: Driver | None = None,
             checkout: Path | None = None) -> dict[str, Any]:
    """qfix --json --dry-run -- python -m pytest -x TEST in `repo`, as a user runs it: a new process,
    or (`driver`) qfix's main() with the same argv and environment in a long-lived one."""
    command = case.get("command") or ["python", "-m", "pytest", "-x", case["test"]]
    argv = ["--json", "--dry-run", "--", *command]
    # One cache per package, variant and qfix, as a user's warm cache: never a plan cached for the same
    # files (each case of a package changes a different line; each variant of a case gets its own cache).
    qfix_cache = qfix_caches(python) / f"{case['package']}-{variant}"
    with tempfile.TemporaryDirectory(prefix="recall-qfix-") as tmp:
        env = {
            # QWEN_LSP_* settings of the bench's own environment go through, for ablations
            # (QWEN_LSP_BUDGETS__CHANGES=0: the callee walk alone); the double and cache below win.
            **{k: v for k, v in os.environ.items() if k.startswith("QWEN_LSP_")},
            "PATH": f"{bench_python().parent}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
            "HOME": tmp, "TERM": "xterm-256color", "LANG": "C.UTF-8",
            "QWEN_LSP_BASE_URL": double.base_url, "QWEN_LSP_CACHE_DIR": str(qfix_cache),
            "QWEN_LSP_MAX_RETRIES": "0", "QFIX_STATE_DIR": f"{tmp}/state", "QFIX_TMUX_CAPTURE": "0",
            "QFIX_WARM": "0",  # one state dir per case: a warm process each would outlive the bench
            # the package's own import path, for the test command (a new qfix process ignores it: -E)
            "PYTHONPATH": case["pythonpath"], "PYTHONDONTWRITEBYTECODE": "1",
        }
        double.reset()
        started = time.monotonic()
        stderr = ""
        if driver is not None:
            exit_code = driver.run(repo, env, argv, timeout)
        else:
            try:
                done = subprocess.run([*qfix_command(python, checkout), *argv], cwd=repo, env=env,
                                      capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
                exit_code, stderr = done.returncode, done.stderr
            except subprocess.TimeoutExpired:
                exit_code, stderr = None, "timeout"
        seconds = time.monotonic() - started
    requests = double.chat_requests()
    result: dict[str, Any] = {"exit_code": exit_code, "seconds": round(seconds, 1), "requests": len(requests)}
    if not requests:
        result["error"] = (stderr or "").strip()[-500:] or "no request reached the model server"
        return result
    first = requests[0]
    texts = [m.get("content") or "" for m in first["messages"] if isinstance(m.get("content"), str)]
    prompt = "\n".join(texts)
    if prompts is not None:
        prompts.mkdir(parents=True, exist_ok=True)
        (prompts / f"{case['id']}-{variant}.txt").write_text(prompt, encoding="utf-8")
    result["found"] = found(case, prompt)
    result["file_named"] = case["file"] in prompt
    result["tokens"] = sum(count_tokens(t) for t in texts) + count_tokens(json.dumps(first.get("tools") or [], ensure_ascii=False))
    return result


def found(case: dict, prompt: str) -> bool:
    """Does `prompt` show the case's mutated function around its mutated line? (recall/score.py)"""
    mutant = apply((case_source(case) / case["file"]).read_text(encoding="utf-8"), mutation(case))
    code, other = function_lines(mutant, case["def_line"], case["end_line"])
    return shown(prompt, code, case["line"], other)


def interleaved(cases: list[dict]) -> list[dict]:
    """Round-robin over packages, so --limit N samples every package."""
    by: dict[str, list[dict]] = {}
    for c in cases:
        by.setdefault(c["package"], []).append(c)
    out = []
    while any(by.values()):
        for name in sorted(by):
            if by[name]:
                out.append(by[name].pop(0))
    return out


def pct(found: int, total: int) -> str:
    return f"{found}/{total} ({100 * found / total:.0f}%)" if total else "-"


def percentile(values: list[int], q: float) -> int:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))] if s else 0


def report(results: list[dict], variants: list[str]) -> None:
    for variant in variants:
        rows = [r for r in results if r["variant"] == variant]
        if not rows:
            continue
        found = [r for r in rows if r.get("found")]
        tokens = [r["tokens"] for r in rows if "tokens" in r]
        errors = [r for r in rows if "error" in r]
        print(f"\n== {variant}: recall {pct(len(found), len(rows))}   prompt tokens median "
              f"{statistics.median(tokens) if tokens else 0:.0f}, p90 {percentile(tokens, 0.9)}"
              + (f"   ({len(errors)} runs sent no request)" if errors else ""))
        figure(f"{variant} recall", 100 * len(found) / len(rows), "%")
        figure(f"{variant} median prompt", statistics.median(tokens) if tokens else 0, "tokens")
        by_distance = "   ".join(
            f"{d} {pct(sum(1 for r in rows if r['distance'] == d and r.get('found')), sum(1 for r in rows if r['distance'] == d))}"
            for d in DISTANCES)
        callee = [r for r in rows if r["distance"] != "frame"]
        print(f"   by distance: {by_distance}   callee (direct+deep) "
              f"{pct(sum(1 for r in callee if r.get('found')), len(callee))}")
        shapes = sorted({r["shape"] for r in rows if "shape" in r})
        if shapes:  # --corpus dispatch-big: how the mutated function is reached (recall/shapes.py)
            print("   by shape: " + "   ".join(
                f"{s} {pct(sum(1 for r in rows if r.get('shape') == s and r.get('found')), sum(1 for r in rows if r.get('shape') == s))}"
                for s in shapes))
        named = sum(1 for r in rows if r.get("file_named"))
        print(f"   file path named in the prompt: {pct(named, len(rows))}")
        packages = sorted({r["package"] for r in rows})
        print("   per package: " + "   ".join(
            f"{p} {sum(1 for r in rows if r['package'] == p and r.get('found'))}/{sum(1 for r in rows if r['package'] == p)}"
            for p in packages))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default=sys.executable, help="the interpreter whose terminal_agent.qfix runs "
                    "(another checkout's venv: /path/.venv/bin/python); default: this one")
    ap.add_argument("--checkout", type=Path, help="put this checkout first on qfix's path (for a venv whose "
                    "editable install points elsewhere); the run prints where qwen_lsp was imported from")
    ap.add_argument("--manifest", type=Path, nargs="+", help="manifests to run (default: those --corpus names)")
    ap.add_argument("--corpus", nargs="+", choices=sorted(CORPORA), default=["default"],
                    help="dispatch: packages reached through dunders, visitors, handler tables, plug-ins; js: the "
                    "JavaScript project tested with node --test (issue 34)")
    ap.add_argument("--limit", type=int, help="only the first N cases (taken round-robin over packages)")
    ap.add_argument("--cases", nargs="*", help="only these case ids")
    ap.add_argument("--variants", nargs="*", choices=ALL_VARIANTS, default=list(VARIANTS))
    ap.add_argument("--jobs", type=int, default=1, help="qfix runs at once (the machine is shared: keep it low)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per qfix run")
    ap.add_argument("--fresh-process", action="store_true", help="a new qfix process per run (slower: it "
                    "imports the engine each time) instead of qfix's main() in one long-lived process")
    ap.add_argument("--save", type=Path, help="write every run's result here (JSON)")
    ap.add_argument("--prompts", type=Path, help="keep each first request's text in this directory (with --report: score the prompts kept there again)")
    ap.add_argument("--report", type=Path, nargs="+", metavar="SAVED",
                    help="run nothing: print the figures of earlier --save files together, for the cases --limit/--cases select "
                    "(a later run of a case wins)")
    args = ap.parse_args(argv)
    manifests = args.manifest or [CORPORA[c] for c in args.corpus]
    cases = interleaved([c for m in manifests for c in json.loads(m.read_text())["cases"]])
    if args.cases:
        cases = [c for c in cases if c["id"] in args.cases]
    if args.limit:
        cases = cases[: args.limit]
    if args.report:
        merged: dict[tuple[str, str], dict] = {}
        for saved in args.report:
            for row in json.loads(saved.read_text())["results"]:
                merged[(row["id"], row["variant"])] = row
        ids = {c["id"] for c in cases}
        rows = [r for r in merged.values() if r["id"] in ids]
        if args.prompts:  # score the kept prompts again, with today's rule
            by_id = {c["id"]: c for c in cases}
            for r in rows:
                kept = args.prompts / f"{r['id']}-{r['variant']}.txt"
                if kept.exists():
                    r["found"] = found(by_id[r["id"]], kept.read_text(encoding="utf-8"))
        print(f"{len({r['id'] for r in rows})} cases of {' '.join(map(str, manifests))} in {len(args.report)} saved run(s)")
        report(rows, [v for v in ALL_VARIANTS if v in args.variants])
        return 0

    jobs = [(c, v) for c in cases for v in args.variants]
    print(f"{len(cases)} cases x {len(args.variants)} variants, qfix of {args.python}"
          + (f" with {args.checkout} first on its path" if args.checkout else ""), flush=True)
    print(f"code under test: {code_under_test(args.python, args.checkout)}", flush=True)

    local = threading.local()
    doubles: list[VLLMDouble] = []
    drivers: list[Driver | None] = []
    lock = threading.Lock()

    def one(job: tuple[dict, str]) -> dict[str, Any]:
        case, variant = job
        if not hasattr(local, "double"):
            local.double = VLLMDouble().start()
            local.double.responder = responder
            with lock:
                doubles.append(local.double)
        if not hasattr(local, "driver"):
            local.driver = None if args.fresh_process else Driver(args.python, CACHE / "driver.log", args.checkout)
            with lock:
                drivers.append(local.driver)
        # a directory of its own per run, named without the variant (the path is in the prompt)
        repo = make_variant(case, variant,
                            CACHE / "runs" / str(os.getpid()) / f"{case['id']}.{ALL_VARIANTS.index(variant)}" / case["package"])
        try:
            result = run_qfix(args.python, repo, case, local.double, args.timeout, args.prompts, variant, local.driver,
                              args.checkout)
        finally:
            shutil.rmtree(repo, ignore_errors=True)
        row = {"id": case["id"], "package": case["package"], "distance": case["distance"], "variant": variant,
               **({"shape": case["shape"]} if "shape" in case else {}), **result}
        mark = "✓" if row.get("found") else "✗"
        print(f"{mark} {case['id']:<20} {variant:<11} {case['distance']:<6} {row.get('tokens', '-'):>6} tok "
              f"{row['seconds']:>5}s" + (f"  {row['error'][:120]!r}" if "error" in row else ""), flush=True)
        return row

    bench_python()
    try:
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(one, jobs))
    finally:
        for d in doubles:
            d.stop()
        for drv in drivers:
            if drv is not None:
                drv.stop()
        shutil.rmtree(qfix_caches(args.python), ignore_errors=True)
        shutil.rmtree(CACHE / "runs" / str(os.getpid()), ignore_errors=True)
    report(results, args.variants)
    if args.save:
        args.save.write_text(json.dumps({"python": args.python, "manifest": [str(m) for m in manifests],
                                         "results": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
