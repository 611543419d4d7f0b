const assert = require("node:assert");
const config = require("./config.json");
assert.strictEqual(config.timeoutMs, 2000);
