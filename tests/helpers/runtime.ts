/**
 * Which runtime runs the tests, and how to start a TypeScript file under that same runtime.
 * End-to-end tests spawn the agent under the runtime that runs them, so each of the three
 * runners exercises its own runtime once.
 * @module
 */
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
 * Node uses `tsx` from node_modules (Node 20 cannot strip types).
 */
export function tsCommand(file: string, which: Runtime = runtime()): string[] {
  const root = new URL("../../", import.meta.url).pathname;
  if (which === "deno") return [denoPath(), "run", "-A", "--quiet", file];
  if (which === "bun") return [bunPath(), file];
  return [nodePath(), "--import", `${root}node_modules/tsx/dist/loader.mjs`, file];
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
