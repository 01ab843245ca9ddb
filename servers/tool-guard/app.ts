/**
 * The tool-guard MCP server: one hook, `_PreToolUse`, that the agent calls before each call of
 * the tools the hook declares (never the LLM: the agent hides `_`-named tools from it). The
 * rules are in rules.ts; this file turns them into MCP.
 *
 * `createMcpServer()` builds the MCP server (shared by HTTP and stdio); `createApp()` serves it
 * over Streamable HTTP on a Hono app. Nothing here does I/O at import time.
 *
 * This folder is meant to be copied on its own, so the HTTP plumbing (Host/Origin checks, token
 * check, `/health`) is repeated from servers/todo-enforcer/app.ts on purpose rather than shared.
 * That server also reuses idle server instances for throughput; this one builds one per
 * request, as the SDK's stateless idiom has it, which is simpler and fast enough for a hook.
 * @module
 */
import { timingSafeEqual } from "node:crypto";
import {
  hostHeaderValidation,
  localhostHostValidation,
  localhostOriginValidation,
  originValidation,
} from "@modelcontextprotocol/hono";
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { Hono, type MiddlewareHandler } from "hono";
import * as z from "zod";
import { checkToolCall, declaredTools, DEFAULT_RULES, type GuardRules, type ToolCall } from "./rules.ts";

/** Name and version announced to MCP clients. */
export const SERVER_INFO = { name: "tool-guard", version: "0.1.0" } as const;

/** What the agent sends in `_meta["sprout-agent/hook"]` that the guard reads (docs/HOOKS.md). */
interface HookContext {
  cwd?: unknown;
  toolCall?: { name?: unknown; arguments?: unknown };
}

/** The tool call of a hook call's `_meta`, or `undefined` when there is none (not a tool point). */
function toolCallOf(hook: HookContext | undefined): ToolCall | undefined {
  const call = hook?.toolCall;
  if (typeof call?.name !== "string") return undefined;
  const args = call.arguments;
  return {
    name: call.name,
    arguments: typeof args === "object" && args !== null && !Array.isArray(args) ? args as Record<string, unknown> : {},
  };
}

/**
 * Builds one MCP server exposing `_PreToolUse` under `rules` (default {@link DEFAULT_RULES}).
 * It keeps no state: every answer is a function of the call and the agent's folder.
 */
export function createMcpServer(rules: GuardRules = DEFAULT_RULES): McpServer {
  // The tool list never changes, so declare `listChanged: false` (the SDK would default it to
  // true): a server declares only what it does.
  const server = new McpServer(SERVER_INFO, { capabilities: { tools: { listChanged: false } } });
  server.registerTool("_PreToolUse", {
    description: "Agent hook: denies writes outside the session's folder, asks before listed shell commands, " +
      "rewrites git push --force to --force-with-lease.",
    // Hooks are called with arguments {}: the call to judge is in _meta, not in the arguments.
    inputSchema: z.object({}),
    // The agent calls this hook only for tools matching these globs; any other call costs nothing.
    _meta: { "sprout-agent/hook": { tools: declaredTools(rules) } },
  }, (_args, ctx) => {
    const hook = ctx.mcpReq._meta?.["sprout-agent/hook"] as HookContext | undefined;
    const call = toolCallOf(hook);
    const cwd = typeof hook?.cwd === "string" ? hook.cwd : undefined;
    const answer = call === undefined ? undefined : checkToolCall(call, cwd, rules);
    // "" is "no opinion": the call runs as the model made it. A typed answer goes in
    // structuredContent, with the same JSON as text (MCP asks structured results to carry both;
    // the agent reads only the structured one).
    if (answer === undefined) return { content: [{ type: "text", text: "" }] };
    return { content: [{ type: "text", text: JSON.stringify(answer) }], structuredContent: { ...answer } };
  });
  return server;
}

/** Options of {@link createApp}. */
export interface AppOptions {
  /** What the guard checks; default {@link DEFAULT_RULES}. */
  rules?: GuardRules;
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
 * The Hono app serving the tool guard: Streamable HTTP at `/mcp` (both MCP eras, stateless),
 * `GET /health`, Host/Origin validation and the optional bearer token.
 * @throws Error naming `allowedHosts` when `host` is not a localhost address and none are given
 * @example
 * const app = createApp({ rules: { ...DEFAULT_RULES, ask: ["rm"] } });
 * Bun.serve({ fetch: app.fetch, port: 0 });
 */
export function createApp(options: AppOptions = {}): Hono {
  const rules = options.rules ?? DEFAULT_RULES;
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
  // A fresh McpServer per request: one instance serves one request at a time.
  const mcp = createMcpHandler(() => createMcpServer(rules));

  app.get("/health", (c) => c.json({ status: "ok", server: SERVER_INFO.name }));
  if (options.token !== undefined) app.use("/mcp", bearerAuth(options.token));
  app.all("/mcp", (c) => mcp.fetch(c.req.raw));
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
