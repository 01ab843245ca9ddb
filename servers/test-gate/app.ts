/**
 * The test-gate MCP server: a `run_tests` tool for the LLM, and the `_Stop` and `_PostCompact`
 * hooks that the agent calls (never the LLM: the agent hides `_`-named tools from it). `_Stop`
 * objects to the end of a turn while the project's test suite is red, or not yet seen green.
 *
 * `createMcpServer()` builds the MCP server (shared by HTTP and stdio); `createApp()` serves it
 * over Streamable HTTP on a Hono app. Nothing here does I/O at import time.
 *
 * Unlike the todo-enforcer, this server keeps no per-session state: whether the suite passes
 * on the project's files is the same answer for every agent session, so the state lives in one
 * {@link TestGate} per project folder and the `sprout-agent/session` key is not needed.
 *
 * This folder is meant to be copied on its own, so the HTTP plumbing (Host/Origin checks, token
 * check, `/health`) is repeated in servers/todo-enforcer/app.ts on purpose rather than shared.
 * @module
 */
import { timingSafeEqual } from "node:crypto";
import {
  hostHeaderValidation,
  localhostHostValidation,
  localhostOriginValidation,
  originValidation,
} from "@modelcontextprotocol/hono";
import {
  createMcpHandler,
  DEFAULT_MAX_REQUEST_BODY_SIZE,
  isJsonContentType,
  type McpHttpHandler,
  McpServer,
  type McpServerFactory,
} from "@modelcontextprotocol/server";
import { Hono, type MiddlewareHandler } from "hono";
import * as z from "zod";
import { runSummary, TestGate } from "./gate.ts";
import type { Gates } from "./gates.ts";

/** Name and version announced to MCP clients. */
export const SERVER_INFO = { name: "test-gate", version: "0.1.0" } as const;

function text(value: string) {
  return { content: [{ type: "text" as const, text: value }] };
}

/**
 * Builds one MCP server exposing `run_tests`, `_Stop` and `_PostCompact` over `gate` (or, with
 * {@link Gates}, the gate of the folder each request belongs to). Over HTTP one instance serves
 * one request at a time (see {@link reuseIdleServers}), so all state lives in the gates, never
 * in the server object.
 */
export function createMcpServer(gate: TestGate | Gates): McpServer {
  const pick = (meta: Record<string, unknown> | undefined) => gate instanceof TestGate ? gate : gate.for(meta);
  // The tool list never changes, so declare `listChanged: false` (the SDK would default it to
  // true): a server declares only what it does. Nothing else (logging, resources, prompts).
  const server = new McpServer(SERVER_INFO, { capabilities: { tools: { listChanged: false } } });

  server.registerTool(
    "run_tests",
    {
      description: `Runs the project's test suite (\`${gate.command}\`) now and returns the passed/failed counts, ` +
        "the names of failing tests and the end of the output. Ending the turn is advised against " +
        "while the suite fails on the current files, so run this after changing code.",
      inputSchema: z.object({}),
    },
    async (_args, ctx) => {
      const meta = ctx.mcpReq._meta;
      const run = await pick(meta).runTests();
      // Over HTTP without --cwd, a call before any hook call of its session cannot know the
      // agent's folder: say which folder it was instead of passing it off as the project.
      const guessed = gate instanceof TestGate || !gate.guessesFolder(meta)
        ? ""
        : "No project folder is known for this session yet, so this ran in the test-gate server's own folder " +
          "(start the server with --cwd to pin the project).";
      return text(runSummary(run, guessed));
    },
  );

  // Hooks take no arguments. Returning "" means "no objection": the agent treats blank hook
  // output as nothing to say, so the turn may end. Any other text is shown to the LLM.
  server.registerTool(
    "_Stop",
    { description: "Agent hook: objects to ending the turn while the test suite fails.", inputSchema: z.object({}) },
    async (_args, ctx) => text(await pick(ctx.mcpReq._meta).stop()),
  );
  server.registerTool(
    "_PostCompact",
    {
      description: "Agent hook: returns the last known test state after a context handoff.",
      inputSchema: z.object({}),
    },
    (_args, ctx) => text(pick(ctx.mcpReq._meta).postCompact()),
  );
  return server;
}

/** Options of {@link createApp}. */
export interface AppOptions {
  /** The gate of the project folder (it owns the test command, folder and timeout), or {@link Gates}. */
  gate: TestGate | Gates;
  /**
   * When set, `/mcp` requires `Authorization: Bearer <token>` (401 otherwise).
   * `/health` stays open: it reveals nothing.
   */
  token?: string;
  /**
   * The address the server binds, default `127.0.0.1`. On a localhost address (`127.0.0.1`,
   * `localhost`, `::1`) the `Host` and `Origin` headers must name localhost; on any other
   * address `allowedHosts` is required (DNS-rebinding protection).
   */
  host?: string;
  /**
   * Host names accepted in the `Host` header (and in a present `Origin`, off localhost), port
   * ignored, IPv6 in brackets (`[fd00::1]`). Required when `host` is not a localhost address.
   */
  allowedHosts?: string[];
}

/**
 * The Hono app serving the test-gate: Streamable HTTP at `/mcp` (both MCP eras, stateless),
 * `GET /health`, Host/Origin validation and the optional bearer token.
 * @throws Error naming `allowedHosts` when `host` is not a localhost address and none are given
 * @example
 * const app = createApp({ gate: new TestGate({ command: "bun test", cwd: "." }) });
 * Bun.serve({ fetch: app.fetch, port: 0 });
 */
export function createApp(options: AppOptions): Hono {
  const { gate } = options;
  // A plain Hono app rather than createMcpHonoApp(): its JSON body parser answers a malformed
  // body with a plain-text 400, while the MCP handler parses the body itself and answers with a
  // proper JSON-RPC error (-32700). The same validation middlewares are added by hand.
  const app = new Hono();
  // DNS-rebinding protection: a web page must not reach the server through a hostile name, so
  // the Host header is always checked. Off localhost only the operator knows the names clients
  // use; without them the app is refused rather than served unchecked (a warning gets ignored).
  const host = options.host ?? "127.0.0.1";
  const local = ["127.0.0.1", "localhost", "::1"].includes(host);
  const allowed = options.allowedHosts ?? [];
  if (!local && allowed.length === 0) {
    throw new Error(
      `Cannot serve on "${host}" without allowedHosts: off localhost the Host header must be checked against the names clients use (DNS rebinding)`,
    );
  }
  app.use("*", allowed.length > 0 ? hostHeaderValidation(allowed) : localhostHostValidation());
  app.use("*", local ? localhostOriginValidation() : originValidation(allowed));
  // One McpServer instance serves one request at a time; idle ones are reused (see below).
  const mcp = createMcpHandler(reuseIdleServers(() => createMcpServer(gate)));

  app.get("/health", (c) => c.json({ status: "ok", server: SERVER_INFO.name }));
  if (options.token !== undefined) app.use("/mcp", bearerAuth(options.token));
  app.all("/mcp", (c) => serveMcp(mcp, c.req.raw));
  app.onError((error, c) => {
    console.error(`Cannot answer ${c.req.method} ${c.req.path}: ${error.message}`);
    return c.json({ jsonrpc: "2.0", id: null, error: { code: -32603, message: "Internal error" } }, 500);
  });
  return app;
}

/** Middleware: 401 with a JSON-RPC error body unless the request carries the bearer token. */
function bearerAuth(token: string): MiddlewareHandler {
  const expected = new TextEncoder().encode(`Bearer ${token}`);
  return async (c, next) => {
    const given = new TextEncoder().encode(c.req.header("authorization") ?? "");
    if (given.length === expected.length && timingSafeEqual(given, expected)) {
      await next();
      return;
    }
    return c.json(
      { jsonrpc: "2.0", id: null, error: { code: -32001, message: "Unauthorized: missing or wrong bearer token" } },
      401,
      { "WWW-Authenticate": 'Bearer realm="mcp"' },
    );
  };
}

/** How many idle server instances {@link reuseIdleServers} keeps; more are left to the GC. */
const MAX_IDLE_SERVERS = 64;

/**
 * Wraps the server factory of `createMcpHandler` so that modern (2026-07-28) requests reuse
 * idle instances instead of building and registering a new one each time: building one (the
 * tools, their zod schemas, the JSON Schema conversion) took about a quarter of a todo-enforcer
 * `_Stop` call's CPU time under Node and 40% under Bun (bench/throughput.ts measures the whole request).
 *
 * Why this is safe: the SDK needs an instance that serves nothing else (it answers 500 to an
 * instance still connected to another request), and an instance goes back to the idle list only
 * once its request's exchange has closed, so concurrent requests always get different
 * instances. The tools keep no state in the instance (it lives in the gate), and the SDK
 * sets the protocol version and client identity from each modern request's envelope. Legacy
 * (2025) requests still get a fresh instance, as the SDK's stateless idiom has it: there,
 * `initialize` leaves what it negotiated in the instance.
 */
function reuseIdleServers(build: () => McpServer): McpServerFactory {
  const idle: McpServer[] = [];
  return ({ era }) => {
    if (era !== "modern") return build();
    const server = idle.pop() ?? build();
    // Called when this request's exchange closes (the SDK chains its own handler before it).
    server.server.onclose = () => {
      if (idle.length < MAX_IDLE_SERVERS) idle.push(server);
    };
    return server;
  };
}

/**
 * Hands one `/mcp` request to the MCP handler. A JSON POST of known, bounded length is read and
 * parsed here and passed as `parsedBody`, which spares the handler cloning the request to peek
 * at its body (the era decision needs the body, and so does the request). Everything else goes
 * through as it came, so the handler keeps answering 405, 413, 415 and -32700 itself.
 */
async function serveMcp(mcp: McpHttpHandler, request: Request): Promise<Response> {
  const length = Number(request.headers.get("content-length") ?? NaN);
  if (
    request.method !== "POST" || !isJsonContentType(request.headers.get("content-type")) ||
    !(length > 0 && length <= DEFAULT_MAX_REQUEST_BODY_SIZE)
  ) {
    return await mcp.fetch(request);
  }
  const text = await request.text();
  let parsedBody: unknown;
  try {
    parsedBody = JSON.parse(text);
  } catch {
    // Not JSON: let the handler answer it, from a copy of the bytes already read.
    const { url, method, headers, signal } = request;
    return await mcp.fetch(new Request(url, { method, headers, signal, body: text }));
  }
  return await mcp.fetch(request, { parsedBody });
}
