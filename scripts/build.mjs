// Builds the npm package's JavaScript (`npm run build`, run by `prepack`): tsc emits dist/
// from mod.ts, testing.ts, cli.ts and lib/ (tsconfig.build.json, relative `.ts` imports
// rewritten to `.js`), then this script gives dist/cli.js a Node shebang and rewrites the
// relative `.ts` specifiers tsc leaves in the `.d.ts` files, so plain Node ≥ 20 and tsc
// consumers need neither tsx nor `allowImportingTsExtensions`. Plain JavaScript: runs on
// Node without tsx.
import { spawnSync } from "node:child_process";
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = join(root, "dist");
rmSync(dist, { recursive: true, force: true });

const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
const built = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], { stdio: "inherit" });
if (built.status !== 0) {
  console.error("build: tsc failed");
  process.exit(built.status ?? 1);
}

// `from "./x.ts"`, `import("./x.ts")` → `.js` in declarations.
const relativeTs = /((?:from|import)\s*\(?\s*["'])(\.{1,2}\/[^"']*?)\.ts(["'])/g;
function walk(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) walk(path);
    else if (entry.name.endsWith(".d.ts")) {
      const text = readFileSync(path, "utf8");
      const fixed = text.replace(relativeTs, "$1$2.js$3");
      if (fixed !== text) writeFileSync(path, fixed);
    }
  }
}
walk(dist);

const cli = join(dist, "cli.js");
const lines = readFileSync(cli, "utf8").split("\n");
if (lines[0]?.startsWith("#!")) lines.shift();
writeFileSync(cli, ["#!/usr/bin/env node", ...lines].join("\n"));
chmodSync(cli, 0o755);
