"""Lay a captured sample out on disk, for the tests and bench/bench_frames.py."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent


@dataclass
class Sample:
    name: str
    output: str
    cwd: Path
    workspace: Path
    meta: dict

    @property
    def expect(self) -> tuple[str, int] | None:
        e = self.meta.get("expect")
        return (e["path"], e["line"]) if e else None


def names() -> list[str]:
    return sorted(p.name for p in SAMPLES.iterdir() if (p / "output.txt").is_file())


# Held-out batches stored apart from the corpus the recognisers were written against: a name is
# "<folder>/<case>", which lay_out reads like any other.
HELDOUT_DIRS = ("heldout3", "heldout4", "heldout5")


def heldout_names(dirs: tuple[str, ...] = HELDOUT_DIRS) -> list[str]:
    return sorted(f"{d}/{p.name}" for d in dirs for p in (SAMPLES / d).iterdir() if (p / "output.txt").is_file())


def lay_out(name: str, dest: Path) -> Sample:
    """Copy the sample's sources (minus the `.sample` suffix) under dest; @WS@ in the output becomes that path."""
    src = SAMPLES / name
    meta = json.loads((src / "meta.json").read_text())
    workspace = dest / meta["ws_subdir"] if meta.get("ws_subdir") else dest
    for f in (src / "ws").rglob("*.sample"):
        target = workspace / f.relative_to(src / "ws").with_suffix("")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)
    output = (src / "output.txt").read_text().replace("@WS@", str(workspace)).replace("@BASE@", str(dest))
    return Sample(name, output, workspace / meta.get("cwd", "."), workspace, meta)
