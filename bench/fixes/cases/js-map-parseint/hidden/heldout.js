const assert = require("node:assert");
const { toNumbers } = require("./parse");
assert.deepStrictEqual(toNumbers("7"), [7]);
assert.deepStrictEqual(toNumbers("08,09,10,11"), [8, 9, 10, 11]);
