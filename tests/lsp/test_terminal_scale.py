"""A runaway log over the real protocol: the server publishes a bounded number of diagnostics,
the failure to fix among them."""

from __future__ import annotations

from qwen_lsp.lsp.convert import MAX_DIAGNOSTICS, file_uri
from tests.lsp.helpers import name_error_output, terminal_output, wait_until


async def test_a_100k_line_log_publishes_a_bounded_set_with_the_primary(lsp, project):
    (project / "gen.py").write_text("".join(f"x{i} = {i}\n" for i in range(5000)))
    findings = [f"gen.py:{i}:1: W291 trailing whitespace" for i in range(1, 5001)]
    noise = [f"2026-01-01T00:00:00 INFO request {i} GET /api/items 200" for i in range(95_000)]
    output = "\n".join(findings[:2500] + noise[:47_500] + [name_error_output(project)] + noise[47_500:] + findings[2500:])
    terminal_output(lsp, "make check", 2, output, project)

    main = file_uri(project, "main.py")
    (diag,) = await wait_until(lambda: lsp.diagnostics.get(main), timeout=60, what="the traceback's diagnostic")
    assert diag.message == "NameError: name 'undefined_name' is not defined"
    gen = await wait_until(lambda: lsp.diagnostics.get(file_uri(project, "gen.py")), what="the findings")
    assert len(gen) + 1 <= MAX_DIAGNOSTICS  # 5000 findings in the log
