const assert = require("node:assert");
const { displayName } = require("./user");
assert.strictEqual(displayName({ login: "g", profile: { name: "Grace" } }), "Grace");
assert.strictEqual(displayName({ login: "h", profile: {} }), "h");
