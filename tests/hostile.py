"""What a hostile model's code tries, and how tests check it got nowhere.

`payload()` is Python the model smuggles into a conftest.py or a Makefile recipe: it reads
the API key from its environment and a canary file in HOME, writes outside the workspace
copy (an outside file, the real workspace), leaves a detached process behind, and reports
what it saw in an exception message (so the output that comes back says it really ran).
"""

from __future__ import annotations

import hashlib
import os
import signal
import uuid
from dataclasses import dataclass
from pathlib import Path

API_KEY = "sk-canary-" + uuid.uuid4().hex
CANARY_TEXT = "canary-" + uuid.uuid4().hex


@dataclass
class Stage:
    """The world around a hostile fix: the workspace, an outside directory, a HOME with a canary."""

    workspace: Path
    outside: Path
    home: Path
    process_tag: str

    @classmethod
    def make(cls, tmp: Path, workspace: Path) -> Stage:
        outside, home = tmp / "outside", tmp / "home"
        outside.mkdir()
        home.mkdir(exist_ok=True)
        (outside / "victim.txt").write_text("precious\n")
        (home / "secret-canary.txt").write_text(CANARY_TEXT)
        (home / ".ssh").mkdir()
        (home / ".ssh" / "id_ed25519").write_text(CANARY_TEXT)
        return cls(workspace, outside, home, "qwen-hostile-" + uuid.uuid4().hex)

    def payload(self) -> str:
        """Python source of the attack (no quotes that would need escaping in a Makefile)."""
        targets = [self.outside / "pwned.txt", self.workspace / "pwned.txt", self.home / "pwned.txt"]
        return "\n".join([
            "import os, pathlib, subprocess, sys",
            "key = os.environ.get('QWEN_LSP_API_KEY')",
            "seen = []",
            f"for p in [{str(self.home / 'secret-canary.txt')!r}, {str(self.home / '.ssh/id_ed25519')!r},",
            "          os.path.expanduser('~/secret-canary.txt')]:",
            "    try:",
            "        seen.append(pathlib.Path(p).read_text())",
            "    except OSError:",
            "        pass",
            "wrote = []",
            f"for t in {[str(t) for t in targets]!r}:",
            "    try:",
            "        pathlib.Path(t).write_text('pwned')",
            "        wrote.append(t)",
            "    except OSError:",
            "        pass",
            "try:",
            f"    open({str(self.outside / 'victim.txt')!r}, 'a').write('appended')",
            "    wrote.append('victim')",
            "except OSError:",
            "    pass",
            f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', {self.process_tag!r}],",
            "                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)",
            "secrets = [s for s in [key, *seen] if s]",
            "raise RuntimeError(f'HOSTILE-RAN secrets={secrets} wrote={wrote}')",
            "",
        ])

    def contained_report(self) -> str:
        """What the payload reports from inside the sandbox: no secret seen, and the only write that
        worked went to the workspace path, which there is the temporary copy mounted over it."""
        return f"HOSTILE-RAN secrets=[] wrote={[str(self.workspace / 'pwned.txt')]}"

    # -- what must hold afterwards ----------------------------------------------------------------

    def snapshot(self) -> dict[str, str]:
        """Hashes of every file in the workspace, the outside directory and HOME."""
        out = {}
        for root in (self.workspace, self.outside, self.home):
            for path in sorted(root.rglob("*")):
                if path.is_file() and not path.is_symlink():
                    out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        return out

    def survivors(self) -> list[int]:
        """PIDs of processes the payload started that are still alive."""
        found = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                if self.process_tag.encode() in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                continue
        return found

    def kill_survivors(self) -> None:
        for pid in self.survivors():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def path_without_bwrap(tmp: Path, path: str | None = None) -> str:
    """`path` (default: PATH) with bwrap nowhere on it: each directory holding bwrap is replaced
    by a directory of links to everything else in it (simulates a machine without bubblewrap)."""
    dirs = []
    for number, entry in enumerate((os.environ.get("PATH", "") if path is None else path).split(os.pathsep)):
        directory = Path(entry)
        if not (directory / "bwrap").exists():
            dirs.append(entry)
            continue
        shim = tmp / f"no-bwrap-{number}"
        shim.mkdir(parents=True, exist_ok=True)
        for item in directory.iterdir():
            if item.name != "bwrap" and not (shim / item.name).exists():
                (shim / item.name).symlink_to(item)
        dirs.append(str(shim))
    return os.pathsep.join(dirs)
