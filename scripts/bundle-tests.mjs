// Compiles the test files for the Node runner of `npm test` (scripts/test.sh): each
// tests/*.test.ts becomes one ES module in node_modules/.cache/sprout-agent-tests/suite/, built
// by esbuild, the compiler tsx itself uses, so the tests run as they do under `node --import
// tsx --test`, without a loader in each of the runner's processes (Node 20 cannot strip types;
// tsx costs each test process about 0.6 s of CPU to start). Packages stay imports, resolved
// from the repository's node_modules; every module's `import.meta.url` is its source file's, so
// paths computed from it (tests/helpers/runtime.ts `repoRoot`) are the source tree's.
// Usage: node scripts/bundle-tests.mjs tests/a.test.ts tests/b.test.ts … (prints the outputs).
// Plain JavaScript: runs on Node without tsx.
import { readFile } from "node:fs/promises";
import { readFileSync, rmSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const outdir = join(root, "node_modules", ".cache", "sprout-agent-tests", "suite");
const entries = process.argv.slice(2);
if (entries.length === 0) {
  console.error("usage: node scripts/bundle-tests.mjs tests/x.test.ts …");
  process.exit(2);
}
rmSync(outdir, { recursive: true, force: true });

const sourceUrls = {
  name: "source-import-meta-url",
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, async (args) => {
      const text = await readFile(args.path, "utf8");
      const contents = text.replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href));
      return { contents, loader: "ts" };
    });
  },
};

// The options tests/helpers/runtime.ts builds test children with: ES modules for Node 20,
// packages left as imports, dynamic imports kept lazy (code splitting).
const nodeBuild = JSON.parse(readFileSync(join(root, "scripts", "esbuild-node.json"), "utf8"));

await build({
  ...nodeBuild,
  entryPoints: entries.map((e) => join(root, e)),
  outdir,
  outbase: root,
  logLevel: "warning",
  plugins: [sourceUrls],
});
for (const e of entries) console.log(join(outdir, relative(root, e)).replace(/\.ts$/, ".mjs"));
