"""Regenerate the captured tool outputs under tests/context/samples/.

Each case writes small source files into a temp directory, runs the real tool
there and stores `output.txt` (the temp directory replaced by @WS@), the
sources as `ws/<path>.sample` (so no linter or test runner of this repo picks
them up) and `meta.json` (command, cwd, exit code). Cases whose tool is missing
are skipped and keep their committed files. Not run by the tests.

Tools: python3, /work/venv/bin/pytest, mypy/ruff/flake8 (`pip install --target
$TOOLS/py mypy ruff flake8`), tsc (`npm install --prefix $TOOLS/npm typescript`),
node, cargo, go, javac/java, gcc, g++, clang, make, bash.

    QLS_TOOLS=/tmp/qls-tools python tests/context/samples/generate.py [case ...]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
TOOLS = Path(os.environ.get("QLS_TOOLS", "/tmp/qls-tools"))
PY_TOOLS = TOOLS / "py"
TSC = TOOLS / "npm" / "node_modules" / ".bin" / "tsc"
VENV_PY = Path(sys.executable)

CALC = """\
def add(a, b):
    return a + b


def divide(a, b):
    return a / b


def mean(values):
    total = 0
    for v in values:
        total += v
    return totl / len(values)
"""

CASES: dict[str, dict] = {
    # ---------------------------------------------------------------- Python
    "python_name_error": {
        "files": {
            "main.py": "from pkg.calc import mean\n\n\ndef report(values):\n    return f\"mean={mean(values)}\"\n\n\nprint(report([1, 2, 3]))\n",
            "pkg/__init__.py": "",
            "pkg/calc.py": CALC,
        },
        "cmd": ["python3", "main.py"],
    },
    "python_chained": {
        "files": {
            "app/__init__.py": "",
            "app/config.py": (
                "class ConfigError(Exception):\n    pass\n\n\n"
                "def parse_port(raw):\n    try:\n        return int(raw)\n"
                "    except ValueError as exc:\n        raise ConfigError(f\"bad port {raw!r}\") from exc\n\n\n"
                "def load(env):\n    port = parse_port(env.get(\"PORT\", \"eighty\"))\n    return {\"port\": port}\n"
            ),
            "run.py": "from app.config import load\n\nload({})\n",
        },
        "cmd": ["python3", "run.py"],
    },
    "python_during_handling": {
        "files": {
            "cache.py": (
                "import json\n\n\ndef read(path):\n    try:\n        with open(path) as fh:\n            return json.load(fh)\n"
                "    except FileNotFoundError:\n        return defaults[path]\n\n\nread(\"missing.json\")\n"
            ),
        },
        "cmd": ["python3", "cache.py"],
    },
    "python_syntax_error": {
        "files": {"broken.py": "def greet(name):\n    print(f\"hello {name}\")\n\n\ndef main(:\n    greet(\"x\")\n"},
        "cmd": ["python3", "broken.py"],
    },
    "python_syntax_import": {
        "files": {
            "main.py": "import helpers\n\nhelpers.run()\n",
            "helpers.py": "def run():\n    values = [1, 2, 3\n    return sum(values)\n",
        },
        "cmd": ["python3", "main.py"],
    },
    "python_library": {
        "files": {
            "settings.py": (
                "from pydantic import BaseModel\n\n\nclass Server(BaseModel):\n    host: str\n    port: int\n\n\n"
                "def load(data):\n    return Server.model_validate(data)\n\n\nload({\"host\": \"h\", \"port\": \"http\"})\n"
            ),
        },
        "cmd": [str(VENV_PY), "settings.py"],
    },
    # ---------------------------------------------------------------- pytest
    "pytest_long": {
        "files": {
            "calc.py": CALC,
            "tests/test_calc.py": (
                "from calc import add, divide\n\n\ndef test_divide():\n    assert divide(1, 0) == 0\n\n\n"
                "def test_add():\n    assert add(1, 2) == 4\n"
            ),
        },
        "cmd": [str(VENV_PY), "-m", "pytest", "-p", "no:cacheprovider", "-q", "--rootdir", "."],
        "env": {"PYTHONPATH": "."},
    },
    "pytest_short": {
        "files": {
            "calc.py": CALC,
            "tests/test_calc.py": (
                "from calc import add, divide\n\n\ndef test_add():\n    assert add(1, 2) == 4\n\n\n"
                "def test_divide():\n    assert divide(1, 0) == 0\n"
            ),
        },
        "cmd": [str(VENV_PY), "-m", "pytest", "-p", "no:cacheprovider", "-q", "--tb=short", "--rootdir", "."],
        "env": {"PYTHONPATH": "."},
    },
    "pytest_collect_syntax": {
        "files": {
            "tests/test_parse.py": "from helpers import parse\n\n\ndef test_parse():\n    assert parse(\"1\") == 1\n",
            "helpers.py": "def parse(text):\n    return int(text\n",
        },
        "cmd": [str(VENV_PY), "-m", "pytest", "-p", "no:cacheprovider", "-q", "--rootdir", "."],
        "env": {"PYTHONPATH": "."},
    },
    "pytest_collect_import": {
        "files": {
            "tests/test_api.py": "from api.client import Client\n\n\ndef test_client():\n    assert Client()\n",
            "api/__init__.py": "",
            "api/client.py": "from api.transport import Transport\n\n\nclass Client:\n    pass\n",
        },
        "cmd": [str(VENV_PY), "-m", "pytest", "-p", "no:cacheprovider", "-q", "--rootdir", "."],
        "env": {"PYTHONPATH": "."},
    },
    # ---------------------------------------------------------------- Python linters
    "mypy": {
        "files": {
            "typed.py": "def double(x: int) -> int:\n    return x * 2\n\n\ndef label(n: int) -> str:\n    return double(n)\n\n\nlabel(\"3\")\n",
        },
        "cmd": [str(VENV_PY), "-m", "mypy", "--no-incremental", "--show-column-numbers", "typed.py"],
        "env": {"PYTHONPATH": str(PY_TOOLS)},
    },
    "ruff": {
        "files": {"lint_me.py": "import os\n\n\ndef f():\n    return undefined_name\n"},
        "cmd": [str(PY_TOOLS / "bin" / "ruff"), "check", "--no-cache", "--isolated", "lint_me.py"],
        "env": {"PYTHONPATH": str(PY_TOOLS)},
    },
    "ruff_concise": {
        "files": {"lint_me.py": "import os\n\n\ndef f():\n    return undefined_name\n"},
        "cmd": [str(PY_TOOLS / "bin" / "ruff"), "check", "--no-cache", "--isolated", "--output-format=concise", "lint_me.py"],
        "env": {"PYTHONPATH": str(PY_TOOLS)},
    },
    "flake8": {
        "files": {"src/lint_me.py": "import os\n\n\ndef f():\n    x=1\n    return undefined_name\n"},
        "cmd": [str(VENV_PY), "-m", "flake8", "src/"],
        "env": {"PYTHONPATH": str(PY_TOOLS)},
    },
    # ---------------------------------------------------------------- JavaScript / TypeScript
    "node": {
        "files": {
            "lib/user.js": "function displayName(user) {\n  return user.profile.name.trim();\n}\n\nmodule.exports = { displayName };\n",
            "index.js": "const { displayName } = require('./lib/user');\n\nconst users = [{ profile: { name: ' a ' } }, {}];\nfor (const u of users) {\n  console.log(displayName(u));\n}\n",
        },
        "cmd": ["node", "index.js"],
    },
    "node_esm": {
        "files": {
            "package.json": "{\"type\": \"module\"}\n",
            "src/parse.js": "export function parseConfig(text) {\n  const data = JSON.parse(text);\n  if (!data.name) {\n    throw new Error('config has no name');\n  }\n  return data;\n}\n",
            "src/main.js": "import { parseConfig } from './parse.js';\n\nparseConfig('{\"version\": 1}');\n",
        },
        "cmd": ["node", "src/main.js"],
    },
    "tsc": {
        "files": {
            "tsconfig.json": "{\"compilerOptions\": {\"strict\": true, \"noEmit\": true, \"target\": \"es2020\"}, \"include\": [\"src\"]}\n",
            "src/index.ts": "interface User {\n  id: number;\n  name: string;\n}\n\nexport function makeUser(name: string): User {\n  const id: number = \"42\";\n  return { id, name };\n}\n",
        },
        "cmd": [str(TSC)],
    },
    "tsc_pretty": {
        "files": {
            "tsconfig.json": "{\"compilerOptions\": {\"strict\": true, \"noEmit\": true, \"target\": \"es2020\"}, \"include\": [\"src\"]}\n",
            "src/util.ts": "export function first<T>(xs: T[]): T | undefined {\n  return xs[0];\n}\n",
            "src/app.ts": "import { first } from './util';\n\nconst n: number = first([1, 2]);\nconsole.log(n.toFixed(1));\n",
        },
        "cmd": [str(TSC), "--pretty"],
    },
    # ---------------------------------------------------------------- Rust
    "cargo_build": {
        "files": {
            "Cargo.toml": "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
            "src/main.rs": "fn total(xs: &[i32]) -> i32 {\n    let unused = 3;\n    let s: i32 = \"zero\";\n    xs.iter().sum::<i32>() + s\n}\n\nfn main() {\n    println!(\"{}\", total(&[1, 2]));\n}\n",
        },
        "cmd": ["cargo", "build", "--offline", "--quiet", "--color", "always"],
        "env": {"CARGO_TARGET_DIR": "/tmp/qls-cargo-target"},
    },
    "rust_panic": {
        "files": {
            "Cargo.toml": "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
            "src/main.rs": "fn pick(xs: &[i32], i: usize) -> i32 {\n    xs[i]\n}\n\nfn main() {\n    let xs = vec![1, 2, 3];\n    println!(\"{}\", pick(&xs, 10));\n}\n",
        },
        "cmd": ["cargo", "run", "--offline", "--quiet"],
        "env": {"CARGO_TARGET_DIR": "/tmp/qls-cargo-target2", "RUST_BACKTRACE": "0"},
    },
    "rust_backtrace": {
        "files": {
            "Cargo.toml": "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n\n[profile.dev]\nopt-level = 0\n",
            "src/main.rs": "fn parse(s: &str) -> u32 {\n    s.parse::<u32>().unwrap()\n}\n\nfn main() {\n    let n = parse(\"forty\");\n    println!(\"{n}\");\n}\n",
        },
        "cmd": ["cargo", "run", "--offline", "--quiet"],
        "env": {"CARGO_TARGET_DIR": "/tmp/qls-cargo-target3", "RUST_BACKTRACE": "1"},
    },
    "cargo_test": {
        "files": {
            "Cargo.toml": "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
            "src/lib.rs": (
                "pub fn area(w: u32, h: u32) -> u32 {\n    w + h\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n"
                "    #[test]\n    fn square() {\n        assert_eq!(area(3, 3), 9);\n    }\n}\n"
            ),
        },
        "cmd": ["cargo", "test", "--offline", "--quiet"],
        "env": {"CARGO_TARGET_DIR": "/tmp/qls-cargo-target4", "RUST_BACKTRACE": "0"},
    },
    # ---------------------------------------------------------------- Go
    "go_test": {
        "files": {
            "go.mod": "module example.com/demo\n\ngo 1.19\n",
            "calc.go": "package demo\n\nfunc Area(w, h int) int {\n\treturn w + h\n}\n",
            "calc_test.go": (
                "package demo\n\nimport \"testing\"\n\nfunc TestArea(t *testing.T) {\n\tif got := Area(3, 3); got != 9 {\n"
                "\t\tt.Errorf(\"Area(3, 3) = %d, want 9\", got)\n\t}\n}\n"
            ),
        },
        "cmd": ["go", "test", "./..."],
        "env": {"GOPROXY": "off", "GOCACHE": "/tmp/qls-gocache"},
    },
    "go_panic": {
        "files": {
            "go.mod": "module example.com/demo\n\ngo 1.19\n",
            "main.go": "package main\n\nimport \"fmt\"\n\nfunc pick(xs []int, i int) int {\n\treturn xs[i]\n}\n\nfunc main() {\n\tfmt.Println(pick([]int{1, 2, 3}, 5))\n}\n",
        },
        "cmd": ["go", "run", "."],
        "env": {"GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOCACHE": "/tmp/qls-gocache"},
    },
    "go_build": {
        "files": {
            "go.mod": "module example.com/demo\n\ngo 1.19\n",
            "main.go": "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tcount := 3\n\tfmt.Println(cuont)\n}\n",
        },
        "cmd": ["go", "build", "./..."],
        "env": {"GOPROXY": "off", "GOCACHE": "/tmp/qls-gocache"},
    },
    "go_vet": {
        "files": {
            "go.mod": "module example.com/demo\n\ngo 1.19\n",
            "main.go": "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tname := \"x\"\n\tfmt.Printf(\"%d\\n\", name)\n}\n",
        },
        "cmd": ["go", "vet", "./..."],
        "env": {"GOPROXY": "off", "GOCACHE": "/tmp/qls-gocache"},
    },
    # ---------------------------------------------------------------- JVM
    "java_stack": {
        "files": {
            "src/com/example/Calc.java": "package com.example;\n\npublic class Calc {\n    public static int ratio(int a, int b) {\n        return a / b;\n    }\n}\n",
            "src/com/example/Main.java": "package com.example;\n\npublic class Main {\n    public static void main(String[] args) {\n        System.out.println(Calc.ratio(4, 0));\n    }\n}\n",
        },
        "cmd": ["bash", "-c", "javac -d out src/com/example/*.java && java -cp out com.example.Main"],
    },
    "java_caused_by": {
        "files": {
            "src/main/java/org/demo/Repo.java": (
                "package org.demo;\n\nimport java.util.List;\n\npublic class Repo {\n    private final List<String> rows = List.of(\"a\");\n\n"
                "    public String get(int i) {\n        try {\n            return rows.get(i);\n        } catch (IndexOutOfBoundsException e) {\n"
                "            throw new IllegalStateException(\"no row \" + i, e);\n        }\n    }\n\n"
                "    public static void main(String[] args) {\n        new Repo().get(3);\n    }\n}\n"
            ),
        },
        "cmd": ["bash", "-c", "javac -d out src/main/java/org/demo/Repo.java && java -cp out org.demo.Repo"],
    },
    "javac": {
        "files": {
            "Hello.java": "public class Hello {\n    public static void main(String[] args) {\n        int n = 1;\n        System.out.println(m);\n    }\n}\n",
        },
        "cmd": ["javac", "-d", "/tmp/qls-javac-out", "Hello.java"],
    },
    # ---------------------------------------------------------------- C / C++
    "gcc": {
        "files": {
            "src/util.h": "int twice(int x);\n",
            "src/main.c": "#include <stdio.h>\n#include \"util.h\"\n\nint twice(int x) { return 2 * x; }\n\nint main(void) {\n    int a = 1;\n    printf(\"%d\\n\", twice(b));\n    return 0;\n}\n",
        },
        "cmd": ["gcc", "-Wall", "-fdiagnostics-color=always", "-c", "src/main.c", "-o", "/dev/null"],
    },
    "gxx": {
        "files": {
            "shapes.cpp": "#include <string>\n\nstruct Shape {\n    std::string name;\n    double area() const { return w * h; }\n    double w;\n};\n\nint main() {\n    Shape s{\"sq\", 2.0};\n    return s.area() > 1;\n}\n",
        },
        "cmd": ["g++", "-c", "shapes.cpp", "-o", "/dev/null"],
    },
    "clang": {
        "files": {
            "vec.c": "#include <stdlib.h>\n\nstruct vec { int *data; size_t len; };\n\nint last(struct vec *v) {\n    return v->data[v->length - 1];\n}\n",
        },
        "cmd": ["clang", "-c", "vec.c", "-o", "/dev/null"],
    },
    # ---------------------------------------------------------------- make / shell
    "make_not_found": {
        "files": {
            "Makefile": "all: build\n\nbuild:\n\t@echo building\n\tfrobnicate --fast src\n",
        },
        "cmd": ["make"],
    },
    "make_subdir_gcc": {
        "files": {
            "Makefile": "all:\n\t$(MAKE) -C lib\n",
            "lib/Makefile": "all:\n\tgcc -c parse.c -o /dev/null\n",
            "lib/parse.c": "int parse(const char *s) {\n    return atoi(s) + missing;\n}\n",
        },
        "cmd": ["make"],
    },
    "shell_script": {
        "files": {
            "scripts/deploy.sh": "#!/bin/bash\nset -u\necho deploying\nfrobnicate --now\ncat config/missing.env\n",
        },
        "cmd": ["bash", "scripts/deploy.sh"],
    },
    "shell_no_such_file": {
        "files": {
            "run.sh": "#!/bin/sh\necho start\n./tools/setup.sh\nsource env.sh\n",
        },
        "cmd": ["sh", "run.sh"],
    },
}


def write_sample(out_dir: Path, files: dict[str, str], output: str, meta: dict) -> None:
    """One sample directory: the workspace files (as `.sample`, so no tool picks them up), the
    captured output and what produced it. Replaces what was there."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    for rel, text in files.items():
        p = out_dir / "ws" / (rel + ".sample")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (out_dir / "output.txt").write_text(output)
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")


def run_case(name: str, case: dict) -> None:
    work = Path(tempfile.mkdtemp(prefix=f"qls-{name}-"))
    try:
        for rel, text in case["files"].items():
            p = work / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        env = {**os.environ, **case.get("env", {}), "LANG": "C.UTF-8"}
        env.pop("PYTHONPATH", None) if "PYTHONPATH" not in case.get("env", {}) else None
        try:
            proc = subprocess.run(case["cmd"], check=False, cwd=work / case.get("cwd", "."), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        except FileNotFoundError as exc:
            print(f"skip {name}: {exc}")
            return
        output = proc.stdout.replace(str(work), "@WS@")  # one pipe: the order a terminal shows
        meta = {"command": " ".join(case["cmd"]).replace(str(VENV_PY), "python").replace(str(TOOLS), "$TOOLS"),
                "cwd": case.get("cwd", "."), "exit_code": proc.returncode}
        write_sample(HERE / name, case["files"], output, meta)
        print(f"{name}: exit {proc.returncode}, {len(output.splitlines())} lines")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    wanted = sys.argv[1:] or list(CASES)
    for case_name in wanted:
        run_case(case_name, CASES[case_name])
