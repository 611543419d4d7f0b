const assert = require("node:assert");
const { last } = require("./list");
assert.strictEqual(last(["a"]), "a");
assert.strictEqual(last([]), undefined);
