// Import this first in a test: from then on `require("vscode")` loads the fake module.

import Module from "node:module";
import * as path from "node:path";

const FAKE = path.join(__dirname, "vscode.js");
type Resolve = (request: string, ...rest: unknown[]) => string;
const loader = Module as unknown as { _resolveFilename: Resolve };
const original = loader._resolveFilename;

loader._resolveFilename = function (request: string, ...rest: unknown[]): string {
  return request === "vscode" ? FAKE : original.call(this, request, ...rest);
};
