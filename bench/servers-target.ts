/**
 * One HTTP server for bench/throughput.ts, run as its own process under Bun (`Bun.serve`), Deno
 * (`Deno.serve`) or Node (`@hono/node-server`), as the servers' `main.ts` serves: the todo-enforcer app, the test-gate app, or the floor, a minimal Hono
 * app that answers `POST /mcp` with the very bytes the real server answers to the bench request.
 *
 *   bun bench/servers-target.ts todo|gate|noop|todo-floor|gate-floor|noop-floor modern|legacy
 *
 * `noop` bounds what any server built this way can reach: the same SDK path (`createMcpHandler`,
 * idle instances reused, the body parsed once) with one tool, `_Stop`, that returns a constant,
 * and no Host/Origin checks: the SDK's own per-request work and nothing of ours.
 *
 * Prints `listening on http://127.0.0.1:PORT/mcp` once ready; exits on SIGTERM.
 * @module
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { Hono } from "hono";
import * as z from "zod";
import { createApp as createGateApp } from "../servers/test-gate/app.ts";
import { TestGate } from "../servers/test-gate/gate.ts";
import { createApp as createTodoApp } from "../servers/todo-enforcer/app.ts";
import { benchRequest, type Era } from "./servers-request.ts";

type FetchHandler = (request: Request) => Response | Promise<Response>;

interface RuntimeGlobals {
  Bun?: { serve(options: { fetch: FetchHandler; hostname: string; port: number }): { port: number } };
  Deno?: {
    serve(options: { hostname: string; port: number; onListen(): void }, fetch: FetchHandler): {
      addr: { port: number };
    };
  };
}

async function listen(fetch: FetchHandler): Promise<number> {
  const { Bun, Deno } = globalThis as RuntimeGlobals;
  if (Bun !== undefined) return Bun.serve({ fetch, hostname: "127.0.0.1", port: 0 }).port;
  if (Deno !== undefined) return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, fetch).addr.port;
  const { serve } = await import("@hono/node-server");
  return await new Promise((resolve) => serve({ fetch, hostname: "127.0.0.1", port: 0 }, (info) => resolve(info.port)));
}

/** The test-gate on a one-file project whose suite (`node -e ""`) passes, run once up front. */
async function gateApp(): Promise<{ app: Hono; cleanup: () => void }> {
  const cwd = mkdtempSync(join(tmpdir(), "bench-gate-"));
  writeFileSync(join(cwd, "index.ts"), "export const x = 1;\n");
  const gate = new TestGate({ command: [process.execPath, "-e", ""], cwd });
  await gate.runTests();
  return { app: createGateApp({ gate }), cleanup: () => rmSync(cwd, { recursive: true, force: true }) };
}

/** The SDK's path with nothing of ours: see the module comment. */
function noopApp(): Hono {
  const build = () => {
    const server = new McpServer({ name: "noop", version: "0.0.0" }, { capabilities: { tools: {} } });
    server.registerTool("_Stop", { inputSchema: z.object({}) }, () => ({ content: [{ type: "text", text: "" }] }));
    return server;
  };
  const idle: McpServer[] = [];
  const mcp = createMcpHandler(({ era }) => {
    if (era !== "modern") return build();
    const server = idle.pop() ?? build();
    server.server.onclose = () => void idle.push(server);
    return server;
  });
  const app = new Hono();
  app.post("/mcp", async (c) => await mcp.fetch(c.req.raw, { parsedBody: JSON.parse(await c.req.raw.text()) }));
  return app;
}

async function main(): Promise<void> {
  const [kind = "", era = "modern"] = process.argv.slice(2);
  if (!/^(todo|gate|noop)(-floor)?$/.test(kind) || !["modern", "legacy"].includes(era)) {
    throw new Error(
      `Cannot start bench target "${kind} ${era}": expected todo|gate|noop, optionally -floor, then modern|legacy`,
    );
  }
  let cleanup = () => {};
  let app: Hono;
  if (kind.startsWith("todo")) app = createTodoApp();
  else if (kind.startsWith("noop")) app = noopApp();
  else ({ app, cleanup } = await gateApp());
  let fetch: FetchHandler = (request) => app.fetch(request);
  if (kind.endsWith("-floor")) {
    // The same bytes, status and content type as the real answer, from the real app in-process.
    const request = benchRequest(era as Era, "http://127.0.0.1/mcp");
    const headers = { ...request.headers, host: "127.0.0.1" }; // a Request built here has no Host
    const answer = await app.fetch(new Request(request.url, { ...request, headers }));
    const bytes = new Uint8Array(await answer.arrayBuffer());
    const type = answer.headers.get("content-type") ?? "application/json";
    if (answer.status !== 200) throw new Error(`Cannot build the floor: the app answered ${answer.status}`);
    const floor = new Hono();
    floor.post("/mcp", (c) => c.body(bytes, 200, { "content-type": type }));
    fetch = (request) => floor.fetch(request);
  }
  const port = await listen(fetch);
  console.log(`listening on http://127.0.0.1:${port}/mcp`);
  const stop = () => {
    cleanup();
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

await main();
