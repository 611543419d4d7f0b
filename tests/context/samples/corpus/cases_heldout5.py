"""Validation batch 5 (issue 38): formats first run AFTER the general locator was written, scored once and
not tuned for, to tell how far the locator carries past the batch it was built against (batch 4).
Stored under tests/context/samples/heldout5/ with meta "batch": "heldout5".

Tools: Debian 12 (mksh yasm tcc gforth expat re2c gperf jimsh), npm packages under $TOOLS/npm2/node_modules
(@swc/cli @swc/core @biomejs/biome wabt pyright @taplo/cli livescript ajv-cli), PyPI packages under
$TOOLS/py2 (vulture rstcheck yapf)."""

from __future__ import annotations

V = {"batch": "heldout5", "out": "heldout5"}
BIN = "$TOOLS/npm2/node_modules/.bin"
PYENV = {"PYTHONPATH": "$TOOLS/py2"}
VPY = "/work/main/.venv/bin/python"

CASES: dict[str, dict] = {
    "h5_mksh_not_found": {**V, "toolchain": "mksh", "files": {
        "bin/setup.sh": "echo one\nx=1\nfrobnicate --all  # EXPECT\necho two\n"},
        "cmd": "mksh bin/setup.sh"},
    "h5_mksh_syntax": {**V, "toolchain": "mksh", "files": {
        "deploy.sh": "echo a\nif true; then\n  echo b\nfi )  # EXPECT\n"},
        "cmd": "mksh deploy.sh"},
    "h5_yasm": {**V, "toolchain": "yasm", "files": {
        "asm/boot.asm": "bits 64\nsection .text\n    mov rax, 1\n    movz rbx, 2  ; EXPECT\n"},
        "cmd": "yasm -f elf64 asm/boot.asm -o /dev/null"},
    "h5_tcc": {**V, "toolchain": "tcc", "files": {
        "src/calc.c": "int add(int a, int b) {\n    return a + b;\n}\nint main(void) {\n    return add(1, 2)  // EXPECT\n}\n"},
        "expect": ["src/calc.c", 6],
        "cmd": "tcc -c src/calc.c -o /dev/null"},
    "h5_gforth": {**V, "toolchain": "gforth", "files": {
        "words.fs": ": square dup * ;\n: cube dup square * ;\n3 cube .\nfrobnicate  \\ EXPECT\nbye\n"},
        "cmd": "gforth words.fs"},
    "h5_xmlwf": {**V, "toolchain": "xmlwf", "files": {
        "conf/site.xml": "<?xml version=\"1.0\"?>\n<site>\n  <page>a</page>\n  <page>b</pag>\n</site>\n"},
        "expect": ["conf/site.xml", 4],
        "cmd": "xmlwf conf/site.xml"},
    "h5_re2c": {**V, "toolchain": "re2c", "files": {
        "lex.re": "int lex(const char *YYCURSOR) {\n/*!re2c\n  re2c:yyfill:enable = 0;\n  [0-9]+ { return 1; }\n  [a-z { return 2; }\n*/\n}\n"},
        "expect": ["lex.re", 5],
        "cmd": "re2c lex.re -o /dev/null"},
    "h5_jimsh": {**V, "toolchain": "jimsh", "files": {
        "lib/calc.tcl": "proc add {a b} {\n    return [expr {$a + $b}]\n}\nproc run {} {\n    nosuchproc 1  ;# EXPECT\n}\nrun\n"},
        "cmd": "jimsh lib/calc.tcl"},
    "h5_swc": {**V, "toolchain": "swc", "files": {
        "src/app.js": "const a = 1;\nconst b = a +;  // EXPECT\n"},
        "cmd": f"{BIN}/swc src/app.js -o /dev/null"},
    "h5_biome": {**V, "toolchain": "biome", "files": {
        "src/util.js": "export function f(a) {\n  if (a == null) {\n  }\n  debugger;  // EXPECT\n  return a;\n}\n"},
        "cmd": f"{BIN}/biome lint --colors=off src/util.js"},
    "h5_wat2wasm": {**V, "toolchain": "wabt", "files": {
        "mod.wat": "(module\n  (func $f (result i32)\n    i32.const 1\n    i32.addd)  ;; EXPECT\n)\n"},
        "cmd": f"{BIN}/wat2wasm mod.wat -o /dev/null"},
    "h5_pyright": {**V, "toolchain": "pyright", "files": {
        "app/main.py": "def f(x: int) -> int:\n    return x\n\n\nf('a')  # EXPECT\n"},
        "cmd": f"{BIN}/pyright app/main.py"},
    "h5_taplo": {**V, "toolchain": "taplo", "files": {
        "Cargo.toml": "[package]\nname = \"x\"\nversion = 0.1.0\n"},
        "expect": ["Cargo.toml", 3],
        "cmd": f"{BIN}/taplo check Cargo.toml"},
    "h5_livescript": {**V, "toolchain": "livescript", "files": {
        "src/main.ls": "add = (a, b) -> a + b\nx = add 1 2\ny = (x +\n"},
        "expect": ["src/main.ls", 3],
        "cmd": f"{BIN}/lsc -c src/main.ls"},
    "h5_vulture": {**V, "toolchain": "vulture", "files": {
        "pkg/tools.py": "import os\n\n\ndef used():\n    return 1\n\n\ndef never_called():  # EXPECT\n    return 2\n\n\nprint(used())\n"},
        "expect": ["pkg/tools.py", 1],
        "env": PYENV, "cmd": f"{VPY} -m vulture pkg/tools.py"},
    "h5_rstcheck": {**V, "toolchain": "rstcheck", "files": {
        "docs/intro.rst": "Intro\n=====\n\n.. code-block:: python\n\n   def f(:\n       pass\n"},
        "expect": ["docs/intro.rst", 6],
        "env": PYENV, "cmd": f"{VPY} -m rstcheck docs/intro.rst"},
    "h5_yapf": {**V, "toolchain": "yapf", "files": {
        "src/x.py": "def f():\n    return 1\n\ndef g(:  # EXPECT\n    pass\n"},
        "env": PYENV, "cmd": f"{VPY} -m yapf --diff src/x.py"},
    "h5_xmlwf_two": {**V, "toolchain": "xmlwf", "files": {
        "a.xml": "<a/>\n", "b.xml": "<b>\n  <c attr=\"1\" attr=\"2\"/>\n</b>\n"},
        "expect": ["b.xml", 2],
        "cmd": "xmlwf a.xml b.xml"},
}
