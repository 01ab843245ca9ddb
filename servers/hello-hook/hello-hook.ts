/**
 * hello-hook: the smallest complete sprout-agent hook server. Its only tool, `_Stop`, keeps
 * the agent working while the file `NOT_DONE.md` (or `$HELLO_HOOK_FILE`) exists in the folder
 * the agent works in.
 *
 *   npx tsx hello-hook.ts [--port 8787]   Streamable HTTP on http://127.0.0.1:PORT/mcp
 *   npx tsx hello-hook.ts --stdio         stdio (bun hello-hook.ts, deno run -A hello-hook.ts alike)
 * @module
 */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import process from "node:process";
import { parseArgs } from "node:util";
import { serve } from "@hono/node-server";
import { localhostHostValidation, localhostOriginValidation } from "@modelcontextprotocol/hono";
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { Hono } from "hono";
import { bearerAuth } from "hono/bearer-auth";
import * as z from "zod";

const file = process.env.HELLO_HOOK_FILE || "NOT_DONE.md";

function createServer(): McpServer {
  const server = new McpServer({ name: "hello-hook", version: "0.1.0" }, {
    capabilities: { tools: { listChanged: false } },
  });
  // A tool whose name starts with "_" is a hook: the agent hides it from the model and calls it
  // itself, with arguments {}, when the model wants to end its turn. Non-empty text objects (the
  // model reads it and keeps working); "" lets the turn end. Context such as the session id and
  // the agent's folder is in ctx.mcpReq._meta (docs/HOOKS.md): over HTTP this server runs in a
  // folder of its own, so it looks for the file in the agent's `cwd` (its own without one).
  server.registerTool("_Stop", { description: `Objects while ${file} exists`, inputSchema: z.object({}) }, (_, ctx) => {
    const hook = ctx.mcpReq._meta?.["sprout-agent/hook"] as { cwd?: unknown } | undefined;
    const path = resolve(typeof hook?.cwd === "string" ? hook.cwd : ".", file);
    const text = existsSync(path)
      ? `${file} still exists, so the work is not done:\n${
        readFileSync(path, "utf8").trim()
      }\nFinish it, then delete ${file}.`
      : "";
    return { content: [{ type: "text", text }] };
  });
  return server;
}

const { values } = parseArgs({ options: { stdio: { type: "boolean" }, port: { type: "string" } } });
if (values.stdio) {
  serveStdio(createServer); // one process serves one agent session
} else {
  const app = new Hono();
  app.use("*", localhostHostValidation(), localhostOriginValidation()); // no DNS rebinding
  const token = process.env.HOOK_SERVER_TOKEN;
  if (token) app.use("/mcp", bearerAuth({ token })); // then .mcp.json sends "Authorization: Bearer …"
  const mcp = createMcpHandler(createServer); // a fresh McpServer per request (stateless MCP)
  app.all("/mcp", (c) => mcp.fetch(c.req.raw));
  const port = Number(values.port ?? process.env.PORT ?? 8787);
  serve({ fetch: app.fetch, hostname: "127.0.0.1", port }, (info) => {
    console.log(`listening on http://127.0.0.1:${info.port}/mcp`);
  });
}
