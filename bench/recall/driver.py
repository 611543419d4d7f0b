"""Runs qfix's own entry point, `terminal_agent.qfix.main(argv)`, once per job in one long-lived
process of the checkout under test (started as `/that/.venv/bin/python bench/recall/driver.py FD`).

The recall bench runs hundreds of fixes; on a shared machine most of a fresh qfix process's time is
importing the engine. Each job is one JSON line on stdin, {"cwd", "env", "argv"}: the process moves
to `cwd`, takes `env` as its whole environment (as a new qfix process would) and calls main(argv),
exactly as the `qfix` console script does; its exit code is written as a line to file descriptor
FD. qfix's own output goes where this process's stdout/stderr go. Every job runs in a directory of
its own, so nothing memoised per workspace in this process is reused by another job.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> int:
    done = os.fdopen(int(sys.argv[1]), "w", buffering=1)
    from terminal_agent.qfix import main as qfix  # the checkout under test: its venv's install

    for line in sys.stdin:
        job = json.loads(line)
        os.chdir(job["cwd"])
        os.environ.clear()
        os.environ.update(job["env"])
        try:
            code = qfix(job["argv"])
        except SystemExit as exc:  # argparse and friends
            code = exc.code if isinstance(exc.code, int) else 2
        except Exception as exc:  # noqa: BLE001 - reported as the job's result, the driver goes on
            print(f"driver: {type(exc).__name__}: {exc}", file=sys.stderr)
            code = -1
        done.write(f"{code}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
