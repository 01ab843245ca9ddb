/**
 * Runs the in-process part of a group under the runtime executing this file and prints its
 * result as one JSON line: `child.ts GROUP 'OPTIONS_JSON'`. The harness starts it under each
 * runtime (`inRuntime` in harness.ts).
 * @module
 */
import process from "node:process";
import { loopInProcess } from "./groups/loop.ts";
import { toolsInProcess } from "./groups/tools.ts";

const parts: Record<string, (options: never) => Promise<unknown>> = { loop: loopInProcess, tools: toolsInProcess };

const [group = "", options = "{}"] = process.argv.slice(2);
const part = parts[group];
if (part === undefined) {
  console.error(`Unknown in-process part "${group}": expected one of ${Object.keys(parts).join(", ")}`);
  process.exit(2);
}
const result = await part(JSON.parse(options) as never);
console.log(JSON.stringify(result));
process.exit(0);
