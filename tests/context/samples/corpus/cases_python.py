"""Python, pytest and Python linters."""

from __future__ import annotations

PY = "python3"
VPY = "/work/main/.venv/bin/python"
PYTEST = f"{VPY} -m pytest -p no:cacheprovider -p no:randomly -q --rootdir ."
LINT_ENV = {"PYTHONPATH": "$TOOLS/py"}

NOISE = '''import logging, sys
log = logging.getLogger("svc")
def noise(n, start=0):
    for i in range(start, start + n):
        if i % 97 == 0:
            log.warning("connection error: timeout talking to cache-%d (retrying)", i % 5)
        elif i % 89 == 0:
            log.error("upstream returned 503 for /health (attempt %d)", i)
        else:
            log.info("request %d GET /api/items 200 in %dms", i, i % 40)
'''

CASES: dict[str, dict] = {
    "py_attribute_error": {"toolchain": "python", "files": {
        "shop/__init__.py": "",
        "shop/cart.py": "class Cart:\n    def __init__(self):\n        self.items = []\n\n    def total(self):\n        return sum(i.price for i in self.itemz)  # EXPECT\n",
        "main.py": "from shop.cart import Cart\n\nprint(Cart().total())\n"}, "cmd": f"{PY} main.py"},
    "py_key_error": {"toolchain": "python", "files": {
        "config.py": "DEFAULTS = {'host': 'localhost'}\n\n\ndef get(name):\n    return DEFAULTS[name]  # EXPECT\n\n\ndef port():\n    return int(get('port'))\n\n\nprint(port())\n"},
        "cmd": f"{PY} config.py"},
    "py_recursion": {"toolchain": "python", "files": {
        "tree.py": "def depth(node):\n    return 1 + depth(node.get('child', node))  # EXPECT\n\n\nprint(depth({}))\n"}, "cmd": f"{PY} tree.py"},
    "py_taskgroup": {"toolchain": "python", "classes": ["exceptiongroup"], "files": {
        "fetch.py": (
            "import asyncio\n\n\nasync def fetch(n):\n    await asyncio.sleep(0)\n    if n == 2:\n"
            "        raise ValueError(f'bad item {n}')  # EXPECT\n    return n\n\n\n"
            "async def main():\n    async with asyncio.TaskGroup() as tg:\n        for n in range(4):\n            tg.create_task(fetch(n))\n\n\n"
            "asyncio.run(main())\n")}, "cmd": f"{PY} fetch.py"},
    "py_except_star": {"toolchain": "python", "classes": ["exceptiongroup"], "files": {
        "batch.py": (
            "def check(row):\n    if not row.get('id'):\n        raise KeyError(f'row without id: {row}')  # EXPECT\n    return row['id']\n\n\n"
            "def validate(rows):\n    errors = []\n    for row in rows:\n        try:\n            check(row)\n        except KeyError as exc:\n            errors.append(exc)\n"
            "    if errors:\n        raise ExceptionGroup('invalid rows', errors)\n\n\n"
            "try:\n    validate([{'id': 1}, {}, {'x': 2}])\nexcept* TypeError:\n    print('type errors')\n")}, "cmd": f"{PY} batch.py"},
    "py_exceptiongroup_nested": {"toolchain": "python", "classes": ["exceptiongroup"], "files": {
        "jobs.py": (
            "import asyncio\n\n\nasync def step(name):\n    await asyncio.sleep(0)\n    return {'a': 1}[name]  # EXPECT\n\n\n"
            "async def stage(names):\n    async with asyncio.TaskGroup() as tg:\n        for n in names:\n            tg.create_task(step(n))\n\n\n"
            "async def main():\n    async with asyncio.TaskGroup() as tg:\n        tg.create_task(stage(['a', 'b']))\n\n\nasyncio.run(main())\n")},
        "cmd": f"{PY} jobs.py"},
    "py_long_log_middle": {"toolchain": "python", "classes": ["long_log"], "files": {
        "worker.py": NOISE + (
            "\n\ndef handle(job):\n    return job['payload'].decode()  # EXPECT\n\n\n"
            "logging.basicConfig(level=logging.INFO, stream=sys.stdout, format='%(levelname)s %(name)s: %(message)s')\n"
            "noise(4000)\ntry:\n    handle({'payload': None})\nexcept Exception:\n    log.exception('job 17 failed')\nnoise(4000, 4000)\nsys.exit(1)\n")},
        "cmd": f"{PY} worker.py"},
    "py_long_log_middle_ts": {"toolchain": "python", "classes": ["long_log", "prefix"], "files": {
        "ingest.py": NOISE + (
            "\n\ndef parse(line):\n    key, value = line.split('=')  # EXPECT\n    return key, value\n\n\n"
            "logging.basicConfig(level=logging.INFO, stream=sys.stdout, format='%(asctime)s %(levelname)s [%(threadName)s] %(message)s')\n"
            "noise(3000)\ntry:\n    parse('a=b=c')\nexcept ValueError:\n    log.exception('bad line')\nnoise(6000, 3000)\nsys.exit(1)\n")},
        "cmd": f"{PY} ingest.py", "note": "the traceback lines themselves carry no prefix; the log lines around it do"},
    "py_long_truncated_20k": {"toolchain": "python", "classes": ["long_log"], "files": {
        "etl.py": NOISE + (
            "\n\ndef ratio(a, b):\n    return a / b  # EXPECT\n\n\n"
            "logging.basicConfig(level=logging.INFO, stream=sys.stdout, format='%(levelname)s %(message)s')\n"
            "noise(9000)\nsys.stdout.flush()\ntry:\n    ratio(1, 0)\nexcept ZeroDivisionError:\n    import traceback; traceback.print_exc(file=sys.stdout)\n"
            "noise(11000, 9000)\nsys.exit(1)\n")},
        "cmd": f"{PY} etl.py"},
    "py_compose_prefix": {"toolchain": "python", "classes": ["prefix"], "files": {
        "app/__init__.py": "",
        "app/views.py": "def item(items, i):\n    return items[i]  # EXPECT\n",
        "serve.py": "from app.views import item\n\nprint('serving on :8000', flush=True)\nitem([1, 2], 5)\n"},
        "cmd": f"{PY} serve.py 2>&1 | sed -u 's/^/web-1  | /'", "note": "docker compose's `name  | ` prefix, added by sed as compose does"},
    "py_worker_prefix": {"toolchain": "python", "classes": ["prefix"], "files": {
        "tasks.py": "import json\n\n\ndef load(text):\n    return json.loads(text)['id']  # EXPECT\n\n\nprint('starting', flush=True)\nload('{}')\n"},
        "cmd": f"{PY} tasks.py 2>&1 | gawk '{{ print strftime(\"%Y-%m-%dT%H:%M:%S\") \" [worker-3] ERROR \" $0; fflush() }}'",
        "note": "ISO timestamp and `[worker-3] LEVEL` fields on every line, as a log shipper adds them"},
    "py_windows_paths": {"toolchain": "python", "classes": ["windows_paths"], "files": {
        "app/service.py": "import requests_like\n\n\ndef fetch(url):\n    return requests_like.get(url)  # EXPECT\n",
        "lib/requests_like.py": "def get(url):\n    if not url.startswith('http'):\n        raise ValueError(f'Invalid URL {url!r}: No scheme supplied')\n    return url\n",
        "run.py": (
            "import sys, types\n# Compile with the file names a Windows run prints, so the traceback has real Windows paths.\n"
            "lib = types.ModuleType('requests_like')\n"
            "exec(compile(open('lib/requests_like.py').read(), r'C:\\Users\\dev\\AppData\\Local\\Programs\\Python\\Python311\\Lib\\site-packages\\requests_like.py', 'exec'), lib.__dict__)\n"
            "sys.modules['requests_like'] = lib\nsvc = {}\n"
            "exec(compile(open('app/service.py').read(), r'C:\\Users\\dev\\proj\\app\\service.py', 'exec'), svc)\nsvc['fetch']('example.com')\n")},
        "cmd": f"{PY} run.py", "note": "file names given to compile() as a Windows run prints them"},
    "py_windows_paths_2": {"toolchain": "python", "classes": ["windows_paths"], "files": {
        "src/report.py": "import tabulate_like\n\n\ndef render(rows):\n    return tabulate_like.table(rows)  # EXPECT\n",
        "vendor/tabulate_like.py": "def table(rows):\n    width = max(len(r) for r in rows)\n    return width\n",
        "run.py": (
            "import sys, types\nlib = types.ModuleType('tabulate_like')\n"
            "exec(compile(open('vendor/tabulate_like.py').read(), r'C:\\Python312\\Lib\\site-packages\\tabulate_like\\__init__.py', 'exec'), lib.__dict__)\n"
            "sys.modules['tabulate_like'] = lib\nsvc = {}\n"
            "exec(compile(open('src/report.py').read(), r'D:\\work\\reports\\src\\report.py', 'exec'), svc)\nsvc['render']([1, 2])\n")},
        "cmd": f"{PY} run.py", "note": "file names given to compile() as a Windows run prints them"},
    "py_tmux_wrapped": {"toolchain": "python", "classes": ["terminal_readback"], "mode": "tmux", "files": {
        "services/billing/invoices/generate_monthly_statements.py": (
            "def statement_for_customer_account(customer_account_record, billing_period_start):\n"
            "    return customer_account_record['outstanding_balance_in_cents'] / customer_account_record['n']  # EXPECT\n\n\n"
            "statement_for_customer_account({'outstanding_balance_in_cents': 1, 'n': 0}, None)\n")},
        "cmd": f"{PY} services/billing/invoices/generate_monthly_statements.py"},
    "py_tmux_chained": {"toolchain": "python", "classes": ["terminal_readback"], "mode": "tmux", "files": {
        "settings_loader_with_a_rather_long_module_name.py": (
            "import json\n\n\ndef load_settings_file(path_to_the_settings_file_on_disk):\n    with open(path_to_the_settings_file_on_disk) as fh:  # EXPECT\n"
            "        return json.load(fh)\n\n\nload_settings_file('/nonexistent/directory/with/a/long/name/settings.json')\n")},
        "cmd": f"{PY} settings_loader_with_a_rather_long_module_name.py"},
    # ---------------------------------------------------------------- pytest
    "pytest_native_assert": {"toolchain": "pytest", "classes": ["pytest_native"], "files": {
        "calc.py": "def area(w, h):\n    return w + h\n",
        "tests/test_calc.py": "from calc import area\n\n\ndef test_area():\n    assert area(3, 3) == 9  # EXPECT\n"},
        "cmd": f"{PYTEST} --tb=native", "env": {"PYTHONPATH": "."}},
    "pytest_native_exception": {"toolchain": "pytest", "classes": ["pytest_native"], "files": {
        "parse.py": "def number(text):\n    return int(text.strip())  # EXPECT\n",
        "tests/test_parse.py": "from parse import number\n\n\ndef test_ok():\n    assert number(' 1') == 1\n\n\ndef test_bad():\n    assert number('x') == 0\n"},
        "cmd": f"{PYTEST} --tb=native", "env": {"PYTHONPATH": "."}},
    "pytest_native_two": {"toolchain": "pytest", "classes": ["pytest_native"], "files": {
        "text.py": "def title(s):\n    return s.title()\n\n\ndef slug(s):\n    return s.lower().replace(' ', '-').strip('-') + None  # EXPECT\n",
        "tests/test_text.py": "from text import slug, title\n\n\ndef test_slug():\n    assert slug('A b') == 'a-b'\n\n\ndef test_title():\n    assert title('a') == 'b'\n"},
        "cmd": f"{PYTEST} --tb=native", "env": {"PYTHONPATH": "."}},
    "pytest_line": {"toolchain": "pytest", "files": {
        "tests/test_units.py": "def to_m(cm):\n    return cm / 10\n\n\ndef test_to_m():\n    assert to_m(100) == 1  # EXPECT\n"},
        "cmd": f"{PYTEST} --tb=line"},
    "pytest_fixture_error": {"toolchain": "pytest", "files": {
        "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef db():\n    return open('/nonexistent/db.sqlite')  # EXPECT\n",
        "tests/test_db.py": "def test_query(db):\n    assert db\n"},
        "cmd": PYTEST},
    "pytest_color": {"toolchain": "pytest", "classes": ["ansi"], "files": {
        "money.py": "def cents(amount):\n    return round(amount * 100)\n\n\ndef split(total, n):\n    return cents(total) // n + 'x'  # EXPECT\n",
        "tests/test_money.py": "from money import split\n\n\ndef test_split():\n    assert split(10, 3) == 333\n"},
        "cmd": f"{PYTEST} --color=yes", "env": {"PYTHONPATH": "."}},
    "pytest_color_short": {"toolchain": "pytest", "classes": ["ansi"], "files": {
        "tests/test_list.py": "def test_sorted():\n    xs = [3, 1, 2]\n    assert sorted(xs) == [1, 2, 3, 4]  # EXPECT\n"},
        "cmd": f"{PYTEST} --color=yes --tb=short"},
    "pytest_parametrize": {"toolchain": "pytest", "files": {
        "tests/test_even.py": "import pytest\n\n\n@pytest.mark.parametrize('n', [2, 3])\ndef test_even(n):\n    assert n % 2 == 0  # EXPECT\n"},
        "cmd": PYTEST},
    "pytest_raises": {"toolchain": "pytest", "files": {
        "guard.py": "def check(x):\n    if x < 0:\n        raise TypeError('negative')  # EXPECT\n    return x\n",
        "tests/test_guard.py": "import pytest\n\nfrom guard import check\n\n\ndef test_check():\n    with pytest.raises(ValueError):\n        check(-1)\n"},
        "cmd": PYTEST, "env": {"PYTHONPATH": "."}},
    "pytest_tmux": {"toolchain": "pytest", "classes": ["terminal_readback"], "mode": "tmux", "files": {
        "tests/test_inventory_reconciliation_against_the_warehouse_ledger.py": (
            "def reconcile(expected_quantities_by_sku, counted_quantities_by_sku):\n"
            "    return {sku: counted_quantities_by_sku[sku] - qty for sku, qty in expected_quantities_by_sku.items()}  # EXPECT\n\n\n"
            "def test_reconcile_reports_differences_for_every_sku_in_the_ledger():\n    assert reconcile({'a': 1, 'b': 2}, {'a': 1})\n")},
        "cmd": f"{PYTEST} --color=no"},
    # ---------------------------------------------------------------- linters
    "mypy_arg_type": {"toolchain": "mypy", "files": {
        "geo.py": "def scale(x: float, k: int) -> float:\n    return x * k\n\n\nscale(2.0, '3')  # EXPECT\n"},
        "cmd": f"{VPY} -m mypy --no-incremental --show-column-numbers geo.py", "env": LINT_ENV},
    "mypy_attr": {"toolchain": "mypy", "files": {
        "models.py": "class User:\n    name: str = ''\n\n\ndef show(u: User) -> str:\n    return u.nmae  # EXPECT\n"},
        "cmd": f"{VPY} -m mypy --no-incremental --pretty models.py", "env": LINT_ENV},
    "ruff_grouped": {"toolchain": "ruff", "classes": ["ruff_grouped"], "files": {
        "pkg/util.py": "import os\nimport sys\n\n\ndef f():\n    return undefined_helper()  # EXPECT\n"},
        "cmd": "$TOOLS/py/bin/ruff check --no-cache --isolated --output-format=grouped pkg", "env": LINT_ENV},
    "ruff_grouped_two_files": {"toolchain": "ruff", "classes": ["ruff_grouped"], "files": {
        "a.py": "import json\n",
        "b.py": "def g():\n    return missing_name  # EXPECT\n"},
        "cmd": "$TOOLS/py/bin/ruff check --no-cache --isolated --output-format=grouped .", "env": LINT_ENV},
    "ruff_full_syntax": {"toolchain": "ruff", "files": {
        "broken.py": "def f(:\n    pass\n", },
        "cmd": "$TOOLS/py/bin/ruff check --no-cache --isolated --output-format=full broken.py", "env": LINT_ENV, "expect": ("broken.py", 1)},
    "flake8_syntax": {"toolchain": "flake8", "files": {
        "x.py": "import os\n\n\ndef f():\n    return [1, 2\n", },
        "cmd": f"{VPY} -m flake8 x.py", "env": LINT_ENV, "expect": ("x.py", 5)},
    "pylint_e_after_w": {"toolchain": "pylint", "classes": ["pylint_e"], "files": {
        "inv.py": '"""Inventory."""\nimport os\n\n\ndef count(items):\n    """Count."""\n    return len(itemz)  # EXPECT\n'},
        "cmd": "$TOOLS/py/bin/pylint --score=n inv.py", "env": LINT_ENV},
    "pylint_e_no_member": {"toolchain": "pylint", "classes": ["pylint_e"], "files": {
        "shapes.py": '"""Shapes."""\n\nimport math\n\n\ndef unused(a, b):\n    """Unused."""\n    return a\n\n\ndef circle(r):\n    """Area."""\n    return math.pie * r * r  # EXPECT\n'},
        "cmd": "$TOOLS/py/bin/pylint --score=n shapes.py", "env": LINT_ENV},
    "pylint_colorized": {"toolchain": "pylint", "classes": ["pylint_e", "ansi"], "files": {
        "io_util.py": '"""IO."""\nimport sys\n\n\ndef read(path):\n    """Read."""\n    return opn(path).read()  # EXPECT\n'},
        "cmd": "$TOOLS/py/bin/pylint --score=n --output-format=colorized io_util.py", "env": LINT_ENV},
}
