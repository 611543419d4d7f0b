const assert = require("node:assert");
const { displayName } = require("./user");
assert.strictEqual(displayName({ login: "ada" }), "ada");
console.log("ok");
