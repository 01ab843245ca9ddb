/**
 * Serves the test-gate over stdio (newline-delimited JSON-RPC on stdin/stdout), under Bun,
 * Deno or Node (via tsx). Takes the same `--cmd`, `--cwd` and `--timeout` options as main.ts.
 *
 *   bun servers/test-gate/stdio.ts --cmd "bun test" --cwd ./my-project
 *   deno run --allow-env --allow-read --allow-run servers/test-gate/stdio.ts
 *   npx tsx servers/test-gate/stdio.ts
 * @module
 */
import process from "node:process";
import { parseArgs } from "node:util";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { createMcpServer } from "./app.ts";
import { Gates, type GatesOptions } from "./gates.ts";
import { GATE_FLAGS, GATE_USAGE, gateOptions } from "./options.ts";

let options: GatesOptions;
try {
  const { values } = parseArgs({ args: process.argv.slice(2), options: { ...GATE_FLAGS, help: { type: "boolean" } } });
  if (values.help === true) {
    console.error(`Usage: stdio.ts [--cmd CMD] [--cwd DIR] [--timeout SECS]\n${GATE_USAGE}`);
    process.exit(0);
  }
  options = gateOptions(values, process.env);
} catch (error) {
  // stdout belongs to the protocol: messages go to stderr.
  console.error(`${(error as Error).message}\nUsage: stdio.ts [--cmd CMD] [--cwd DIR] [--timeout SECS]\n${GATE_USAGE}`);
  process.exit(2);
}

const gate = new Gates(options);
const handle = serveStdio(() => createMcpServer(gate), {
  onerror: (error) => console.error(`test-gate: ${error.message}`),
});

const shutdown = async () => {
  gate.close(); // kill a test run in progress, with its whole process group
  await handle.close();
  process.exit(0);
};
process.on("SIGINT", shutdown);
process.on("SIGTERM", shutdown);
// The client closing stdin ends the session: stop, and let no test run outlive us.
process.stdin.once("end", shutdown);
process.on("exit", () => gate.close());
