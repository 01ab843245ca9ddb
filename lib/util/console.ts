/**
 * The console redirection that keeps stray `console.log` lines off a protocol stdout (the ACP
 * server's, issue 9). Apart from output.ts because it formats with `node:util`, which only
 * `acp` needs: a `run` never loads it (issue 21).
 * @module
 */

import { format, inspect } from "node:util";

/** The console methods that write to stdout in Node, Bun and Deno. */
const STDOUT_METHODS = [
  "log",
  "info",
  "debug",
  "dir",
  "dirxml",
  "table",
  "group",
  "groupCollapsed",
  "count",
  "countReset",
  "time",
  "timeLog",
  "timeEnd",
] as const;

/**
 * Sends every console method that would write to stdout (`log`, `info`, `debug`, `dir`,
 * `table`, `group`, `count`, `timeEnd`…) to `write` instead, formatted as Node formats them,
 * for code that calls them after this (ours or a library's). Used by the ACP server, whose
 * stdout carries JSON-RPC only. `warn`, `error` and `trace` already go to stderr.
 * @returns a function that puts the original methods back
 * @example
 * const restore = redirectConsole((line) => process.stderr.write(line));
 * console.log("to stderr");
 * restore();
 */
export function redirectConsole(write: (line: string) => void): () => void {
  const target = console as unknown as Record<string, unknown>;
  const saved = STDOUT_METHODS.map((name) => [name, target[name]] as const);
  const line = (text: string) => {
    try {
      write(`${text}\n`);
    } catch {
      // a console call never throws
    }
  };
  const counts = new Map<string, number>();
  const timers = new Map<string, number>();
  const elapsed = (label: string) =>
    `${label}: ${(performance.now() - (timers.get(label) ?? performance.now())).toFixed(3)}ms`;
  const all = (...args: unknown[]) => line(format(...args));
  const replacements: Record<(typeof STDOUT_METHODS)[number], (...args: unknown[]) => void> = {
    log: all,
    info: all,
    debug: all,
    dirxml: all,
    table: all,
    group: (...args) => args.length > 0 && all(...args),
    groupCollapsed: (...args) => args.length > 0 && all(...args),
    dir: (value: unknown, options?: unknown) =>
      line(inspect(value, { customInspect: false, ...(typeof options === "object" ? options : {}) })),
    count: (label = "default") => {
      const n = (counts.get(String(label)) ?? 0) + 1;
      counts.set(String(label), n);
      line(`${label}: ${n}`);
    },
    countReset: (label = "default") => void counts.delete(String(label)),
    time: (label = "default") => void timers.set(String(label), performance.now()),
    timeLog: (label = "default", ...data: unknown[]) => line(format(elapsed(String(label)), ...data)),
    timeEnd: (label = "default") => {
      line(elapsed(String(label)));
      timers.delete(String(label));
    },
  };
  for (const name of STDOUT_METHODS) target[name] = replacements[name];
  return () => {
    for (const [name, original] of saved) target[name] = original;
  };
}
