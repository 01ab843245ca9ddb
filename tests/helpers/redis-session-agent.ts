/**
 * An agent instance for tests/redis-sessions.test.ts to kill: `redis-session-agent.ts URL
 * PREFIX ID LOCK_TTL_MS` creates an agent on the Redis session store with session `ID`, prompts
 * it, and its model asks for `fs__read` and `fs__hang` at once; `fs__hang` prints
 * `hanging` on stdout and never returns, so the process waits mid-turn until it is killed.
 * Warnings go to stderr.
 * @module
 */
import process from "node:process";
import { McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import * as z from "zod";
import { createAgent } from "../../lib/agent/agent.ts";
import type { InProcessTransport } from "../../lib/mcp/in-process.ts";
import { redisSessionStore } from "../../stores/redis.ts";
import { recordingModel } from "./recording-model.ts";

const [url, prefix, id, ttl] = process.argv.slice(2);
if (url === undefined || prefix === undefined || id === undefined || ttl === undefined) {
  console.error("usage: redis-session-agent.ts URL PREFIX ID LOCK_TTL_MS");
  process.exit(2);
}

const tools = (transport: InProcessTransport) =>
  serveStdio(() => {
    const server = new McpServer({ name: "fs", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.registerTool(
      "read",
      { description: "Reads", inputSchema: z.object({ path: z.string() }) },
      (args) => ({ content: [{ type: "text" as const, text: `contents of ${args.path}` }] }),
    );
    server.registerTool("hang", { description: "Waits forever", inputSchema: z.object({}) }, () => {
      process.stdout.write("hanging\n");
      return new Promise<never>(() => {});
    });
    return server;
  }, { transport });

const agent = await createAgent({
  model: recordingModel([{
    text: "reading, then waiting",
    toolCalls: [
      { id: "toolu_read", name: "fs__read", arguments: { path: "a.txt" } },
      { id: "toolu_hang", name: "fs__hang", arguments: {} },
    ],
  }]),
  sessionStore: redisSessionStore({ url, prefix, lockTtlMs: Number(ttl) }),
  sessionId: id,
  cwd: "/work/killed",
  inProcessServers: { fs: tools },
  onWarning: (message) => console.error(message),
});
const run = agent.prompt("read a.txt, then wait");
for await (const _ of run) { /* events */ }
// Never reached while fs__hang hangs; kept so that the process stays up.
await new Promise<never>(() => {});
