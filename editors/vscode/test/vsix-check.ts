// Checks a packaged .vsix: the manifest's entry point is inside, it loads, and it needs nothing
// at run time but `vscode` and Node's own modules (the package ships without node_modules).
// Usage: node out/test/vsix-check.js qwen-lsp.vsix

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import Module, { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { inflateRawSync } from "node:zlib";

/** Reads every entry of a zip archive through its central directory. */
export function readZip(archive: Buffer): Map<string, Buffer> {
  const EOCD = 0x06054b50;
  let end = archive.length - 22;
  while (end >= 0 && archive.readUInt32LE(end) !== EOCD) end--; // skips a trailing comment
  if (end < 0) throw new Error("not a zip archive");
  const count = archive.readUInt16LE(end + 10);
  let entry = archive.readUInt32LE(end + 16);
  const files = new Map<string, Buffer>();
  for (let i = 0; i < count; i++) {
    const method = archive.readUInt16LE(entry + 10);
    const compressedSize = archive.readUInt32LE(entry + 20);
    const nameLength = archive.readUInt16LE(entry + 28);
    const extraLength = archive.readUInt16LE(entry + 30);
    const commentLength = archive.readUInt16LE(entry + 32);
    const local = archive.readUInt32LE(entry + 42);
    const name = archive.toString("utf8", entry + 46, entry + 46 + nameLength);
    const dataStart = local + 30 + archive.readUInt16LE(local + 26) + archive.readUInt16LE(local + 28);
    const data = archive.subarray(dataStart, dataStart + compressedSize);
    if (method !== 0 && method !== 8) throw new Error(`${name}: unsupported compression ${method}`);
    files.set(name, method === 8 ? inflateRawSync(data) : Buffer.from(data));
    entry += 46 + nameLength + extraLength + commentLength;
  }
  return files;
}

export function checkVsix(file: string): string[] {
  const files = readZip(readFileSync(file));
  const manifest = JSON.parse(requireEntry(files, "extension/package.json").toString("utf8"));
  const mainPath = `extension/${path.posix.normalize(manifest.main).replace(/^\.\//, "")}`;
  const main = requireEntry(files, mainPath.endsWith(".js") ? mainPath : `${mainPath}.js`);

  const leaked = [...files.keys()].filter((name) => /(^|\/)(node_modules|src|test|out)\//.test(name));
  if (leaked.length > 0) throw new Error(`unexpected files in the package: ${leaked.join(", ")}`);

  // Bare requires left in the bundle must be provided by the editor or by Node.
  const required = new Set([...main.toString("utf8").matchAll(/\brequire\(["']([^"']+)["']\)/g)].map((m) => m[1]));
  const builtins = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
  const missing = [...required].filter((m) => m !== "vscode" && !builtins.has(m));
  if (missing.length > 0) throw new Error(`the bundle requires modules the .vsix lacks: ${missing.join(", ")}`);

  // And it really loads and exports the entry points.
  stubVscode();
  const dir = mkdtempSync(path.join(tmpdir(), "qwen-vsix-"));
  try {
    const copy = path.join(dir, "extension.js");
    writeFileSync(copy, main);
    const loaded = require(copy) as Record<string, unknown>;
    for (const name of ["activate", "deactivate"]) {
      if (typeof loaded[name] !== "function") throw new Error(`${mainPath} does not export ${name}()`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return [...files.keys()];
}

/**
 * vscode-languageclient subclasses many `vscode` classes when it loads, more than the unit-test
 * fake has; loading only needs every name to be some constructible class.
 */
function stubVscode(): void {
  const anything = (): unknown =>
    new Proxy(class {}, {
      get: (target, key) => (key in target ? Reflect.get(target, key) : anything()),
    });
  const stub = path.join(tmpdir(), "vscode-stub-for-vsix-check.js");
  require.cache[stub] = { id: stub, filename: stub, loaded: true, exports: anything() } as NodeJS.Module;
  const loader = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string };
  const original = loader._resolveFilename;
  loader._resolveFilename = function (request: string, ...rest: unknown[]): string {
    return request === "vscode" ? stub : original.call(this, request, ...rest);
  };
}

function requireEntry(files: Map<string, Buffer>, name: string): Buffer {
  const data = files.get(name);
  if (!data) throw new Error(`${name} is missing from the package`);
  return data;
}

if (require.main === module) {
  const file = process.argv[2];
  if (!file) throw new Error("usage: vsix-check <file.vsix>");
  const names = checkVsix(file);
  console.log(`${file}: ok (${names.length} files: ${names.join(", ")})`);
}
