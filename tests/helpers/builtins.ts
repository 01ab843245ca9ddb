/**
 * What a Node process resolves through ESM, recorded by a loader hook (`module.register`,
 * Node ≥ 20.6): the URL of every `import` and `import()` (the entry point too, and `node:`
 * builtins) is appended to a log file, with the importing module. Node loads some builtins
 * internally at start-up (`node:util` is among them) and `fetch` loads crypto without going
 * through ESM, so this sees exactly what our modules import, which is the point.
 * @module
 */
import { existsSync, readFileSync } from "node:fs";

/** The hooks, run on Node's loader thread. */
const HOOKS = `
import { appendFileSync } from "node:fs";
let log = "";
export function initialize(data) { log = data.log; }
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(log, JSON.stringify([result.url, context.parentURL ?? ""]) + "\\n");
  return result;
}`;

/** A `--import` argument that records into `log` (a file path) each module the process resolves. */
export function builtinRecorder(log: string): string {
  const register = `import { register } from "node:module";
register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOKS)}`)}, { data: { log: ${
    JSON.stringify(log)
  } } });`;
  return `data:text/javascript,${encodeURIComponent(register)}`;
}

/**
 * The URLs recorded in `log` (once each, in order: `node:` ones for builtins), leaving out
 * what the tsx loader, and the recorder itself, import for themselves.
 */
export function readRecorded(log: string): string[] {
  if (!existsSync(log)) return [];
  const seen = new Set<string>();
  for (const line of readFileSync(log, "utf8").split("\n")) {
    if (line === "") continue;
    const [url, parent] = JSON.parse(line) as [string, string];
    if (!parent.includes("/node_modules/tsx/") && !parent.startsWith("data:")) seen.add(url);
  }
  return [...seen];
}
