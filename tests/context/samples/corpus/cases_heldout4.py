"""Held-out batch 4 (issue 38): toolchains and formats no earlier sample has, written and run once
before the parser was changed for them (the general locator). Stored apart, under
tests/context/samples/heldout4/, with meta "batch": "heldout4"; bench/bench_frames.py prints its accuracy.

Tools: Debian 12 (ksh zsh fish bison byacc flex m4 graphviz gnuplot-nox bc nasm tidy guile-3.0 iverilog
protobuf-compiler libperl-critic-perl gettext xmlstarlet xsltproc glslang-tools shfmt sqlite3 jq mawk),
npm packages under $TOOLS/npm/node_modules (nunjucks ejs handlebars terser uglify-js acorn js-yaml jsonlint
csslint stylus html-validate), PyPI packages under $TOOLS/py (pyflakes pycodestyle black codespell
restructuredtext-lint doc8 jinja2 mako cython)."""

from __future__ import annotations

H = {"batch": "heldout4", "out": "heldout4"}
NPM = "$TOOLS/npm/node_modules"
BIN = f"{NPM}/.bin"
PYENV = {"PYTHONPATH": "$TOOLS/py"}
VPY = "/work/main/.venv/bin/python"
NODE_ENV = {"NODE_PATH": NPM}

TSAN_C = """#include <pthread.h>
#include <stdio.h>

static int counter;

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 1000; i++)
        counter++;  // EXPECT
    return NULL;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, NULL, worker, NULL);
    pthread_create(&b, NULL, worker, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%d\\n", counter);
    return 0;
}
"""

CASES: dict[str, dict] = {
    # ---------------------------------------------------------------- shells
    "h4_ksh_not_found": {**H, "toolchain": "ksh", "classes": ["loc_bracket_line"], "files": {
        "run.ksh": "#!/bin/ksh\necho start\nn=3\necho \"n=$n\"\nbuild_all --fast  # EXPECT\necho done\n"},
        "cmd": "ksh ./run.ksh"},
    "h4_ksh_syntax": {**H, "toolchain": "ksh", "classes": ["loc_at_line"], "files": {
        "deploy.ksh": "#!/bin/ksh\nfor x in 1 2 3; do\n  echo $x\ndone\nif [ -n \"$1\" ] then echo (oops)  # EXPECT\nfi\n"},
        "cmd": "ksh deploy.ksh"},
    "h4_ksh_function_in_lib": {**H, "toolchain": "ksh", "classes": ["loc_bracket_line"], "files": {
        "lib/util.ksh": "function setup {\n  typeset dir=$1\n  mkdir_p_missing \"$dir\"\n}\n",
        "main.ksh": "#!/bin/ksh\n. ./lib/util.ksh\necho begin\nsetup /tmp/x  # EXPECT (ksh names the function, not its file)\nexit 1\n"},
        "cmd": "ksh main.ksh"},
    "h4_zsh_not_found": {**H, "toolchain": "zsh", "classes": [], "files": {
        "tools/setup.zsh": "#!/bin/zsh\nprint starting\nlocal_var=1\nfrobnicate --all  # EXPECT\nprint done\n"},
        "cmd": "zsh tools/setup.zsh"},
    "h4_zsh_parse": {**H, "toolchain": "zsh", "classes": [], "files": {
        "build.zsh": "#!/bin/zsh\nprint one\nif [[ -n $1 ]]; then\n  print two\nfi\nfor x in a b; do print $x; done )  # EXPECT\n"},
        "cmd": "zsh build.zsh"},
    "h4_fish_unknown_command": {**H, "toolchain": "fish", "classes": ["loc_paren_line"], "files": {
        "conf/init.fish": "set -l n 3\necho start $n\nfrobnicate --all  # EXPECT\necho done\n"},
        "cmd": "fish conf/init.fish"},
    "h4_fish_syntax": {**H, "toolchain": "fish", "classes": ["loc_paren_line"], "files": {
        "build.fish": "echo one\nset x (math 1 + 1)\nif test $x -eq 2\n    echo $x\nend\necho $x)  # EXPECT\n"},
        "cmd": "fish build.fish"},
    "h4_fish_function": {**H, "toolchain": "fish", "classes": ["loc_paren_line", "order"], "files": {
        "functions/deploy.fish": "function deploy\n    echo deploying $argv\n    publish_site $argv  # EXPECT\nend\n",
        "main.fish": "source functions/deploy.fish\necho begin\ndeploy prod\n"},
        "cmd": "fish main.fish"},
    # ---------------------------------------------------------------- text tools
    "h4_mawk_syntax": {**H, "toolchain": "mawk", "classes": ["loc_prose"], "files": {
        "sum.awk": "BEGIN { total = 0 }\n{ total += $2 }\nEND { print \"total\" total\n  if (total > 10 { print \"big\" }  # EXPECT\n}\n",
        "data.txt": "a 1\nb 2\n"},
        "cmd": "mawk -f sum.awk data.txt"},
    "h4_mawk_regex": {**H, "toolchain": "mawk", "classes": ["loc_prose"], "files": {
        "filter.awk": "# keep errors\n/ERROR/ { n++ }\n/[unclosed/ { m++ }  # EXPECT\nEND { print n }\n",
        "log.txt": "ERROR x\nok\n"},
        "cmd": "mawk -f filter.awk log.txt"},
    "h4_sed_unknown": {**H, "toolchain": "sed", "classes": ["loc_prose"], "files": {
        "fix.sed": "s/foo/bar/g\n/^#/d\nk  # EXPECT\n",
        "in.txt": "foo\n# c\n"},
        "cmd": "sed -f fix.sed in.txt"},
    "h4_sed_unterminated": {**H, "toolchain": "sed", "classes": ["loc_prose"], "files": {
        "edit.sed": "1d\ns/a/b/\ns/unterminated/x\n",
        "in.txt": "a\nb\n"},
        "expect": ["edit.sed", 3],
        "cmd": "sed -f edit.sed in.txt"},
    "h4_jq_compile": {**H, "toolchain": "jq", "classes": ["loc_command_file"], "files": {
        "filters/report.jq": "def total: map(.n) | add;\n\n.items | total |\n  if . > 3 then \"big\" else \"small\"\n",
        "data.json": "{\"items\": [{\"n\": 1}, {\"n\": 4}]}\n"},
        "expect": ["filters/report.jq", 4],
        "cmd": "jq -f filters/report.jq data.json"},
    "h4_jq_runtime_input": {**H, "toolchain": "jq", "classes": ["loc_paren_space"], "files": {
        "data.json": "{\"a\": 1}\n{\"a\": 2}\n[1, 2]\n"},
        "expect": ["data.json", 3],
        "cmd": "jq '.a' data.json"},
    "h4_sqlite_parse": {**H, "toolchain": "sqlite3", "classes": ["loc_command_file", "loc_near_line"], "files": {
        "schema.sql": "create table users (id integer primary key, name text);\ninsert into users values (1, 'a');\nselect * from userz;  -- EXPECT\n"},
        "cmd": "sqlite3 :memory: < schema.sql"},
    "h4_sqlite_read": {**H, "toolchain": "sqlite3", "classes": ["loc_command_file", "loc_near_line"], "files": {
        "db/seed.sql": "create table t (a int);\n\ninsert into t values (1);\ninsert into t value (2);  -- EXPECT\n"},
        "cmd": "sqlite3 :memory: '.read db/seed.sql'"},
    "h4_sqlite_constraint": {**H, "toolchain": "sqlite3", "classes": ["loc_command_file", "loc_near_line"], "files": {
        "migrate.sql": "create table t (a int unique);\ninsert into t values (1);\n\ninsert into t values (1);  -- EXPECT\n"},
        "cmd": "sqlite3 -bail :memory: < migrate.sql"},
    # ---------------------------------------------------------------- language tools
    "h4_bison_error": {**H, "toolchain": "bison", "classes": ["loc_dot_range"], "files": {
        "parse.y": "%token NUM\n%%\nexpr: expr '+' term\n    | term\n    ;\nterm: NUM { $$ = $1 + $5; }  /* EXPECT */\n    ;\n%%\n"},
        "cmd": "bison -o /dev/null parse.y"},
    "h4_bison_conflict_then_error": {**H, "toolchain": "bison", "classes": ["loc_dot_range", "severity"], "files": {
        "calc.y": "%token NUM\n%%\ne: e '+' e\n | NUM\n | undefined_sym  /* EXPECT */\n ;\n%%\n"},
        "cmd": "bison -Wall -o /dev/null calc.y"},
    "h4_byacc_error": {**H, "toolchain": "byacc", "classes": ["loc_line_of_file"], "files": {
        "gram.y": "%token NUM\n%%\nlist: list NUM\n    | error\n    ;\nbad: NUM ( ;  /* EXPECT */\n"},
        "cmd": "byacc -o /dev/null gram.y"},
    "h4_flex_error": {**H, "toolchain": "flex", "classes": [], "files": {
        "scan.l": "%%\n[0-9]+   { return 1; }\n[a-z+    { return 2; }\n%%\n"},
        "expect": ["scan.l", 3],
        "cmd": "flex -o /dev/null scan.l"},
    "h4_m4_error": {**H, "toolchain": "m4", "classes": [], "files": {
        "macros.m4": "define(`greet', `hello $1')dnl\ngreet(`x')\nundivert(`nofile')dnl EXPECT\ninclude(`missing.m4')dnl\n"},
        "cmd": "m4 macros.m4"},
    "h4_dot_syntax": {**H, "toolchain": "graphviz", "classes": ["loc_prose"], "files": {
        "graphs/deps.dot": "digraph deps {\n  a -> b;\n  b -> c;\n  c -> -> d;  // EXPECT\n}\n"},
        "cmd": "dot -Tsvg graphs/deps.dot -o /dev/null"},
    "h4_dot_warning_then_error": {**H, "toolchain": "graphviz", "classes": ["loc_prose", "severity"], "files": {
        "g.dot": "digraph g {\n  node [shape=boxx];\n  a -> b;\n  b -> c [color=\"nosuch\"];\n  c -> d }}  // EXPECT\n"},
        "cmd": "dot -Tpng g.dot -o /dev/null"},
    "h4_gnuplot_undefined": {**H, "toolchain": "gnuplot", "classes": ["loc_quoted_line"], "files": {
        "plots/speed.gp": "set terminal dumb\nset title 'speed'\nf(x) = a*x\nplot f(x)  # EXPECT\n"},
        "cmd": "gnuplot plots/speed.gp"},
    "h4_gnuplot_syntax": {**H, "toolchain": "gnuplot", "classes": ["loc_quoted_line"], "files": {
        "p.gp": "set terminal dumb\nset xrange [0:10]\nset yrange [0:10\nplot x\n"},
        "expect": ["p.gp", 3],
        "cmd": "gnuplot p.gp"},
    "h4_bc_syntax": {**H, "toolchain": "bc", "classes": ["loc_command_file"], "files": {
        "calc.bc": "scale=2\na = 3\nb = a * (2 + \nprint a\n"},
        "expect": ["calc.bc", 4],
        "cmd": "echo quit | bc -q calc.bc"},
    "h4_nasm_error": {**H, "toolchain": "nasm", "classes": [], "files": {
        "boot.asm": "bits 64\nsection .text\nglobal _start\n_start:\n    mov rax, 60\n    movv rdi, 0  ; EXPECT\n    syscall\n"},
        "cmd": "nasm -f elf64 boot.asm -o /dev/null"},
    "h4_nasm_warning_then_error": {**H, "toolchain": "nasm", "classes": ["severity"], "files": {
        "k.asm": "bits 64\nsection .text\n    db 300\n    mov eax, [rbx+rcx*3]  ; EXPECT\n"},
        "cmd": "nasm -f elf64 k.asm -o /dev/null"},
    "h4_gas_error": {**H, "toolchain": "gas", "classes": ["loc_header"], "files": {
        "start.s": "  .text\n  .globl main\nmain:\n  movq $1, %rax\n  addq %rax, %nosuch  # EXPECT\n  ret\n"},
        "cmd": "as start.s -o /dev/null"},
    "h4_ld_undefined": {**H, "toolchain": "ld", "classes": ["loc_section"], "files": {
        "src/main.c": "int helper(int);\n\nint main(void) {\n    int x = 2;\n    return helper(x);  // EXPECT\n}\n"},
        "cmd": "gcc -g -c src/main.c -o /tmp/h4_main.o && gcc /tmp/h4_main.o -o /dev/null"},
    "h4_ld_undefined_two": {**H, "toolchain": "ld", "classes": ["loc_section"], "files": {
        "app/a.c": "void b_func(void);\nvoid a_func(void) {\n    b_func();  // EXPECT\n}\n",
        "app/main.c": "void a_func(void);\nvoid c_func(void);\nint main(void) {\n    a_func();\n    c_func();\n    return 0;\n}\n"},
        "cwd": "app", "cmd": "gcc -g -c a.c main.c && gcc a.o main.o -o /dev/null"},
    "h4_tidy_html": {**H, "toolchain": "tidy", "classes": ["loc_command_file", "severity"], "files": {
        "site/index.html": "<!DOCTYPE html>\n<html>\n<head><title>x</title></head>\n<body>\n<p>hello\n<foo>bar</foo>\n</body>\n</html>\n"},
        "expect": ["site/index.html", 6],
        "cmd": "tidy -q -e site/index.html"},
    "h4_iverilog_syntax": {**H, "toolchain": "iverilog", "classes": [], "files": {
        "rtl/counter.v": "module counter(input clk, output reg [3:0] q);\n  always @(posedge clk)\n    q <= q + 1\nendmodule  // EXPECT (iverilog reports the line after the missing semicolon)\n"},
        "cmd": "iverilog -o /dev/null rtl/counter.v"},
    "h4_iverilog_undeclared": {**H, "toolchain": "iverilog", "classes": [], "files": {
        "top.v": "module top;\n  reg a;\n  initial begin\n    a = 1;\n    b = 0;  // EXPECT\n  end\nendmodule\n"},
        "cmd": "iverilog -o /dev/null top.v"},
    "h4_protoc_error": {**H, "toolchain": "protoc", "classes": [], "files": {
        "proto/user.proto": "syntax = \"proto3\";\n\nmessage User {\n  string name = 1;\n  strng email = 2;  // EXPECT\n}\n"},
        "cmd": "protoc --python_out=/tmp proto/user.proto"},
    "h4_protoc_import": {**H, "toolchain": "protoc", "classes": [], "files": {
        "api.proto": "syntax = \"proto3\";\nimport \"missing.proto\";  // EXPECT\nmessage A { int32 x = 1; }\n"},
        "cmd": "protoc --python_out=/tmp api.proto"},
    "h4_perlcritic": {**H, "toolchain": "perlcritic", "classes": ["loc_at_line"], "files": {
        "lib/App.pm": "package App;\nuse strict;\nuse warnings;\nsub run {\n  my $x = shift;\n  return eval \"$x + 1\";  # EXPECT\n}\n1;\n"},
        "cmd": "perlcritic --severity 3 lib/App.pm"},
    "h4_perlcritic_verbose": {**H, "toolchain": "perlcritic", "classes": ["loc_at_line"], "files": {
        "bin/tool.pl": "#!/usr/bin/perl\nuse strict;\nuse warnings;\nopen FH, \"<x\";  # EXPECT\nprint <FH>;\n"},
        "cmd": "perlcritic --severity 4 --verbose 8 bin/tool.pl"},
    "h4_msgfmt": {**H, "toolchain": "msgfmt", "classes": [], "files": {
        "po/fr.po": "msgid \"\"\nmsgstr \"Content-Type: text/plain; charset=UTF-8\\n\"\n\nmsgid \"Hello\"\nmsgstr \"Bonjour\"\n\nmsgid \"Bye\"\nmsgstr \"Au revoir\n\nmsgid \"Yes\"\nmsgstr \"Oui\"\n"},
        "expect": ["po/fr.po", 9],
        "cmd": "msgfmt -c -o /dev/null po/fr.po"},
    "h4_xmlstarlet_val": {**H, "toolchain": "xmlstarlet", "classes": [], "files": {
        "conf/app.xml": "<?xml version=\"1.0\"?>\n<app>\n  <name>x</name>\n  <port>80</prt>\n</app>\n"},
        "expect": ["conf/app.xml", 4],
        "cmd": "xmlstarlet val -e -w conf/app.xml"},
    "h4_xsltproc": {**H, "toolchain": "xsltproc", "classes": ["loc_prose"], "files": {
        "style.xsl": "<?xml version=\"1.0\"?>\n<xsl:stylesheet version=\"1.0\" xmlns:xsl=\"http://www.w3.org/1999/XSL/Transform\">\n<xsl:template match=\"/\">\n  <xsl:valueof select=\"a\"/>\n</xsl:template>\n</xsl:stylesheet>\n",
        "in.xml": "<a>1</a>\n"},
        "expect": ["style.xsl", 4],
        "cmd": "xsltproc style.xsl in.xml"},
    "h4_glslang": {**H, "toolchain": "glslang", "classes": ["loc_next_line"], "files": {
        "shaders/blur.frag": "#version 450\nlayout(location = 0) out vec4 color;\nvoid main() {\n  vec3 c = vec3(1.0);\n  color = c;  // EXPECT\n}\n"},
        "cmd": "glslangValidator shaders/blur.frag"},
    "h4_glslang_two": {**H, "toolchain": "glslang", "classes": ["loc_next_line"], "files": {
        "a.vert": "#version 450\nvoid main() {\n  float x = 1.0\n  gl_Position = vec4(x);\n}\n"},
        "expect": ["a.vert", 4],
        "cmd": "glslangValidator a.vert"},
    "h4_shfmt": {**H, "toolchain": "shfmt", "classes": [], "files": {
        "scripts/ci.sh": "#!/bin/sh\necho a\nif [ -n \"$X\" ]; then\n  echo b\nfi fi  # EXPECT\n"},
        "cmd": "shfmt -d scripts/ci.sh"},
    "h4_tsan_race": {**H, "toolchain": "tsan", "classes": ["sanitizer_no_addr"], "files": {"src/counter.c": TSAN_C},
        "cmd": "gcc -g -O0 -fsanitize=thread src/counter.c -o /tmp/h4_tsan && /tmp/h4_tsan"},
    "h4_gcc_analyzer": {**H, "toolchain": "gcc-analyzer", "classes": ["order"], "files": {
        "src/buf.c": "#include <stdlib.h>\n\nvoid fill(int *p) {\n    free(p);\n}\n\nint use(void) {\n    int *p = malloc(4);\n    if (!p) return 0;\n    fill(p);\n    return *p;  // EXPECT\n}\n"},
        "cmd": "gcc -fanalyzer -c src/buf.c -o /dev/null"},
    # ---------------------------------------------------------------- python tools
    "h4_pyflakes": {**H, "toolchain": "pyflakes", "classes": ["severity"], "files": {
        "pkg/mod.py": "import os\n\n\ndef f():\n    return undefined_name  # EXPECT\n"},
        "env": PYENV, "cmd": f"{VPY} -m pyflakes pkg/mod.py"},
    "h4_pycodestyle": {**H, "toolchain": "pycodestyle", "classes": ["severity"], "files": {
        "tools/x.py": "import os\ndef f( a):  # EXPECT\n    return a\n"},
        "env": PYENV, "cmd": f"{VPY} -m pycodestyle tools/x.py"},
    "h4_black_parse": {**H, "toolchain": "black", "classes": ["loc_after_message"], "files": {
        "src/app.py": "def f():\n    return 1\n\n\ndef g(:  # EXPECT\n    pass\n"},
        "env": PYENV, "cmd": f"{VPY} -m black --check src/app.py"},
    "h4_black_two": {**H, "toolchain": "black", "classes": ["loc_after_message"], "files": {
        "a.py": "x = 1\n", "b.py": "print 'hi'  # EXPECT\n"},
        "env": PYENV, "cmd": f"{VPY} -m black --check a.py b.py"},
    "h4_codespell": {**H, "toolchain": "codespell", "classes": [], "files": {
        "docs/guide.md": "# Guide\n\nThis is teh guide.  EXPECT\n"},
        "env": PYENV, "cmd": f"{VPY} -m codespell_lib docs/guide.md"},
    "h4_rstlint": {**H, "toolchain": "rst-lint", "classes": [], "files": {
        "README.rst": "Title\n=====\n\nSome text.\n\n  indented oops\nback\n"},
        "expect": ["README.rst", 7],
        "env": PYENV, "cmd": f"{VPY} -c 'import sys; from restructuredtext_lint.cli import main; sys.exit(main())' README.rst"},
    "h4_doc8": {**H, "toolchain": "doc8", "classes": [], "files": {
        "docs/index.rst": "Index\n=====\n\nA line with trailing space \n"},
        "expect": ["docs/index.rst", 4],
        "env": PYENV, "cmd": f"{VPY} -m doc8 docs/index.rst"},
    "h4_jinja_undefined": {**H, "toolchain": "jinja2", "classes": ["order", "template"], "files": {
        "templates/page.html": "<h1>{{ title }}</h1>\n<ul>\n{% for x in items %}\n<li>{{ x.name | upper }}</li>\n{% endfor %}\n{{ footer.text.strip() }}  {# EXPECT #}\n",
        "render.py": "import jinja2\n\nenv = jinja2.Environment(loader=jinja2.FileSystemLoader('templates'), undefined=jinja2.StrictUndefined)\n\n\ndef main():\n    print(env.get_template('page.html').render(title='t', items=[]))\n\n\nmain()\n"},
        "env": PYENV, "cmd": f"{VPY} render.py"},
    "h4_jinja_syntax": {**H, "toolchain": "jinja2", "classes": ["template"], "files": {
        "templates/base.html": "<html>\n{% block body %}\n<p>{{ name }</p>  {# EXPECT #}\n{% endblock %}\n</html>\n",
        "build.py": "import jinja2\n\nenv = jinja2.Environment(loader=jinja2.FileSystemLoader('templates'))\nenv.get_template('base.html')\n"},
        "env": PYENV, "cmd": f"{VPY} build.py"},
    "h4_cython": {**H, "toolchain": "cython", "classes": ["excerpt"], "files": {
        "fast/core.pyx": "def add(int a, int b):\n    cdef int c = a + b\n    return c\n\ndef bad():\n    cdef int x = 'str'  # EXPECT\n    return x\n"},
        "env": PYENV, "cmd": f"{VPY} -m cython -3 fast/core.pyx -o /tmp/h4_core.c"},
    "h4_cython_undeclared": {**H, "toolchain": "cython", "classes": ["excerpt"], "files": {
        "m.pyx": "cdef class A:\n    cdef int n\n\ndef f(A a):\n    cdef int k = a.n\n    return k + undeclared_thing  # EXPECT\n"},
        "env": PYENV, "cmd": f"{VPY} -m cython -3 m.pyx -o /tmp/h4_m.c"},
    "h4_json_tool": {**H, "toolchain": "python-json-tool", "classes": ["loc_command_file", "loc_line_column"], "files": {
        "config/settings.json": "{\n  \"name\": \"x\",\n  \"port\": 80\n  \"debug\": true\n}\n"},
        "expect": ["config/settings.json", 4],
        "cmd": f"{VPY} -m json.tool config/settings.json"},
    "h4_tomllib": {**H, "toolchain": "python-tomllib", "classes": ["loc_command_file", "loc_line_column"], "files": {
        "pyproject.toml": "[project]\nname = \"x\"\nversion = 1.0.0\n"},
        "expect": ["pyproject.toml", 3],
        "cmd": f"{VPY} -c \"import tomllib,sys; tomllib.load(open(sys.argv[1],'rb'))\" pyproject.toml"},
    "h4_python_logging_lineno": {**H, "toolchain": "python-logging-lineno", "classes": ["own_log_lines"], "files": {
        "svc/db.py": "import logging\n\nlog = logging.getLogger(__name__)\n\n\ndef connect(url):\n    log.info('connecting to %s', url)\n    log.info('pool ready')\n    raise ConnectionError('refused: ' + url)  # EXPECT\n",
        "main.py": "import logging\n\nfrom svc.db import connect\n\nlogging.basicConfig(format='%(levelname)s %(pathname)s:%(lineno)d %(message)s', level=logging.INFO)\nlogging.info('start')\nconnect('db://x')\n"},
        "cmd": f"{VPY} main.py"},
    "h4_python_logging_error_line": {**H, "toolchain": "python-logging-lineno", "classes": ["own_log_lines", "severity"], "files": {
        "jobs/run.py": "import logging\n\nlogging.basicConfig(format='[%(levelname)s:%(filename)s:%(lineno)d] %(message)s', level=logging.INFO)\nlog = logging.getLogger()\nlog.info('loading')\nlog.info('3 jobs')\nlog.error('job 2 failed: bad input')  # EXPECT\nlog.info('done')\nraise SystemExit(1)\n"},
        "cmd": f"{VPY} jobs/run.py"},
    # ---------------------------------------------------------------- javascript tools
    "h4_nunjucks_syntax": {**H, "toolchain": "nunjucks", "classes": ["loc_bracket_line", "template"], "files": {
        "views/page.njk": "<ul>\n{% for x in items %}\n<li>{{ x }</li>\n{% endfor %}\n</ul>\n",
        "render.js": "const nunjucks = require('nunjucks');\nnunjucks.configure('views');\nconsole.log(nunjucks.render('page.njk', {items: [1]}));\n"},
        "expect": ["views/page.njk", 3],
        "env": NODE_ENV, "cmd": "node render.js"},
    "h4_ejs": {**H, "toolchain": "ejs", "classes": ["template", "excerpt"], "files": {
        "views/user.ejs": "<h1><%= title %></h1>\n<ul>\n<% items.forEach(function(x) { %>\n  <li><%= x.profile.name %></li>\n<% }) %>\n</ul>\n",
        "render.js": "const ejs = require('ejs');\nejs.renderFile('views/user.ejs', {title: 't', items: [{}]}, (err, out) => {\n  if (err) { console.error(err.stack || err); process.exit(1); }\n  console.log(out);\n});\n"},
        "expect": ["views/user.ejs", 4],
        "env": NODE_ENV, "cmd": "node render.js"},
    "h4_ejs_cli": {**H, "toolchain": "ejs", "classes": ["template", "excerpt"], "files": {
        "tpl/mail.ejs": "Hello <%= name %>\n<% if (vip) { %>\nVIP <%= perks.join(', ') %>\n<% } %>\n"},
        "expect": ["tpl/mail.ejs", 3],
        "cmd": f"{BIN}/ejs tpl/mail.ejs -i '{{\"name\":\"a\",\"vip\":true}}'"},
    "h4_handlebars": {**H, "toolchain": "handlebars", "classes": ["loc_command_file"], "files": {
        "templates/card.hbs": "<div>\n  {{#if user}}\n    {{user.name}}\n  {{/iff}}\n</div>\n"},
        "expect": ["templates/card.hbs", 2],
        "cmd": f"{BIN}/handlebars templates/card.hbs -f /dev/null"},
    "h4_terser": {**H, "toolchain": "terser", "classes": ["loc_comma_column"], "files": {
        "dist/app.js": "function a(x) {\n  return x + 1;\n}\nvar b = a(2;  // EXPECT\n"},
        "cmd": f"{BIN}/terser dist/app.js -o /dev/null"},
    "h4_uglify": {**H, "toolchain": "uglify-js", "classes": ["loc_comma_column"], "files": {
        "lib/util.js": "var x = {\n  a: 1,\n  b: 2,,\n};  // EXPECT (uglify reports where the name was expected)\n"},
        "cmd": f"{BIN}/uglifyjs lib/util.js -o /dev/null"},
    "h4_acorn": {**H, "toolchain": "acorn", "classes": ["loc_command_file", "loc_after_message"], "files": {
        "src/entry.js": "const a = 1;\nconst b = 2;\nconst c = a +* b;  // EXPECT\n"},
        "cmd": f"{BIN}/acorn --ecma2020 src/entry.js"},
    "h4_jsyaml": {**H, "toolchain": "js-yaml", "classes": ["loc_command_file", "excerpt"], "files": {
        "deploy/app.yaml": "name: app\nreplicas: 2\nports: [80, 443\nother: 1\n"},
        "expect": ["deploy/app.yaml", 4],
        "cmd": f"{BIN}/js-yaml deploy/app.yaml"},
    "h4_jsonlint": {**H, "toolchain": "jsonlint", "classes": ["loc_command_file", "excerpt"], "files": {
        "data/pkg.json": "{\n  \"a\": 1,\n  \"b\": [1, 2,]\n}\n"},
        "expect": ["data/pkg.json", 3],
        "cmd": f"{BIN}/jsonlint data/pkg.json"},
    "h4_csslint": {**H, "toolchain": "csslint", "classes": ["loc_line_col_words", "severity"], "files": {
        "css/main.css": ".a { color: red; }\n.b { colr: blue; }\n.c { width: 10px; padding: 2px; }\n.d { color: #ff; }\n"},
        "expect": ["css/main.css", 2],
        "cmd": f"{BIN}/csslint --errors=known-properties css/main.css"},
    "h4_stylus": {**H, "toolchain": "stylus", "classes": ["excerpt"], "files": {
        "styles/site.styl": "body\n  color red\n  .a\n    width foo(\n"},
        "expect": ["styles/site.styl", 4],
        "cmd": f"{BIN}/stylus --print styles/site.styl"},
    "h4_stylus_undefined": {**H, "toolchain": "stylus", "classes": ["excerpt"], "files": {
        "app.styl": "pad(n)\n  padding n\n.a\n  pad(2px)\n  margin undefined-mixin-call(3) + (1px / 0)\n.b\n  @import 'nofile'\n"},
        "expect": ["app.styl", 5],
        "cmd": f"{BIN}/stylus --print app.styl"},
    "h4_html_validate": {**H, "toolchain": "html-validate", "classes": ["loc_rows"], "files": {
        "public/about.html": "<!DOCTYPE html>\n<html lang=\"en\">\n<head><title>a</title></head>\n<body>\n<p><div>x</div></p>\n</body>\n</html>\n"},
        "expect": ["public/about.html", 5],
        "cmd": f"{BIN}/html-validate public/about.html"},
    "h4_node_esm_missing": {**H, "toolchain": "node-esm", "classes": ["order"], "files": {
        "src/index.mjs": "import { helper } from './util.mjs';  // EXPECT\nconsole.log(helper());\n",
        "src/util.mjs": "export function other() { return 1; }\n"},
        "cmd": "node src/index.mjs"},
    "h4_terraform_fmt": {**H, "toolchain": "terraform", "classes": ["loc_prose"], "files": {
        "infra/main.tf": "variable \"name\" {\n  type = string\n}\n\nresource \"null\" \"x\" {\n  name = var.name\n  count = \n}\n"},
        "expect": ["infra/main.tf", 7],
        "cwd": "infra", "cmd": "terraform fmt -check -no-color"},
    "h4_terraform_validate": {**H, "toolchain": "terraform", "classes": ["loc_prose"], "files": {
        "main.tf": "locals {\n  a = 1\n  b = local.a +\n}\n"},
        "expect": ["main.tf", 3],
        "cmd": "terraform fmt -no-color -check main.tf"},
    # ---------------------------------------------------------------- more (second pass, still before any parser change)
    "h4_tabnanny": {**H, "toolchain": "tabnanny", "classes": ["loc_space_quote"], "files": {
        "pkg/legacy.py": "def f():\n    if True:\n        x = 1\n\ty = 2  # EXPECT\n    return x\n"},
        "cmd": f"{VPY} -m tabnanny pkg/legacy.py"},
    "h4_tabnanny_verbose": {**H, "toolchain": "tabnanny", "classes": ["loc_prose"], "files": {
        "tool.py": "import os\nif True:\n    x = 1\n\ty = 2  # EXPECT\n"},
        "cmd": f"{VPY} -m tabnanny -v tool.py"},
    "h4_msgfmt_duplicate": {**H, "toolchain": "msgfmt", "classes": ["order"], "files": {
        "po/de.po": "msgid \"\"\nmsgstr \"Content-Type: text/plain; charset=UTF-8\\n\"\n\nmsgid \"Yes\"\nmsgstr \"Ja\"\n\nmsgid \"Yes\"\nmsgstr \"Jawohl\"\n"},
        "expect": ["po/de.po", 7],
        "cmd": "msgfmt -c -o /dev/null po/de.po"},
    "h4_jq_undefined_function": {**H, "toolchain": "jq", "classes": ["loc_command_file"], "files": {
        "q.jq": "# pick names\n.items[]\n| select(.ok)\n| nosuchfn(.name)  # EXPECT\n",
        "in.json": "{\"items\": []}\n"},
        "cmd": "jq -f q.jq in.json"},
    "h4_xmlstarlet_two": {**H, "toolchain": "xmlstarlet", "classes": [], "files": {
        "a.xml": "<a><b/></a>\n", "b.xml": "<?xml version=\"1.0\"?>\n<root>\n  <x attr=\"1\" attr=\"2\"/>\n</root>\n"},
        "expect": ["b.xml", 3],
        "cmd": "xmlstarlet val -e a.xml b.xml"},
    "h4_bison_two_files_warning": {**H, "toolchain": "bison", "classes": ["severity"], "files": {
        "g.y": "%token A B\n%%\ns: A | A ;\nt: B ;  /* EXPECT */\n%%\n"},
        "cmd": "bison -Wall -Werror -o /dev/null g.y"},
    "h4_sqlite_bail_second": {**H, "toolchain": "sqlite3", "classes": ["loc_command_file", "loc_near_line"], "files": {
        "q.sql": "create table a (x int);\ninsert into a values (1);\nselect x from a;\nselect y from a;  -- EXPECT\n"},
        "cmd": "sqlite3 -bail :memory: < q.sql"},
    "h4_perl_critic_two_files": {**H, "toolchain": "perlcritic", "classes": ["loc_at_line"], "files": {
        "lib/A.pm": "package A;\nuse strict;\nuse warnings;\nsub f { return 1 }\n1;\n",
        "lib/B.pm": "package B;\nuse strict;\nuse warnings;\nsub g { my @a = (1); return sort @a; }  # EXPECT\nsub h { return eval \"1\" }\n1;\n"},
        "cmd": "perlcritic --severity 5 lib/A.pm lib/B.pm"},
    "h4_csslint_two": {**H, "toolchain": "csslint", "classes": ["loc_line_col_words"], "files": {
        "css/a.css": ".a { color: red; }\n", "css/b.css": ".b {\n  colr: red;\n}\n"},
        "expect": ["css/b.css", 2],
        "cmd": f"{BIN}/csslint --errors=known-properties --format=compact css/a.css css/b.css"},
}
