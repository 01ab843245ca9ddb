// Builds the npm package's JavaScript (`npm run build`, run by `prepack`): tsc emits dist/
// from mod.ts, testing.ts, cli.ts, lib/, telemetry/ and stores/redis.ts (tsconfig.build.json, relative `.ts` imports
// rewritten to `.js`), and this script rewrites the relative `.ts` specifiers tsc leaves in
// the `.d.ts` files, so plain Node ≥ 20 and tsc consumers need neither tsx nor
// `allowImportingTsExtensions`. Then esbuild replaces tsc's dist/cli.js with the CLI as one
// file plus its ACP part (issue 21; see buildCli below), and a bin that starts `hook-bridge`
// from a V8 code cache (issue 24; see buildBridge below). Plain JavaScript: runs on Node
// without tsx.
import { Buffer } from "node:buffer";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
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

await buildCli();
await buildBridge();

/**
 * dist/cli.js: one esbuild bundle of cli.ts and everything `run` and `hooks` load
 * (53 modules as tsc emits them; Node resolves, reads and links each one at every start), and
 * dist/cli-acp.js, what only `acp` loads (lib/acp/ and the console redirection), imported
 * when `acp` is chosen, so that no other command reads or parses it.
 *
 * The ACP file shares the main bundle's modules instead of holding copies of its own: two
 * copies of lib/ in one process would mean two `AgentError` classes (`instanceof` fails in
 * lib/cli/main.ts) and two sets of live stdio servers. So each module of the main bundle
 * that the ACP code imports is, in cli-acp.js, a stub that reads that module's namespace
 * from a table dist/cli.js puts on `globalThis[Symbol.for("sprout-agent/cli-modules")]`
 * before cli.ts runs. Importing dist/cli.js itself from cli-acp.js would share them too, but
 * where the entry was reached through a symlink (`--preserve-symlinks-main`) that import
 * could resolve to a second instance, which would run the CLI a second time.
 */
async function buildCli() {
  const esbuild = createRequire(import.meta.url)("esbuild");
  const TABLE = "sprout-agent/cli-modules";
  const ACP = "lib/acp/server.ts";
  const common = {
    absWorkingDir: root,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    logLevel: "warning",
    metafile: true,
  };
  // The ACP server, imported by lib/cli/acp.ts: left to a dynamic import of ./cli-acp.js.
  const acpExternal = {
    name: "acp-external",
    setup(build) {
      build.onResolve(
        { filter: /\/acp\/server\.ts$/ },
        (args) =>
          relative(root, resolve(args.resolveDir, args.path)) === ACP
            ? { path: "./cli-acp.js", external: true }
            : undefined,
      );
    },
  };
  // The tracing setup (lib/cli/tracing.ts imports it when OTEL_* ask for traces): left to
  // tsc's dist/telemetry/otel-env.js, so the bundle never holds the OpenTelemetry imports.
  const TELEMETRY = "telemetry/otel-env.ts";
  const telemetryExternal = {
    name: "telemetry-external",
    setup(build) {
      build.onResolve(
        { filter: /\/telemetry\/otel-env\.ts$/ },
        (args) =>
          relative(root, resolve(args.resolveDir, args.path)) === TELEMETRY
            ? { path: "./telemetry/otel-env.js", external: true }
            : undefined,
      );
    },
  };
  const main = (contents) => ({
    ...common,
    stdin: { contents, resolveDir: root, sourcefile: "dist-cli-entry.js", loader: "js" },
    plugins: [acpExternal, telemetryExternal],
  });
  // 1. The main bundle's modules (without the table yet).
  const first = await esbuild.build({ ...main(`import "./cli.ts";`), write: false, outfile: join(dist, "cli.js") });
  const mainModules = new Set(Object.keys(first.metafile.inputs));
  // 2. cli-acp.js: the ACP modules bundled, every main-bundle module they import a stub.
  const shared = new Set();
  const acp = await esbuild.build({
    ...common,
    entryPoints: [join(root, ACP)],
    outfile: join(dist, "cli-acp.js"),
    plugins: [{
      name: "cli-modules",
      setup(build) {
        build.onResolve({ filter: /^\./ }, (args) => {
          const path = relative(root, resolve(args.resolveDir, args.path));
          if (!mainModules.has(path)) return undefined;
          shared.add(path);
          return { path, namespace: "cli-modules" };
        });
        build.onLoad({ filter: /.*/, namespace: "cli-modules" }, (args) => ({
          contents: `module.exports = globalThis[Symbol.for(${JSON.stringify(TABLE)})][${JSON.stringify(args.path)}];`,
          loader: "js",
        }));
      },
    }],
  });
  // 3. dist/cli.js: the table of those modules, then cli.ts.
  const names = [...shared].sort();
  const table = [
    ...names.map((path, i) => `import * as m${i} from ${JSON.stringify(`./${path}`)};`),
    `globalThis[Symbol.for(${JSON.stringify(TABLE)})] = {`,
    ...names.map((path, i) => `  ${JSON.stringify(path)}: m${i},`),
    `};`,
  ].join("\n");
  const final = await esbuild.build({
    ...main(`import "./dist-cli-modules.js";\nimport "./cli.ts";`),
    outfile: join(dist, "cli.js"),
    banner: { js: "#!/usr/bin/env node" },
    plugins: [acpExternal, telemetryExternal, {
      name: "cli-modules-table",
      setup(build) {
        build.onResolve(
          { filter: /^\.\/dist-cli-modules\.js$/ },
          () => ({ path: "table", namespace: "cli-modules-table" }),
        );
        build.onLoad(
          { filter: /.*/, namespace: "cli-modules-table" },
          () => ({ contents: table, resolveDir: root, loader: "js" }),
        );
      },
    }],
  });
  // No module in both files, and no ACP module in the main one.
  const acpModules = Object.keys(acp.metafile.inputs).filter((path) => !path.startsWith("cli-modules:"));
  const both = acpModules.filter((path) => path in final.metafile.inputs);
  if (both.length > 0 || acpModules.length === 0) {
    console.error(`build: dist/cli.js and dist/cli-acp.js both hold ${both.join(", ") || "nothing of ACP"}`);
    process.exit(1);
  }
  chmodSync(join(dist, "cli.js"), 0o755);
}

/**
 * dist/bin.cjs, the package's `bin`, and dist/cli-bridge.cjs, `hook-bridge` alone as one
 * CommonJS bundle. A host spawns a command hook on every event, so the bridge's start is paid
 * per event, and most of it, under Node, is compiling JavaScript, which a V8 code cache saves
 * (docs/BRIDGE.md, docs/PERFORMANCE.md). Node 20 has no code cache for ES modules
 * (`module.enableCompileCache` came with Node 22.1; `vm.SourceTextModule` needs
 * `--experimental-vm-modules`), so the bridge is CommonJS, which dist/bin.cjs compiles with
 * `vm.Script` and the cache; every other command, and every other runtime, imports
 * dist/cli.js. The bin is CommonJS as well: an ES module entry costs Node its ES module loader,
 * about 2.5 ms of each event. The cache file is named after the bridge bundle's content hash,
 * written into dist/bin.cjs here, because V8 checks a cache against the source's length, not
 * its text.
 */
async function buildBridge() {
  const esbuild = createRequire(import.meta.url)("esbuild");
  // No `import()` in the bundle: a script compiled by `vm.Script` needs an
  // `importModuleDynamically` for it, which on Node 20 is experimental (a warning on stderr)
  // and is lost when the script comes from a code cache. The bridge imports only `node:`
  // builtins dynamically, so each becomes a `require` (its exports are the namespace's): at
  // the top of a module (lib/cli/files.ts: what a Node before 20.16 loads; dist/bin.cjs runs
  // this bundle only where process.getBuiltinModule exists) without the `await`, which
  // CommonJS lacks, elsewhere in a resolved promise.
  const topLevelImport = /^((?:let|const) [^\n]*?)await import\(("node:[a-z_/]+")\)/gm;
  const builtinImport = /(?<!typeof )\bimport\(("node:[a-z_/]+")\)/g; // not in a type
  const bridge = await esbuild.build({
    absWorkingDir: root,
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    packages: "external",
    logLevel: "warning",
    metafile: true,
    write: false,
    outfile: join(dist, "cli-bridge.cjs"),
    stdin: {
      contents: [
        `import process from "node:process";`,
        `import { hookBridge } from "./lib/cli/hook-bridge.ts";`,
        `import { exitWhenDone } from "./lib/cli/io.ts";`,
        `exitWhenDone(hookBridge(process.argv.slice(3)));`,
      ].join("\n"),
      resolveDir: root,
      sourcefile: "dist-cli-bridge-entry.js",
      loader: "js",
    },
    plugins: [{
      name: "top-level-require",
      setup(build) {
        build.onLoad({ filter: /\/lib\/.*\.ts$/ }, (args) => ({
          contents: readFileSync(args.path, "utf8").replace(topLevelImport, "$1require($2)")
            .replace(builtinImport, "Promise.resolve(require($1))"),
          loader: "ts",
        }));
      },
    }],
  });
  const external = Object.values(bridge.metafile.outputs).flatMap((o) => o.imports)
    .filter((i) => i.external && !i.path.startsWith("node:"));
  if (external.length > 0) {
    console.error(
      `build: dist/cli-bridge.cjs imports ${
        external.map((i) => i.path).join(", ")
      }: only node: builtins may stay outside`,
    );
    process.exit(1);
  }
  // esbuild's __toESM copies every property of a module it wraps, and `import process from
  // "node:process"` (ten modules) wraps `process` each time: about 0.6 ms of each event. A
  // builtin is wrapped instead as an object whose prototype is the module: the same reads.
  const wrapped = /__toESM\((require\("node:[a-z_/]+"\))(?:, 1)?\)/g;
  const text = bridge.outputFiles[0].text.replace(wrapped, "__builtin($1)")
    .replace(
      /^var __toESM = /m,
      "var __builtin = (mod) => Object.create(mod, { default: { value: mod, enumerable: true } });\n$&",
    );
  if (!text.includes("__builtin(require(") || /__toESM\(require\("node:/.test(text)) {
    console.error("build: dist/cli-bridge.cjs: esbuild's __toESM of node: builtins is not where it was");
    process.exit(1);
  }
  const code = Buffer.from(text);
  const dynamic = /\bimport\(/.exec(text);
  if (dynamic !== null) {
    const at = text.slice(dynamic.index, dynamic.index + 60);
    console.error(
      `build: dist/cli-bridge.cjs has a dynamic import (${at}…), which vm.Script cannot run from a code cache`,
    );
    process.exit(1);
  }
  writeFileSync(join(dist, "cli-bridge.cjs"), code);
  const hash = createHash("sha256").update(code).digest("hex").slice(0, 16);
  const bin = readFileSync(join(root, "scripts", "bin.cjs"), "utf8");
  if (!bin.includes("@BRIDGE_HASH@")) {
    console.error("build: scripts/bin.cjs has no @BRIDGE_HASH@ for the bundle's hash");
    process.exit(1);
  }
  writeFileSync(join(dist, "bin.cjs"), bin.replaceAll("@BRIDGE_HASH@", hash));
  chmodSync(join(dist, "bin.cjs"), 0o755);
}
