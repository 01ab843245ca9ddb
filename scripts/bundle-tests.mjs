// Compiles the test files for the Node runner of `npm test` (scripts/test.sh): each
// tests/*.test.ts becomes one ES module in node_modules/.cache/sprout-agent-tests/suite/, built
// by esbuild, the compiler tsx itself uses, so the tests run as they do under `node --import
// tsx --test`, without a loader in each of the runner's processes (Node 20 cannot strip types;
// tsx costs each test process about 0.6 s of CPU to start). Packages stay imports, resolved
// from the repository's node_modules; every module's `import.meta.url` is its source file's, so
// paths computed from it (tests/helpers/runtime.ts `repoRoot`) are the source tree's.
// Usage: node scripts/bundle-tests.mjs [--groups N] tests/a.test.ts tests/b.test.ts …
// Prints the outputs, one per line. With --groups N it prints N group modules instead, each
// importing every Nth compiled file (round robin in the order given), so that Node's runner
// starts N test processes rather than one per file: each process costs Node about 0.25 s of
// CPU to start and load the modules the files share, and Bun's runner shows that the files
// run together in one process. Top-level `before`/`after` hooks then run once per group, at
// its start and end (no file uses a top-level `beforeEach`/`afterEach`).
// Plain JavaScript: runs on Node without tsx.
import { readFile } from "node:fs/promises";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const outdir = join(root, "node_modules", ".cache", "sprout-agent-tests", "suite");
const args = process.argv.slice(2);
const groups = args[0] === "--groups" ? Number(args[1]) : 0;
const entries = groups > 0 ? args.slice(2) : args;
if (entries.length === 0 || (args[0] === "--groups" && !(groups > 0))) {
  console.error("usage: node scripts/bundle-tests.mjs [--groups N] tests/x.test.ts …");
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
const outputs = entries.map((e) => join(outdir, relative(root, e)).replace(/\.ts$/, ".mjs"));
if (groups === 0) {
  for (const out of outputs) console.log(out);
} else {
  for (let g = 0; g < Math.min(groups, outputs.length); g++) {
    const mine = outputs.filter((_, i) => i % groups === g);
    const file = join(outdir, `group-${g + 1}.test.mjs`);
    writeFileSync(file, mine.map((out) => `import ${JSON.stringify(pathToFileURL(out).href)};\n`).join(""));
    console.log(file);
  }
}
