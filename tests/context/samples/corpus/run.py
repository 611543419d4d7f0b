"""Regenerate the corpus samples (issues 15 and 19) by running real tools.

    QLS_TOOLS=/tmp/qls-tools python tests/context/samples/corpus/run.py [case-prefix ...]

Each case writes small sources into a temp directory, runs the real tool there
and stores, under tests/context/samples/<case>/: `output.txt` (the temp
directory replaced by @WS@), the sources as `ws/<path>.sample`, and `meta.json`
with the command, cwd, toolchain, the miss classes it covers and the expected
primary location. The expected location is written in the source itself: the
one line holding the marker `EXPECT` (in a comment), or `expect` in the case.

Modes: "pipe" (stdout and stderr through one pipe, as a terminal shows them) or
"tmux" (run in an 80-column tmux pane and read the screen back, so long lines
come back wrapped and tabs as spaces). Cases whose tool is missing are skipped
and keep their committed files. Not run by the tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLES = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(SAMPLES))

from cases import CASES, TOOLS
from generate import write_sample  # noqa: E402  (tests/context/samples/generate.py)


def expected(case: dict) -> tuple[str, int]:
    if "expect" in case:
        return tuple(case["expect"])  # type: ignore[return-value]
    hits = [(rel, n) for rel, text in case["files"].items() for n, ln in enumerate(text.split("\n"), 1) if "EXPECT" in ln]
    if len(hits) != 1:
        raise SystemExit(f"{case['name']}: want exactly one EXPECT marker, found {hits}")
    return hits[0]


def run_tmux(cmd: str, cwd: Path, env: dict[str, str], name: str) -> str:
    sock = f"qls-corpus-{os.getpid()}"
    tm = ["tmux", "-L", sock, "-f", "/dev/null"]
    script = f"{cmd}; tmux -L {sock} wait-for -S {name}-done; sleep 30"
    subprocess.run([*tm, "new-session", "-d", "-x", "80", "-y", "400", "-s", name, "-c", str(cwd), "bash", "--norc", "-c", script], env=env, check=True)
    subprocess.run([*tm, "wait-for", f"{name}-done"], env=env, timeout=300, check=False)
    time.sleep(0.3)
    screen = subprocess.run([*tm, "capture-pane", "-p", "-S", "-", "-t", name], env=env, capture_output=True, text=True, check=False).stdout
    subprocess.run([*tm, "kill-server"], env=env, check=False)
    return screen.rstrip("\n") + "\n"


def run_case(name: str, case: dict) -> None:
    base = Path(tempfile.mkdtemp(prefix="qls-"))
    work = base / case.get("ws_subdir", "ws")
    try:
        for rel, text in case["files"].items():
            p = work / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
            if rel.endswith((".sh", ".pl", ".escript")) or text.startswith("#!"):
                p.chmod(0o755)
        env = {**os.environ, "LANG": "C.UTF-8", "TERM": "xterm-256color", "HOME": str(base), **case.get("env", {})}
        env = {k: v.replace("@BASE@", str(base)).replace("@WS@", str(work)).replace("$TOOLS", str(TOOLS)) for k, v in env.items()}
        for k in ("PYTHONPATH", "NO_COLOR", "FORCE_COLOR"):
            if k not in case.get("env", {}):
                env.pop(k, None)
        cmd = case["cmd"].replace("$TOOLS", str(TOOLS))
        cwd = work / case.get("cwd", ".")
        tool = cmd.split()[0].lstrip("({")
        if shutil.which(tool) is None:
            print(f"skip {name}: {tool} not installed")
            return
        if case.get("mode") == "tmux":
            output = run_tmux(cmd, cwd, env, name.replace(".", "-"))
        else:
            proc = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600, check=False)
            output = proc.stdout.decode("utf-8", "replace")
        output = output.replace(str(work), "@WS@").replace(str(base), "@BASE@")
        if not output.strip():
            print(f"skip {name}: no output")
            return
        path, line = expected({**case, "name": name})
        meta = {
            "toolchain": case["toolchain"],
            "command": case["cmd"],
            "cwd": case.get("cwd", "."),
            "mode": case.get("mode", "pipe"),
            "ws_subdir": case.get("ws_subdir"),
            "classes": case.get("classes", []),
            "generic": case.get("generic", False),
            "expect": {"path": path, "line": line},
            "note": case.get("note"),
            "batch": case.get("batch"),
        }
        write_sample(SAMPLES / case.get("out", ".") / name, case["files"], output, {k: v for k, v in meta.items() if v is not None})
        print(f"{name}: {len(output.splitlines())} lines")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    wanted = sys.argv[1:]
    for case_name, case in CASES.items():
        if not wanted or any(case_name.startswith(w) for w in wanted):
            run_case(case_name, case)
