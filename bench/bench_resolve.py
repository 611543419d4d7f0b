"""Fix latency as an editor sees it: the time from `codeAction/resolve` to the first request reaching
the model server, on a large repository (Django) and a 3-file one, in the same run.

For each repository the language server starts as editors start it (`python -m qwen_lsp.cli` on
stdio, a fresh cache), then eight different failures in eight different modules are fixed, each after
a small didChange of its file: the first is "cold" (the index is still loading in the background),
then six more rounds over the same eight files are "warm". The vLLM test double runs in its own
process and stamps every request on arrival; the model's answers are scripted and instant.

Each failure arrives as an editor's terminal reports it (`qwen/terminalOutput` with a traceback
into the file); the server publishes its diagnostics, which the editor lists code actions for. Two
ways to pick the fix, both measured: `--pause 0` resolves the moment the actions are listed (a
lower bound no user reaches), and `--pause 0.3`, a keyboard user's Ctrl+. then Enter. The server
starts assembling the prompt (engine/prefetch.py) when the terminal failure is published. The
pause is not counted: the clock starts at `codeAction/resolve`.

    python bench/bench_resolve.py                    # downloads Django's sdist with pip
    python bench/bench_resolve.py --django /path/to/Django-5.1.4
    python bench/bench_resolve.py --django /path/to/Django-5.1.4 --assembly-only   # in-process CPU, ~30 s
Each row also gives the language server's CPU time per warm fix (from the didChange to the fix's
end, /proc/<pid>/stat, mean and p95): on a machine other work keeps busy, a steadier figure than wall time.
Figures only, no pass/fail. Goal (issue 28): warm p95 < 50 ms at 0.3 s and < 100 ms at 0 s on Django,
Django/tiny ratio < 3.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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
from figures import figure  # noqa: E402

from qwen_lsp.context.repomap import build_index  # noqa: E402
from qwen_lsp.lsp.convert import file_uri  # noqa: E402
from tests.lsp.conftest import PLAN, recording_client  # noqa: E402

DJANGO_FILES = [
    "django/db/models/query.py", "django/http/request.py", "django/utils/text.py", "django/forms/fields.py",
    "django/template/base.py", "django/core/handlers/base.py", "django/contrib/auth/models.py", "django/urls/resolvers.py",
]
TINY = {
    "calc.py": "def add(a, b):\n    total = a - b\n    return total\n",
    "shapes.py": "from calc import add\n\n\ndef perimeter(w, h):\n    return add(add(w, w), add(h, h))\n",
    "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
}


def requests_since(root_url: str, since: float) -> list[dict]:
    import urllib.request

    with urllib.request.urlopen(f"{root_url}/_double/requests", timeout=10) as answer:
        return [r for r in json.load(answer) if r["path"] == "/v1/chat/completions" and r["time"] >= since]


def targets(root: Path, files: list[str]) -> list[tuple[str, int]]:
    """(file, 0-based line of its first function) for each file: where the failure is reported."""
    index = build_index(root, files=files)
    out = []
    for rel in files:
        defs = [d for d in index.files[rel].defs if d.kind in ("function", "method")]
        out.append((rel, (defs[len(defs) // 2] if defs else index.files[rel].defs[0]).line - 1))
    return out


def server_cpu(client) -> float:
    """CPU seconds the language server process has used (its threads, not its children): a figure a
    busy machine disturbs less than wall time."""
    fields = Path(f"/proc/{client._server.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


async def fix_latencies(root: Path, files: list[str], double_url: str, rounds: int, pause: float,
                        cpu: list[float] | None = None) -> tuple[float, list[float]]:
    root_url = double_url.removesuffix("/v1")
    plan, finish = {"content": json.dumps(PLAN)}, {"tool_calls": [{"name": "finish", "arguments": {"summary": "bench"}}]}
    client = recording_client()
    await client.start_io(sys.executable, "-m", "qwen_lsp.cli")
    latencies: list[float] = []
    with tempfile.TemporaryDirectory(prefix="qwen-bench-cache-") as cache:
        try:
            await client.initialize_session(types.InitializeParams(
                capabilities=client_capabilities("visual-studio-code"),
                root_uri=file_uri(root, ""), workspace_folders=[types.WorkspaceFolder(uri=file_uri(root, ""), name="ws")],
                initialization_options={"baseUrl": double_url, "cacheDir": cache, "maxRetries": 0},
            ))
            print(f"  {root.name}: initialized", flush=True)
            versions: dict[str, int] = {}
            for round_no in range(rounds + 1):
                for rel, line in targets(root, files):
                    uri = file_uri(root, rel)
                    cpu_before = server_cpu(client)
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
                    line += versions[rel] - 1  # the inserted comment lines push the function down
                    # The failure comes as an editor's terminal reports it: the server turns it into
                    # diagnostics (and starts assembling the fix's prompt), the editor lists the actions.
                    message = f"bench failure {round_no} in {rel}"
                    output = (f"Traceback (most recent call last):\n  File \"{root / rel}\", line {line + 1}, in f\n"
                              f"    x()\nRuntimeError: {message}\n")
                    client.protocol.notify("qwen/terminalOutput", {"command": "python -m bench", "exitCode": 1,
                                                                   "output": output, "cwd": str(root)})
                    diagnostic = await published(client, uri, message)
                    print(f"  {root.name}: asking for code actions on {rel}:{line + 1}", flush=True)
                    actions = await client.text_document_code_action_async(types.CodeActionParams(
                        text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostic.range,
                        context=types.CodeActionContext(diagnostics=[diagnostic])))
                    fix = next(a for a in actions if isinstance(a, types.CodeAction) and a.kind == types.CodeActionKind.QuickFix)
                    post(f"{root_url}/_double/script", [plan, finish])
                    await asyncio.sleep(pause)  # the user reads the menu
                    started = time.time()
                    await client.code_action_resolve_async(fix)
                    first = requests_since(root_url, started)
                    if not first:
                        raise RuntimeError(f"no model request for {rel}")
                    latencies.append(first[0]["time"] - started)
                    if cpu is not None and round_no > 0:
                        cpu.append(server_cpu(client) - cpu_before)
                    print(f"  {root.name} round {round_no} {rel}: {latencies[-1] * 1000:.0f} ms to the first request, "
                          f"{time.time() - started:.1f} s for the fix", flush=True)
            await client.shutdown_session()
        except BaseException:
            if client._server is not None:
                client._server.kill()  # a failed run must not wait on a server that waits on us
            raise
        finally:
            await client.stop()
    return latencies[0], latencies[len(files):]


async def published(client, uri: str, message: str, timeout: float = 30.0) -> types.Diagnostic:
    """The diagnostic the server published for `message` in `uri` (waits for it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for diagnostic in client.diagnostics.get(uri, []):
            if message in diagnostic.message:
                return diagnostic
        await asyncio.sleep(0.005)
    raise RuntimeError(f"no diagnostic for {message!r} in {uri}")


def summary(values: list[float]) -> tuple[float, float]:
    ms = sorted(v * 1000 for v in values)
    return statistics.median(ms), ms[min(len(ms) - 1, int(round(0.95 * (len(ms) - 1))))]


async def bench(django: Path, rounds: int, pauses: list[float]) -> None:
    double, base_url = start_double()
    try:
        with tempfile.TemporaryDirectory(prefix="qwen-bench-tiny-") as tmp:
            tiny = Path(tmp) / "tiny"
            tiny.mkdir()
            for rel, text in TINY.items():
                (tiny / rel).write_text(text)
            git_init(tiny)
            tiny_files = sorted(TINY) * 3  # eight failures in a 3-file repo: files repeat
            rows = {}
            for pause in pauses:
                for name, root, files in (("django", django, DJANGO_FILES), ("tiny", tiny, tiny_files[:8])):
                    cpu: list[float] = []
                    cold, warm = await fix_latencies(root, files, base_url, rounds, pause, cpu)
                    rows[(pause, name)] = (cold, *summary(warm), statistics.mean(cpu) * 1000, summary(cpu)[1])
        print(f"codeAction/resolve -> first model request ({rounds} warm rounds x 8 failures); the server's CPU per fix")
        print(f"{'pause':>6} {'repo':<8} {'cold':>10} {'warm median':>12} {'warm p95':>10} {'cpu mean':>11} {'cpu p95':>9}")
        for (pause, name), (cold, median, p95, cpu_mean, cpu_p95) in rows.items():
            print(f"{pause:5.1f}s {name:<8} {cold * 1000:8.0f}ms {median:10.1f}ms {p95:8.1f}ms {cpu_mean:9.0f}ms {cpu_p95:7.0f}ms")
            figure(f"resolve->first request cold, {name}, pause {pause:g} s", cold * 1000, "ms")
            figure(f"resolve->first request warm median, {name}, pause {pause:g} s", median, "ms")
            figure(f"resolve->first request warm p95, {name}, pause {pause:g} s", p95, "ms")
            figure(f"server CPU per warm fix mean, {name}, pause {pause:g} s", cpu_mean, "ms")
        for pause in pauses:
            tiny_p95 = rows[(pause, "tiny")][2]
            ratio = rows[(pause, "django")][2] / tiny_p95 if tiny_p95 else float("inf")
            print(f"pause {pause:g} s: django/tiny warm p95 ratio: {ratio:.1f}")
            figure(f"resolve->first request django/tiny p95 ratio, pause {pause:g} s", ratio, "x")
    finally:
        double.terminate()
        double.wait()


def assembly_cpu(root: Path, files: list[str], rounds: int, reached: list[float] | None = None) -> list[float]:
    """CPU seconds of each warm at-once assembly, in this process: the live index of `root`, the same
    edits and terminal failures as a fix round, `prompt.assemble` called directly (what a resolve at
    0 s waits for, without the server around it; steadier than wall time on a shared machine).
    `reached`: gets the CPU seconds of the callee walk and its sections (prompt.reached_sections) in each."""
    from qwen_lsp.context import prompt
    from qwen_lsp.context.index import WorkspaceIndex
    from qwen_lsp.engine.prompts import SYSTEM
    from qwen_lsp.engine.tools import TOOLS
    from qwen_lsp.settings import Settings
    from qwen_lsp.types import Task

    with tempfile.TemporaryDirectory(prefix="qwen-bench-cache-") as cache:
        settings = Settings(cache_dir=Path(cache))
        live = WorkspaceIndex(root, cache_dir=Path(cache))
        live.load()
        buffers = {rel: (root / rel).read_text() for rel in files}
        edits: dict[str, int] = {}
        cpu: list[float] = []
        walked: list[float] = []
        inner = prompt.reached_sections

        def timed(*args, **kwargs):
            started = time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                walked.append(time.process_time() - started)

        prompt.reached_sections = timed
        for round_no in range(rounds + 1):
            for rel, line in targets(root, files):
                edits[rel] = edits.get(rel, 0) + 1
                buffers[rel] = f"# edit {edits[rel]}\n" + buffers[rel]
                live.set_text(rel, buffers[rel])
                output = (f"Traceback (most recent call last):\n  File \"{root / rel}\", line {line + edits[rel] + 1}, in f\n"
                          f"    x()\nRuntimeError: bench failure {round_no} in {rel}\n")
                task = Task.for_command("python -m bench", 1, output, "")
                started = time.process_time()
                walked.clear()
                prompt.assemble(task, root, settings, system=SYSTEM, tools=TOOLS, read_file=buffers.get, live=live)
                if round_no > 0:
                    cpu.append(time.process_time() - started)
                    if reached is not None:
                        reached.extend(walked)
        prompt.reached_sections = inner
        return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--django", type=Path, help="an extracted Django 5.1.4 tree (default: download the sdist)")
    parser.add_argument("--rounds", type=int, default=6, help="warm rounds over the eight failures")
    parser.add_argument("--pause", type=float, action="append",
                        help="seconds between listing the actions and resolving one (repeatable; default: 0 and 0.3)")
    parser.add_argument("--assembly-only", action="store_true",
                        help="only the CPU time of each warm at-once assembly, in-process on Django (no server)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="qwen-bench-django-") as tmp:
        django = args.django.resolve() if args.django else fetch_django(Path(tmp))
        if not args.django:
            git_init(django)
        if args.assembly_only:
            walked: list[float] = []
            median, p95 = summary(assembly_cpu(django, DJANGO_FILES, args.rounds, walked))
            print(f"at-once assembly on Django, in-process CPU ({args.rounds} warm rounds x 8 failures): "
                  f"median {median:.1f} ms, p95 {p95:.1f} ms")
            w_median, w_p95 = summary(walked)
            print(f"  of which the callee walk and its sections (prompt.reached_sections): "
                  f"median {w_median:.1f} ms, p95 {w_p95:.1f} ms")
            figure("assembly reached_sections CPU p95, django", w_p95, "ms")
            figure("assembly CPU median, django", median, "ms")
            figure("assembly CPU p95, django", p95, "ms")
            return
        asyncio.run(bench(django, args.rounds, args.pause or [0.0, 0.3]))


if __name__ == "__main__":
    main()
