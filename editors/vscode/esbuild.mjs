// Bundles the extension and vscode-languageclient into one file, so the .vsix needs no node_modules.
import { build } from "esbuild";

await build({
  entryPoints: ["src/extension.ts"],
  bundle: true,
  outfile: "dist/extension.js",
  external: ["vscode"], // provided by the editor at run time
  platform: "node",
  format: "cjs",
  target: "node20", // VS Code 1.93 runs extensions on Node 20
  sourcemap: false,
  minify: process.argv.includes("--minify"),
  logLevel: "warning",
});
