"""The language server at three sizes in one run: a 3-file repository, Django (~2,800 source files)
and a 25,000-file tree (the Django tree nine times, identifiers renamed in each copy, under one git repository).

For each, the server starts as editors start it (`python -m qwen_lsp.cli` on stdio, a fresh cache)
and the bench records:

- initialize -> ready: from sending `initialize` to the `qwen/status` "ready" notification;
- index build: from sending `initialize` until the workspace's snapshot is written (the last step
  of the first index build, the same observable for any version of the server);
- resident memory: the server's peak RSS (VmHWM) once indexed and after the warm fixes, and its RSS then;
- warm context: `codeAction/resolve` -> the first request reaching the model (a warm fix's context
  assembly, as bench_resolve.py measures it), median of 8 fixes after 8 uncounted ones;
- the server's CPU seconds (utime + stime, /proc) beside each wall time, and the load average, since
  the machine may be shared: CPU time is the steadier figure.

    python bench/bench_scale.py                                  # downloads Django's sdist with pip
    python bench/bench_scale.py --django /path/to/Django-5.1.4 [--copies 9] [--only tiny,django,big]

Figures only, no pass/fail. Goals (issue 39): ready < 1 s, 25k files indexed < 15 s on 2 cores,
< 500 MB resident, warm context ~20 ms as before.
"""

from __future__ import annotations

import argparse
import asyncio
import builtins
import json
import keyword
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lsprotocol import types  # noqa: E402
from pytest_lsp import client_capabilities  # noqa: E402

from bench_context import fetch_django, git_init  # noqa: E402  (bench/bench_context.py)
from bench_lsp import post, start_double  # noqa: E402
from bench_resolve import DJANGO_FILES, TINY, published, requests_since, targets  # noqa: E402
from figures import figure  # noqa: E402

from qwen_lsp.context.repomap import list_files  # noqa: E402
from qwen_lsp.lsp.convert import file_uri  # noqa: E402
from tests.lsp.conftest import PLAN, recording_client  # noqa: E402

INDEX_TIMEOUT = 900.0  # a shared machine under load is slow


def proc_figures(pid: int) -> dict[str, float]:
    """The server's CPU seconds, peak and current resident memory (MB), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    # utime + stime of the server; cutime + cstime of its children it waited for (tag workers)
    out = {"cpu": (int(fields[11]) + int(fields[12])) / tick, "children": (int(fields[13]) + int(fields[14])) / tick}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            out[key] = int(value.split()[0]) / 1024
    return out


def load() -> str:
    return "load %.1f %.1f %.1f" % os.getloadavg()


async def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def measure(name: str, root: Path, files: list[str], double_url: str, fixes: int) -> dict[str, float]:
    root_url = double_url.removesuffix("/v1")
    plan, finish = {"content": json.dumps(PLAN)}, {"tool_calls": [{"name": "finish", "arguments": {"summary": "bench"}}]}
    out: dict[str, float] = {"files": len(list_files(root))}
    with tempfile.TemporaryDirectory(prefix="qwen-bench-scale-cache-") as cache:
        client = recording_client()
        spawned = time.perf_counter()
        await client.start_io(sys.executable, "-m", "qwen_lsp.cli")
        pid = client._server.pid
        try:
            started = time.perf_counter()
            await client.initialize_session(types.InitializeParams(
                capabilities=client_capabilities("visual-studio-code"),
                root_uri=file_uri(root, ""), workspace_folders=[types.WorkspaceFolder(uri=file_uri(root, ""), name="ws")],
                initialization_options={"baseUrl": double_url, "cacheDir": cache, "maxRetries": 0},
            ))
            await wait_for(lambda: any(s.get("message") == "ready" for s in client.statuses), 60, "ready")
            out["ready"] = time.perf_counter() - started
            out["spawn_ready"] = time.perf_counter() - spawned
            out["ready_cpu"] = proc_figures(pid)["cpu"]
            print(f"  {name}: ready after {out['ready']:.2f} s (server CPU {out['ready_cpu']:.2f} s; {load()})", flush=True)
            snapshots = Path(cache) / "repomap-snapshot-v2"
            await wait_for(lambda: any(snapshots.glob("*.snap")), INDEX_TIMEOUT, "the index")
            out["indexed"] = time.perf_counter() - started
            at_index = proc_figures(pid)
            out["indexed_cpu"], out["indexed_peak"] = at_index["cpu"], at_index["VmHWM"]
            await asyncio.sleep(1.0)  # the workers end once the snapshot is written: count their CPU too
            out["workers_cpu"] = proc_figures(pid)["children"]
            print(f"  {name}: {out['files']:.0f} files indexed after {out['indexed']:.1f} s (server CPU "
                  f"{out['indexed_cpu']:.1f} s + its workers' {out['workers_cpu']:.1f} s, peak RSS "
                  f"{out['indexed_peak']:.0f} MB; {load()})", flush=True)

            versions: dict[str, int] = {}
            latencies: list[float] = []
            where = targets(root, files)
            for n in range(2 * fixes):
                rel, line = where[n % len(where)]
                uri = file_uri(root, rel)
                if rel not in versions:
                    versions[rel] = 1
                    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
                        uri=uri, language_id="python", version=1, text=(root / rel).read_text())))
                versions[rel] += 1
                client.text_document_did_change(types.DidChangeTextDocumentParams(
                    types.VersionedTextDocumentIdentifier(uri=uri, version=versions[rel]),
                    [types.TextDocumentContentChangePartial(
                        range=types.Range(types.Position(0, 0), types.Position(0, 0)), text=f"# edit {versions[rel]}\n")],
                ))
                line += versions[rel] - 1
                message = f"bench failure {n} in {rel}"
                output = (f"Traceback (most recent call last):\n  File \"{root / rel}\", line {line + 1}, in f\n"
                          f"    x()\nRuntimeError: {message}\n")
                client.protocol.notify("qwen/terminalOutput", {"command": "python -m bench", "exitCode": 1,
                                                               "output": output, "cwd": str(root)})
                diagnostic = await published(client, uri, message)
                actions = await client.text_document_code_action_async(types.CodeActionParams(
                    text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostic.range,
                    context=types.CodeActionContext(diagnostics=[diagnostic])))
                fix = next(a for a in actions if isinstance(a, types.CodeAction) and a.kind == types.CodeActionKind.QuickFix)
                post(f"{root_url}/_double/script", [plan, finish])
                await asyncio.sleep(0.3)  # a keyboard user's Ctrl+. then Enter
                sent = time.time()
                await client.code_action_resolve_async(fix)
                first = requests_since(root_url, sent)
                if not first:
                    raise RuntimeError(f"no model request for {rel}")
                if n >= fixes:
                    latencies.append(first[0]["time"] - sent)
            after = proc_figures(pid)
            out["warm"] = statistics.median(latencies) * 1000
            out["peak"], out["rss"] = after["VmHWM"], after["VmRSS"]
            print(f"  {name}: warm context median {out['warm']:.1f} ms; peak RSS {out['peak']:.0f} MB, "
                  f"RSS {out['rss']:.0f} MB ({load()})", flush=True)
            await client.shutdown_session()
        except BaseException:
            if client._server is not None:
                client._server.kill()
            raise
        finally:
            await client.stop()
    return out


def make_big(django: Path, target: Path, copies: int) -> Path:
    """`copies` copies of the Django tree in one git repository: the first as it is, in each other one
    every identifier of its Python files renamed for that copy (`name` -> `name_c3`; keywords, builtins
    and names under 4 characters kept), so the copies define and reference names of their own, as
    the different parts of a big repository do, instead of each name having nine definers."""
    if target.exists():
        return target
    keep = set(keyword.kwlist) | set(keyword.softkwlist) | set(dir(builtins))
    word = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{3,}\b")
    for n in range(copies):
        if n == 0:
            shutil.copytree(django, target / "copy0", copy_function=os.link, ignore=shutil.ignore_patterns(".git"))
            continue
        for src in django.rglob("*"):
            rel = src.relative_to(django)
            if ".git" in rel.parts or not src.is_file():
                continue
            dst = target / f"copy{n}" / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.suffix == ".py":
                text = src.read_text(encoding="utf-8", errors="surrogateescape")
                text = word.sub(lambda m: m[0] if m[0] in keep or m[0].startswith("__") else f"{m[0]}_c{n}", text)
                dst.write_text(text, encoding="utf-8", errors="surrogateescape")
            else:
                os.link(src, dst)
    git_init(target)
    return target


async def bench(repos: list[tuple[str, Path, list[str]]], fixes: int) -> None:
    double, base_url = start_double()
    rows = {}
    try:
        for name, root, files in repos:
            rows[name] = await measure(name, root, files, base_url, fixes)
    finally:
        double.terminate()
        double.wait()
    print(f"\nlanguage server at scale ({load()}; {os.cpu_count()} CPUs)")
    print(f"{'repo':<7} {'files':>6} {'ready':>7} {'cpu':>6} {'indexed':>8} {'cpu':>6} {'workers':>8} {'peak RSS':>9} "
          f"{'RSS':>7} {'warm':>8}")
    for name, r in rows.items():
        print(f"{name:<7} {r['files']:6.0f} {r['ready']:6.2f}s {r['ready_cpu']:5.2f}s {r['indexed']:7.1f}s "
              f"{r['indexed_cpu']:5.1f}s {r['workers_cpu']:7.1f}s {r['peak']:7.0f}MB {r['rss']:5.0f}MB {r['warm']:6.1f}ms")
        figure(f"initialize->ready, {name}", r["ready"] * 1000, "ms")
        figure(f"server CPU at ready, {name}", r["ready_cpu"] * 1000, "ms")
        figure(f"index built, {name}", r["indexed"], "s")
        figure(f"server CPU at index built, {name}", r["indexed_cpu"], "s")
        figure(f"tag workers' CPU, {name}", r["workers_cpu"], "s")
        figure(f"peak RSS, {name}", r["peak"], "MB")
        figure(f"warm context median, {name}", r["warm"], "ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--django", type=Path, help="an extracted Django 5.1.4 tree (default: download the sdist)")
    parser.add_argument("--big", type=Path, help="where to keep the generated big tree (default: a temporary folder)")
    parser.add_argument("--copies", type=int, default=9, help="copies of Django's package in the big tree")
    parser.add_argument("--fixes", type=int, default=8, help="warm fixes counted (after as many uncounted)")
    parser.add_argument("--only", default="tiny,django,big", help="which repositories, comma-separated")
    args = parser.parse_args()
    wanted = args.only.split(",")
    with tempfile.TemporaryDirectory(prefix="qwen-bench-scale-") as tmp:
        django = args.django.resolve() if args.django else fetch_django(Path(tmp))
        git_init(django)
        tiny = Path(tmp) / "tiny"
        tiny.mkdir()
        for rel, text in TINY.items():
            (tiny / rel).write_text(text)
        git_init(tiny)
        repos = [("tiny", tiny, sorted(TINY) * 3), ("django", django, DJANGO_FILES)]
        if "big" in wanted:
            big = make_big(django, (args.big or Path(tmp) / "big").resolve(), args.copies)
            repos.append(("big", big, [f"copy0/{rel}" for rel in DJANGO_FILES]))
        asyncio.run(bench([r for r in repos if r[0] in wanted], args.fixes))


if __name__ == "__main__":
    main()
