/**
 * Which runtime runs the tests, and how to start a TypeScript file under that same runtime.
 * End-to-end tests spawn the agent under the runtime that runs them, so each of the three
 * runners exercises its own runtime once.
 * @module
 */
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative, resolve } from "node:path";
import process from "node:process";

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
  const root = new URL("../../", import.meta.url).pathname;
  if (which === "deno") return [denoPath(), "run", "-A", "--quiet", file];
  if (which === "bun") return [bunPath(), file];
  const bundle = nodeBundle(file);
  if (bundle !== undefined) return [nodePath(), bundle];
  return [nodePath(), "--import", `${root}node_modules/tsx/dist/loader.mjs`, file];
}

const bundleDir = `${new URL("../../", import.meta.url).pathname}node_modules/.cache/sprout-agent-tests`;
const bundles = new Map<string, string | undefined>();

/**
 * The path of a plain-JavaScript bundle of `file` (a .ts file inside the repository) that
 * Node runs without a loader, built with esbuild, the compiler `tsx` itself uses, so the
 * code runs as it does under `tsx`: the same transform, with the repository's own modules in
 * one file and every package left as an import (resolved from the repository's
 * node_modules, as for the source). Why: Node under `tsx` needs about 0.45 s of wall time
 * and 0.6 s of CPU to start, a bundle 0.17 s; the end-to-end tests start a few hundred
 * agents and servers. The bundle lives in node_modules/.cache/sprout-agent-tests with the
 * list of its inputs and their modification times, and is built again when one changed;
 * concurrent test processes each write their own temporary file and rename it into place.
 * Returns undefined for a file outside the repository (its packages resolve elsewhere), and
 * for one whose modules read `import.meta` (in one file they would all see the bundle's).
 */
export function nodeBundle(file: string): string | undefined {
  const source = resolve(repoRoot, file);
  const rel = relative(repoRoot, source);
  if (rel.startsWith("..") || rel.startsWith("node_modules/") || !rel.endsWith(".ts")) return undefined;
  if (bundles.has(source)) return bundles.get(source);
  const out = join(bundleDir, `${rel.replaceAll("/", "__").slice(0, -3)}.mjs`);
  const manifest = `${out}.inputs.json`;
  if (!bundleFresh(manifest)) {
    mkdirSync(bundleDir, { recursive: true });
    const tmp = `${out}.${process.pid}.tmp.mjs`;
    const esbuild = createRequire(import.meta.url)("esbuild") as typeof import("esbuild");
    const result = esbuild.buildSync({
      entryPoints: [source],
      outfile: tmp,
      absWorkingDir: repoRoot,
      bundle: true,
      packages: "external",
      platform: "node",
      format: "esm",
      target: "node20",
      metafile: true,
      logLevel: "silent",
    });
    const inputs = Object.keys(result.metafile.inputs).map((path) => {
      const stat = statSync(join(repoRoot, path));
      return [path, stat.mtimeMs, stat.size];
    });
    const usable = !readFileSync(tmp, "utf8").includes("import.meta");
    renameSync(tmp, out);
    writeFileSync(`${manifest}.${process.pid}.tmp`, JSON.stringify({ inputs, usable }));
    renameSync(`${manifest}.${process.pid}.tmp`, manifest);
  }
  const usable = (JSON.parse(readFileSync(manifest, "utf8")) as BundleManifest).usable;
  bundles.set(source, usable ? out : undefined);
  return usable ? out : undefined;
}

/** What node_modules/.cache/sprout-agent-tests keeps beside a bundle. */
interface BundleManifest {
  /** Every source file in it: path from the repository root, modification time (ms), size. */
  inputs: Array<[string, number, number]>;
  /** False when a module reads `import.meta`, which bundling would change. */
  usable: boolean;
}

/** True when the bundle whose manifest is `manifest` was built from the files as they are now. */
function bundleFresh(manifest: string): boolean {
  try {
    const { inputs } = JSON.parse(readFileSync(manifest, "utf8")) as BundleManifest;
    return inputs.every(([path, mtimeMs, size]) => {
      const stat = statSync(join(repoRoot, path));
      return stat.mtimeMs === mtimeMs && stat.size === size;
    });
  } catch {
    return false;
  }
}

function nodePath(): string {
  return runtime() === "node" ? process.execPath : "node";
}
function bunPath(): string {
  const root = new URL("../../", import.meta.url).pathname;
  return runtime() === "bun" ? process.execPath : `${root}node_modules/.bin/bun`;
}
function denoPath(): string {
  const root = new URL("../../", import.meta.url).pathname;
  return runtime() === "deno" ? process.execPath : `${root}node_modules/.bin/deno`;
}

/**
 * True in exactly one of the three runners (Bun, the fastest): slow checks that do not
 * depend on the runtime running the tests (conformance, third-party interop matrices) run
 * only there.
 */
export const runsOnce: boolean = runtime() === "bun";

/** The repository root, with a trailing slash. */
export const repoRoot: string = new URL("../../", import.meta.url).pathname;
