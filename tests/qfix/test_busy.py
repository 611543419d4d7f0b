"""qfix on a server that is up but does not finish: busy past the wait, or an answer broken off twice.
Exit 3 with its own outcome and message (qfix --help), never "unavailable" (exit 2)."""

from __future__ import annotations

import json
import subprocess

from terminal_agent.warm_wire import ChildReply
from tests.qfix.helpers import QFIX, fix_replies
from tests.vllm_double import Reply


def _qfix(repo, env) -> tuple[subprocess.CompletedProcess, dict]:
    proc = subprocess.run([QFIX, "--json", "--yes", "--", "python", "script.py"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    return proc, json.loads(proc.stdout)


def test_a_server_busy_for_longer_than_qfix_waits_exits_3_as_busy(repo, qfix_env, vllm):
    vllm.responder = lambda body: Reply(status=429, error_message="Too many requests", headers={"Retry-After": "1"})
    proc, report = _qfix(repo, {**qfix_env, "QWEN_LSP_BUSY_WAIT_SECONDS": "5"})
    assert proc.returncode == 3 and report["outcome"] == "busy", proc.stderr
    assert "is busy" in report["error"] and "HTTP 429" in report["error"]
    assert "unavailable" not in proc.stderr and "Cannot reach" not in proc.stderr
    assert "qfix: model server busy (HTTP 429), retrying in 1 s" in proc.stderr  # each wait, one line
    assert (repo / "script.py").read_text().count("nme") == 1  # nothing applied


def test_an_answer_broken_off_twice_exits_3_saying_so(repo, qfix_env, vllm):
    vllm.script(Reply(reasoning="thinking about it " * 5, content="{}", break_after=4),
                Reply(reasoning="thinking again " * 5, content="{}", break_after=4))
    proc, report = _qfix(repo, qfix_env)
    assert proc.returncode == 3 and report["outcome"] == "stream_broken", proc.stderr
    assert "closed the answer mid-stream" in report["error"] and "Cannot reach" not in proc.stderr
    assert proc.stderr.count("asking again on a new connection") == 1


def test_an_answer_broken_off_once_is_asked_again_and_the_fix_goes_on(repo, qfix_env, vllm):
    plan, *rest = fix_replies()
    vllm.script(Reply(reasoning=plan.reasoning, content=plan.content, break_after=3), plan, *rest)
    proc, report = _qfix(repo, qfix_env)
    assert report["engine_outcome"] in ("fixed", "changed_unverified"), proc.stderr
    assert "qfix: the model server closed the answer mid-stream" in proc.stderr


def test_the_warm_process_reports_busy_and_broken_streams_as_their_own_kinds():
    from terminal_agent.agent import WARM_ERRORS
    from qwen_lsp.llm.client import ServerBusy, StreamBroken

    for kind, error in (("busy", ServerBusy), ("stream_broken", StreamBroken)):
        reply = ChildReply.validate_json(json.dumps({"kind": "error", "error": kind, "message": "m"}))
        assert WARM_ERRORS[reply.error] is error
