"""The fix engine: one thinking plan, then non-thinking patch rounds with tools.

    plan = think(context + task)                      # cached on disk by task fingerprint
                                                      # (reading_plan: it may read first, reading.py)
    loop: reply = patch(conversation)                 # append-only: byte-stable prefix
          run its tool calls on the in-memory overlay; new syntax errors are reported at once
          on finish: validate (parse + verify command); failures go back as tool results
          the same failure twice: re-plan once (thinking) with the failed attempt in view
    result = plan, diffs, shell suggestions, validation, accounting

Nothing here writes to the workspace: callers apply `FixResult.changes`.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from qwen_lsp.llm import calllog, identity
from qwen_lsp.context import prompt
from qwen_lsp.context.index import WorkspaceIndex
from qwen_lsp.engine.cache import StateCache, content_hash, normalize_output, task_fingerprint
from qwen_lsp.llm.client import Completion, ModelClient, ReasoningExhausted, StreamProgress, ToolCall, ToolsUnsupported
from qwen_lsp.engine.edits import EditError, apply_edit
from qwen_lsp.types import Accounting, CachedState, FileChange, FixResult, Plan, Risk, SummaryBy, Task, TaskKind, Validation
from qwen_lsp.engine.overlay import BufferReader, Overlay, PathOutsideWorkspace, UnwritablePath
from qwen_lsp.engine.prefetch import PromptCache
from qwen_lsp.engine.protected import ProtectedPath, git_executed
from qwen_lsp.engine import runs_later
from qwen_lsp.gitio import GitError, ignored
from qwen_lsp.engine.repeats import Repeats
from qwen_lsp.engine.prompts import (
    CUT_OFF, EARLY_FINISH, NO_PLAN_PATCH_REQUEST, NUDGE, PATCH_REQUEST, PLAN_NOW, PLAN_REQUEST, READING_PLAN_REQUEST,
    REFINE_REQUEST, REPLAN_REQUEST, SYSTEM, TEXT_PATCH_REQUEST,
)
from qwen_lsp.engine.reading import PlanReads, plan_in
from qwen_lsp.llm.parsing import loads_loose, parse_edit_blocks
from qwen_lsp.engine.risk import classify, is_test_command
from qwen_lsp.sanitize import visible
from qwen_lsp.settings import Settings
from qwen_lsp.engine.tool_args import loads_arguments
from qwen_lsp.engine.tools import TOOLS, ToolBox, size_error
from qwen_lsp.engine.sandbox_limits import SandboxLimits
from qwen_lsp.engine.validate import check_parse, run_verify
from qwen_lsp.engine import sandbox, thinking as live_thinking, vetting

Progress = Callable[[str], None]
log = logging.getLogger(__name__)
KEPT_RUNS = 8  # finished runs a follow-up (Engine.refine) can continue


class RunGone(Exception):
    """Engine.refine: the run is no longer kept (too many since, or another process)."""

NO_CACHE_HIT_MIN_TOKENS = 256  # below this the shared prefix is too short to expect a hit
NO_CACHE_HIT = ("the model server reported 0 cached tokens for a request that repeats the previous %d-token prompt "
                "of this fix: its prefix cache is not hitting, so every patch round pays for the whole prompt again. "
                "Run `qwen-lsp doctor` (%s; vLLM: --enable-prefix-caching before 0.28, and vllm#51198 for the "
                "hybrid Qwen3.6 model).")


class Engine:
    def __init__(self, settings: Settings, client: ModelClient | None = None, cache: StateCache | None = None,
                 live_index: WorkspaceIndex | None = None) -> None:
        self.settings = settings
        self.client = client or ModelClient(settings)
        self.cache = cache or StateCache(settings.cache_dir / "state", settings.cache_size_mb)
        self.live_index = live_index  # the language server's in-memory index of this engine's workspace
        self.tools_supported = True  # flips off once the server refuses tool calling
        self.warned_no_cache_hit = False  # the prefix-cache warning is said once per process
        self.reuse_plans = True  # False (qfix --no-cache): think afresh; the new plan is still stored
        self.prompts = PromptCache()
        self.finished: dict[str, _Run] = {}  # fix_id -> the run, for refine; the last KEPT_RUNS

    async def prompt(
        self, task: Task, workspace: Path, read_file: Callable[[str], str | None], stamp: Hashable | None = None,
        notify: Progress | None = None,
    ) -> prompt.Prompt:
        """The prompt for `task`, assembled on a thread (seconds on a large repo, cold). With a
        `stamp` (the caller's buffers' versions) and a live index, one assembly per state is shared
        between a prefetch and the fix; see prefetch.py for what the key covers."""
        max_len = await self.input_limit(notify)
        live = self.live_index if self.live_index is not None and self.live_index.workspace.resolve() == workspace else None
        tools = TOOLS if self.tools_supported else []
        build = functools.partial(
            prompt.assemble, task, workspace, self.settings, system=SYSTEM, tools=tools, read_file=read_file,
            cache_dir=self.settings.cache_dir, max_model_len=max_len, live=live,
        )
        if stamp is None or live is None:
            return await asyncio.to_thread(build)
        key = (stamp, task.model_dump_json(), str(workspace), live.version, live.git.stamp(workspace), max_len, bool(tools))
        # shield: a cancelled fix must not cancel an assembly that a later fix may share
        built = await asyncio.shield(self.prompts.get(key, build))
        return built.model_copy(deep=True)

    async def prefetch(self, task: Task, workspace: Path, read_buffer: BufferReader | None, stamp: Hashable) -> None:
        """Assemble `task`'s prompt now, so that a fix of it with the same `stamp` finds it ready.
        Only once the model server has answered: moving the cursor never sends it a request."""
        if self.client.known_info is None:
            return
        overlay = Overlay(workspace, read_buffer, protected=(self.settings.cache_dir,))
        try:
            await self.prompt(task, overlay.root, overlay.read, stamp)
        except Exception:  # the fix itself assembles again and reports what goes wrong
            log.debug("prefetching the prompt for %s failed", task.path, exc_info=True)

    async def input_limit(self, notify: Progress | None = None) -> int | None:
        """The server's context minus room for the longest answer we ask for (`notify` hears of a busy server)."""
        max_len = (await self.client.info(notify)).max_model_len
        if not max_len:
            return None
        return max(1024, max_len - max(self.settings.plan_max_tokens, self.settings.patch_max_tokens))

    async def fix(
        self, task: Task, workspace: Path, *, read_buffer: BufferReader | None = None, progress: Progress | None = None,
        stamp: Hashable | None = None,
    ) -> FixResult:
        """`stamp`: what identifies the editor's buffers now (see `prompt`); None assembles afresh."""
        run = _Run(self, task, workspace, read_buffer, progress or (lambda _msg: None), stamp)
        return await self._timed(run, run.execute)

    async def refine(self, fix_id: str, note: str, *, progress: Progress | None = None) -> FixResult:
        """Follow up on the result `fix_id` with the user's `note`: the same conversation goes on,
        append-only (the same prefix for the server's cache), with no new plan and the plan cache left
        as it is; the files still hold that result's change, and the new result's diffs are against
        the files as first read. RunGone when the run is no longer kept."""
        run = self.finished.get(fix_id)
        if run is None:
            raise RunGone("that result is no longer kept: ask again")
        run.progress = progress or (lambda _msg: None)
        return await self._timed(run, lambda: run.refine(note))

    async def _timed(self, run: _Run, work: Callable[[], Any]) -> FixResult:
        outcome = "error"
        deadline = self.settings.limits.fix_deadline_seconds
        budget = asyncio.timeout(deadline)  # every phase: context, plan, patch rounds (a trickling stream too), validation
        try:
            async with budget:
                result = await work()
            outcome = result.outcome
            if result.outcome != "explained":
                self.finished.pop(run.fix_id, None)
                self.finished[run.fix_id] = run
                while len(self.finished) > KEPT_RUNS:
                    self.finished.pop(next(iter(self.finished)))
                result.fix_id = run.fix_id
            return result
        except TimeoutError:
            if not budget.expired():
                raise
            outcome = "deadline"
            return run.stopped(f"stopped: the fix took longer than {deadline:g} s (limits.fix_deadline_seconds)")
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        finally:
            a = run.accounting
            calllog.append(
                self.settings.cache_dir,
                calllog.FixRecord(
                    fix_id=run.fix_id, outcome=outcome, plan_from_cache=a.plan_from_cache,
                    thinking_calls=a.thinking_calls, non_thinking_calls=a.non_thinking_calls,
                    seconds=time.monotonic() - run.started, prefix_cache_missed=run.prefix_cache_missed,
                ),
            )


class _Run:
    """The state of one fix: conversation, overlay, accounting."""

    def __init__(self, engine: Engine, task: Task, workspace: Path, read_buffer: BufferReader | None, progress: Progress,
                 stamp: Hashable | None = None):
        self.engine, self.task, self.progress, self.stamp = engine, task, progress, stamp
        self.settings = engine.settings
        self.overlay = Overlay(workspace, read_buffer, protected=(self.settings.cache_dir,),
                               executed=git_executed(workspace))
        self.toolbox = ToolBox(self.overlay, self.settings.limits)
        self.accounting = Accounting()
        self.started = time.monotonic()
        self.fix_id = uuid.uuid4().hex[:12]
        self.messages: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = TOOLS if engine.tools_supported else []
        self.plan: Plan | None = None
        self.validated: list[FileChange] | None = None  # the changes the last validation saw
        self.repeats = Repeats()
        self.early_finishes = 0  # finish calls with no change while the plan named edits
        self.early_finish_summary = ""
        self.recovered: list[str] = []  # "round N: tool from where": calls no server parser handed us
        self.last_prompt_tokens = 0
        self.prefix_cache_missed = False  # a patch round repeated the previous prompt and nothing was cached

    async def execute(self) -> FixResult:
        built = await self.engine.prompt(self.task, self.overlay.root, self.overlay.read, self.stamp,
                                         notify=self.progress)
        named = {self.task.path} | {f.resolved for f in built.frames if f.resolved}
        self.messages = list(built.messages)
        if self.task.kind == TaskKind.explain:
            return await self._explain()
        if self.settings.strategy == "no_plan":  # patch rounds only: no plan, nothing cached
            validation, summary, summary_by = await self._patch_loop()
            return self._result(validation, summary, self._stopped_outcome(), summary_by=summary_by)

        reading = self.settings.strategy == "reading_plan" and bool(self.tools) and self.settings.plan_read_calls > 0
        plan_mode = "reading" if reading else "no_thinking" if self.settings.strategy == "no_thinking" else "thinking"
        server = (self.settings.base_url, (await self.engine.client.info()).model)  # asked by the prompt already
        key = task_fingerprint(self.task, self._seen_hashes(p for p in named if p), self.overlay.root, server,
                               plan_mode)
        self.messages.append({"role": "user", "content": self._plan_request(reading)})
        cached = self.engine.cache.get_state(key) if self.engine.reuse_plans else None
        if cached is not None and self._seen_hashes(cached.file_hashes) == cached.file_hashes:
            state = cached
            self.accounting.plan_from_cache = True
            self.progress("plan restored from cache")
            self.messages.extend(state.plan_reads)  # as read then: nothing is read again
        else:
            self.progress("planning")
            mark = len(self.messages)
            plan, plan_message = await (self._reading_plan() if reading else self._plan())
            # The files the plan read are in the overlay's originals, hence in its inputs.
            state = CachedState(plan=plan, plan_message=plan_message, plan_reads=self.messages[mark:],
                                file_hashes=self._plan_inputs(plan))
            self.engine.cache.put_state(key, state)  # kept even if the patch loop is cancelled
        self.plan = state.plan
        self.messages.append(state.plan_message)

        validation, summary, summary_by = await self._patch_loop()
        if (changes := self.overlay.changes()) and changes != self.validated:  # no finish, or edits after it
            validation = await self._validate()
        return self._result(validation, summary, self._stopped_outcome(), summary_by=summary_by)

    def _stopped_outcome(self) -> str | None:
        """The outcome of a fix the engine stopped with nothing to offer, else None (decided by its changes)."""
        if self.overlay.changes():
            return None
        if self.repeats.stopped is not None:
            return "repeated"
        return "gave_up" if self.early_finishes >= 2 else None

    # -- phases ---------------------------------------------------------------------------

    async def _plan(self, *, think: bool = True) -> tuple[Plan, dict[str, Any]]:
        """The thinking call; the last message must be the plan request.

        If thinking uses up its tokens without an answer, plan once more without
        thinking: a shallower plan beats no fix. (`think=False`: that has happened already.)
        """
        schema = Plan.model_json_schema()
        try:
            reply = await self._call(thinking=think and self.settings.strategy != "no_thinking", json_schema=schema)
        except ReasoningExhausted:
            self.progress("planning without thinking (reasoning ran out of tokens)")
            reply = await self._call(thinking=False, json_schema=schema)
        return parse_plan(reply.content), reply.assistant_message()

    async def _reading_plan(self) -> tuple[Plan, dict[str, Any]]:
        """Thinking rounds that may read (read_file, search_code; nothing else runs) within the
        budget, each call and answer appended; then the plan. An answer without calls that holds a
        plan is the plan; otherwise, and once the budget is spent, the plan is asked for with
        structured output (no call is possible in that request). See engine/reading.py."""
        reads = PlanReads(self.toolbox, self.settings.plan_read_calls, self.settings.plan_read_tokens)
        think = True
        try:
            while not reads.spent and self._spent() < self.settings.max_total_tokens:
                try:
                    reply = await self._call(thinking=True)
                except ReasoningExhausted:  # as in _plan: the plan without thinking
                    self.progress("planning without thinking (reasoning ran out of tokens)")
                    think = False
                    break
                except ToolsUnsupported:  # no calls on this server: the structured plan still answers
                    break
                _drop_broken_calls(reply)  # never replayed; a cut-off read is simply not run
                if not reply.tool_calls and (plan := plan_in(reply.content)) is not None:
                    return plan, reply.assistant_message()
                self.messages.append(reply.assistant_message())
                if not reply.tool_calls:
                    break
                self._note_recovered(reply, "plan")
                for call in reply.tool_calls:
                    self.progress(f"planning: {_shown_name(call.name)}")
                    self.messages.append({"role": "tool", "tool_call_id": call.id,
                                          "content": reads.answer(call.name, call.arguments)})
        finally:
            self.accounting.plan_reads = reads.reads
        self.messages.append({"role": "user", "content": PLAN_NOW})
        return await self._plan(think=think)

    async def refine(self, note: str) -> FixResult:
        """The conversation goes on after its result: the user's note, then patch rounds (no plan)."""
        self.accounting = Accounting()
        self.started = time.monotonic()
        self.toolbox.finished = None
        validation, summary, summary_by = await self._patch_loop(REFINE_REQUEST.format(note=note.strip()))
        if (changes := self.overlay.changes()) and changes != self.validated:
            validation = await self._validate()
        return self._result(validation, summary, summary_by=summary_by)

    async def _patch_loop(self, request: str | None = None) -> tuple[Validation, str, SummaryBy]:
        """The patch rounds; the validation of the last finish, and the summary with who wrote it.
        `request`: the user message that starts them (default: the patch request)."""
        self.messages.append({"role": "user", "content": request or self._patch_request()})
        seen_failures: set[str] = set()
        replanned = self.settings.strategy == "no_plan"  # never plan in the middle either
        idle_rounds = 0
        validation = Validation()
        for round_no in range(1, self.settings.max_rounds + 1):
            if self._spent() >= self.settings.max_total_tokens:
                return validation, f"stopped: token budget of {self.settings.max_total_tokens} used", "engine"
            self.progress(f"patch round {round_no}")
            self.accounting.rounds = round_no
            try:
                reply = await self._call(thinking=self.settings.strategy == "think_every_round")
            except ToolsUnsupported:
                self._switch_to_text_mode()
                continue
            broken = _drop_broken_calls(reply)  # never replayed: the server would reject every later request
            self.messages.append(reply.assistant_message())
            if not self.tools:
                done, validation = await self._text_round(reply)
                if done:
                    return validation, reply.content.strip()[:500], "model"
                continue
            if broken and not reply.tool_calls:
                self.messages.append({"role": "user", "content": _cut_off_note(broken, reply)})
                continue
            if not reply.tool_calls:
                idle_rounds += 1
                if idle_rounds >= 2:
                    return validation, reply.content.strip()[:500], "model"
                self.messages.append({"role": "user", "content": NUDGE})
                continue
            idle_rounds = 0
            edits_before = self.toolbox.edits_applied
            self._note_recovered(reply, f"round {round_no}")
            for call in reply.tool_calls:
                if self.repeats.stopped is not None:  # the rest of a round that repeated a call a third time
                    result = "Not run: the fix was stopped."
                elif call.name == "finish" and self._finish_too_early(call):
                    result = EARLY_FINISH.format(steps="; ".join(self.plan.steps if self.plan else [])[:600])
                else:
                    result = self.repeats.run(call.name, call.arguments, self.toolbox)
                if call.name == "finish" and self.toolbox.finished is not None:
                    validation = await self._validate()
                    result = _validation_report(validation)
                self.messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
            if self.repeats.stopped is not None:
                return await self._stop_repeating(validation)
            if self.early_finishes >= 2:  # the model's own words, labelled as such; the outcome says it gave up
                return validation, self.early_finish_summary, "model"
            if broken:
                self.messages.append({"role": "user", "content": _cut_off_note(broken, reply)})
            if self.toolbox.finished is None and self.toolbox.edits_applied > edits_before:
                self._report_parse_errors()  # cheap check every round; the verify command waits for finish
            if self.toolbox.finished is None:
                continue
            if validation.ok:
                return validation, self.toolbox.finished, "model"
            self.toolbox.finished = None
            fingerprint = _failure_fingerprint(validation)
            if fingerprint in seen_failures and not replanned:
                replanned = True
                self.progress("re-planning after a repeated failure")
                self.messages.append({"role": "user", "content": REPLAN_REQUEST})
                self.plan, message = await self._plan()
                self.messages.append(message)
                self.messages.append({"role": "user", "content": PATCH_REQUEST})
            seen_failures.add(fingerprint)
        return validation, "stopped: round limit reached", "engine"

    def _note_recovered(self, reply: Completion, when: str) -> None:
        for call in reply.tool_calls:
            if call.source != "native":
                where = {"content": "the answer's text", "reasoning": "the end of the reasoning",
                         "split": "the reasoning and the answer's text (split)"}[call.source]
                self.recovered.append(f"{when}: {_shown_name(call.name)} recovered from {where}")
                self.progress(f"{_shown_name(call.name)} call recovered from {where}")

    def _finish_too_early(self, call: ToolCall) -> bool:
        """A finish with nothing changed and nothing suggested while the plan named edits: the first
        one is answered with the plan; the second ends the fix as given up (not as "no change needed")."""
        if self.overlay.changes() or self.toolbox.suggestions or not _plan_names_edits(self.plan):
            return False
        self.early_finishes += 1
        try:
            said = loads_arguments(call.arguments).get("summary")
        except (ValueError, AttributeError):
            said = None
        self.early_finish_summary = said if isinstance(said, str) and said else "done"
        return True

    async def _stop_repeating(self, validation: Validation) -> tuple[Validation, str, SummaryBy]:
        """Keep what was found before the model got stuck: its change, checked as at a finish."""
        if self.overlay.changes() and self.overlay.changes() != self.validated:
            validation = await self._validate()
        return validation, f"stopped: the model repeated the same call ({self.repeats.stopped})", "engine"

    def _report_parse_errors(self) -> None:
        """Tell the model at once when this round's edits broke the syntax (appended to the last tool result)."""
        broken = [c.detail for c in check_parse(self.overlay.changes(), self.settings.limits.parse_check_seconds) if not c.ok]
        if broken:
            self.messages[-1]["content"] += "\nWarning: " + "; ".join(broken) + ". Fix it before calling finish."

    async def _text_round(self, reply: Completion) -> tuple[bool, Validation]:
        """Degraded mode: apply SEARCH/REPLACE blocks from plain text."""
        blocks = parse_edit_blocks(reply.content)
        if not blocks:
            return True, await self._validate() if self.overlay.changes() else Validation()
        errors = []
        for block in blocks:
            try:
                text = self.overlay.read(block.path)
                if text is None:
                    errors.append(f"{block.path}: no such file")
                    continue
                updated = apply_edit(text, block.old, block.new, path=block.path).text
                if too_big := size_error(self.settings.limits, block.path, block.new, updated):
                    errors.append(too_big)
                    continue
                self.overlay.write(block.path, updated)
            except (EditError, PathOutsideWorkspace, ProtectedPath, UnwritablePath) as exc:
                errors.append(f"{block.path}: {exc}")
        validation = await self._validate()
        if not errors and validation.ok:
            return True, validation
        report = "\n".join(errors) or _validation_report(validation)
        self.messages.append({"role": "user", "content": f"{report}\nFix that with new blocks."})
        return False, validation

    async def _explain(self) -> FixResult:
        self.messages.append({"role": "user", "content": "Explain the code and the question above, concisely."})
        reply = await self._call(thinking=False)
        return self._result(Validation(), reply.content, outcome="explained")

    async def _validate(self) -> Validation:
        """Parse checks, then the verify command in the sandbox; never a command without one."""
        self.progress("validating")
        changes = self.validated = self.overlay.changes()
        validation = Validation(checks=check_parse(changes, self.settings.limits.parse_check_seconds),
                                runs_during_verification=vetting.runs_during_verification(changes))
        if not changes or not validation.ok:
            return validation
        command, why_not = self._verify_command()
        jail = sandbox.status() if command and self.settings.verify else None
        if command is None:
            validation.not_verified, validation.not_verified_detail = "no command to run", why_not
        elif jail is None:
            validation.not_verified = "verification is off"
            validation.not_verified_detail = "the verify setting is false: only parse checks ran"
        elif not jail.available:
            validation.not_verified = "no sandbox"
            validation.not_verified_detail = f"`{command}` was not run: {jail.detail}; to enable: {jail.fix}"
        else:
            limits, cache_dir = self.settings.limits, self.settings.cache_dir
            validation.checks.append(await run_verify(
                self.overlay, command, self.task.cwd, self.settings.verify_timeout, bwrap=jail.bwrap,
                limits=SandboxLimits.from_settings(limits), hide=sandbox.own_dirs(cache_dir),
                copy_file_max_bytes=limits.copy_file_max_bytes,
            ))
        return validation

    # -- helpers ----------------------------------------------------------------------------

    async def _call(self, *, thinking: bool, json_schema: dict[str, Any] | None = None) -> Completion:
        tool_choice = "none" if json_schema is not None else None  # plan call: same tools, no calls
        try:
            reply = await self.engine.client.complete(
                self._request_messages(),
                thinking=thinking,
                max_tokens=self.settings.plan_max_tokens if thinking else self.settings.patch_max_tokens,
                tools=self.tools or None,
                tool_choice=tool_choice if self.tools else None,
                json_schema=json_schema,
                fix_id=self.fix_id,
                session_id=self._session(),
                progress=self._live_thinking() if thinking else None,
                notify=self.progress,  # a retry (busy server, broken stream) is one line the user sees
                deadline=self.started + self.settings.limits.fix_deadline_seconds,
            )
        except ReasoningExhausted as exc:  # no answer, but a thinking call that cost its tokens all the same
            self._account(exc.completion or Completion(thinking=True), thinking)
            raise
        self._account(reply, thinking)
        self._check_cache_hit(reply)
        return reply

    def _account(self, reply: Completion, thinking: bool) -> None:
        a = self.accounting
        if thinking:
            a.thinking_calls += 1
        else:
            a.non_thinking_calls += 1
        a.prompt_tokens += reply.prompt_tokens
        a.completion_tokens += reply.completion_tokens
        a.cached_tokens += reply.cached_tokens

    def _check_cache_hit(self, reply: Completion) -> None:
        """A request that extends the previous one (append-only) should find that prefix cached; a server
        reporting 0 cached tokens there recomputes the whole prompt every round. Said once per process."""
        shared, self.last_prompt_tokens = self.last_prompt_tokens, reply.prompt_tokens
        if (shared < NO_CACHE_HIT_MIN_TOKENS or reply.prompt_tokens < shared or not reply.cached_tokens_reported
                or reply.cached_tokens > 0 or self.settings.strategy == "prefix_unstable"):
            return
        self.prefix_cache_missed = self.accounting.prefix_cache_missed = True
        if not self.engine.warned_no_cache_hit:
            self.engine.warned_no_cache_hit = True
            log.warning(NO_CACHE_HIT, shared, self.settings.base_url)

    def _live_thinking(self) -> StreamProgress | None:
        """A thinking call's stream, followed: a tail of its reasoning goes to the progress callback
        as thoughts (engine/thinking.py), unless the `live_thinking` setting is off."""
        if not self.settings.live_thinking:
            return None
        tail = live_thinking.ThinkingTail(lambda t: self.progress(live_thinking.encode(t)))
        return StreamProgress(on_reasoning=tail.feed)

    def _session(self) -> str:
        if getattr(self, "_session_id", None) is None:  # asked once per fix: it may read the cache folder
            self._session_id = identity.session_id(self.settings, self.overlay.root)
        return self._session_id

    def _plan_request(self, reading: bool) -> str:
        return READING_PLAN_REQUEST.format(calls=self.settings.plan_read_calls) if reading else PLAN_REQUEST

    def _patch_request(self) -> str:
        if not self.tools:
            return TEXT_PATCH_REQUEST
        return NO_PLAN_PATCH_REQUEST if self.settings.strategy == "no_plan" else PATCH_REQUEST

    def _request_messages(self) -> list[dict[str, Any]]:
        """The conversation as sent. `prefix_unstable` rotates the context sections on every call,
        only to measure what the byte-stable prefix saves; the transcript itself stays as built."""
        if self.settings.strategy != "prefix_unstable" or len(self.messages) < 2:
            return self.messages
        calls = self.accounting.thinking_calls + self.accounting.non_thinking_calls
        return [self.messages[0], _rotated_sections(self.messages[1], calls), *self.messages[2:]]

    def _switch_to_text_mode(self) -> None:
        self.engine.tools_supported = False
        self.tools = []
        self.messages[-1] = {"role": "user", "content": TEXT_PATCH_REQUEST}

    def _verify_command(self) -> tuple[str | None, str]:
        """The user's own failing command, else the plan's if it is a plain test runner whose
        arguments stay inside the workspace; or None and why. It runs only in the sandbox."""
        if self.task.command and classify(self.task.command)[0] in (Risk.read_only, Risk.modifies_files):
            return self.task.command, ""
        plan_command = self.plan.verify_command if self.plan else None
        if not plan_command:
            risky = f"`{self.task.command}` is not re-run automatically (risky)" if self.task.command else ""
            return None, risky or "neither the task nor the plan gave a command"
        if not self.settings.run_model_verify_commands:
            return None, f"the plan's `{plan_command}` was not run (run_model_verify_commands is false)"
        if not is_test_command(plan_command):
            return None, f"the plan's `{plan_command}` is not an allow-listed test runner"
        refused = vetting.refusal(plan_command, self.overlay.root, self.task.cwd)
        if refused:
            return None, f"the plan's `{plan_command}` was refused: {refused}"
        return plan_command, ""

    def _plan_inputs(self, plan: Plan) -> dict[str, str]:
        """Hashes of every file the plan saw or cites; checked again before a cached plan is reused."""
        return self._seen_hashes([*self.overlay.originals, *(e.path for e in plan.evidence)])

    def _seen_hashes(self, paths: Iterable[str]) -> dict[str, str]:
        hashes = {}
        for path in sorted(set(paths)):
            try:
                text = self.overlay.read(path)
            except PathOutsideWorkspace:
                continue
            hashes[path] = content_hash(text) if text is not None else "missing"
        return hashes

    def _spent(self) -> int:
        return self.accounting.prompt_tokens + self.accounting.completion_tokens

    def stopped(self, why: str) -> FixResult:
        """A fix cut short by a limit: nothing to apply, and the reason said as such."""
        self.accounting.wall_seconds = time.monotonic() - self.started
        return FixResult(task=self.task, outcome="failed", summary=why, summary_by="engine", plan=self.plan,
                         accounting=self.accounting, error=why)

    def _result(self, validation: Validation, summary: str, outcome: str | None = None,
                summary_by: SummaryBy = "model") -> FixResult:
        changes = self.overlay.changes()
        if outcome is None:
            if not changes:
                outcome = "no_change"
            elif not validation.ok:
                outcome = "failed"
            else:
                verified = any(not c.name.startswith("parses:") for c in validation.checks)
                outcome = "fixed" if verified else "changed_unverified"
        self.accounting.wall_seconds = time.monotonic() - self.started
        shown = self._listing(changes) if outcome != "failed" else runs_later.Listing([], [])
        return FixResult(
            task=self.task,
            outcome=outcome,  # type: ignore[arg-type]
            summary=visible(summary),  # model text, shown by every front end: no hidden characters
            summary_by=summary_by,
            plan=self.plan,
            changes=changes if outcome != "failed" else [],
            suggestions=self.toolbox.suggestions,
            validation=validation,
            accounting=self.accounting,
            error=None if outcome != "failed" else visible(_validation_report(validation)),
            refused_writes=list(dict.fromkeys(self.overlay.refused)),
            runs_later=shown.runs_later,
            not_tracked=shown.not_tracked,
            recovered_calls=self.recovered,
            in_submodule=[f"{c.path} (submodule {sub})" for c in (changes if outcome != "failed" else [])
                          if (sub := nested_repository(self.overlay.root, c.path))],
        )

    def _listing(self, changes: list[FileChange]) -> runs_later.Listing:
        """The changed files that run later, and those git ignores: both need the user's explicit yes."""
        try:
            hidden = ignored(self.overlay.root, [c.path for c in changes])
        except GitError:  # not a repository, or no git: nothing is ignored by it
            hidden = set()
        return runs_later.listing(changes, runs_later.subjects(self.task), hidden)


def _shown_name(name: str) -> str:
    """A model-sent call's name as progress and reports show it: one of our tools, else nothing of
    its text (a name is any string the model wrote, escape sequences included)."""
    return name if name in _TOOL_NAMES else "a call to an unknown tool"


_TOOL_NAMES = frozenset(tool["function"]["name"] for tool in TOOLS)


def parse_plan(content: str) -> Plan:
    """The plan from the model's answer; tolerant of servers that ignore structured output."""
    try:
        data = loads_loose(content)
        return Plan.model_validate(data)
    except (ValueError, TypeError):
        text = content.strip()
        return Plan(steps=[text[:2000]] if text else [])


_NO_EDIT_STEP = re.compile(r"\b(no|nothing|not)\b.{0,40}\b(change|edit|fix|to do|needed)", re.IGNORECASE)


def _plan_names_edits(plan: Plan | None) -> bool:
    """Whether the plan has a step to carry out (a step saying nothing needs changing is not one)."""
    return plan is not None and any(step.strip() and not _NO_EDIT_STEP.search(step) for step in plan.steps)


def nested_repository(root: Path, rel: str) -> str | None:
    """The folder (workspace-relative) of the git submodule or nested repository holding `rel`, or None:
    the nearest folder above it, below `root`, with a `.git` of its own (a file, for a submodule)."""
    parts = PurePosixPath(rel).parts[:-1]
    for depth in range(len(parts), 0, -1):
        folder = PurePosixPath(*parts[:depth])
        if os.path.lexists(root / folder / ".git"):
            return folder.as_posix()
    return None


def _drop_broken_calls(reply: Completion) -> list[ToolCall]:
    """Take the tool calls whose arguments are not a JSON object (cut off by max_tokens, or garbled)
    out of `reply`, so the conversation only ever holds well-formed calls; return them."""
    kept: list[ToolCall] = []
    broken: list[ToolCall] = []
    for call in reply.tool_calls:
        try:
            ok = isinstance(loads_arguments(call.arguments), dict)
        except ValueError:
            ok = False
        (kept if ok else broken).append(call)
    reply.tool_calls = kept
    return broken


def _cut_off_note(broken: list[ToolCall], reply: Completion) -> str:
    names = ", ".join(dict.fromkeys(c.name or "tool" for c in broken))
    many = len(broken) > 1
    why = " at the answer's token limit" if reply.finish_reason == "length" else ""
    return CUT_OFF.format(names=names, plural="s" if many else "", were="were" if many else "was", why=why,
                          it="them" if many else "it")


def _validation_report(validation: Validation) -> str:
    if not validation.checks:
        return "Finished (nothing to validate)."
    lines = [f"{'✓' if c.ok else '✗'} {c.name}" + (f"\n{c.detail}" if c.detail and not c.ok else "") for c in validation.checks]
    verdict = "Validation passed." if validation.ok else "Validation FAILED; fix it and call finish again."
    if validation.not_verified and validation.ok:
        lines.append(f"(not verified by a command: {validation.not_verified})")
    return "\n".join([verdict, *lines])


_SECTION_START = re.compile(r"\n\n(?=(?:" + "|".join(map(re.escape, prompt.HEADINGS.values())) + r")\n\n)")


def _rotated_sections(message: dict[str, Any], shift: int) -> dict[str, Any]:
    """The context message with its sections (repo map, git, files, task) rotated by `shift`."""
    sections = _SECTION_START.split(message["content"])
    k = shift % len(sections)
    return {**message, "content": "\n\n".join(sections[k:] + sections[:k])}


def _failure_fingerprint(validation: Validation) -> str:
    # Timings and temp paths differ between identical failures.
    failed = [(c.name, normalize_output(c.detail[-500:])) for c in validation.checks if not c.ok]
    return hashlib.sha256(repr(failed).encode()).hexdigest()

