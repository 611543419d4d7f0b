"""Node.js, node --test, TypeScript, ESLint."""

from __future__ import annotations

TSC = "$TOOLS/npm/node_modules/.bin/tsc"
ESLINT = "$TOOLS/npm/node_modules/.bin/eslint"
ESLINTRC = (
    '{"root": true, "env": {"node": true, "es2022": true}, "parserOptions": {"ecmaVersion": 2022, "sourceType": "module"},'
    ' "rules": {"no-unused-vars": "warn", "no-undef": "error", "eqeqeq": "warn", "no-unreachable": "error"}}\n'
)
ESLINT_ENV = {"ESLINT_USE_FLAT_CONFIG": "false"}
TSCONFIG = '{"compilerOptions": {"strict": true, "noEmit": true, "target": "es2020"}, "include": ["src"]}\n'

LINT_A = "const fs = require('fs');\n\nfunction size(p) {\n  if (p == null) return 0;\n  return fsx.statSync(p).size;  // EXPECT\n}\n\nmodule.exports = { size };\n"
LINT_B = "export function pick(obj, key) {\n  const unused = 1;\n  return obj[kye];  // EXPECT\n}\n"

CASES: dict[str, dict] = {
    "node_type_error": {"toolchain": "node", "files": {
        "src/cart.js": "function total(cart) {\n  return cart.items.reduce((s, i) => s + i.price, 0);  // EXPECT\n}\nmodule.exports = { total };\n",
        "index.js": "const { total } = require('./src/cart');\nconsole.log(total({}));\n"}, "cmd": "node index.js"},
    "node_reference_async": {"toolchain": "node", "files": {
        "server.js": "async function handler(req) {\n  await null;\n  return respond(req);  // EXPECT\n}\n\nhandler({}).catch((e) => { console.error(e); process.exit(1); });\n"},
        "cmd": "node server.js"},
    "node_unhandled_rejection": {"toolchain": "node", "files": {
        "jobs.js": "async function run(job) {\n  if (!job.id) throw new Error('job without id');  // EXPECT\n}\n\nrun({});\n"},
        "cmd": "node jobs.js"},
    "node_syntax_required": {"toolchain": "node", "classes": ["node_syntax_header"], "files": {
        "lib/parse.js": "function parse(s) {\n  return JSON.parse(s;  // EXPECT\n}\nmodule.exports = { parse };\n",
        "main.js": "const { parse } = require('./lib/parse');\nconsole.log(parse('1'));\n"}, "cmd": "node main.js"},
    "node_syntax_main": {"toolchain": "node", "classes": ["node_syntax_header"], "files": {
        "app.js": "const a = 1;\nconst b = {\n  x: 1,\n  y: 2,,  // EXPECT\n};\nconsole.log(a, b);\n"}, "cmd": "node app.js"},
    "node_esm_missing_export": {"toolchain": "node", "classes": ["node_syntax_header", "file_url"], "files": {
        "package.json": '{"type": "module"}\n',
        "src/util.js": "export function helper() { return 1; }\n",
        "src/main.js": "import { helpr } from './util.js';  // EXPECT\nconsole.log(helpr());\n"}, "cmd": "node src/main.js"},
    "node_esm_throw": {"toolchain": "node", "classes": ["file_url"], "files": {
        "package.json": '{"type": "module"}\n',
        "src/config.js": "export function load(env) {\n  if (!env.PORT) {\n    throw new TypeError('PORT is required');  // EXPECT\n  }\n  return Number(env.PORT);\n}\n",
        "src/index.js": "import { load } from './config.js';\n\nconsole.log(load({}));\n"}, "cmd": "node src/index.js"},
    "node_esm_syntax": {"toolchain": "node", "classes": ["node_syntax_header", "file_url"], "files": {
        "package.json": '{"type": "module"}\n',
        "src/math.js": "export const sq = (x) => x * x;\nexport const cube = (x) => {\n  return x * x * x\n;;\n  }}  // EXPECT\n",
        "src/index.js": "import { sq } from './math.js';\nconsole.log(sq(2));\n"}, "cmd": "node src/index.js"},
    "node_test_tap": {"toolchain": "node-test", "classes": ["node_test_tap"], "files": {
        "math.js": "exports.mul = (a, b) => a + b;\n",
        "test/math.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\nconst { mul } = require('../math');\n\ntest('mul', () => {\n  assert.strictEqual(mul(2, 3), 6);  // EXPECT\n});\n"},
        "cmd": "node --test --test-reporter=tap test/"},
    "node_test_tap_throw": {"toolchain": "node-test", "classes": ["node_test_tap"], "files": {
        "lib/slug.js": "exports.slug = (s) => s.toLowerCase().replace(/ /g, '-');  // EXPECT\n",
        "test/slug.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\nconst { slug } = require('../lib/slug');\n\ntest('ok', () => assert.equal(slug('A B'), 'a-b'));\ntest('null', () => assert.equal(slug(null), ''));\n"},
        "cmd": "node --test --test-reporter=tap test/"},
    "node_test_default": {"toolchain": "node-test", "classes": ["node_test_tap"], "files": {
        "test/str.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\n\ntest('upper', () => {\n  assert.deepStrictEqual('ab'.toUpperCase(), 'Ab');  // EXPECT\n});\n"},
        "cmd": "node --test test/"},
    "node_tmux": {"toolchain": "node", "classes": ["terminal_readback"], "mode": "tmux", "files": {
        "src/handlers/notifications/sendWeeklyDigestEmailToSubscribers.js": (
            "function renderDigestForSubscriber(subscriber) {\n  return subscriber.preferences.digest.sections.map((s) => s.title);  // EXPECT\n}\n"
            "module.exports = { renderDigestForSubscriber };\n"),
        "index.js": "const { renderDigestForSubscriber } = require('./src/handlers/notifications/sendWeeklyDigestEmailToSubscribers');\nrenderDigestForSubscriber({ preferences: {} });\n"},
        "cmd": "node index.js"},
    "node_color_force": {"toolchain": "node", "classes": ["ansi"], "files": {
        "color.js": "const util = require('util');\nfunction fail(x) {\n  return x.y.z;  // EXPECT\n}\ntry { fail({}); } catch (e) { console.error(util.inspect(e, { colors: true })); process.exit(1); }\n"},
        "cmd": "node color.js"},
    # ---------------------------------------------------------------- tsc
    "tsc_missing_prop": {"toolchain": "tsc", "files": {
        "tsconfig.json": TSCONFIG,
        "src/user.ts": "interface User { id: number; name: string }\n\nexport function show(u: User): string {\n  return u.nmae;  // EXPECT\n}\n"},
        "cmd": TSC},
    "tsc_pretty_args": {"toolchain": "tsc", "classes": ["ansi"], "files": {
        "tsconfig.json": TSCONFIG,
        "src/math.ts": "export function add(a: number, b: number): number {\n  return a + b;\n}\n\nadd(1, '2');  // EXPECT\n"},
        "cmd": f"{TSC} --pretty"},
    # ---------------------------------------------------------------- ESLint
    "eslint_stylish": {"toolchain": "eslint", "classes": ["eslint_stylish"], "files": {".eslintrc.json": ESLINTRC, "lib/size.js": LINT_A},
        "cmd": f"{ESLINT} --no-color lib", "env": ESLINT_ENV},
    "eslint_stylish_two_files": {"toolchain": "eslint", "classes": ["eslint_stylish"], "files": {
        ".eslintrc.json": ESLINTRC, "src/a.js": "const x = 1;\nexport default 2;\n", "src/pick.js": LINT_B},
        "cmd": f"{ESLINT} --no-color src", "env": ESLINT_ENV},
    "eslint_stylish_color": {"toolchain": "eslint", "classes": ["eslint_stylish", "ansi"], "files": {".eslintrc.json": ESLINTRC, "lib/size.js": LINT_A},
        "cmd": f"{ESLINT} --color lib", "env": ESLINT_ENV},
    "eslint_compact": {"toolchain": "eslint", "classes": ["eslint_compact"], "files": {".eslintrc.json": ESLINTRC, "lib/size.js": LINT_A},
        "cmd": f"{ESLINT} -f compact lib", "env": ESLINT_ENV},
    "eslint_compact_two": {"toolchain": "eslint", "classes": ["eslint_compact"], "files": {
        ".eslintrc.json": ESLINTRC, "src/a.js": "const x = 1;\nexport default 2;\n", "src/pick.js": LINT_B},
        "cmd": f"{ESLINT} -f compact src", "env": ESLINT_ENV},
    "eslint_unix": {"toolchain": "eslint", "classes": ["eslint_unix"], "files": {".eslintrc.json": ESLINTRC, "lib/size.js": LINT_A},
        "cmd": f"{ESLINT} -f unix lib", "env": ESLINT_ENV},
    "eslint_unix_two": {"toolchain": "eslint", "classes": ["eslint_unix"], "files": {
        ".eslintrc.json": ESLINTRC, "src/a.js": "const x = 1;\nexport default 2;\n", "src/pick.js": LINT_B},
        "cmd": f"{ESLINT} -f unix src", "env": ESLINT_ENV},
}
