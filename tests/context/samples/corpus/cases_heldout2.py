"""A third batch, written after everything else and run once without changes to the recognisers:
its first-run accuracy is reported as held-out batch 2 (meta "batch": "heldout2")."""

from __future__ import annotations

H = {"batch": "heldout2"}
VPY = "/work/main/.venv/bin/python"
PYTEST = f"{VPY} -m pytest -p no:cacheprovider -p no:randomly -q --rootdir ."
GO_ENV = {"GOPROXY": "off", "GOFLAGS": "-mod=mod", "GOCACHE": "/tmp/qls-gocache", "GOPATH": "@BASE@/gopath"}
GOMOD = "module example.com/demo\n\ngo 1.19\n"
RUST_ENV = {"RUSTUP_HOME": "/root/.rustup", "CARGO_HOME": "/root/.cargo"}

CASES: dict[str, dict] = {
    "h2_py_fstring_syntax": {**H, "toolchain": "python", "files": {
        "fmt.py": "name = 'x'\nprint(f'hello {name!}')  # EXPECT\n"}, "cmd": "python3 fmt.py"},
    "h2_py_compose_two_services": {**H, "toolchain": "python", "classes": ["prefix"], "files": {
        "api/handlers.py": "def get_user(users, uid):\n    return users[uid]['email']  # EXPECT\n",
        "api/__init__.py": "",
        "serve.py": "import sys\nfrom api.handlers import get_user\nprint('listening', flush=True)\nget_user({1: {}}, 1)\n"},
        "cmd": "(echo 'db-1   | ready to accept connections'; python3 serve.py 2>&1 | sed -u 's/^/api-1  | /'; echo 'db-1   | checkpoint complete')"},
    "h2_pytest_native_group": {**H, "toolchain": "pytest", "files": {
        "tests/test_many.py": "import pytest\n\n\ndef check(x):\n    if x > 1:\n        raise ValueError(x)  # EXPECT\n\n\ndef test_all():\n    errs = []\n    for x in (1, 2):\n        try:\n            check(x)\n        except ValueError as e:\n            errs.append(e)\n    if errs:\n        raise ExceptionGroup('checks', errs)\n"},
        "cmd": f"{PYTEST} --tb=native"},
    "h2_ubsan_overflow": {**H, "toolchain": "ubsan", "files": {
        "ov.c": "#include <limits.h>\n#include <stdio.h>\n\nint inc(int x) {\n    return x + 1;  // EXPECT\n}\n\nint main(void) {\n    printf(\"%d\\n\", inc(INT_MAX));\n    return 0;\n}\n"},
        "cmd": "gcc -g -fsanitize=undefined -o ov ov.c && ./ov"},
    "h2_asan_leak": {**H, "toolchain": "asan", "files": {
        "leak.c": "#include <stdlib.h>\n\nchar *make(void) {\n    return malloc(32);  // EXPECT\n}\n\nint main(void) {\n    make();\n    return 0;\n}\n"},
        "cmd": "gcc -g -O0 -fsanitize=address -o leak leak.c && ./leak"},
    "h2_valgrind_leak": {**H, "toolchain": "valgrind", "files": {
        "lk.c": "#include <stdlib.h>\n\nint *alloc(void) {\n    return malloc(40);  // EXPECT\n}\n\nint main(void) {\n    alloc();\n    return 0;\n}\n"},
        "cmd": "gcc -g -O0 -o lk lk.c && valgrind -q --leak-check=full --error-exitcode=1 ./lk"},
    "h2_make_subdir": {**H, "toolchain": "make", "files": {
        "Makefile": "all:\n\t$(MAKE) -C src\n",
        "src/Makefile": "all:\n\tgcc -Wall -c util.c -o /dev/null\n",
        "src/util.c": "int half(int x) {\n    return x / two;  // EXPECT\n}\n"}, "cmd": "make"},
    "h2_go_vet_subpkg": {**H, "toolchain": "go", "files": {"go.mod": GOMOD,
        "internal/log/log.go": "package log\n\nimport \"fmt\"\n\nfunc Info(n int) {\n\tfmt.Printf(\"%s\\n\", n)  // EXPECT\n}\n"},
        "cmd": "go vet ./...", "env": GO_ENV},
    "h2_go_test_fatal_two": {**H, "toolchain": "go", "files": {"go.mod": GOMOD,
        "a/a_test.go": "package a\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {\n\tt.Fatal(\"boom\")  // EXPECT\n}\n",
        "b/b_test.go": "package b\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) {\n\tt.Fatal(\"bang\")\n}\n"},
        "cmd": "go test ./...", "env": GO_ENV},
    "h2_rustc_direct": {**H, "toolchain": "rust", "files": {
        "hello.rs": "fn main() {\n    let x: u8 = 300;  // EXPECT\n    println!(\"{x}\");\n}\n"},
        "cmd": "rustc --edition 2021 -o /tmp/qls-h2-hello hello.rs", "env": RUST_ENV},
    "h2_javac_two_errors": {**H, "toolchain": "java", "files": {
        "src/A.java": "public class A {\n    int f() { return undefinedA; }  // EXPECT\n}\n",
        "src/B.java": "public class B {\n    int g() { return undefinedB; }\n}\n"},
        "cmd": "javac -d /tmp/qls-h2-out src/A.java src/B.java"},
    "h2_node_class_private": {**H, "toolchain": "node", "files": {
        "lib/account.js": "class Account {\n  #balance = 0;\n  withdraw(n) {\n    if (n > this.#balance) throw new RangeError('insufficient funds');  // EXPECT\n  }\n}\nmodule.exports = { Account };\n",
        "app.js": "const { Account } = require('./lib/account');\nnew Account().withdraw(5);\n"}, "cmd": "node app.js"},
    "h2_ruby_argument": {**H, "toolchain": "ruby", "files": {
        "lib/greeter.rb": "class Greeter\n  def greet(name, punct)\n    \"hi #{name}#{punct}\"\n  end\nend\n",
        "main.rb": "require_relative 'lib/greeter'\nputs Greeter.new.greet('a')  # EXPECT\n"}, "cmd": "ruby main.rb",
        "note": "Ruby reports an ArgumentError at the callee's def line first; the caller's line is the fix"},
    "h2_php_undefined_method": {**H, "toolchain": "php", "files": {
        "src/User.php": "<?php\nclass User {\n    public function name() { return 'a'; }\n}\n",
        "index.php": "<?php\nrequire 'src/User.php';\n$u = new User();\necho $u->email();  // EXPECT\n"}, "cmd": "php index.php"},
    "h2_shellcheck_two_files": {**H, "toolchain": "shellcheck", "files": {
        "a.sh": "#!/bin/sh\necho $1\n",
        "b.sh": "#!/bin/bash\nif [ $x = 1 ]  # EXPECT\n  echo yes\nfi\n"}, "cmd": "shellcheck a.sh b.sh",
        "note": "label corrected after the first run: the missing `then` belongs on the if line, where ShellCheck reports it"},
    "h2_cmake_warning_then_error": {**H, "toolchain": "cmake", "files": {
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.16)\nproject(demo NONE)\nmessage(WARNING \"old option used\")\ninclude(NoSuchModuleXyz)  # EXPECT\n"},
        "cmd": "cmake -S . -B build"},
    # no dedicated recogniser
    "h2_perl_confess": {**H, "generic": True, "toolchain": "perl", "files": {
        "lib/Bank.pm": "package Bank;\nuse strict;\nuse Carp;\nsub withdraw {\n    my ($bal, $n) = @_;\n    confess \"insufficient funds\" if $n > $bal;  # EXPECT\n    return $bal - $n;\n}\n1;\n",
        "run.pl": "use strict;\nuse lib 'lib';\nuse Bank;\nBank::withdraw(1, 5);\n"}, "cmd": "perl run.pl"},
    "h2_lua_error_table": {**H, "generic": True, "toolchain": "lua", "files": {
        "calc.lua": "local function div(a, b)\n  if b == 0 then\n    error('division by zero', 2)\n  end\n  return a / b\nend\n\nprint(div(1, 0))  -- EXPECT\n"},
        "cmd": "lua5.4 calc.lua", "note": "error(msg, 2) blames the caller"},
    "h2_ocaml_failwith": {**H, "generic": True, "toolchain": "ocaml", "files": {
        "parse.ml": "let parse s =\n  match int_of_string_opt s with\n  | Some n -> n\n  | None -> failwith (\"not a number: \" ^ s)\n\nlet () = print_int (parse \"x\")  (* EXPECT *)\n"},
        "cmd": "ocamlopt -g parse.ml -o parse && OCAMLRUNPARAM=b ./parse",
        "note": "label corrected after the first run: the backtrace names only line 6 (failwith is inlined), line 4 is in no output"},
    "h2_tcl_namespace": {**H, "generic": True, "toolchain": "tcl", "files": {
        "app.tcl": "namespace eval util {\n    proc first {xs} {\n        return [lindex $xs]\n    }\n}\nputs [util::first]  ;# EXPECT\n"},
        "cmd": "tclsh app.tcl"},
    "h2_elixir_keyerror": {**H, "generic": True, "toolchain": "elixir", "files": {
        "conf.exs": "defmodule Conf do\n  def port(cfg), do: Map.fetch!(cfg, :port)  # EXPECT\nend\n\nIO.puts(Conf.port(%{}))\n"},
        "cmd": "elixir conf.exs"},
    "h2_gfortran_deep": {**H, "generic": True, "toolchain": "gfortran", "files": {
        "sub.f90": "module m\ncontains\n  subroutine setv(xs, i)\n    integer :: xs(:), i\n    xs(i) = 1  ! EXPECT\n  end subroutine\nend module m\n\nprogram p\n  use m\n  integer :: xs(2)\n  call setv(xs, 3)\nend program p\n"},
        "cmd": "gfortran -g -fcheck=bounds -o sub sub.f90 && ./sub"},
}
