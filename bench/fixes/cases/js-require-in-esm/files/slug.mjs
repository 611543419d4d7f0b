const { createHash } = require("node:crypto");

export function shortId(text) {
  return createHash("sha256").update(text).digest("hex").slice(0, 8);
}
