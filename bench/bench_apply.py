"""What the rollback journal costs a write: the median time of `apply_changes` for a fix of
N files with the journal (as `qfix` writes) and without it (its old path: the same checks,
staging and renames, no journal and no folder fsyncs). Figures only, no pass/fail.

    python bench/bench_apply.py            # 5 files, 30 writes each way, in a folder under /tmp
    python bench/bench_apply.py --files 20 --dir .
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qwen_lsp.apply import apply_changes  # noqa: E402
from qwen_lsp.types import FileChange  # noqa: E402


def median_ms(root: Path, files: int, runs: int, journal: Path | None) -> float:
    def fix(before: str, after: str) -> list[FileChange]:
        return [FileChange(path=f"f{i}.py", original=before, updated=after, diff="") for i in range(files)]

    times = []
    for _ in range(runs):
        start = time.perf_counter()
        apply_changes(root, fix("x = 0\n", "x = 1\n"), journal=journal)
        times.append(time.perf_counter() - start)
        apply_changes(root, fix("x = 1\n", "x = 0\n"), journal=journal)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--dir", type=Path, default=None, help="where the workspace goes (its disk is measured)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root, journal = Path(tmp) / "ws", Path(tmp) / "journal"
        root.mkdir()
        for i in range(args.files):
            (root / f"f{i}.py").write_text("x = 0\n")
        plain = median_ms(root, args.files, args.runs, None)
        journaled = median_ms(root, args.files, args.runs, journal)
    print(f"apply_changes, {args.files} files, median of {args.runs}: without journal {plain:.1f} ms, "
          f"with journal {journaled:.1f} ms")


if __name__ == "__main__":
    main()
