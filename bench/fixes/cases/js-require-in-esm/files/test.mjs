import assert from "node:assert";
import { shortId } from "./slug.mjs";
assert.strictEqual(shortId("hello"), "2cf24dba");
console.log("ok");
