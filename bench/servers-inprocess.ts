/**
 * Where a hook server's time goes, in-process and without sockets: CPU microseconds per `_Stop`
 * request, one request at a time, for nested slices of the todo-enforcer's path, so each
 * difference is the cost of one layer. bench/throughput.ts measures the whole thing over HTTP;
 * this bounds what the example servers can reach with the SDK as it is.
 *
 *   npx tsx bench/servers-inprocess.ts [--n 2000] [--json]      (or: bun bench/servers-inprocess.ts)
 *
 * Slices (each includes building the `Request`, where there is one, and reading the answer):
 * - `hono-floor`: a Hono app answering `POST /mcp` with fixed bytes (what the floor does).
 * - `app`: the todo-enforcer's whole Hono app (`createApp()`): Host/Origin checks, routing,
 *   body parsing, the SDK handler, the tool.
 * - `handler`: the SDK's `createMcpHandler` alone with the same server factory, body pre-parsed.
 * - `handler-noop`: the same with a server whose only tool, `_Stop`, returns a constant: the
 *   SDK's own per-request work with none of ours.
 * - `dispatch-noop`: that no-op server on a long-lived in-memory connection (`InMemoryTransport`,
 *   legacy era, initialized once): the JSON-RPC dispatch and validation alone, no HTTP edge.
 * @module
 */
import process from "node:process";
import { parseArgs } from "node:util";
import { createMcpHandler, InMemoryTransport, type JSONRPCMessage, McpServer } from "@modelcontextprotocol/server";
import { Hono } from "hono";
import * as z from "zod";
import { createApp, createMcpServer } from "../servers/todo-enforcer/app.ts";
import { MemoryStore } from "../servers/todo-enforcer/store.ts";
import { benchRequest } from "./servers-request.ts";

/** One measured slice. */
export interface Slice {
  name: string;
  /** CPU time (user + system) per request, in microseconds. */
  cpuUs: number;
  /** Wall time per request, in microseconds. */
  wallUs: number;
}

const URL_ = "http://127.0.0.1/mcp";
const REQUEST = benchRequest("modern", URL_);
const HEADERS = { ...REQUEST.headers, host: "127.0.0.1" };
const BODY = JSON.parse(REQUEST.body) as JSONRPCMessage;

function newRequest(): Request {
  return new Request(URL_, { method: "POST", headers: HEADERS, body: REQUEST.body });
}

async function time(name: string, n: number, once: () => Promise<unknown>): Promise<Slice> {
  for (let i = 0; i < Math.min(n, 1000); i++) await once(); // warm-up (JIT, caches)
  const cpu0 = process.cpuUsage();
  const wall0 = performance.now();
  for (let i = 0; i < n; i++) await once();
  const wall = performance.now() - wall0;
  const cpu = process.cpuUsage(cpu0);
  return { name, cpuUs: (cpu.user + cpu.system) / n, wallUs: (wall * 1000) / n };
}

function noopServer(): McpServer {
  const server = new McpServer({ name: "noop", version: "0.0.0" }, { capabilities: { tools: { listChanged: false } } });
  server.registerTool("_Stop", { description: "no-op", inputSchema: z.object({}) }, () => ({
    content: [{ type: "text", text: "" }],
  }));
  return server;
}

/** Reuses idle instances like the example servers do (servers/todo-enforcer/app.ts). */
function reusing(build: () => McpServer) {
  const idle: McpServer[] = [];
  return () => {
    const server = idle.pop() ?? build();
    server.server.onclose = () => void idle.push(server);
    return server;
  };
}

async function inMemoryDispatch(): Promise<() => Promise<unknown>> {
  const [client, serverSide] = InMemoryTransport.createLinkedPair();
  await noopServer().connect(serverSide);
  const waiting = new Map<number, (m: JSONRPCMessage) => void>();
  client.onmessage = (message) => {
    const id = (message as { id?: number }).id;
    if (id !== undefined) waiting.get(id)?.(message), waiting.delete(id);
  };
  await client.start();
  let next = 1;
  const call = (method: string, params: unknown) =>
    new Promise<JSONRPCMessage>((resolve) => {
      const id = next++;
      waiting.set(id, resolve);
      void client.send({ jsonrpc: "2.0", id, method, params } as JSONRPCMessage);
    });
  await call("initialize", {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "bench", version: "0" },
  });
  await client.send({ jsonrpc: "2.0", method: "notifications/initialized" } as JSONRPCMessage);
  return () => call("tools/call", { name: "_Stop", arguments: {} });
}

/** Measures every slice, `n` requests each, under the current runtime. */
export async function measureSlices(n = 2000, rounds = 3): Promise<Slice[]> {
  const floor = new Hono();
  const bytes = new TextEncoder().encode('{"result":{"content":[{"type":"text","text":""}]},"jsonrpc":"2.0","id":7}');
  floor.post("/mcp", (c) => c.body(bytes, 200, { "content-type": "application/json" }));
  const app = createApp();
  const store = new MemoryStore();
  const todo = createMcpHandler(reusing(() => createMcpServer(store)));
  const noop = createMcpHandler(reusing(noopServer));
  const dispatch = await inMemoryDispatch();
  const cases: [string, () => Promise<unknown>][] = [
    ["hono-floor", async () => await (await floor.fetch(newRequest())).arrayBuffer()],
    ["app", async () => await (await app.fetch(newRequest())).arrayBuffer()],
    ["handler", async () => await (await todo.fetch(newRequest(), { parsedBody: BODY })).arrayBuffer()],
    ["handler-noop", async () => await (await noop.fetch(newRequest(), { parsedBody: BODY })).arrayBuffer()],
    ["dispatch-noop", dispatch],
  ];
  // Rounds interleave the slices, and the least CPU of the rounds is kept: other processes on a
  // shared machine only ever add time.
  const best = new Map<string, Slice>();
  for (let round = 0; round < rounds; round++) {
    for (const [name, once] of cases) {
      const slice = await time(name, n, once);
      const seen = best.get(name);
      if (seen === undefined || slice.cpuUs < seen.cpuUs) best.set(name, slice);
    }
  }
  return [...best.values()];
}

if (import.meta.main || process.argv[1]?.endsWith("bench/servers-inprocess.ts")) {
  const { values } = parseArgs({ options: { n: { type: "string", default: "2000" }, json: { type: "boolean" } } });
  const slices = await measureSlices(Number(values.n));
  const line = (s: Slice) =>
    `${s.name.padEnd(14)} ${s.cpuUs.toFixed(0).padStart(6)} µs CPU  ${s.wallUs.toFixed(0).padStart(6)} µs wall`;
  console.log(values.json === true ? JSON.stringify(slices, null, 2) : slices.map(line).join("\n"));
  process.exit(0);
}
