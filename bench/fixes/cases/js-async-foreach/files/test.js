const assert = require("node:assert");
const { total } = require("./sum");
total(["apple", "pear"]).then((sum) => {
  assert.strictEqual(sum, 7);
  console.log("ok");
}).catch((err) => { console.error(err); process.exit(1); });
