"""Rust panics, with an optional RUST_BACKTRACE block."""

from __future__ import annotations

import os
import re

from .model import PATH, Raw, Trace

_RUST_PANIC_NEW = re.compile(rf"^thread '(?P<thread>[^']*)' (?:\(\d+\) )?panicked at (?P<path>{PATH}):(?P<line>\d+):(?P<col>\d+):\s*$")
_RUST_PANIC_OLD = re.compile(
    rf"^thread '(?P<thread>[^']*)' panicked at '(?P<msg>.*)', (?P<path>{PATH}):(?P<line>\d+):(?P<col>\d+)\s*$"
)
_RUST_BT_FN = re.compile(r"^\s*\d+:\s+(?:0x[0-9a-f]+ - )?(?P<func>.+?)\s*$")
_RUST_BT_AT = re.compile(rf"^\s+at (?P<path>{PATH}):(?P<line>\d+)(?::(?P<col>\d+))?\s*$")


def parse_rust_panic(lines: list[str], taken: set[int]) -> list[Trace]:
    traces = []
    for i, ln in enumerate(lines):
        if i in taken:
            continue
        m = _RUST_PANIC_NEW.match(ln) or _RUST_PANIC_OLD.match(ln)
        if not m:
            continue
        taken.add(i)
        j = i + 1
        if "msg" in m.groupdict() and m["msg"] is not None:
            msg_lines = [m["msg"]]
        else:
            msg_lines = []
            while j < len(lines) and lines[j].strip() and not lines[j].startswith(("note:", "stack backtrace:")):
                if len(msg_lines) < 5:
                    msg_lines.append(lines[j].rstrip())
                taken.add(j)
                j += 1
        message = "panicked: " + "\n".join(msg_lines) if msg_lines else "panicked"
        frames: list[Raw] = []
        # Optional RUST_BACKTRACE=1 block: "N: function" / "at path:line:col", innermost first.
        k = j
        while k < len(lines) and k < j + 3 and not lines[k].startswith("stack backtrace:"):
            k += 1
        if k < len(lines) and lines[k].startswith("stack backtrace:"):
            taken.add(k)
            func = None
            k += 1
            while k < len(lines):
                if a := _RUST_BT_AT.match(lines[k]):
                    frames.append(
                        Raw(at=k, path=a["path"], line=int(a["line"]), column=int(a["col"]) if a["col"] else None, function=func)
                    )
                elif fn := _RUST_BT_FN.match(lines[k]):
                    func = re.sub(r"::h[0-9a-f]{16}$", "", fn["func"])
                elif not lines[k].startswith("note: Some details"):
                    break
                taken.add(k)
                k += 1
            frames.reverse()
        panic = Raw(at=i, path=m["path"], line=int(m["line"]), column=int(m["col"]))
        if all((os.path.normpath(f.path), f.line) != (os.path.normpath(panic.path), panic.line) for f in frames):
            panic.function = m["thread"] if not frames else None
            frames.append(panic)
        for f in frames:
            f.message = message
        traces.append(Trace(start=i, frames=frames))
    return traces
