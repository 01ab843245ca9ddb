/**
 * `connectMcp`: one live connection to one MCP server over stdio or Streamable HTTP, in
 * either protocol era, with era detection as SPEC section 10 pins it (and the official v2
 * client's `versionNegotiation: {mode: 'auto'}` wire behaviour: a `server/discover` probe
 * carrying the modern `_meta` envelope, one corrective retry on -32022, legacy
 * `initialize` otherwise).
 * Tool-list changes (SPEC section 10): a legacy server's unsolicited
 * `notifications/tools/list_changed`; in the modern era, a `subscriptions/listen` stream for
 * `toolsListChanged` (opened, like the official v2 client's, when `server/discover` advertises
 * `tools.listChanged`) and the `ttlMs` freshness hint of each `tools/list` result, read
 * through `McpConnection.toolsStale`.
 *
 * The parts live by concept: `era.ts` (detection, the era cache, the handshakes),
 * `list-changes.ts` (the subscription and freshness), `tools-list.ts` (paging) and
 * `connection.ts` (the connection itself); their constants are exported here too.
 * @module
 */

import { basename, isAbsolute, resolve } from "node:path";
import process from "node:process";
import { pathToFileURL } from "node:url";
import { abortError, AgentError } from "../util/errors.ts";
import { Connection } from "./connection.ts";
import type { McpConnection, McpConnectOptions, McpServerConfig } from "./types.ts";

/**
 * The options for one server: a stdio server given a `cwd` of its own in the configuration is
 * told that folder as its one root (`roots/list`, SPEC section 10): the operator chose where it
 * works, and a server that takes the client's roots as its scope (the reference
 * server-filesystem does) must not be moved to the session's folder. Other servers get the
 * session's roots.
 */
function serverOptions(config: McpServerConfig, options: McpConnectOptions): McpConnectOptions {
  const t = config.transport;
  if (t.type !== "stdio" || t.cwd === undefined || options.input?.roots === undefined) return options;
  const dir = isAbsolute(t.cwd) ? t.cwd : resolve(options.cwd ?? process.cwd(), t.cwd);
  return {
    ...options,
    input: { ...options.input, roots: [{ uri: pathToFileURL(dir).href, name: basename(dir) || dir }] },
  };
}

export { DEFAULT_CLIENT_INFO, eraCacheKey } from "./era.ts";
export {
  MAX_RESUBSCRIBES,
  MAX_TOOLS_TTL_MS,
  RELIST_AFTER_FAILURE_MS,
  STABLE_SUBSCRIPTION_MS,
  SUBSCRIBE_ACK_TIMEOUT_MS,
} from "./list-changes.ts";
export { MAX_TOOL_PAGES } from "./tools-list.ts";

/**
 * Connects to one server: spawns it (stdio) or reaches it (HTTP), settles the era (pinned by
 * `config.protocol`, remembered in `options.eraCache`, or detected) and completes the
 * handshake (`initialize` + `notifications/initialized`, or `server/discover`).
 * @throws {AgentError} `mcp-connect` naming the server, with the stderr tail when a stdio
 *   server died; the message says `initialize timed out after N s` when it was too slow
 * @throws an `AbortError` when `options.signal` aborts before the handshake completes (the
 *   server is killed first)
 * @example
 * const conn = await connectMcp(
 *   { name: "fs", transport: { type: "stdio", command: "mcp-server-filesystem", args: ["/tmp"], env: {} } },
 *   { sessionId: "s1" },
 * );
 * const tools = await conn.listTools();
 * await conn.close();
 */
export async function connectMcp(config: McpServerConfig, options: McpConnectOptions): Promise<McpConnection> {
  const signal = options.signal;
  signal?.throwIfAborted();
  const connection = new Connection(config, serverOptions(config, options));
  // kill() fails the handshake's pending request, so start() rejects at once.
  const onAbort = () => connection.kill();
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    await connection.start();
    signal?.throwIfAborted();
  } catch (error) {
    connection.kill();
    if (signal?.aborted) throw abortError(`Connecting to server "${config.name}" was aborted`);
    if (error instanceof AgentError && error.code === "mcp-connect") throw error;
    const message = error instanceof Error ? error.message : String(error);
    const verb = config.transport.type === "stdio" ? "start" : "connect to";
    throw new AgentError("mcp-connect", `Cannot ${verb} server "${config.name}": ${message}`, { cause: error });
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
  connection.connected();
  return connection;
}
