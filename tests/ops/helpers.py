"""Shared by the ops tests and the README-install test."""

from __future__ import annotations

from tests.vllm_double import Reply


def honest_server(body: dict) -> Reply:
    """What a correctly configured vLLM would answer to each doctor probe."""
    if body.get("structured_outputs"):
        return Reply(content='{"answer": "qwen-lsp-ok"}')
    if body.get("tools"):
        return Reply(tool_calls=[("ping", {"word": "pong"})])
    if body["chat_template_kwargs"]["enable_thinking"]:
        return Reply(reasoning="The user wants ok.", content="ok")
    return Reply(content="ok")
