"""Language-server responsiveness: didChange -> codeAction round trip, idle and with
N overlapping `codeAction/resolve` requests running the engine.

The server runs as editors run it (`python -m qwen_lsp.cli` on stdio). The vLLM
test double runs in its own process, so its tokenizer does not compete with this
client for the GIL; every model call streams slowly (the resolves stay in flight
for the whole measurement) and all of them are cancelled at the end.

    .venv/bin/python bench/bench_lsp.py [--resolves 20] [--samples 30]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lsprotocol import types  # noqa: E402
from pygls.exceptions import JsonRpcRequestCancelled  # noqa: E402
from pytest_lsp import client_capabilities  # noqa: E402

from figures import figure  # noqa: E402  (bench/figures.py)

from qwen_lsp.lsp.convert import file_uri  # noqa: E402
from qwen_lsp.wire import ActionData  # noqa: E402
from tests.lsp.conftest import BUGGY, PLAN, TEST, recording_client  # noqa: E402


def start_double() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.vllm_double", "--port", "0"],
        cwd=Path(__file__).resolve().parents[1], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    if line[:1] != ["READY"]:
        raise RuntimeError(f"the vLLM double did not start: {line}")
    return proc, line[1]


def post(url: str, payload: object) -> None:
    request = urllib.request.Request(url, json.dumps(payload).encode(), {"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=10).read()


def model_calls(root_url: str) -> int:
    with urllib.request.urlopen(f"{root_url}/_double/requests", timeout=10) as answer:
        return sum(1 for r in json.load(answer) if r["path"] == "/v1/chat/completions")


def percentiles(values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    p95 = ms[min(len(ms) - 1, int(round(0.95 * (len(ms) - 1))))]
    return f"median {statistics.median(ms):7.1f} ms   p95 {p95:7.1f} ms   max {ms[-1]:7.1f} ms"


async def round_trips(client, uri: str, diagnostic: types.Diagnostic, first_version: int, samples: int) -> list[float]:
    """didChange (a line inserted) then codeAction; the answer must reflect the change."""
    out = []
    for version in range(first_version, first_version + samples):
        started = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(7, 0), types.Position(7, 0)), text=f"# edit {version}\n")],
        ))
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        ))
        out.append(time.perf_counter() - started)
        assert ActionData.model_validate(actions[0].data).version == version
        await asyncio.sleep(0.05)
    return out


async def bench(resolves: int, samples: int, stream_seconds: float, settle_seconds: float) -> None:
    double, base_url = start_double()
    root_url = base_url.removesuffix("/v1")
    words = 200
    slow = {"reasoning": "thinking " * words, "content": json.dumps(PLAN), "chunk_delay": stream_seconds / words}
    post(f"{root_url}/_double/script", [slow] * resolves)

    with tempfile.TemporaryDirectory(prefix="qwen-bench-") as tmp:
        project = Path(tmp) / "proj"
        project.mkdir()
        (project / "calc.py").write_text(BUGGY)
        (project / "test_calc.py").write_text(TEST)
        client = recording_client()
        await client.start_io(sys.executable, "-m", "qwen_lsp.cli")
        try:
            await client.initialize_session(types.InitializeParams(
                capabilities=client_capabilities("visual-studio-code"),
                root_uri=file_uri(project, ""),
                workspace_folders=[types.WorkspaceFolder(uri=file_uri(project, ""), name="proj")],
                initialization_options={"baseUrl": base_url, "cacheDir": str(Path(tmp) / "c"), "maxRetries": 0},
            ))
            uri = file_uri(project, "calc.py")
            client.text_document_did_open(types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id="python", version=1, text=BUGGY)))
            diagnostic = types.Diagnostic(
                range=types.Range(types.Position(1, 4), types.Position(1, 17)), message="wrong operator", source="bench")

            await round_trips(client, uri, diagnostic, 2, 5)  # warm-up
            await asyncio.sleep(settle_seconds)  # the server imports the engine in the background after start
            version = 7
            idle = await round_trips(client, uri, diagnostic, version, samples)
            version += samples

            (fix, *_) = await client.text_document_code_action_async(types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostic.range,
                context=types.CodeActionContext(diagnostics=[diagnostic]),
            ))
            pending = [
                asyncio.ensure_future(client.protocol.send_request_async(types.CODE_ACTION_RESOLVE, fix, msg_id=f"r{i}"))
                for i in range(resolves)
            ]
            # Phase 1: the engine thread assembles twenty prompts (repo map, tree-sitter, token counts).
            assembling = await round_trips(client, uri, diagnostic, version, samples)
            version += samples
            streams_then = model_calls(root_url)
            # Phase 2: every resolve is streaming from the model.
            deadline = time.monotonic() + 120
            while model_calls(root_url) < resolves and time.monotonic() < deadline:
                await asyncio.sleep(0.5)
            streaming = await round_trips(client, uri, diagnostic, version, samples)
            streams = model_calls(root_url)
            still_running = sum(not p.done() for p in pending)

            for i in range(resolves):
                client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=f"r{i}"))
            results = await asyncio.gather(*pending, return_exceptions=True)
            cancelled = sum(isinstance(r, JsonRpcRequestCancelled) for r in results)

            print(f"didChange -> codeAction round trip ({samples} samples each)")
            print(f"  idle                                {percentiles(idle)}")
            print(f"  {resolves} resolves, assembling prompts  {percentiles(assembling)}   ({streams_then} streams open after)")
            print(f"  {resolves} resolves, all streaming       {percentiles(streaming)}   ({streams} streams open)")
            print(f"  {still_running}/{resolves} resolves were still running at the end; {cancelled} cancelled afterwards")
            for label, values in (("idle", idle), (f"{resolves} resolves assembling", assembling),
                                  (f"{resolves} resolves streaming", streaming)):
                figure(f"didChange->codeAction median, {label}", statistics.median(values) * 1000, "ms")
                figure(f"didChange->codeAction max, {label}", max(values) * 1000, "ms")
            await client.shutdown_session()
        finally:
            await client.stop()
            double.terminate()
            double.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--resolves", type=int, default=20)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--stream-seconds", type=float, default=120.0, help="how long each model call streams")
    parser.add_argument("--settle-seconds", type=float, default=5.0, help="wait after start-up before measuring")
    args = parser.parse_args()
    asyncio.run(bench(args.resolves, args.samples, args.stream_seconds, args.settle_seconds))


if __name__ == "__main__":
    main()
