const assert = require("node:assert");
const { toNumbers } = require("./parse");
assert.deepStrictEqual(toNumbers("10,20,30"), [10, 20, 30]);
console.log("ok");
