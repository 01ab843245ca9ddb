/**
 * The CLI's files: `node:fs` loaded on first use, and whether a file exists. Under Deno,
 * `node:fs` costs a start about 9 ms (its Node layer's streams and more, on top of
 * `node:process`), which a run with no `.mcp.json`, no `--mcp-config`, no script and no
 * system prompt file must not pay before its first LLM request (issue 21). Every read, and so
 * every error text, is still `node:fs`'s, under each runtime.
 * @module
 */

import process from "node:process";

type NodeFs = typeof import("node:fs");

// A runtime without process.getBuiltinModule (Node before 20.16) loads node:fs with this
// module. The top-level await this takes costs a Deno start about 1.7 ms (bench/cold-steps.ts).
let fs: NodeFs | undefined = typeof process.getBuiltinModule === "function" ? undefined : await import("node:fs");

/** `node:fs`, loaded on the first call (`process.getBuiltinModule`). */
export function nodeFs(): NodeFs {
  return fs ??= process.getBuiltinModule("node:fs");
}

/** The text of the file at `path` (UTF-8). Throws `node:fs`'s error (`ENOENT: no such file or directory, open '…'`). */
export function readText(path: string): string {
  return nodeFs().readFileSync(path, "utf8");
}

/**
 * Whether `path` names an existing file or folder, as `existsSync` answers (false on any
 * error, a dangling symbolic link included). Under Deno through `Deno.statSync`, without
 * `node:fs`.
 */
export function exists(path: string): boolean {
  const deno = (globalThis as { Deno?: { statSync(path: string): unknown } }).Deno;
  if (deno === undefined) return nodeFs().existsSync(path);
  try {
    deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}
