/**
 * Serves the tool guard over stdio (newline-delimited JSON-RPC on stdin/stdout), under Bun,
 * Deno or Node (via tsx). Takes the same rule options as main.ts (options.ts).
 *
 *   bun servers/tool-guard/stdio.ts --ask "rm,git push"
 *   deno run --allow-env --allow-sys=homedir servers/tool-guard/stdio.ts
 *   npx tsx servers/tool-guard/stdio.ts
 * @module
 */
import process from "node:process";
import { parseArgs } from "node:util";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { createMcpServer } from "./app.ts";
import { GUARD_FLAGS, GUARD_USAGE, guardRules } from "./options.ts";
import type { GuardRules } from "./rules.ts";

const USAGE = `Usage: stdio.ts [rule options]\n${GUARD_USAGE}`;

let rules: GuardRules;
try {
  const { values } = parseArgs({ args: process.argv.slice(2), options: { ...GUARD_FLAGS, help: { type: "boolean" } } });
  if (values.help === true) {
    console.error(USAGE); // stdout belongs to the protocol
    process.exit(0);
  }
  rules = guardRules(values, process.env);
} catch (error) {
  // stdout belongs to the protocol: messages go to stderr.
  console.error(`${(error as Error).message}\n${USAGE}`);
  process.exit(2);
}

const handle = serveStdio(() => createMcpServer(rules), {
  onerror: (error) => console.error(`tool-guard: ${error.message}`),
});

const shutdown = async () => {
  await handle.close();
  process.exit(0);
};
process.on("SIGINT", shutdown);
process.on("SIGTERM", shutdown);
