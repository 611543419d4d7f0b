"""One pydantic model per tool: what a tool call's arguments must be before the tool runs.

The model's arguments are untrusted input: a path with a NUL byte, a 300-byte
file name, `"."` as a new file, a lone surrogate in content, a number where a
string belongs, a missing key. Each is refused here with a message the model can
act on; the tools then only ever see well-formed values."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from qwen_lsp.files import NAME_MAX, PATH_MAX, name_problem


def _unicode(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("contains a lone surrogate (\\ud800-\\udfff), which is not valid Unicode") from None
    return text


def _path(path: str) -> str:
    """Any path that could name a file: read_file and edit_file decide whether it exists."""
    _unicode(path)
    if not path.strip():
        raise ValueError("is empty")
    if "\0" in path:
        raise ValueError("contains a NUL byte")
    if len(path.encode("utf-8")) > PATH_MAX or any(len(p.encode("utf-8")) > NAME_MAX for p in path.split("/")):
        raise ValueError(f"is too long (at most {NAME_MAX} bytes per name, {PATH_MAX} in all)")
    return path


def _new_file(path: str) -> str:
    problem = name_problem(_path(path))
    if problem is not None:
        raise ValueError(problem)
    return path


def _command(command: str) -> str:
    """A command goes onto the user's command line: nothing there may hide or act on its own."""
    if not command.strip():
        raise ValueError("is empty")
    if any((ord(c) < 0x20 and c not in "\t\n") or 0x7F <= ord(c) < 0xA0 for c in command):
        raise ValueError("contains control characters")
    return command


Text = Annotated[str, AfterValidator(_unicode)]
Path = Annotated[str, AfterValidator(_path)]


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ReadFile(_Arguments):
    path: Path
    start_line: int | None = None
    end_line: int | None = None


class SearchCode(_Arguments):
    pattern: Text
    glob: Text | None = None


class EditFile(_Arguments):
    path: Path
    old_string: Text
    new_string: Text


class CreateFile(_Arguments):
    path: Annotated[str, AfterValidator(_new_file)]
    content: Text


class SuggestCommand(_Arguments):
    command: Annotated[str, AfterValidator(_unicode), AfterValidator(_command)]
    reason: Text = ""


class Finish(_Arguments):
    summary: Text = ""


ARGUMENTS: dict[str, type[_Arguments]] = {
    "read_file": ReadFile,
    "search_code": SearchCode,
    "edit_file": EditFile,
    "create_file": CreateFile,
    "suggest_command": SuggestCommand,
    "finish": Finish,
}


def describe_errors(exc: ValidationError) -> str:
    """One short clause per problem, without echoing the (possibly huge) input."""
    clauses = []
    for error in exc.errors(include_input=False, include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        message = error["msg"].removeprefix("Value error, ")
        clauses.append(f"{where}: {message}")
    return "; ".join(clauses[:5])


MAX_DEPTH = 32  # of arrays and objects in one call's arguments; no tool needs more than 2


def loads_arguments(raw: str | bytes) -> Any:
    """A tool call's arguments decoded; ValueError (never RecursionError) when they are not JSON or
    nest deeper than MAX_DEPTH: 200,000 nested arrays are malformed arguments, not a crash."""
    try:
        value = json.loads(raw)
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    level, todo = 0, [value]
    while todo:  # breadth first, one level at a time: no recursion of our own
        level += 1
        todo = [v for item in todo if isinstance(item, dict | list) for v in (item.values() if isinstance(item, dict) else item)]
        if level > MAX_DEPTH and todo:
            raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    return value
