"""Language-server responsiveness with big buffers open while a fix runs.

Opens a 25 MB Python buffer (over the size limit: never tagged), a 480 KB minified JavaScript
buffer (under it: tagged when the fix assembles its prompt) and the small calc project, starts a
fix (`codeAction/resolve`; the model streams slowly, so the fix stays in flight), and meanwhile
sends codeAction on another file every 50 ms, first while the prompt is being assembled and
then while the model streams (after the start-up imports have settled). Then it cancels the fix and times the answer to $/cancelRequest.
Also prints how long `initialize` took to answer. A request that has no answer within 10 s
counts as 10 s.

    .venv/bin/python bench/bench_big_buffer.py [--samples 40]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lsprotocol import types  # noqa: E402
from pytest_lsp import client_capabilities  # noqa: E402

from bench_lsp import model_calls, percentiles, post, start_double  # noqa: E402
from figures import figure  # noqa: E402  (bench/figures.py)

from qwen_lsp.lsp.convert import file_uri  # noqa: E402
from tests.lsp.conftest import BUGGY, PLAN, TEST, recording_client  # noqa: E402
from tests.lsp.test_big_buffer import big_python  # noqa: E402

CAP = 10.0


def minified_js(size: int) -> str:
    parts = [f"function f{i}(a,b){{return a+b*{i}}};var v{i}=f{i}(1,2);" for i in range(size // 40)]
    return "".join(parts)[:size]


async def code_action(client, uri: str) -> float:
    diagnostic = types.Diagnostic(range=types.Range(types.Position(1, 4), types.Position(1, 17)),
                                  message="wrong operator", source="bench")
    started = time.perf_counter()
    answer = asyncio.ensure_future(client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic]),
    )))
    try:
        await asyncio.wait_for(asyncio.shield(answer), CAP)  # shielded: the late answer still finds its request
    except TimeoutError:
        return CAP
    return time.perf_counter() - started


async def sample(client, uri: str, count: int) -> list[float]:
    out = []
    for _ in range(count):
        out.append(await code_action(client, uri))
        await asyncio.sleep(0.05)
    return out


async def bench(samples: int, big_mb: int, settle_seconds: float) -> None:
    double, base_url = start_double()
    root_url = base_url.removesuffix("/v1")
    words = 200
    post(f"{root_url}/_double/script", [{"reasoning": "thinking " * words, "content": json.dumps(PLAN),
                                          "chunk_delay": 120 / words}])
    with tempfile.TemporaryDirectory(prefix="qwen-bench-") as tmp:
        project = Path(tmp) / "proj"
        project.mkdir()
        (project / "calc.py").write_text(BUGGY)
        (project / "test_calc.py").write_text(TEST)
        (project / "main.py").write_text("def main():\n    return 1\n")
        big, js = big_python(big_mb), minified_js(480_000)
        (project / "generated.py").write_text(big)
        (project / "bundle.min.js").write_text(js)
        client = recording_client()
        await client.start_io(sys.executable, "-m", "qwen_lsp.cli")
        try:
            started = time.perf_counter()
            await client.initialize_session(types.InitializeParams(
                capabilities=client_capabilities("visual-studio-code"),
                root_uri=file_uri(project, ""),
                workspace_folders=[types.WorkspaceFolder(uri=file_uri(project, ""), name="proj")],
                initialization_options={"baseUrl": base_url, "cacheDir": str(Path(tmp) / "c"), "maxRetries": 0},
            ))
            initialize = time.perf_counter() - started
            for rel, text, language in (("generated.py", big, "python"), ("bundle.min.js", js, "javascript"),
                                        ("calc.py", BUGGY, "python"), ("main.py", "def main():\n    return 1\n",
                                                                       "python")):
                client.text_document_did_open(types.DidOpenTextDocumentParams(
                    types.TextDocumentItem(uri=file_uri(project, rel), language_id=language, version=1, text=text)))
            calc, main = file_uri(project, "calc.py"), file_uri(project, "main.py")
            opened = await code_action(client, main)  # answered after the server took in the 25 MB didOpen
            await asyncio.sleep(settle_seconds)  # the server imports the engine in the background after start
            idle = await sample(client, main, 10)

            diagnostic = types.Diagnostic(range=types.Range(types.Position(1, 4), types.Position(1, 17)),
                                          message="wrong operator", source="bench")
            (fix, *_) = await client.text_document_code_action_async(types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=calc), range=diagnostic.range,
                context=types.CodeActionContext(diagnostics=[diagnostic])))
            resolve = asyncio.ensure_future(client.protocol.send_request_async(types.CODE_ACTION_RESOLVE, fix,
                                                                               msg_id="fix"))
            resolve_started = time.perf_counter()
            assembling: list[float] = []
            deadline = time.monotonic() + 300
            while model_calls(root_url) == 0 and time.monotonic() < deadline:
                assembling.append(await code_action(client, main))
                await asyncio.sleep(0.05)
            prompt_seconds = time.perf_counter() - resolve_started
            streaming = await sample(client, main, samples)

            cancel_started = time.perf_counter()
            client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="fix"))
            try:
                await asyncio.wait_for(asyncio.shield(asyncio.gather(resolve, return_exceptions=True)), CAP)
                cancel = time.perf_counter() - cancel_started
            except TimeoutError:
                cancel = CAP

            print(f"{big_mb} MB Python buffer + 480 KB minified JS buffer open; codeAction on another file")
            print(f"  initialize answered in {initialize * 1000:.0f} ms")
            print(f"  first codeAction after the didOpens: {opened * 1000:.0f} ms")
            print(f"  idle                       {percentiles(idle)}")
            if assembling:
                print(f"  fix assembling its prompt  {percentiles(assembling)}   ({len(assembling)} samples)")
            print(f"  fix streaming              {percentiles(streaming)}")
            print(f"  $/cancelRequest -> the fix's answer: {cancel * 1000:.0f} ms")
            print(f"  (the fix's first model call came {prompt_seconds:.1f} s after the resolve)")
            figure("initialize", initialize * 1000, "ms")
            for label, values in (("idle", idle), ("assembling", assembling), ("streaming", streaming)):
                if values:
                    figure(f"codeAction max, big buffers, {label}", max(values) * 1000, "ms")
            figure("cancel answered", cancel * 1000, "ms")
            await client.shutdown_session()
        finally:
            await client.stop()
            double.terminate()
            double.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--big-mb", type=int, default=25)
    parser.add_argument("--settle-seconds", type=float, default=25.0,
                        help="wait after start-up before measuring (on a loaded machine the background imports take 10+ s)")
    args = parser.parse_args()
    asyncio.run(bench(args.samples, args.big_mb, args.settle_seconds))


if __name__ == "__main__":
    main()
