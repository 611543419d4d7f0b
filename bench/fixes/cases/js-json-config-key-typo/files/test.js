const assert = require("node:assert");
const { retries } = require("./client");
assert.strictEqual(retries(), 5);
console.log("ok");
