const assert = require("node:assert");
const { Counter } = require("./counter");
const c = new Counter();
c.incrementAll([1]);
assert.strictEqual(c.incrementAll([1, 2, 3]), 4);
