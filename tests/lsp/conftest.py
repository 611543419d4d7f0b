"""bench/bench_lsp.py imports these names from here. The tests take them from
tests/lsp/helpers.py, and their fixtures from the tests.lsp.fixtures plugin."""

from tests.lsp.helpers import BUGGY, PLAN, TEST, recording_client  # noqa: F401
