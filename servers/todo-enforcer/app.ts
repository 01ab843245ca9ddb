/**
 * The todo-enforcer MCP server: a `todo` tool for the LLM, and the `_Stop`, `_PostCompact`,
 * `_SessionStart` and `_SessionEnd` hooks that the agent calls (never the LLM: the agent hides `_`-named tools from it).
 *
 * `createMcpServer()` builds the MCP server (shared by HTTP and stdio); `createApp()` serves it
 * over Streamable HTTP on a Hono app. Nothing here does I/O at import time.
 *
 * This folder is meant to be copied on its own, so the HTTP plumbing (Host/Origin checks, token
 * check, `/health`) is repeated in servers/test-gate/app.ts on purpose rather than shared.
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
import {
  MAX_ID,
  MAX_ITEMS,
  MAX_TITLE_CHARS,
  postCompactText,
  removalWarning,
  renderTodos,
  sessionEndText,
  sessionStartText,
  stopText,
  validateTodos,
} from "./todo.ts";
import { MemoryStore, replaceList, type TodoStore } from "./store.ts";

/** Name and version announced to MCP clients. */
export const SERVER_INFO = { name: "todo-enforcer", version: "0.1.0" } as const;

/** The `_meta` key under which sprout-agent sends its session id with every request. */
export const SESSION_META_KEY = "sprout-agent/session";

/** The state key of a request that carries no session id: one shared default list. */
export const DEFAULT_SESSION = "default";

/**
 * Picks the agent session a request belongs to. MCP revision 2026-07-28 has no protocol
 * sessions, and one HTTP server may serve several agents at once, so the state is keyed by the
 * id the agent puts in every request's `params._meta["sprout-agent/session"]`. Any MCP host can
 * send the same key; a request without one shares the default list.
 */
export function sessionOf(meta: Record<string, unknown> | undefined): string {
  const value = meta?.[SESSION_META_KEY];
  return typeof value === "string" && value !== "" ? value : DEFAULT_SESSION;
}

const TODO_DESCRIPTION = "Session checklist for multi-step work that must continue across turns or survive context " +
  "compaction. Call with no arguments to read the list. To change it, pass `todos`: the FULL " +
  "replacement list (items you leave out are removed). Mark an item done with `done: true` when " +
  "its work is finished. While any item is open, the agent is advised to keep working instead of " +
  "ending its turn, so keep the list honest: close items you finish, remove items you drop.";

const todoInput = z.object({
  todos: z
    .array(
      z.object({
        id: z.number().int().min(1).max(MAX_ID).describe(`Stable item number, 1 to ${MAX_ID}, unique in the list`),
        title: z.string().describe(`What to do, one line, at most ${MAX_TITLE_CHARS} characters`),
        done: z.boolean().optional().describe("true when finished (default false)"),
      }),
    )
    .max(MAX_ITEMS)
    .optional()
    .describe(`The complete new list, at most ${MAX_ITEMS} items. Omit to read the list.`),
});

function text(value: string, isError = false) {
  return { content: [{ type: "text" as const, text: value }], ...(isError ? { isError: true } : {}) };
}

/**
 * Builds one MCP server exposing `todo` and its four hooks over `store`.
 * Over HTTP one instance serves one request at a time (see {@link reuseIdleServers}), so all
 * state lives in `store`, never in the server object.
 * @param session Maps a request's `_meta` to its state key; stdio passes `() => "stdio"`.
 */
export function createMcpServer(
  store: TodoStore,
  session: (meta: Record<string, unknown> | undefined) => string = sessionOf,
): McpServer {
  // The tool list never changes, so declare `listChanged: false` (the SDK would default it to
  // true): a server declares only what it does. Nothing else (logging, resources, prompts).
  const server = new McpServer(SERVER_INFO, { capabilities: { tools: { listChanged: false } } });
  /** The list of the session a request's `_meta` names. */
  const listOf = async (meta: Record<string, unknown> | undefined) => (await store.get(session(meta))).items;

  server.registerTool("todo", { description: TODO_DESCRIPTION, inputSchema: todoInput }, async ({ todos }, ctx) => {
    const key = session(ctx.mcpReq._meta);
    if (todos === undefined) return text(renderTodos((await store.get(key)).items));
    const checked = validateTodos(todos);
    if (!checked.ok) return text(`Error: ${checked.error}. The list was not changed.`, true);
    // Compare-and-set: `before` is exactly the list this write replaced, even when another
    // instance sharing the store writes the same session at the same moment.
    const { before } = await replaceList(store, key, checked.items);
    const warning = removalWarning(before, checked.items);
    return text(warning === "" ? renderTodos(checked.items) : `${warning}\n\n${renderTodos(checked.items)}`);
  });

  // Hooks take no arguments. Returning "" means "no objection": the agent treats blank hook
  // output as nothing to say, so the turn may end. Any other text is shown to the LLM.
  server.registerTool(
    "_Stop",
    { description: "Agent hook: objects to ending the turn while todo items are open.", inputSchema: z.object({}) },
    async (_args, ctx) => text(stopText(await listOf(ctx.mcpReq._meta))),
  );
  server.registerTool(
    "_PostCompact",
    {
      description: "Agent hook: returns the todo list for re-injection after a context handoff.",
      inputSchema: z.object({}),
    },
    async (_args, ctx) => text(postCompactText(await listOf(ctx.mcpReq._meta))),
  );
  // _SessionStart restores a list this server still holds for the session id; _SessionEnd
  // reports what was left open (the agent only logs it).
  server.registerTool(
    "_SessionStart",
    { description: "Agent hook: returns the session's open todo list, if any.", inputSchema: z.object({}) },
    async (_args, ctx) => text(sessionStartText(await listOf(ctx.mcpReq._meta))),
  );
  server.registerTool(
    "_SessionEnd",
    { description: "Agent hook: reports the todo items left open.", inputSchema: z.object({}) },
    async (_args, ctx) => text(sessionEndText(await listOf(ctx.mcpReq._meta))),
  );
  return server;
}

/** Options of {@link createApp}. */
export interface AppOptions {
  /**
   * The state of every session; pass one in to inspect or share it, or to make it durable
   * (store-lmdb.ts) or shared by several instances (store-redis.ts). Default: a new
   * {@link MemoryStore}. The app does not close it.
   */
  store?: TodoStore;
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
 * The Hono app serving the todo-enforcer: Streamable HTTP at `/mcp` (both MCP eras, stateless),
 * `GET /health`, Host/Origin validation and the optional bearer token.
 * @throws Error naming `allowedHosts` when `host` is not a localhost address and none are given
 * @example
 * const app = createApp({ token: "s3cret" });
 * Bun.serve({ fetch: app.fetch, port: 0 });
 */
export function createApp(options: AppOptions = {}): Hono {
  const store = options.store ?? new MemoryStore();
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
  const mcp = createMcpHandler(reuseIdleServers(() => createMcpServer(store)));

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
 * tools, their zod schemas, the JSON Schema conversion) took about a quarter of a `_Stop`
 * call's CPU time under Node and 40% under Bun (bench/throughput.ts measures the whole request).
 *
 * Why this is safe: the SDK needs an instance that serves nothing else (it answers 500 to an
 * instance still connected to another request), and an instance goes back to the idle list only
 * once its request's exchange has closed, so concurrent requests always get different
 * instances. The tools keep no state in the instance (it lives in the store), and the SDK
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
