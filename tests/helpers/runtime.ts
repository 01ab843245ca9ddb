/**
 * Which runtime runs the tests, and how to start a TypeScript file under that same runtime.
 * End-to-end tests spawn the agent under the runtime that runs them, so each of the three
 * runners exercises its own runtime once.
 * @module
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative, resolve } from "node:path";
import process from "node:process";

/** The repository root, with a trailing slash. */
export const repoRoot: string = new URL("../../", import.meta.url).pathname;

/** The runtime executing this test file. */
export type Runtime = "node" | "bun" | "deno";

/** Detects the current runtime. */
export function runtime(): Runtime {
  const g = globalThis as { Deno?: unknown; Bun?: unknown };
  if (g.Deno !== undefined) return "deno";
  if (g.Bun !== undefined) return "bun";
  return "node";
}

/**
 * The argv that runs `file` (a .ts path) under `which` (default: the current runtime).
 * Bun and Deno run TypeScript as is. Node 20 cannot strip types: a file of this repository
 * runs as an esbuild bundle of it ({@link nodeBundle}), any other through `tsx`.
 */
export function tsCommand(file: string, which: Runtime = runtime()): string[] {
  if (which === "deno") return [denoPath(), "run", "-A", "--quiet", file];
  if (which === "bun") return [bunPath(), file];
  const bundle = nodeBundle(file);
  if (bundle !== undefined) return [nodePath(), bundle];
  return [nodePath(), "--import", `${repoRoot}node_modules/tsx/dist/loader.mjs`, file];
}

const bundleDir = `${repoRoot}node_modules/.cache/sprout-agent-tests`;
const bundles = new Map<string, string | undefined>();

/**
 * The path of a plain-JavaScript build of `file` (a .ts file inside the repository) that Node
 * runs without a loader, built with esbuild, the compiler `tsx` itself uses, so the code runs
 * as it does under `tsx`: the same transform, the repository's own modules bundled, every
 * package left as an import (resolved from the repository's node_modules, as for the source),
 * and every dynamic `import()` still lazy (code splitting: a module loaded on demand, such as the
 * todo-enforcer's Redis store, stays a separate chunk, and the packages it imports load only
 * with it). Why: Node under `tsx` needs about 0.45 s of wall time and 0.6 s of CPU to start, a
 * build 0.17 s; the end-to-end tests start a few hundred agents and servers.
 *
 * Builds live in node_modules/.cache/sprout-agent-tests/<name>-<hash>/, the hash taken from
 * the sources' paths, modification times and sizes; `<name>.json` names the current one and
 * its sources, and a source that changed makes a new build. A build is never rewritten in
 * place, so concurrent test processes never see one half-written.
 * Returns undefined for a file outside the repository (its packages resolve elsewhere), and
 * for one whose modules read `import.meta` (built, they would see the build's location).
 */
export function nodeBundle(file: string): string | undefined {
  const source = resolve(repoRoot, file);
  const rel = relative(repoRoot, source);
  if (rel.startsWith("..") || rel.startsWith("node_modules/") || !rel.endsWith(".ts")) return undefined;
  if (bundles.has(source)) return bundles.get(source);
  const name = rel.replaceAll("/", "__").slice(0, -3);
  const manifest = join(bundleDir, `${name}.json`);
  let built = readManifest(manifest);
  if (built === undefined) {
    mkdirSync(bundleDir, { recursive: true });
    const tmp = join(bundleDir, `${name}.${process.pid}.tmp`);
    rmSync(tmp, { recursive: true, force: true });
    const esbuild = createRequire(import.meta.url)("esbuild") as typeof import("esbuild");
    // scripts/esbuild-node.json: the options scripts/bundle-tests.mjs builds the test files with.
    const options = JSON.parse(readFileSync(join(repoRoot, "scripts/esbuild-node.json"), "utf8")) as object;
    const result = esbuild.buildSync({
      ...options,
      entryPoints: { [name]: source },
      outdir: tmp,
      absWorkingDir: repoRoot,
      metafile: true,
      logLevel: "silent",
    });
    const inputs: BundleManifest["inputs"] = Object.keys(result.metafile.inputs).map((path) => {
      const stat = statSync(join(repoRoot, path));
      return [path, Math.trunc(stat.mtimeMs), stat.size];
    });
    const usable = !Object.keys(result.metafile.outputs).some((out) =>
      readFileSync(join(repoRoot, out), "utf8").includes("import.meta")
    );
    const hash = createHash("sha256").update(JSON.stringify(inputs)).digest("hex").slice(0, 12);
    const dir = `${name}-${hash}`;
    try {
      renameSync(tmp, join(bundleDir, dir));
    } catch {
      rmSync(tmp, { recursive: true, force: true }); // another process built the same sources
    }
    built = { inputs, usable, dir };
    writeFileSync(`${manifest}.${process.pid}.tmp`, JSON.stringify(built));
    renameSync(`${manifest}.${process.pid}.tmp`, manifest);
    pruneBuilds(name, dir);
  }
  const out = built.usable ? join(bundleDir, built.dir, `${name}.mjs`) : undefined;
  bundles.set(source, out);
  return out;
}

/** Removes the builds of `name` other than `keep` made over ten minutes ago (no test still runs them). */
function pruneBuilds(name: string, keep: string): void {
  const old = Date.now() - 600_000;
  for (const entry of readdirSync(bundleDir)) {
    if (entry === keep || !entry.startsWith(`${name}-`) || !/^-[0-9a-f]{12}$/.test(entry.slice(name.length))) continue;
    const path = join(bundleDir, entry);
    if (statSync(path).mtimeMs < old) rmSync(path, { recursive: true, force: true });
  }
}

/** What node_modules/.cache/sprout-agent-tests/<name>.json says of the current build. */
interface BundleManifest {
  /**
   * Every source file in it: path from the repository root, modification time (whole ms: Deno
   * reports whole milliseconds where Node and Bun add a fraction, and a build made under one
   * must be fresh under the others), size.
   */
  inputs: Array<[string, number, number]>;
  /** False when a module reads `import.meta`, which building would change. */
  usable: boolean;
  /** The build's folder in node_modules/.cache/sprout-agent-tests. */
  dir: string;
}

/** The manifest at `path` when its build was made from the files as they are now. */
function readManifest(path: string): BundleManifest | undefined {
  try {
    const manifest = JSON.parse(readFileSync(path, "utf8")) as BundleManifest;
    const fresh = manifest.inputs.every(([file, mtimeMs, size]) => {
      const stat = statSync(join(repoRoot, file));
      return Math.trunc(stat.mtimeMs) === mtimeMs && stat.size === size;
    });
    return fresh && existsSync(join(bundleDir, manifest.dir)) ? manifest : undefined;
  } catch {
    return undefined;
  }
}

function nodePath(): string {
  return runtime() === "node" ? process.execPath : "node";
}
function bunPath(): string {
  return runtime() === "bun" ? process.execPath : `${repoRoot}node_modules/.bin/bun`;
}
function denoPath(): string {
  return runtime() === "deno" ? process.execPath : `${repoRoot}node_modules/.bin/deno`;
}

/**
 * True in exactly one of the three runners (Bun, the fastest): slow checks that do not
 * depend on the runtime running the tests (conformance, third-party interop matrices) run
 * only there.
 */
export const runsOnce: boolean = runtime() === "bun";
