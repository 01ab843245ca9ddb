/**
 * Serves the todo-enforcer over stdio (newline-delimited JSON-RPC on stdin/stdout), under Bun,
 * Deno or Node (via tsx). Over stdio one process is one agent session, so every request uses
 * the same list whatever `_meta` it carries, and the list lives in memory: a stdio server lives and
 * dies with its agent, and a durable list would hand a new agent the last one's leftovers.
 *
 *   bun servers/todo-enforcer/stdio.ts
 *   deno run --allow-env --allow-read servers/todo-enforcer/stdio.ts
 *   npx tsx servers/todo-enforcer/stdio.ts
 * @module
 */
import process from "node:process";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { createMcpServer } from "./app.ts";
import { MemoryStore } from "./store.ts";

const store = new MemoryStore();
// serveStdio asks the factory for one server per connection (plus a throwaway one when a
// client probes the era first); the list lives in `store`, so both see the same state.
const handle = serveStdio(() => createMcpServer(store, () => "stdio"), {
  onerror: (error) => console.error(`todo-enforcer: ${error.message}`),
});

const shutdown = async () => {
  await handle.close();
  process.exit(0);
};
process.on("SIGINT", shutdown);
process.on("SIGTERM", shutdown);
