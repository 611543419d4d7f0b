const assert = require("node:assert");
const { Counter } = require("./counter");
assert.strictEqual(new Counter().incrementAll(["a", "b"]), 2);
console.log("ok");
