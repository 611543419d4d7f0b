"""The review engine: diff parsing, finding mapping, and one model call against the vLLM double."""

from __future__ import annotations

import re

from pathlib import Path

import pytest

from qwen_lsp.review import engine as review
from qwen_lsp.engine.cache import StateCache
from qwen_lsp.llm.client import ModelClient
from qwen_lsp.review.engine import FINDINGS_SCHEMA, GUIDANCE_PATH, Finding, map_findings, parse_diff, parse_findings, review_diff
from qwen_lsp.settings import Settings
from tests.net import closed_port_url
from tests.review.helpers import (
    BUG_LINE,
    CALC_BUG,
    HISTORY_SUBJECT,
    bug_finding,
    findings_reply,
)
from tests.review.gitrepo import GitRepo
from tests.vllm_double import Reply, VLLMDouble

# A staged change as `git diff --cached --src-prefix=a/ --dst-prefix=b/` prints it.
DIFF = """\
diff --git a/app/añadido.py b/app/añadido.py
new file mode 100644
index 0000000..3e75765
--- /dev/null
+++ b/app/añadido.py
@@ -0,0 +1,2 @@
+def hola():
+    return "¡hola!"
diff --git a/logo.png b/logo.png
new file mode 100644
index 0000000..bdc955b
Binary files /dev/null and b/logo.png differ
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index 2fa992c..0000000
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-keep
diff --git a/x.py b/x.py
index f9d9a01..02725fd 100644
--- a/x.py
+++ b/x.py
@@ -1,7 +1,7 @@
 a
-b
+B
 c
 d
-e
 f
 g
+h
@@ -20,3 +20,4 @@ def tail():
 t
 u
+v
 w
"""


def test_parse_diff_reads_statuses_and_new_side_lines() -> None:
    files = {f.path: f for f in parse_diff(DIFF)}
    assert files["app/añadido.py"].status == "added" and files["app/añadido.py"].changed_lines == [1, 2]
    assert files["logo.png"].binary and not files["logo.png"].reviewable
    assert files["gone.txt"].status == "deleted" and not files["gone.txt"].reviewable
    x = files["x.py"]
    assert x.status == "modified"
    # B replaces b at 2; e's removal leaves f at 5; h is added at 7; v at 22.
    assert x.changed_lines == [2, 5, 7, 22]
    assert [h.touched_source for h in x.hunks] == [(2, 5, 7), (21,)]


def test_annotated_diff_numbers_the_new_side() -> None:
    text = review.annotate_diff(parse_diff(DIFF), DIFF)
    assert "## x.py (modified)" in text
    assert "    2 + B" in text and "      - b" in text and "    5   f" in text
    assert "binary file, not shown" in text


def test_map_findings_snaps_within_hunks_keeps_the_rest_as_context_and_deduplicates() -> None:
    files = parse_diff(DIFF)
    raw = [
        Finding(path="b/x.py", line=1, severity="warning", category="bug", message="Wrong value."),
        Finding(path="x.py", line=3, severity="error", category="bug", message="wrong value"),  # same, after snapping
        Finding(path="./x.py", line=30, end_line=40, severity="error", category="style", message="Tail."),
        Finding(path="x.py", line=250, severity="error", category="bug", message="Far away."),
        Finding(path="/home/me/repo/app/añadido.py", line=1, severity="info", category="naming", message="Spanish."),
        Finding(path="gone.txt", line=1, severity="error", category="bug", message="Deleted file."),
        Finding(path="elsewhere.py", line=1, severity="error", category="bug", message="Not in the diff."),
    ]
    mapped, context = map_findings(raw, files)
    assert [(f.path, f.line, f.severity, f.category) for f in mapped] == [
        ("app/añadido.py", 1, "info", "naming"),
        ("x.py", 2, "error", "bug"),  # 1 and 3 are inside the first hunk: both snap to 2; the worse severity is kept
    ]
    # Outside every hunk: kept where the model put it, never moved onto changed line 22.
    assert [(f.line, f.end_line, f.message) for f in context] == [(30, 40, "Tail."), (250, None, "Far away.")]


def test_unknown_severities_count_as_the_default_and_are_counted() -> None:
    content = '{"findings": [{"path": "x.py", "line": 2, "severity": "Catastrophic", "category": "bug", "message": "m"},' \
              ' {"path": "x.py", "line": 5, "severity": "P1", "category": "bug", "message": "n"}]}'
    findings = parse_findings(content)
    assert [(f.severity, f.unknown_severity) for f in findings] == [
        (review.DEFAULT_SEVERITY, "catastrophic"), (review.DEFAULT_SEVERITY, "p1")]
    mapped, _ = map_findings(findings, parse_diff(DIFF))
    result = review.ReviewResult(findings=mapped)
    assert review.DEFAULT_SEVERITY == "warning" and result.unknown_severities == {"catastrophic": 1, "p1": 1}


def test_parse_findings_is_tolerant() -> None:
    content = """Here you go:
```json
{"findings": [
  {"path": "x.py", "line": "2", "severity": "High", "category": "Bug", "message": "m", "suggestion": ""},
  {"path": "x.py", "line": "two", "severity": "error", "category": "bug", "message": "bad line"},
  {"path": "x.py", "line": 3, "severity": "minor", "message": "no category"},
  "junk"
]}
```"""
    findings = parse_findings(content)
    assert [(f.line, f.severity, f.category, f.suggestion) for f in findings] == [
        (2, "error", "bug", None),
        (3, "info", "general", None),
    ]
    with pytest.raises(ValueError):
        parse_findings("I found nothing worth saying.")


def _settings(base_url: str) -> Settings:
    return Settings(base_url=base_url, max_retries=0, connect_timeout=1.0)


def _staged_diff(repo: GitRepo) -> str:
    return repo.git("diff", "--cached", "--src-prefix=a/", "--dst-prefix=b/").stdout


async def test_review_asks_for_structured_findings_and_maps_them(calc_repo: GitRepo, vllm: VLLMDouble) -> None:
    vllm.script(findings_reply(bug_finding(), bug_finding(path="other.py")))
    client = ModelClient(_settings(vllm.base_url))
    try:
        result = await review_diff(_staged_diff(calc_repo), calc_repo.root, client.settings, client)
    finally:
        await client.close()
    assert result.reviewed and not result.cached
    assert [(f.path, f.line, f.severity) for f in result.findings] == [("calc.py", BUG_LINE, "error")]
    assert result.prompt_tokens > 0 and result.completion_tokens > 0

    (request,) = vllm.chat_requests()
    assert request["structured_outputs"] == {"json": FINDINGS_SCHEMA}
    assert request["chat_template_kwargs"]["enable_thinking"] is False
    prompt = request["messages"][1]["content"]
    assert f"{BUG_LINE:>5} +     for v in values[1:]:" in prompt


async def test_review_prompt_has_enclosing_function_and_history(calc_repo: GitRepo, vllm: VLLMDouble) -> None:
    vllm.script(findings_reply())
    client = ModelClient(_settings(vllm.base_url))
    try:
        await review_diff(_staged_diff(calc_repo), calc_repo.root, client.settings, client)
    finally:
        await client.close()
    prompt = vllm.chat_requests()[0]["messages"][1]["content"]
    assert "# Code around the change" in prompt and "def mean(values)" in prompt
    assert "Empty input has no mean" in prompt  # outside the hunk: it came from the enclosing function
    assert HISTORY_SUBJECT in prompt


async def test_read_file_supplies_the_new_version(calc_repo: GitRepo, vllm: VLLMDouble) -> None:
    calc_repo.write("calc.py", "# the work tree differs from the index\n")
    vllm.script(findings_reply())
    client = ModelClient(_settings(vllm.base_url))
    seen: list[str] = []

    def staged(relpath: str) -> str | None:
        seen.append(relpath)
        return CALC_BUG

    try:
        await review_diff(_staged_diff(calc_repo), calc_repo.root, client.settings, client, read_file=staged)
    finally:
        await client.close()
    assert [p for p in seen if p != GUIDANCE_PATH] == ["calc.py"]  # and the project's review.md, as staged
    assert "Empty input has no mean" in vllm.chat_requests()[0]["messages"][1]["content"]


async def test_think_uses_the_thinking_mode(calc_repo: GitRepo, vllm: VLLMDouble) -> None:
    vllm.script(Reply(reasoning="The loop starts at index 1.", content='{"findings": []}'))
    client = ModelClient(_settings(vllm.base_url))
    try:
        result = await review_diff(_staged_diff(calc_repo), calc_repo.root, client.settings, client, think=True)
    finally:
        await client.close()
    assert result.reviewed and result.findings == []
    request = vllm.chat_requests()[0]
    assert request["chat_template_kwargs"]["enable_thinking"] is True
    assert request["max_tokens"] <= client.settings.plan_max_tokens


async def test_same_diff_is_served_from_the_cache(calc_repo: GitRepo, vllm: VLLMDouble, tmp_path: Path) -> None:
    vllm.script(findings_reply(bug_finding()))
    cache = StateCache(tmp_path / "cache")
    client = ModelClient(_settings(vllm.base_url))
    diff = _staged_diff(calc_repo)
    try:
        first = await review_diff(diff, calc_repo.root, client.settings, client, cache=cache)
        second = await review_diff(diff, calc_repo.root, client.settings, client, cache=cache)
        deep = review.review_key(diff, client.settings, think=True)
    finally:
        await client.close()
        cache.close()
    assert len(vllm.chat_requests()) == 1
    assert second.cached and second.findings == first.findings and second.prompt_tokens == 0
    assert deep != review.review_key(diff, client.settings, think=False)


async def test_unreachable_server_is_unavailable_and_not_cached(calc_repo: GitRepo, tmp_path: Path) -> None:
    cache = StateCache(tmp_path / "cache")
    client = ModelClient(_settings(closed_port_url()))
    diff = _staged_diff(calc_repo)
    try:
        result = await review_diff(diff, calc_repo.root, client.settings, client, cache=cache)
    finally:
        await client.close()
    assert not result.available and not result.reviewed and result.findings == []
    assert "Cannot reach the model server" in (result.error or "")
    assert cache.get(review.review_key(diff, client.settings, False), review.ReviewResult) is None
    cache.close()


async def test_deadline_makes_a_slow_server_unavailable(calc_repo: GitRepo, vllm: VLLMDouble) -> None:
    # The first token comes at once and the rest trickles: the deadline (2 s, room for a cold first
    # assembly) falls while the server is still answering. The message's form is checked, not a time.
    vllm.script(Reply(content='{"findings": []}' + " " * 40, chunk_delay=0.5))
    client = ModelClient(_settings(vllm.base_url))
    try:
        result = await review_diff(_staged_diff(calc_repo), calc_repo.root, client.settings, client, deadline=2.0)
    finally:
        await client.close()
    error = result.error or ""
    assert not result.available and "still answering" in error and "2 s deadline" in error, error
    assert re.search(r"first token came after \d+(\.\d+)? s", error) and "--timeout" in error, error  # what to change


async def test_deadline_before_the_first_token_says_no_token_came(calc_repo: GitRepo, vllm: VLLMDouble) -> None:
    vllm.script(Reply(content="{}", chunk_delay=3.0))  # the role chunk at once, the first token 3 s later
    client = ModelClient(_settings(vllm.base_url))
    try:
        result = await review_diff(_staged_diff(calc_repo), calc_repo.root, client.settings, client, deadline=0.5)
    finally:
        await client.close()
    error = result.error or ""
    assert not result.available and "sent no token within the review's 0.5 s deadline" in error, error
    assert "still answering" not in error and "--timeout" in error


async def test_unusable_answer_is_an_error_not_a_pass(calc_repo: GitRepo, vllm: VLLMDouble) -> None:
    vllm.script(Reply(content="Looks good to me!"))
    client = ModelClient(_settings(vllm.base_url))
    try:
        result = await review_diff(_staged_diff(calc_repo), calc_repo.root, client.settings, client)
    finally:
        await client.close()
    assert result.available and not result.reviewed and "not valid review JSON" in (result.error or "")


async def test_nothing_reviewable_asks_nothing(vllm: VLLMDouble) -> None:
    diff = "\n".join(DIFF.split("diff --git")[0:1]) + "diff --git" + DIFF.split("diff --git")[2]  # the binary file only
    client = ModelClient(_settings(vllm.base_url))
    try:
        result = await review_diff(diff, Path("."), client.settings, client)
    finally:
        await client.close()
    assert result.reviewed and result.findings == [] and vllm.chat_requests() == []


async def test_a_background_review_carries_the_workspaces_session_and_the_background_priority(
        calc_repo: GitRepo, vllm: VLLMDouble) -> None:
    from qwen_lsp.llm import identity

    vllm.script(findings_reply(bug_finding()), findings_reply(bug_finding()))
    settings = _settings(vllm.base_url).model_copy(update={"priority_scheduling": True})
    client = ModelClient(settings)
    try:
        await review_diff(_staged_diff(calc_repo), calc_repo.root, settings, client, background=True)  # on save
        await review_diff(_staged_diff(calc_repo), calc_repo.root, settings, client, think=True)  # asked for
    finally:
        await client.close()
    on_save, asked = [r for r in vllm.requests if r.path.endswith("/chat/completions")]
    assert on_save.body["priority"] == 10 and asked.body["priority"] == 0  # vLLM serves lower first
    assert on_save.headers["x-session-id"] == identity.session_id(settings, calc_repo.root)
