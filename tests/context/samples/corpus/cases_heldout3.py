"""Held-out batch 3 (issue 27): toolchains and formats no earlier sample has, written and run once
before the parser was changed for them. Stored apart, under tests/context/samples/heldout3/, with
meta "batch": "heldout3"; bench/bench_frames.py prints its accuracy.

Tools: Debian 12 (bats, cppcheck, ant, moreutils, libxml2-utils, yamllint, gdb, maven with a warm
~/.m2), npm packages under $TOOLS/node_modules, PyPI packages under $TOOLS/py (PYTHONPATH)."""

from __future__ import annotations

H = {"batch": "heldout3", "out": "heldout3"}
BIN = "$TOOLS/node_modules/.bin"
PYENV = {"PYTHONPATH": "$TOOLS/py"}
VPY = "/work/main/.venv/bin/python"
PYTEST = f"{VPY} -m pytest -p no:cacheprovider -p no:randomly -q --rootdir ."
NODE_ENV = {"NODE_PATH": "$TOOLS/node_modules"}
POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>demo</groupId><artifactId>demo</artifactId><version>1</version>
  <properties><maven.compiler.source>17</maven.compiler.source><maven.compiler.target>17</maven.compiler.target>
  <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties>
  <build><plugins><plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId>
  <version>3.11.0</version></plugin><plugin><groupId>org.apache.maven.plugins</groupId>
  <artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin></plugins></build>
</project>
"""
ANT = """<project name="demo" default="compile">
  <target name="compile">
    <mkdir dir="build"/>
    <javac srcdir="src" destdir="build" includeantruntime="false"/>
  </target>
</project>
"""
STYLELINT_RC = '{"rules": {"color-no-invalid-hex": true, "block-no-empty": [true, {"severity": "warning"}], "declaration-block-no-duplicate-properties": true}}\n'
JEST_PKG = '{"name": "demo", "version": "1.0.0", "jest": {"testEnvironment": "node"}}\n'
MOCHA_PKG = '{"name": "demo", "version": "1.0.0"}\n'
THREADS_C = """#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static int *table;

static void *idle(void *arg) {
    (void)arg;
    sleep(10);
    return NULL;
}

static void *worker(void *arg) {
    int n = *(int *)arg;
    usleep(100000);
    table[n] = 1;  // EXPECT
    return NULL;
}

int main(void) {
    pthread_t a, b;
    int n = 3;
    pthread_create(&a, NULL, idle, NULL);
    pthread_create(&b, NULL, worker, &n);
    pthread_join(b, NULL);
    pthread_join(a, NULL);
    printf("%d\\n", table[0]);
    return 0;
}
"""

CASES: dict[str, dict] = {
    # ---------------------------------------------------------------- location shapes
    "h3_maven_compile": {**H, "toolchain": "maven", "classes": ["loc_bracket", "severity"], "files": {
        "pom.xml": POM,
        "src/main/java/demo/App.java": "package demo;\n\npublic class App {\n    @Deprecated static void old() {}\n    public static void main(String[] a) {\n        old();\n        int n = count(a);  // EXPECT\n    }\n}\n"},
        "cmd": "mvn -o -q -B compile"},
    "h3_maven_two_files": {**H, "toolchain": "maven", "classes": ["loc_bracket"], "files": {
        "pom.xml": POM,
        "src/main/java/demo/A.java": "package demo;\n\nclass A {\n    String f() { return B.name(1); }  // EXPECT\n}\n",
        "src/main/java/demo/B.java": "package demo;\n\nclass B {\n    static String name(String s) { return s; }\n    int g() { return undefinedB; }\n}\n"},
        "cmd": "mvn -o -B compile"},
    "h3_tslint_verbose": {**H, "toolchain": "tslint", "classes": ["loc_bracket"], "files": {
        "tslint.json": '{"rules": {"no-var-keyword": true, "semicolon": [true, "always"]}}\n',
        "src/util.ts": "export function f(a: number) {\n  var x = a  // EXPECT\n  return x;\n}\n"},
        "cmd": "$TOOLS/ts4/node_modules/.bin/tslint -t verbose -c tslint.json src/util.ts"},
    "h3_tslint_prose": {**H, "toolchain": "tslint", "classes": ["loc_bracket"], "files": {
        "tslint.json": '{"rules": {"no-debugger": true, "triple-equals": true}}\n',
        "lib/check.ts": "export function ok(a: any) {\n  debugger;  // EXPECT\n  return a == 1;\n}\n"},
        "cmd": "$TOOLS/ts4/node_modules/.bin/tslint -c tslint.json lib/check.ts"},
    "h3_rollup_parse": {**H, "toolchain": "rollup", "classes": ["loc_paren_space"], "files": {
        "src/util.js": "export function twice(x) {\n  return x * 2;\n}\n",
        "src/main.js": "import { twice } from './util.js';\nconsole.log(twice(2)\nexport const y = 1;  // EXPECT\n"},
        "cmd": f"{BIN}/rollup src/main.js --file /tmp/qls-h3-bundle.js --format es"},
    "h3_rollup_missing_export": {**H, "toolchain": "rollup", "classes": ["loc_paren_space"], "files": {
        "src/util.js": "export function twice(x) {\n  return x * 2;\n}\n",
        "src/main.js": "import { thrice } from './util.js';  // EXPECT\nconsole.log(thrice(2));\n"},
        "cmd": f"{BIN}/rollup src/main.js --file /tmp/qls-h3-bundle.js --format es"},
    "h3_babel_syntax": {**H, "toolchain": "babel", "classes": ["loc_after_message"], "files": {
        "src/app.js": "const a = 1;\nfunction f() {\n  return a +;  // EXPECT\n}\n"},
        "cmd": f"{BIN}/babel src --out-dir /tmp/qls-h3-babel"},
    "h3_babel_jsx_unclosed": {**H, "toolchain": "babel", "classes": ["loc_after_message"], "files": {
        "lib/a.js": "export const a = 1;\n",
        "lib/b.js": "export function b(x) {\n  if (x {  // EXPECT\n    return 1;\n  }\n}\n"},
        "cmd": f"{BIN}/babel lib --out-dir /tmp/qls-h3-babel2"},
    "h3_prettier_check": {**H, "toolchain": "prettier", "classes": ["loc_after_message"], "files": {
        "src/ok.js": "export const ok = 1;\n",
        "src/bad.js": "export const list = [1, 2,\nexport const x = 3;  // EXPECT\n"},
        "cmd": f"{BIN}/prettier --check src"},
    "h3_prettier_css": {**H, "toolchain": "prettier", "classes": ["loc_after_message"], "files": {
        "styles/site.css": "body {\n  color: red;\n}\n\na { color: blue;  /* EXPECT */\n"},
        "cmd": f"{BIN}/prettier --check styles/site.css"},
    "h3_sass_undefined": {**H, "toolchain": "sass", "classes": ["loc_space_lc"], "files": {
        "scss/_vars.scss": "$base: 4px;\n",
        "scss/main.scss": "@use 'vars';\n\n.box {\n  margin: vars.$base;\n  padding: $gap;  // EXPECT\n}\n"},
        "cmd": f"{BIN}/sass scss/main.scss /tmp/qls-h3-out.css"},
    "h3_sass_in_partial": {**H, "toolchain": "sass", "classes": ["loc_space_lc", "first_failure"], "files": {
        "scss/_mixins.scss": "@mixin pad($n) {\n  padding: $n * 1px + 1em;  // EXPECT\n}\n",
        "scss/main.scss": "@use 'mixins';\n\n.a {\n  @include mixins.pad(2);\n}\n"},
        "cmd": f"{BIN}/sass scss/main.scss /tmp/qls-h3-out2.css"},
    "h3_stylelint": {**H, "toolchain": "stylelint", "classes": ["loc_rows", "severity"], "files": {
        ".stylelintrc.json": STYLELINT_RC,
        "css/a.css": ".a {}\n\n.b {\n  color: #ggg;  /* EXPECT */\n}\n"},
        "cmd": f"{BIN}/stylelint 'css/**/*.css'"},
    "h3_stylelint_two_files": {**H, "toolchain": "stylelint", "classes": ["loc_rows", "severity"], "files": {
        ".stylelintrc.json": STYLELINT_RC,
        "css/a.css": ".a {}\n",
        "css/b.css": ".b {\n  color: red;  /* EXPECT */\n  color: blue;\n}\n"},
        "cmd": f"{BIN}/stylelint 'css/**/*.css'",
        "note": "label corrected after the first run: stylelint reports a duplicate property at its first declaration"},
    "h3_yamllint": {**H, "toolchain": "yamllint", "classes": ["loc_rows", "severity"], "files": {
        ".yamllint": "extends: default\nrules:\n  document-start: disable\n",
        "conf/app.yaml": "name: demo\nitems:\n  - a\n  - b\nname: again  # EXPECT\n"},
        "cmd": "yamllint conf/"},
    "h3_yamllint_warning_first": {**H, "toolchain": "yamllint", "classes": ["loc_rows", "severity"], "files": {
        "ci.yml": "on: push\njobs:\n  build:\n    steps:\n      - run: echo hi\n    name: x\n    name: y  # EXPECT\n"},
        "cmd": "yamllint ci.yml"},
    "h3_sqlfluff": {**H, "toolchain": "sqlfluff", "classes": ["loc_table"], "env": PYENV, "files": {
        "models/orders.sql": "select id,\n    name\nfrom orders\nwhere id = 1\nand  total >10  -- EXPECT\n"},
        "cmd": "python3 -m sqlfluff lint --dialect ansi --rules LT01 models/orders.sql"},
    "h3_sqlfluff_parse": {**H, "toolchain": "sqlfluff", "classes": ["loc_table"], "env": PYENV, "files": {
        "q/ok.sql": "select 1\n",
        "q/bad.sql": "select a,\n  b\nfrom t\nwhere a = = 1  -- EXPECT\n"},
        "cmd": "python3 -m sqlfluff lint --dialect ansi --rules LT01,PRS q/"},
    "h3_pytest_gha_annotate": {**H, "toolchain": "gha-annotations", "classes": ["loc_keyvalue"],
        "env": {"PYTHONPATH": "$TOOLS/py2", "GITHUB_ACTIONS": "true"}, "files": {
        "tests/test_price.py": "def price(x):\n    return x * 1.2\n\n\ndef test_price():\n    assert price(10) == 12.5  # EXPECT\n"},
        "cmd": f"{PYTEST} -p pytest_github_actions_annotate_failures"},
    "h3_gha_echo_annotation": {**H, "toolchain": "gha-annotations", "classes": ["loc_keyvalue"], "files": {
        "scripts/check.sh": "#!/bin/bash\nset -u\nn=$(grep -c TODO src/main.c)\necho \"::warning file=src/main.c,line=2::$n TODO left\"\necho \"::error file=src/main.c,line=4,col=5,title=build::missing return\"\nexit 1\n",
        "src/main.c": "int f(void) {\n    /* TODO */\n    int x = 1;\n    x++;  /* EXPECT */\n}\n"},
        "cmd": "bash scripts/check.sh"},
    "h3_structlog_kv": {**H, "toolchain": "structlog", "classes": ["loc_keyvalue"], "env": PYENV, "files": {
        "svc/app.py": "import structlog\nfrom structlog.processors import CallsiteParameter, CallsiteParameterAdder\n\nstructlog.configure(processors=[CallsiteParameterAdder([CallsiteParameter.FILENAME, CallsiteParameter.LINENO]), structlog.processors.KeyValueRenderer(key_order=['event'])])\nlog = structlog.get_logger()\n\n\ndef main():\n    log.info('starting')\n    log.error('config missing', key='db')  # EXPECT\n\n\nmain()\n"},
        "cmd": "python3 svc/app.py"},
    "h3_bats": {**H, "toolchain": "bats", "classes": ["loc_prose"], "files": {
        "lib.sh": "add() { echo $(( $1 + $2 )); }\n",
        "test/add.bats": "setup() { source lib.sh; }\n\n@test 'adds' {\n  run add 1 2\n  [ \"$output\" = 4 ]  # EXPECT\n}\n"},
        "cmd": "bats test/add.bats"},
    "h3_bats_two_failures": {**H, "toolchain": "bats", "classes": ["loc_prose", "first_failure"], "files": {
        "test/t.bats": "@test 'one' {\n  false  # EXPECT\n}\n\n@test 'two' {\n  [ 1 -eq 2 ]\n}\n\n@test 'three' {\n  true\n}\n"},
        "cmd": "bats test/t.bats"},
    "h3_bats_tap": {**H, "toolchain": "bats", "classes": ["loc_prose"], "files": {
        "test/t.bats": "@test 'ok' {\n  true\n}\n\n@test 'bad' {\n  [ -f /nonexistent ]  # EXPECT\n}\n"},
        "cmd": "bats --tap test/t.bats"},
    "h3_jshint": {**H, "toolchain": "jshint", "classes": ["loc_prose"], "files": {
        "src/a.js": "function f(x) {\n  return x == null\n}\n",
        "src/b.js": "var y = 1\nif (y) {\n  z = y +;  // EXPECT\n}\n"},
        "cmd": f"{BIN}/jshint --verbose src/b.js"},
    "h3_jshint_two": {**H, "toolchain": "jshint", "classes": ["loc_prose"], "files": {
        ".jshintrc": '{"undef": true, "esversion": 6}\n',
        "lib/a.js": "const a = 1;\nfunction g() {\n  return missing + a;  // EXPECT\n}\n",
        "lib/b.js": "const b = 2\n"},
        "cmd": f"{BIN}/jshint --verbose lib"},
    "h3_lessc": {**H, "toolchain": "less", "classes": ["loc_prose"], "files": {
        "less/site.less": "@w: 10px;\n.a {\n  width: @w;\n  height: @h;  // EXPECT\n}\n"},
        "cmd": f"{BIN}/lessc less/site.less"},
    "h3_lessc_import": {**H, "toolchain": "less", "classes": ["loc_prose"], "files": {
        "less/_mix.less": ".m(@a) {\n  color: @a;\n}\n",
        "less/site.less": "@import '_mix.less';\n.a {\n  .m(red;\n}  // EXPECT\n"},
        "cmd": f"{BIN}/lessc less/site.less"},
    "h3_htmlhint": {**H, "toolchain": "htmlhint", "classes": ["loc_rows"], "files": {
        "public/index.html": "<!DOCTYPE html>\n<html>\n<head><title>x</title></head>\n<body>\n<div id=\"a\"><span></div>  <!-- EXPECT -->\n</body>\n</html>\n"},
        "cmd": f"{BIN}/htmlhint public/index.html"},
    "h3_markdownlint": {**H, "toolchain": "markdownlint", "classes": ["loc_space_lc"], "files": {
        "docs/guide.md": "# Guide\n\nSome text.\n## Usage  <!-- EXPECT -->\nrun it\n"},
        "cmd": f"{BIN}/markdownlint docs/guide.md"},
    "h3_coffee": {**H, "toolchain": "coffeescript", "files": {
        "src/app.coffee": "square = (x) -> x * x\nprint = (x) ->\n  console.log x +  # EXPECT\n"},
        "cmd": f"{BIN}/coffee -c -o /tmp/qls-h3-coffee src/app.coffee"},
    "h3_xmllint": {**H, "toolchain": "xmllint", "files": {
        "conf/site.xml": "<site>\n  <name>demo</name>\n  <port>80</prt>  <!-- EXPECT -->\n</site>\n"},
        "cmd": "xmllint --noout conf/site.xml"},
    "h3_pydocstyle": {**H, "toolchain": "pydocstyle", "classes": ["loc_space_lc"], "env": PYENV, "files": {
        "pkg/util.py": '"""Utilities."""\n\n\ndef helper(x):  # EXPECT\n    return x\n'},
        "cmd": "python3 -m pydocstyle pkg/util.py"},
    "h3_bandit": {**H, "toolchain": "bandit", "classes": ["severity"], "env": PYENV, "files": {
        "svc/run.py": "import subprocess\n\n\ndef run(cmd):\n    assert cmd\n    return subprocess.call(cmd, shell=True)  # EXPECT\n"},
        "cmd": "python3 -m bandit -q -r svc"},
    "h3_esbuild_error": {**H, "toolchain": "esbuild", "classes": ["severity"], "files": {
        "src/util.ts": "export const twice = (x: number) => x * 2;\n",
        "src/main.ts": "import { twice } from './util';\nconst n: number = twice(2;  // EXPECT\nconsole.log(n);\n"},
        "cmd": f"{BIN}/esbuild src/main.ts --bundle --outfile=/tmp/qls-h3-esb.js"},
    "h3_esbuild_warning_then_error": {**H, "toolchain": "esbuild", "classes": ["severity"], "files": {
        "src/main.js": "const a = {x: 1, x: 2};\nimport { nope } from './util.js';  // EXPECT\nconsole.log(a, nope);\n",
        "src/util.js": "export const yes = 1;\n"},
        "cmd": f"{BIN}/esbuild src/main.js --bundle --outfile=/tmp/qls-h3-esb2.js"},
    "h3_cppcheck": {**H, "toolchain": "cppcheck", "classes": ["severity"], "files": {
        "src/buf.c": "#include <string.h>\n\nvoid fill(void) {\n    char buf[4];\n    int unused;\n    buf[4] = 0;  /* EXPECT */\n}\n"},
        "cmd": "cppcheck --enable=style --quiet src/buf.c"},
    "h3_cppcheck_two": {**H, "toolchain": "cppcheck", "classes": ["severity"], "files": {
        "src/a.c": "int f(int x) {\n    int y;\n    if (x == x) return 1;\n    return 0;\n}\n",
        "src/b.c": "#include <stdlib.h>\nvoid g(void) {\n    char *p = malloc(4);\n    p[0] = 1;\n}  /* EXPECT */\n"},
        "cmd": "cppcheck --enable=style --quiet src"},
    "h3_cppcheck_template": {**H, "toolchain": "cppcheck", "classes": ["severity"], "files": {
        "lib/u.c": "int a[2];\nint get(void) {\n    int i = 0;\n    (void)i;\n    return a[2];  /* EXPECT */\n}\n"},
        "cmd": "cppcheck --enable=style --quiet --template='{severity}: {file}:{line}:{column}: {message}' lib/u.c"},
    "h3_ant_javac": {**H, "toolchain": "ant", "classes": ["severity"], "files": {
        "build.xml": ANT,
        "src/demo/Main.java": "package demo;\n\npublic class Main {\n    public static void main(String[] a) {\n        int n = a.length();  // EXPECT\n    }\n}\n"},
        "cmd": "ant -noinput -q"},
    "h3_ant_two_errors": {**H, "toolchain": "ant", "classes": ["severity"], "files": {
        "build.xml": ANT,
        "src/demo/A.java": "package demo;\n\nclass A {\n    B b = new B(1);  // EXPECT\n}\n",
        "src/demo/B.java": "package demo;\n\nclass B {\n    int x = y;\n}\n"},
        "cmd": "ant -noinput"},
    "h3_ant_fail_task": {**H, "toolchain": "ant", "classes": ["severity"], "files": {
        "build.xml": '<project name="demo" default="check">\n  <target name="check">\n    <echo message="checking"/>\n    <fail message="version not set" unless="version"/>  <!-- EXPECT -->\n  </target>\n</project>\n'},
        "cmd": "ant -noinput"},
    # ---------------------------------------------------------------- structured logs
    "h3_structlog_json_exc": {**H, "toolchain": "structlog", "classes": ["json"], "env": PYENV, "files": {
        "svc/worker.py": "import structlog\n\nstructlog.configure(processors=[structlog.processors.add_log_level, structlog.processors.format_exc_info, structlog.processors.JSONRenderer()])\nlog = structlog.get_logger()\n\n\ndef handle(job):\n    return job['payload'].decode()  # EXPECT\n\n\nlog.info('start')\ntry:\n    handle({'payload': None})\nexcept Exception:\n    log.exception('job failed')\nlog.info('next')\n"},
        "cmd": "python3 svc/worker.py"},
    "h3_structlog_dict_tb": {**H, "toolchain": "structlog", "classes": ["json"], "env": PYENV, "files": {
        "svc/__init__.py": "",
        "svc/calc.py": "def ratio(a, b):\n    return a / b  # EXPECT\n",
        "main.py": "import structlog\nfrom svc.calc import ratio\n\nstructlog.configure(processors=[structlog.processors.add_log_level, structlog.processors.dict_tracebacks, structlog.processors.JSONRenderer()])\nlog = structlog.get_logger()\ntry:\n    ratio(1, 0)\nexcept ZeroDivisionError:\n    log.exception('failed')\n"},
        "cmd": "python3 main.py"},
    "h3_jsonlogger": {**H, "toolchain": "python-json-logger", "classes": ["json"], "env": PYENV, "files": {
        "app/__init__.py": "",
        "app/db.py": "def connect(cfg):\n    return cfg['host'] + ':' + cfg['port']  # EXPECT\n",
        "run.py": "import logging\nfrom pythonjsonlogger import jsonlogger\nfrom app.db import connect\n\nh = logging.StreamHandler()\nh.setFormatter(jsonlogger.JsonFormatter('%(asctime)s %(levelname)s %(message)s'))\nlog = logging.getLogger()\nlog.addHandler(h)\nlog.setLevel(logging.INFO)\nlog.info('boot')\ntry:\n    connect({'host': 'db', 'port': 5432})\nexcept Exception:\n    log.exception('connect failed')\nlog.info('shutting down')\n"},
        "cmd": "python3 run.py"},
    "h3_loguru_serialize": {**H, "toolchain": "loguru", "classes": ["json"], "env": PYENV, "files": {
        "jobs/__init__.py": "",
        "jobs/parse.py": "def parse(s):\n    return int(s)  # EXPECT\n",
        "main.py": "import sys\nfrom loguru import logger\nfrom jobs.parse import parse\n\nlogger.remove()\nlogger.add(sys.stdout, serialize=True, backtrace=False, diagnose=False)\nlogger.info('start')\ntry:\n    parse('x')\nexcept ValueError:\n    logger.exception('parse failed')\n"},
        "cmd": "python3 main.py"},
    "h3_loguru_diagnose": {**H, "toolchain": "loguru", "classes": ["excerpt"], "env": PYENV, "files": {
        "jobs/__init__.py": "",
        "jobs/parse.py": "def parse(items):\n    total = 0\n    for s in items:\n        total += int(s)  # EXPECT\n    return total\n",
        "main.py": "import sys\nfrom loguru import logger\nfrom jobs.parse import parse\n\nlogger.remove()\nlogger.add(sys.stderr, colorize=False, backtrace=True, diagnose=True)\n\n\n@logger.catch\ndef main():\n    parse(['1', 'x'])\n\n\nmain()\n"},
        "cmd": "python3 main.py"},
    "h3_pino_err": {**H, "toolchain": "pino", "classes": ["json"], "env": NODE_ENV, "files": {
        "lib/store.js": "function load(cfg) {\n  return cfg.items.map((x) => x.id);  // EXPECT\n}\nmodule.exports = { load };\n",
        "server.js": "const pino = require('pino');\nconst { load } = require('./lib/store');\nconst log = pino();\nlog.info('listening');\ntry {\n  load({});\n} catch (err) {\n  log.error({ err }, 'load failed');\n}\nlog.info('done');\n"},
        "cmd": "node server.js"},
    "h3_node_json_console": {**H, "toolchain": "node-json-log", "classes": ["json"], "files": {
        "src/price.js": "exports.total = (items) => items.reduce((s, i) => s + i.price.amount, 0);  // EXPECT\n",
        "index.js": "const { total } = require('./src/price');\nfunction log(level, msg, extra) {\n  console.log(JSON.stringify({ ts: '2026-12-04T10:00:00Z', level, msg, ...extra }));\n}\nlog('info', 'start');\ntry {\n  total([{ price: null }]);\n} catch (e) {\n  log('error', 'total failed', { stack: e.stack });\n}\n"},
        "cmd": "node index.js"},
    "h3_python_json_frames": {**H, "toolchain": "python-json-frames", "classes": ["json"], "files": {
        "core/__init__.py": "",
        "core/rules.py": "def apply(rule, x):\n    return rule['fn'](x)  # EXPECT\n",
        "app.py": "import json, sys, traceback\nfrom core.rules import apply\n\ntry:\n    apply({}, 1)\nexcept Exception as e:\n    frames = [{'filename': f.filename, 'lineno': f.lineno, 'name': f.name} for f in traceback.extract_tb(e.__traceback__)]\n    print(json.dumps({'level': 'error', 'exc_type': type(e).__name__, 'exc_value': str(e), 'frames': frames}, indent=2))\n"},
        "cmd": "python3 app.py"},
    "h3_python_logging_json_compose": {**H, "toolchain": "python-json-log", "classes": ["json", "prefix_changing"], "files": {
        "api/__init__.py": "",
        "api/views.py": "def show(req):\n    return req['user'].name  # EXPECT\n",
        "serve.py": "import json, logging, traceback\nfrom api.views import show\n\n\nclass J(logging.Formatter):\n    def format(self, r):\n        d = {'level': r.levelname, 'msg': r.getMessage()}\n        if r.exc_info:\n            d['exc'] = ''.join(traceback.format_exception(*r.exc_info))\n        return json.dumps(d)\n\n\nh = logging.StreamHandler()\nh.setFormatter(J())\nlogging.basicConfig(level=logging.INFO, handlers=[h])\nlogging.info('ready')\ntry:\n    show({'user': None})\nexcept Exception:\n    logging.exception('request failed')\n"},
        "cmd": "python3 serve.py 2>&1 | awk '{printf \"api-1  | %s.%03dZ %s\\n\", \"2026-12-04T10:00:01\", NR*7, $0}'"},
    # ---------------------------------------------------------------- severity
    "h3_node_warning_then_error": {**H, "toolchain": "node-warnings", "classes": ["severity"], "files": {
        "lib/conf.js": "exports.read = (c) => c.path.trim();  // EXPECT\n",
        "main.js": "const { read } = require('./lib/conf');\nprocess.emitWarning('old config format', 'DeprecationWarning');\nsetTimeout(() => read({}), 10);\n"},
        "cmd": "node --trace-warnings main.js"},
    "h3_python_warnings_then_error": {**H, "toolchain": "python-warnings", "classes": ["severity"], "files": {
        "pkg/__init__.py": "",
        "pkg/old.py": "import warnings\n\n\ndef legacy():\n    warnings.warn('legacy() is deprecated', DeprecationWarning, stacklevel=2)\n    return 1\n",
        "pkg/calc.py": "from pkg.old import legacy\n\n\ndef run(d):\n    legacy()\n    return d['k']  # EXPECT\n",
        "main.py": "from pkg.calc import run\nrun({})\n"},
        "cmd": "python3 -W always main.py"},
    "h3_gha_warning_first": {**H, "toolchain": "gha-annotations", "classes": ["severity", "loc_keyvalue"], "files": {
        "lint.sh": "#!/bin/bash\necho '::group::lint'\necho '::warning file=src/a.py,line=1,col=1::unused import'\necho '::error file=src/b.py,line=3,col=9::undefined name y'\necho '::endgroup::'\nexit 1\n",
        "src/a.py": "import os\n",
        "src/b.py": "def f():\n    x = 1\n    return y  # EXPECT\n"},
        "cmd": "bash lint.sh"},
    "h3_xmllint_warning_then_error": {**H, "toolchain": "xmllint", "classes": ["severity"], "files": {
        "data/a.xml": "<?xml version=\"1.0\"?>\n<!DOCTYPE r [ <!ENTITY x \"1\"> ]>\n<r xmlns=\"rel/ns\">\n  <a>&y;</a>  <!-- EXPECT -->\n</r>\n"},
        "cmd": "xmllint --noout data/a.xml"},
    # ---------------------------------------------------------------- first failure / threads / excerpts
    "h3_jest_two_failures": {**H, "toolchain": "jest", "classes": ["first_failure", "excerpt"], "files": {
        "package.json": JEST_PKG,
        "src/sum.js": "exports.sum = (a, b) => a + b;\n",
        "test/sum.test.js": "const { sum } = require('../src/sum');\n\ntest('adds', () => {\n  expect(sum(1, 2)).toBe(4);  // EXPECT\n});\n\ntest('adds again', () => {\n  expect(sum(2, 2)).toBe(5);\n});\n"},
        "cmd": f"{BIN}/jest --ci --colors=false"},
    "h3_jest_throw_in_src": {**H, "toolchain": "jest", "classes": ["excerpt"], "files": {
        "package.json": JEST_PKG,
        "src/parse.js": "exports.parse = (s) => {\n  if (!s) throw new TypeError('empty input');  // EXPECT\n  return s.split(',');\n};\n",
        "test/parse.test.js": "const { parse } = require('../src/parse');\n\ntest('parses', () => {\n  expect(parse('')).toEqual([]);\n});\n"},
        "cmd": f"{BIN}/jest --ci"},
    "h3_mocha_two_failures": {**H, "toolchain": "mocha", "classes": ["first_failure"], "files": {
        "package.json": MOCHA_PKG,
        "lib/math.js": "exports.mul = (a, b) => a + b;\n",
        "test/math.test.js": "const assert = require('assert');\nconst { mul } = require('../lib/math');\n\ndescribe('mul', () => {\n  it('multiplies', () => {\n    assert.strictEqual(mul(2, 3), 6);  // EXPECT\n  });\n  it('multiplies by one', () => {\n    assert.strictEqual(mul(4, 1), 4);\n  });\n});\n"},
        "cmd": f"{BIN}/mocha"},
    "h3_mocha_throw": {**H, "toolchain": "mocha", "classes": ["first_failure"], "files": {
        "package.json": MOCHA_PKG,
        "lib/cfg.js": "exports.port = (c) => c.server.port;  // EXPECT\n",
        "test/cfg.test.js": "const assert = require('assert');\nconst { port } = require('../lib/cfg');\n\nit('reads the port', () => {\n  assert.equal(port({}), 80);\n});\n"},
        "cmd": f"{BIN}/mocha"},
    "h3_pytest_check_multi": {**H, "toolchain": "pytest-check", "classes": ["first_failure"], "env": PYENV, "files": {
        "tests/test_vals.py": "from pytest_check import check\n\n\ndef test_vals():\n    check.equal(1, 2)  # EXPECT\n    check.equal(3, 3)\n    check.is_true(False)\n"},
        "cmd": f"{PYTEST} -p pytest_check"},
    "h3_unittest_two_failures": {**H, "toolchain": "unittest", "classes": ["first_failure"], "files": {
        "tests/__init__.py": "",
        "tests/test_a.py": "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_one(self):\n        self.assertEqual(1 + 1, 3)  # EXPECT\n\n    def test_two(self):\n        self.assertIn('x', 'abc')\n"},
        "cmd": "python3 -m unittest discover -s tests -t ."},
    "h3_prove_two_failures": {**H, "toolchain": "prove", "classes": ["first_failure", "loc_prose"], "files": {
        "t/basic.t": "use strict;\nuse warnings;\nuse Test::More tests => 3;\n\nok(1, 'first');\nis(1 + 1, 3, 'sum');  # EXPECT\nis('a', 'b', 'letters');\n"},
        "cmd": "prove t/"},
    "h3_behave": {**H, "toolchain": "behave", "classes": ["first_failure"], "env": PYENV, "files": {
        "features/cart.feature": "Feature: cart\n  Scenario: add\n    Given an empty cart\n    When I add 2 items\n    Then the cart has 3 items\n",
        "features/steps/cart_steps.py": "from behave import given, when, then\n\n\n@given('an empty cart')\ndef empty(ctx):\n    ctx.n = 0\n\n\n@when('I add {k:d} items')\ndef add(ctx, k):\n    ctx.n += k\n\n\n@then('the cart has {k:d} items')  # EXPECT\ndef has(ctx, k):\n    assert ctx.n == k, ctx.n\n"},
        "cmd": "python3 -m behave --no-color --no-capture features"},
    "h3_gdb_threads": {**H, "toolchain": "gdb", "classes": ["threads"], "files": {"crash.c": THREADS_C},
        "cmd": "gcc -g -O0 -pthread -o crash crash.c && gdb -q -batch -ex run -ex 'thread apply all bt' ./crash"},
    "h3_gdb_bt_full": {**H, "toolchain": "gdb", "classes": ["excerpt"], "files": {
        "div.c": "#include <stdio.h>\n\nstatic int share(int total, int parts) {\n    return total / parts;  // EXPECT\n}\n\nint main(int argc, char **argv) {\n    (void)argv;\n    printf(\"%d\\n\", share(10, argc - 1));\n    return 0;\n}\n"},
        "cmd": "gcc -g -O0 -o div div.c && gdb -q -batch -ex run -ex 'bt full' ./div"},
    "h3_faulthandler_threads": {**H, "toolchain": "faulthandler", "classes": ["threads"], "files": {
        "native/__init__.py": "",
        "native/peek.py": "import ctypes\n\n\ndef peek(addr):\n    return ctypes.string_at(addr)  # EXPECT\n",
        "main.py": "import faulthandler, threading, time\nfrom native.peek import peek\n\nfaulthandler.enable()\n\n\ndef worker():\n    time.sleep(0.1)\n    peek(0)\n\n\nt = threading.Thread(target=worker)\nt.start()\nt.join()\n"},
        "cmd": "python3 main.py"},
    "h3_faulthandler_timeout": {**H, "toolchain": "faulthandler", "classes": ["threads"], "files": {
        "svc/__init__.py": "",
        "svc/lock.py": "import threading\n\nL = threading.Lock()\n\n\ndef critical():\n    with L:\n        with L:  # EXPECT\n            pass\n",
        "main.py": "import faulthandler, sys\nfrom svc.lock import critical\n\nfaulthandler.dump_traceback_later(1, exit=True)\ncritical()\n"},
        "cmd": "python3 main.py"},
    # ---------------------------------------------------------------- prefixes that change on every line
    "h3_buildkit_steps": {**H, "toolchain": "docker-buildkit", "classes": ["prefix_changing"], "files": {
        "app/__init__.py": "",
        "app/settings.py": "import os\n\nDEBUG = os.environ['DEBUG']  # EXPECT\n",
        "manage.py": "import app.settings\n"},
        "cmd": "(echo '#7 [4/5] RUN python manage.py check'; python3 manage.py 2>&1 | awk '{printf \"#7 %.3f %s\\n\", 0.211 + NR * 0.013, $0}'; echo '#7 ERROR: process \"/bin/sh -c python manage.py check\" did not complete successfully: exit code: 1')"},
    "h3_ts_moreutils": {**H, "toolchain": "moreutils-ts", "classes": ["prefix_changing"], "files": {
        "lib/__init__.py": "",
        "lib/net.py": "def port(url):\n    return int(url.split(':')[2])  # EXPECT\n",
        "job.py": "from lib.net import port\nprint('connecting')\nport('http://host')\n"},
        "cmd": "python3 job.py 2>&1 | ts '%b %d %H:%M:%.S'"},
    "h3_ts_incremental": {**H, "toolchain": "moreutils-ts", "classes": ["prefix_changing"], "files": {
        "src/index.js": "const { load } = require('./load');\nload('{bad');\n",
        "src/load.js": "exports.load = (s) => JSON.parse(s);  // EXPECT\n"},
        "cmd": "node src/index.js 2>&1 | ts -s '[%.s]'"},
    "h3_journal_prefix": {**H, "toolchain": "journald", "classes": ["prefix_changing"], "files": {
        "daemon/__init__.py": "",
        "daemon/loop.py": "def tick(state):\n    state['n'] += 1  # EXPECT\n",
        "run.py": "from daemon.loop import tick\ntick({})\n"},
        "cmd": "python3 run.py 2>&1 | awk '{printf \"Dec 04 10:%02d:%02d host myapp[%d]: %s\\n\", 12, NR, 4242, $0}'"},
    "h3_step_counter": {**H, "toolchain": "ci-step-counter", "classes": ["prefix_changing"], "files": {
        "pkg/__init__.py": "",
        "pkg/io.py": "def read(path):\n    with open(path) as f:  # EXPECT\n        return f.read()\n",
        "main.py": "from pkg.io import read\nread('/nonexistent/config.ini')\n"},
        "cmd": "python3 main.py 2>&1 | awk '{printf \"[step %d/%d] %s\\n\", NR, 9, $0}'"},
    "h3_k8s_prefix_ts": {**H, "toolchain": "kubectl-logs", "classes": ["prefix_changing"], "files": {
        "src/handler.js": "exports.handle = (req) => req.body.user.id;  // EXPECT\n",
        "src/server.js": "const { handle } = require('./handler');\nconsole.log('listening on 8080');\nhandle({ body: {} });\n"},
        "cmd": "node src/server.js 2>&1 | awk '{printf \"[pod/web-7d9f/app] 2026-12-04T10:00:%02d.%06dZ %s\\n\", 5, NR*1371, $0}'"},
    "h3_gha_timestamps": {**H, "toolchain": "gha-log", "classes": ["prefix_changing"], "files": {
        "tests/test_io.py": "import json\n\n\ndef test_load():\n    assert json.loads('{}')['k'] == 1  # EXPECT\n"},
        "cmd": f"{PYTEST} --tb=short 2>&1 | awk '{{printf \"2026-12-04T10:00:01.%07dZ %s\\n\", NR*12345, $0}}'"},
    "h3_elapsed_prefix": {**H, "toolchain": "elapsed-prefix", "classes": ["prefix_changing"], "files": {
        "tool/__init__.py": "",
        "tool/cli.py": "import sys\n\n\ndef main(argv):\n    return argv[1].upper()  # EXPECT\n",
        "run.py": "import sys\nfrom tool.cli import main\nmain(sys.argv)\n"},
        "cmd": "python3 run.py 2>&1 | awk '{printf \"%8.3fs %s\\n\", NR * 0.137, $0}'"},
}
