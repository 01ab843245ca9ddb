/**
 * MCP servers run in the same process as the agent, for tests and embedders: a pair of
 * linked in-memory channels shaped like the official SDK's `Transport` (so an SDK server is
 * served on one end with `serveStdio(factory, { transport })` or `server.connect(transport)`),
 * and a `connect` function for `createRegistry` that speaks to such a server through the same
 * JSON-RPC engine, era detection and tool-list handling as a stdio server (SPEC section 10),
 * without spawning a process. No SDK is imported here: the caller brings the server.
 * @module
 */

import { AgentError } from "../util/errors.ts";
import { connectMcp } from "./client.ts";
import { Connection } from "./connection.ts";
import type { InProcessTransport, McpConnection, McpConnectOptions, McpServerConfig } from "./types.ts";

export type { InProcessTransport } from "./types.ts";

/**
 * Serves one MCP server on the server's end of a fresh in-process channel: for example
 * `(transport) => serveStdio(createServer, { transport })` with the official SDK v2 (which
 * settles the era from the opening exchange exactly as over stdio), or
 * `(transport) => new McpServer(…).connect(transport)`. Called again for every connection,
 * so a restarted server is a new instance.
 * @example
 * const todo: InProcessServer = (transport) => serveStdio(() => createTodoServer(), { transport });
 */
export type InProcessServer = (transport: InProcessTransport) => unknown;

/**
 * What {@link inProcessMcp} returns: the server configurations to hand to the registry (or
 * to `createAgent`'s `mcpServers`) and the `connect` function that reaches them.
 */
export interface InProcessMcp {
  /**
   * One configuration per server, in the order given: `{ name, transport: { type: "stdio",
   * command: "in-process:<name>", args: [], env: {} } }`; the command is never run.
   */
  servers: McpServerConfig[];
  /**
   * Connects a configuration named like one of the in-process servers to it in this process
   * (the configuration's transport is not used); any other configuration goes to the real
   * client (a child process or HTTP), so one registry can mix both. The same options as a
   * stdio connection apply (`initTimeoutMs`, `eraCache`, `sessionId`, `onClose`…); `kill()`
   * and `close()` close the channel, and a server that closes its end is reported through
   * `onClose` like a stdio server that exited with code 0.
   * @throws {AgentError} `mcp-connect` naming the server when the handshake fails or times out
   */
  connect: (config: McpServerConfig, options: McpConnectOptions) => Promise<McpConnection>;
}

/**
 * MCP servers in this process for `createRegistry` (`lib/mcp/registry.ts`): every
 * connection runs the real client code (JSON-RPC, era detection, paging, list changes,
 * timeouts, cancellation) over an in-memory channel instead of a child's pipes, so tests of
 * the loop and the hooks need no process per server. What only a process has (a pid, an exit
 * code, stderr, a line-length limit, a kill that ends it) stays with stdio servers.
 * @example
 * ```ts
 * import { McpServer } from "@modelcontextprotocol/server";
 * import { serveStdio } from "@modelcontextprotocol/server/stdio";
 * const mcp = inProcessMcp({
 *   todo: (transport) => serveStdio(() => new McpServer({ name: "todo", version: "1" }), { transport }),
 * });
 * const { registry } = await createRegistry(mcp.servers, { sessionId: "s1", connect: mcp.connect });
 * ```
 */
export function inProcessMcp(servers: Record<string, InProcessServer>): InProcessMcp {
  const configs: McpServerConfig[] = Object.keys(servers).map((name) => ({
    name,
    transport: { type: "stdio", command: `in-process:${name}`, args: [], env: {} },
  }));
  return {
    servers: configs,
    async connect(config, options) {
      const serve = Object.hasOwn(servers, config.name) ? servers[config.name] : undefined;
      if (serve === undefined) return connectMcp(config, options);
      const [client, server] = linkedTransports();
      const connection = new Connection(config, options, client);
      try {
        await serve(server);
        await connection.start();
      } catch (error) {
        connection.kill();
        if (error instanceof AgentError && error.code === "mcp-connect") throw error;
        const message = error instanceof Error ? error.message : String(error);
        throw new AgentError("mcp-connect", `Cannot start server "${config.name}": ${message}`, { cause: error });
      }
      connection.connected();
      return connection;
    },
  };
}

/**
 * Two linked {@link InProcessTransport}s: what one sends, the other receives.
 * @example
 * const [client, server] = linkedTransports();
 */
export function linkedTransports(): [InProcessTransport, InProcessTransport] {
  const a = new LinkedEnd();
  const b = new LinkedEnd();
  a.other = b;
  b.other = a;
  return [a, b];
}

class LinkedEnd implements InProcessTransport {
  onmessage?: ((message: unknown, extra?: unknown) => void) | undefined;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  other: LinkedEnd | undefined;
  #closed = false;
  #started = false;
  #queue: unknown[] = [];

  start(): Promise<void> {
    this.#started = true;
    for (const message of this.#queue.splice(0)) this.onmessage?.(message);
    return Promise.resolve();
  }

  send(message: unknown): Promise<void> {
    const other = this.other;
    if (this.#closed || other === undefined) {
      return Promise.reject(new Error("Cannot send on an in-process MCP channel: it is closed"));
    }
    const copy: unknown = JSON.parse(JSON.stringify(message));
    queueMicrotask(() => other.deliver(copy));
    return Promise.resolve();
  }

  deliver(message: unknown): void {
    if (this.#closed) return;
    if (this.#started && this.onmessage) this.onmessage(message);
    else this.#queue.push(message);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const other = this.other;
    this.other = undefined;
    this.#queue = [];
    try {
      await other?.close();
    } finally {
      this.onclose?.();
    }
  }
}
