"""Warm load of the tag index in a new process, as qfix and qwen-review pay it (the Django sdist).

Each run is a fresh `python` subprocess with a warm disk cache: it lists the files, loads the
workspace snapshot and builds the TagIndex (`build_index(root, cache_dir=...)`, what `assemble()`
does in a one-shot process). Prints the median of N runs of the whole load and of its phases,
and the import time of the module, which a one-shot process pays besides. Figures only.

    python bench/bench_snapshot.py /path/to/Django-5.1.4 [--runs 5] [--baseline /other/checkout]

--baseline times the same whole load with another checkout's code (e.g. the commit before the
snapshot: `git archive <commit> | tar -x -C /tmp/base`), with its own cache directory.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from figures import figure  # bench/figures.py

ROOT = Path(__file__).resolve().parents[1]

# Runs in the child: whole load, or the load split into its phases (a second process, so that
# neither warms the other's caches).
CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter()
from pathlib import Path
from qwen_lsp.context import repomap
t_import = time.perf_counter() - t0
root, cache, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
out = {"import": t_import}
if mode == "whole":
    t = time.perf_counter()
    index = repomap.build_index(root, cache_dir=cache)
    out["load"] = time.perf_counter() - t
    out["files"] = len(index.files)
    out["defined names"] = len(index.defined_in)
else:
    from qwen_lsp.context import snapshot
    ws = os.path.abspath(root)
    t = time.perf_counter()
    snap = snapshot.load(snapshot.snapshot_path(cache, root, repomap.CACHE_VERSION), repomap._snapshot_key(ws))
    out["read + unmarshal snapshot"] = time.perf_counter() - t
    t = time.perf_counter()
    listing = repomap._listing_if_unchanged(ws, snap)
    out["list files (folder stamps)"] = time.perf_counter() - t
    t = time.perf_counter()
    stamps = [snapshot.stamp(os.path.join(ws, "") + rel) for rel in listing.files]
    out["stat files"] = time.perf_counter() - t
    t = time.perf_counter()
    tagged = {rel: repomap.FileTags._lazy(snap, i) for i, rel in enumerate(snap.files) if snap.tagged[i]}
    index = repomap.TagIndex(files=tagged, defined_in=snap.defined_in)
    out["build TagIndex"] = time.perf_counter() - t
    t = time.perf_counter()
    n = sum(len(t.defs) for t in index.files.values())
    out["(later, on first read) all Definitions"] = time.perf_counter() - t
print(json.dumps(out))
"""


def child(code_root: Path, tree: Path, cache: Path, mode: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code_root)}
    done = subprocess.run([sys.executable, "-c", CHILD, str(tree), str(cache), mode], env=env, check=True,
                          capture_output=True, text=True, cwd=code_root)
    return json.loads(done.stdout)


def medians(runs: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tree", type=Path, help="an extracted source tree, e.g. Django 5.1.4 (only read)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--baseline", type=Path, help="another checkout of qwen-lsp to time the same way")
    args = ap.parse_args()
    tree = args.tree.resolve()

    with tempfile.TemporaryDirectory(prefix="qwen-lsp-snap-") as tmp_name:
        tmp = Path(tmp_name)
        checkouts = [("this checkout", ROOT, tmp / "cache")]
        if args.baseline:
            checkouts.append(("baseline", args.baseline.resolve(), tmp / "cache-baseline"))
        for label, code, cache in checkouts:
            cold = child(code, tree, cache, "whole")  # fills the caches
            print(f"{label}: cold load {cold['load'] * 1000:.0f} ms, {cold['files']} files, "
                  f"{cold['defined names']} defined names")
        for label, code, cache in checkouts:
            whole = medians([child(code, tree, cache, "whole") for _ in range(args.runs)])
            print(f"\n{label}, warm, new process each run, median of {args.runs}:")
            print(f"  import qwen_lsp.context.repomap       {whole['import'] * 1000:7.1f} ms")
            print(f"  build_index (list + snapshot + index) {whole['load'] * 1000:7.1f} ms")
            figure(f"warm index load, new process ({label})", whole["load"] * 1000, "ms")
            figure(f"import repomap ({label})", whole["import"] * 1000, "ms")
            if code == ROOT:
                phases = medians([child(code, tree, cache, "phases") for _ in range(args.runs)])
                for name, value in phases.items():
                    if name != "import":
                        print(f"    {name:<36}{value * 1000:7.1f} ms")
                        figure(f"phase: {name}", value * 1000, "ms")


if __name__ == "__main__":
    main()
