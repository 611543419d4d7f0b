"""Local observability: every model call and every fix as one JSON line in
`<cache_dir>/calls.jsonl`. Appends are single small writes with O_APPEND, so
several processes (editor, qfix, hook) can share the file."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, TypeAdapter, ValidationError


class CallRecord(BaseModel):
    kind: Literal["call"] = "call"
    at: float = Field(default_factory=time.time)
    mode: Literal["thinking", "non-thinking"]
    fix_id: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    ttft: float | None = None
    seconds: float = 0.0
    outcome: str = "ok"  # "ok", "cancelled" or the error class name


class FixRecord(BaseModel):
    kind: Literal["fix"] = "fix"
    at: float = Field(default_factory=time.time)
    fix_id: str
    outcome: str
    plan_from_cache: bool
    thinking_calls: int
    non_thinking_calls: int
    seconds: float
    prefix_cache_missed: bool = False  # a patch round extended the previous prompt and the server cached none of it


Record = Annotated[CallRecord | FixRecord, Field(discriminator="kind")]
_RECORD = TypeAdapter(Record)


def log_path(cache_dir: Path) -> Path:
    return Path(cache_dir) / "calls.jsonl"


def append(cache_dir: Path, record: CallRecord | FixRecord) -> None:
    """Best effort: observability must never fail a fix."""
    path = log_path(cache_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (record.model_dump_json() + "\n").encode())
        finally:
            os.close(fd)
    except OSError:
        pass


def read(path: Path) -> list[CallRecord | FixRecord]:
    """Records of a log; lines that do not parse (a torn write, an old format) are skipped."""
    records: list[CallRecord | FixRecord] = []
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return records
    for line in lines:
        try:
            records.append(_RECORD.validate_json(line))
        except ValidationError:
            continue
    return records
