import assert from "node:assert";
import { shortId } from "./slug.mjs";
assert.strictEqual(shortId("").length, 8);
