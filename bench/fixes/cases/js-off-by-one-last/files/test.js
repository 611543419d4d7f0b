const assert = require("node:assert");
const { last } = require("./list");
assert.strictEqual(last([1, 2, 3]), 3);
console.log("ok");
