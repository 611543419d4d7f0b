const assert = require("node:assert");
const { total } = require("./sum");
(async () => {
  assert.strictEqual(await total([]), 0);
  assert.strictEqual(await total(["pear", "pear", "apple"]), 11);
})().catch((err) => { console.error(err); process.exit(1); });
