"""C/C++ (compilers, sanitizers, valgrind, glibc assert), make, CMake, Go, Rust, JVM."""

from __future__ import annotations

GO_ENV = {"GOPROXY": "off", "GOFLAGS": "-mod=mod", "GOCACHE": "/tmp/qls-gocache", "GOPATH": "@BASE@/gopath"}
GOMOD = "module example.com/demo\n\ngo 1.19\n"
RUST_ENV = {"RUSTUP_HOME": "/root/.rustup", "CARGO_HOME": "/root/.cargo"}
CARGO = "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n"

CASES: dict[str, dict] = {
    # ---------------------------------------------------------------- C / C++ compilers
    "gcc_incompatible_ptr": {"toolchain": "gcc", "files": {
        "src/list.c": "#include <stdlib.h>\n\nstruct node { int v; struct node *next; };\n\nint head(struct node *n) {\n    int *p = n;\n    return n->value;  // EXPECT\n}\n"},
        "cmd": "gcc -Wall -c src/list.c -o /dev/null"},
    "gcc_color_missing_semicolon": {"toolchain": "gcc", "classes": ["ansi"], "files": {
        "main.c": "#include <stdio.h>\n\nint main(void) {\n    int n = 3\n    printf(\"%d\\n\", n);  // EXPECT\n    return 0;\n}\n"},
        "cmd": "gcc -fdiagnostics-color=always -c main.c -o /dev/null"},
    "gxx_template": {"toolchain": "g++", "files": {
        "vec.cpp": "#include <vector>\n#include <string>\n\nint main() {\n    std::vector<std::string> v;\n    v.push_back(42);  // EXPECT\n    return 0;\n}\n"},
        "cmd": "g++ -c vec.cpp -o /dev/null"},
    "gxx_no_member": {"toolchain": "g++", "files": {
        "shape.hpp": "struct Shape { double w, h; double area() const; };\n",
        "shape.cpp": "#include \"shape.hpp\"\n\ndouble Shape::area() const {\n    return w * depth;  // EXPECT\n}\n"},
        "cmd": "g++ -Wall -c shape.cpp -o /dev/null"},
    "clang_undeclared": {"toolchain": "clang", "files": {
        "calc.c": "int twice(int x) {\n    return x * factor;  // EXPECT\n}\n"},
        "cmd": "clang -c calc.c -o /dev/null"},
    "clang_color": {"toolchain": "clang", "classes": ["ansi"], "files": {
        "ptr.c": "#include <stddef.h>\nint first(int *xs, size_t n) {\n    (void)n;\n    return xs.len;  // EXPECT\n}\n"},
        "cmd": "clang -fcolor-diagnostics -c ptr.c -o /dev/null"},
    "asan_heap_overflow": {"toolchain": "asan", "classes": ["asan"], "files": {
        "buf.c": "#include <stdlib.h>\n#include <string.h>\n\nint sum(int *xs, int n) {\n    int s = 0;\n    for (int i = 0; i <= n; i++)\n        s += xs[i];  // EXPECT\n    return s;\n}\n\nint main(void) {\n    int *xs = calloc(4, sizeof *xs);\n    int s = sum(xs, 4);\n    free(xs);\n    return s;\n}\n"},
        "cmd": "gcc -g -O0 -fsanitize=address -o buf buf.c && ./buf"},
    "asan_use_after_free": {"toolchain": "asan", "classes": ["asan"], "files": {
        "uaf.c": "#include <stdlib.h>\n#include <stdio.h>\n\nstruct conn { int fd; };\n\nint close_conn(struct conn *c) {\n    free(c);\n    return c->fd;  // EXPECT\n}\n\nint main(void) {\n    struct conn *c = malloc(sizeof *c);\n    c->fd = 3;\n    printf(\"%d\\n\", close_conn(c));\n    return 0;\n}\n"},
        "cmd": "gcc -g -O0 -fsanitize=address -o uaf uaf.c && ./uaf"},
    "asan_cpp_stack": {"toolchain": "asan", "classes": ["asan"], "files": {
        "stack.cpp": "#include <cstdio>\n\nint pick(int i) {\n    int xs[3] = {1, 2, 3};\n    return xs[i];  // EXPECT\n}\n\nint main() {\n    std::printf(\"%d\\n\", pick(5));\n}\n"},
        "cmd": "g++ -g -O0 -fsanitize=address -o stack stack.cpp && ./stack"},
    "valgrind_invalid_read": {"toolchain": "valgrind", "classes": ["valgrind"], "files": {
        "vr.c": "#include <stdlib.h>\n\nint last(int *xs, int n) {\n    return xs[n];  // EXPECT\n}\n\nint main(void) {\n    int *xs = malloc(4 * sizeof *xs);\n    for (int i = 0; i < 4; i++) xs[i] = i;\n    int r = last(xs, 4);\n    free(xs);\n    return r;\n}\n"},
        "cmd": "gcc -g -O0 -o vr vr.c && valgrind -q --error-exitcode=1 ./vr"},
    "valgrind_uninit": {"toolchain": "valgrind", "classes": ["valgrind"], "files": {
        "un.c": "#include <stdio.h>\n\nint compute(int flag) {\n    int x;\n    if (flag) x = 1;\n    if (x > 0)  // EXPECT\n        return 1;\n    return 0;\n}\n\nint main(void) {\n    printf(\"%d\\n\", compute(0));\n    return 0;\n}\n"},
        "cmd": "gcc -g -O0 -o un un.c && valgrind -q --error-exitcode=1 ./un"},
    "valgrind_free_twice": {"toolchain": "valgrind", "classes": ["valgrind"], "files": {
        "df.c": "#include <stdlib.h>\n\nvoid release(char *p) {\n    free(p);  // EXPECT\n}\n\nint main(void) {\n    char *p = malloc(8);\n    free(p);\n    release(p);\n    return 0;\n}\n"},
        "cmd": "gcc -g -O0 -o df df.c && valgrind -q --error-exitcode=1 ./df"},
    "glibc_assert": {"toolchain": "glibc-assert", "classes": ["glibc_assert"], "files": {
        "q.c": "#include <assert.h>\n\nint pop(int *stack, int *n) {\n    assert(*n > 0);  // EXPECT\n    return stack[--*n];\n}\n\nint main(void) {\n    int s[1], n = 0;\n    return pop(s, &n);\n}\n"},
        "cmd": "gcc -g -o q q.c && ./q"},
    "glibc_assert_cpp": {"toolchain": "glibc-assert", "classes": ["glibc_assert"], "files": {
        "src/ring.cpp": "#include <cassert>\n#include <cstddef>\n#include <vector>\n\nint at(const std::vector<int>& v, size_t i) {\n    assert(i < v.size() && \"index in range\");  // EXPECT\n    return v[i];\n}\n\nint main() { return at({1, 2}, 7); }\n"},
        "cmd": "g++ -g -o ring src/ring.cpp && ./ring"},
    # ---------------------------------------------------------------- make / CMake
    "make_gcc_error": {"toolchain": "make", "files": {
        "Makefile": "app: main.o\n\tgcc -o app main.o\n\nmain.o: main.c\n\tgcc -c main.c\n",
        "main.c": "int main(void) {\n    return undefined_var;  // EXPECT\n}\n"}, "cmd": "make"},
    "make_missing_rule": {"toolchain": "make", "files": {
        "Makefile": "all: gen\n\ngen:\n\tpython3 -c 'import sys; sys.exit(2)'  # EXPECT\n"}, "cmd": "make"},
    "cmake_error": {"toolchain": "cmake", "classes": ["cmake"], "files": {
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.16)\nproject(demo C)\n\nadd_executable(demo main.c missing.c)  # EXPECT\n",
        "main.c": "int main(void) { return 0; }\n"},
        "cmd": "cmake -S . -B build"},
    "cmake_error_subdir": {"toolchain": "cmake", "classes": ["cmake"], "files": {
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.16)\nproject(demo C)\nadd_subdirectory(lib)\n",
        "lib/CMakeLists.txt": "add_library(core STATIC core.c)\ntarget_link_libraries(core PRIVATE)\nfind_package(NoSuchPackageXyz REQUIRED)  # EXPECT\n",
        "lib/core.c": "int core(void) { return 0; }\n"},
        "cmd": "cmake -S . -B build"},
    "cmake_message_fatal": {"toolchain": "cmake", "classes": ["cmake"], "files": {
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.16)\nproject(demo NONE)\nset(MODE fast)\nif(NOT MODE STREQUAL \"safe\")\n  message(FATAL_ERROR \"unsupported MODE ${MODE}\")  # EXPECT\nendif()\n"},
        "cmd": "cmake -S . -B build"},
    # ---------------------------------------------------------------- Go
    "go_build_undefined": {"toolchain": "go", "files": {"go.mod": GOMOD,
        "main.go": "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(totl)  // EXPECT\n}\n"}, "cmd": "go build ./...", "env": GO_ENV},
    "go_test_subpackage": {"toolchain": "go", "classes": ["go_package_relative"], "files": {"go.mod": GOMOD,
        "internal/calc/calc.go": "package calc\n\nfunc Mul(a, b int) int { return a + b }\n",
        "internal/calc/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestMul(t *testing.T) {\n\tif got := Mul(2, 3); got != 6 {\n\t\tt.Fatalf(\"Mul(2, 3) = %d\", got)  // EXPECT\n\t}\n}\n",
        "cmd/app/main.go": "package main\n\nfunc main() {}\n"}, "cmd": "go test ./...", "env": GO_ENV},
    "go_test_two_packages": {"toolchain": "go", "classes": ["go_package_relative"], "files": {"go.mod": GOMOD,
        "pkg/strs/strs.go": "package strs\n\nimport \"strings\"\n\nfunc Up(s string) string { return strings.ToLower(s) }\n",
        "pkg/strs/strs_test.go": "package strs\n\nimport \"testing\"\n\nfunc TestUp(t *testing.T) {\n\tif Up(\"a\") != \"A\" {\n\t\tt.Errorf(\"Up(a) = %q\", Up(\"a\"))  // EXPECT\n\t}\n}\n",
        "pkg/nums/nums.go": "package nums\n\nfunc One() int { return 1 }\n",
        "pkg/nums/nums_test.go": "package nums\n\nimport \"testing\"\n\nfunc TestOne(t *testing.T) {\n\tif One() != 1 {\n\t\tt.Fatal(\"no\")\n\t}\n}\n"},
        "cmd": "go test ./...", "env": GO_ENV},
    "go_panic_nil_map": {"toolchain": "go", "files": {"go.mod": GOMOD,
        "store/store.go": "package store\n\ntype Store struct{ m map[string]int }\n\nfunc (s *Store) Put(k string, v int) {\n\ts.m[k] = v  // EXPECT\n}\n",
        "main.go": "package main\n\nimport \"example.com/demo/store\"\n\nfunc main() {\n\tvar s store.Store\n\ts.Put(\"a\", 1)\n}\n"},
        "cmd": "go run .", "env": GO_ENV},
    "go_race": {"toolchain": "go", "classes": ["go_race"], "files": {"go.mod": GOMOD,
        "counter.go": "package main\n\nimport (\n\t\"fmt\"\n\t\"sync\"\n)\n\nvar hits int\n\nfunc hit(wg *sync.WaitGroup) {\n\tdefer wg.Done()\n\thits++  // EXPECT\n}\n\nfunc main() {\n\tvar wg sync.WaitGroup\n\tfor i := 0; i < 2; i++ {\n\t\twg.Add(1)\n\t\tgo hit(&wg)\n\t}\n\twg.Wait()\n\tfmt.Println(hits)\n}\n"},
        "cmd": "go run -race .", "env": GO_ENV},
    "go_race_test": {"toolchain": "go", "classes": ["go_race"], "files": {"go.mod": GOMOD,
        "cache/cache.go": "package cache\n\nvar entries = map[string]int{}\n\nfunc Set(k string, v int) {\n\tentries[k] = v  // EXPECT\n}\n",
        "cache/cache_test.go": "package cache\n\nimport (\n\t\"sync\"\n\t\"testing\"\n)\n\nfunc TestSet(t *testing.T) {\n\tvar wg sync.WaitGroup\n\tfor i := 0; i < 2; i++ {\n\t\twg.Add(1)\n\t\tgo func() { defer wg.Done(); Set(\"k\", 1) }()\n\t}\n\twg.Wait()\n}\n"},
        "cmd": "go test -race ./...", "env": GO_ENV},
    "go_panic_tmux": {"toolchain": "go", "classes": ["terminal_readback", "go_spaces"], "mode": "tmux", "files": {"go.mod": GOMOD,
        "main.go": "package main\n\nfunc divide(a, b int) int {\n\treturn a / b  // EXPECT\n}\n\nfunc main() {\n\tprintln(divide(1, 0))\n}\n"},
        "cmd": "go run .", "env": GO_ENV},
    "go_panic_tmux_2": {"toolchain": "go", "classes": ["terminal_readback", "go_spaces"], "mode": "tmux", "files": {"go.mod": GOMOD,
        "internal/parse/parse.go": "package parse\n\nfunc Field(xs []string, i int) string {\n\treturn xs[i]  // EXPECT\n}\n",
        "main.go": "package main\n\nimport \"example.com/demo/internal/parse\"\n\nfunc main() {\n\tprintln(parse.Field(nil, 2))\n}\n"},
        "cmd": "go run .", "env": GO_ENV},
    "go_gopath_panic": {"toolchain": "go", "classes": ["gopath"], "ws_subdir": "go/src/github.com/you/project", "files": {
        "main.go": "package main\n\nimport \"strconv\"\n\nfunc port(s string) int {\n\tn, err := strconv.Atoi(s)\n\tif err != nil {\n\t\tpanic(err)  // EXPECT\n\t}\n\treturn n\n}\n\nfunc main() {\n\tprintln(port(\"http\"))\n}\n"},
        "cmd": "go run main.go", "env": {**GO_ENV, "GOPATH": "@BASE@/go", "GO111MODULE": "off"}},
    "go_gopath_test": {"toolchain": "go", "classes": ["gopath"], "ws_subdir": "go/src/github.com/you/project", "files": {
        "util/util.go": "package util\n\nfunc Clamp(x, lo, hi int) int {\n\tif x < lo {\n\t\treturn lo\n\t}\n\treturn x\n}\n",
        "util/util_test.go": "package util\n\nimport \"testing\"\n\nfunc TestClamp(t *testing.T) {\n\tif Clamp(9, 0, 5) != 5 {\n\t\tpanic(\"clamp\")  // EXPECT\n\t}\n}\n"},
        "cmd": "go test ./...", "env": {**GO_ENV, "GOPATH": "@BASE@/go", "GO111MODULE": "off"}},
    # ---------------------------------------------------------------- Rust
    "cargo_borrow": {"toolchain": "rust", "files": {"Cargo.toml": CARGO,
        "src/main.rs": "fn main() {\n    let v = vec![1];\n    let first = &v[0];\n    let mut w = v;  // EXPECT\n    w.push(2);\n    println!(\"{first}\");\n}\n"},
        "cmd": "cargo build --offline --quiet", "env": {**RUST_ENV, "CARGO_TARGET_DIR": "/tmp/qls-cargo-c1"},
        "note": "rustc's primary span is the move (line 4); the later use is a secondary label"},
    "cargo_warning_then_error": {"toolchain": "rust", "classes": ["ansi"], "files": {"Cargo.toml": CARGO,
        "src/main.rs": "fn main() {\n    let unused = 1;\n    let s: String = 5;  // EXPECT\n    println!(\"{s}\");\n}\n"},
        "cmd": "cargo build --offline --quiet --color always", "env": {**RUST_ENV, "CARGO_TARGET_DIR": "/tmp/qls-cargo-c2"}},
    "rust_panic_unwrap_none": {"toolchain": "rust", "files": {"Cargo.toml": CARGO,
        "src/main.rs": "fn find(xs: &[i32]) -> i32 {\n    *xs.iter().find(|x| **x > 10).unwrap()  // EXPECT\n}\n\nfn main() {\n    println!(\"{}\", find(&[1]));\n}\n"},
        "cmd": "cargo run --offline --quiet", "env": {**RUST_ENV, "CARGO_TARGET_DIR": "/tmp/qls-cargo-c3", "RUST_BACKTRACE": "0"}},
    "cargo_test_panic": {"toolchain": "rust", "files": {"Cargo.toml": CARGO,
        "src/lib.rs": "pub fn half(x: u32) -> u32 {\n    x / 3\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn halves() {\n        assert_eq!(super::half(4), 2);  // EXPECT\n    }\n}\n"},
        "cmd": "cargo test --offline --quiet", "env": {**RUST_ENV, "CARGO_TARGET_DIR": "/tmp/qls-cargo-c4", "RUST_BACKTRACE": "0"}},
    # ---------------------------------------------------------------- JVM
    "java_npe": {"toolchain": "java", "files": {
        "src/app/Greeter.java": "package app;\n\npublic class Greeter {\n    static String greet(String name) {\n        return \"hi \" + name.trim();  // EXPECT\n    }\n\n    public static void main(String[] a) {\n        System.out.println(greet(null));\n    }\n}\n"},
        "cmd": "javac -d out src/app/Greeter.java && java -cp out app.Greeter"},
    "java_suppressed": {"toolchain": "java", "classes": ["java_suppressed"], "files": {
        "src/io/Res.java": (
            "package io;\n\npublic class Res implements AutoCloseable {\n    public void close() {\n        throw new IllegalStateException(\"close failed\");\n    }\n\n"
            "    static void work() {\n        try (Res r = new Res()) {\n            throw new RuntimeException(\"work failed\");  // EXPECT\n        }\n    }\n\n"
            "    public static void main(String[] a) {\n        work();\n    }\n}\n")},
        "cmd": "javac -d out src/io/Res.java && java -cp out io.Res"},
    "java_suppressed_caused": {"toolchain": "java", "classes": ["java_suppressed"], "files": {
        "src/db/Tx.java": (
            "package db;\n\npublic class Tx implements AutoCloseable {\n    public void close() throws Exception {\n        throw new Exception(\"rollback failed\");\n    }\n\n"
            "    static int parse(String s) {\n        return Integer.parseInt(s);  // EXPECT\n    }\n\n"
            "    static void run() throws Exception {\n        try (Tx t = new Tx()) {\n            try {\n                parse(\"x\");\n            } catch (NumberFormatException e) {\n"
            "                throw new IllegalArgumentException(\"bad input\", e);\n            }\n        }\n    }\n\n"
            "    public static void main(String[] a) throws Exception {\n        run();\n    }\n}\n")},
        "cmd": "javac -d out src/db/Tx.java && java -cp out db.Tx"},
    "javac_type": {"toolchain": "java", "files": {
        "Calc.java": "public class Calc {\n    static int twice(int x) {\n        String s = x * 2;  // EXPECT\n        return 0;\n    }\n}\n"},
        "cmd": "javac -d /tmp/qls-javac-out2 Calc.java"},
}
