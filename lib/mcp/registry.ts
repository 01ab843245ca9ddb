/**
 * All of a session's MCP servers behind one {@link ToolRegistry}: LLM-legal names, limits,
 * schema repair (SPEC section 5), result mapping and failures as data (SPEC 6.7, 6.8), list
 * changes (SPEC 6.3), lazy restart with backoff (SPEC 6.10) and hook calls (SPEC 2, 4).
 * @module
 */

import { AgentError, isAbortError } from "../util/errors.ts";
import { formatSeconds, sleep } from "../util/time.ts";
import type { ToolDef } from "../conversation/types.ts";
import { exitText, messageOf, ServerHandle, type ServerHandleOptions } from "./registry-server.ts";
import { objectSchema, toolDescription, ToolNames, toolOutcome } from "./registry-tools.ts";
import type { InputHandler } from "./input-requests.ts";
import type {
  CallToolResult,
  McpConnection,
  McpConnectOptions,
  McpEra,
  McpRequestOptions,
  McpServerConfig,
  McpTool,
  ToolOutcome,
  ToolRegistry,
} from "./types.ts";

/** Most servers one session connects; the rest are reported as failures (SPEC section 5.4). */
export const MAX_SERVERS = 16;
/** Most LLM-visible tools per session (SPEC section 5.4). */
export const MAX_VISIBLE_TOOLS = 128;
/** Longest stderr tail put into a tool result, in characters (the warning gets the whole tail). */
const RESULT_STDERR_CHARS = 2000;

/** Opens one connection; `connectMcp` of `lib/mcp/client.ts` by default. */
export type ConnectFn = (config: McpServerConfig, options: McpConnectOptions) => Promise<McpConnection>;

/**
 * `connectMcp`, with the MCP client loaded by the first connection: an agent without servers
 * never loads it (issue 21: about 1.7 ms of a Bun start, 0.9 ms of Deno's).
 */
const connectMcp: ConnectFn = async (config, options) => (await import("./client.ts")).connectMcp(config, options);

/** Options of {@link createRegistry}. */
export interface RegistryOptions {
  /** Sent as `_meta["sprout-agent/session"]` on every request. */
  sessionId: string;
  /** Bound of connecting and of each `tools/list`, in ms; default 30000. */
  initTimeoutMs?: number;
  /**
   * Aborts starting: servers still connecting or listing their tools are killed at once and
   * become failures. Restarts later in the session do not see it.
   */
  signal?: AbortSignal;
  /** Largest line accepted from a stdio server, and largest JSON answer or SSE event from an HTTP one, in bytes (`SPROUT_AGENT_MAX_LINE_BYTES`); default 4194304. */
  maxLineBytes?: number;
  /**
   * The era each server configuration was found to speak, shared across sessions so that it
   * is detected once per process (SPEC section 10); without it every connection, restarts
   * included, detects again unless the configuration pins `protocol`.
   */
  eraCache?: Map<string, McpEra>;
  /** Each HTTP server's first `tools/list` sent beside `server/discover` (McpConnectOptions `prefetchTools`); default false. */
  prefetchTools?: boolean;
  /** For HTTP servers; default the global `fetch`. */
  fetch?: typeof fetch;
  /** The agent's working folder: the `cwd` of stdio servers that set none; default `process.cwd()`. */
  cwd?: string;
  /** The environment a stdio server's pass-through variables are taken from (SPEC section 10); default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Non-fatal problems: a server died (with its stderr tail), tools dropped or skipped. */
  onWarning?: (message: string) => void;
  /**
   * Each line a stdio server writes to stderr, as it arrives, with the server's name (the
   * CLI prints it as `[name] line` on its stderr); default none. The tail shown when a server
   * dies is kept either way (SPEC section 10).
   */
  onServerStderr?: (server: string, line: string) => void;
  /** Default: `connectMcp` of `./client.ts`. */
  connect?: ConnectFn;
  /**
   * Answers the servers' input requests (elicitation, sampling, roots) and decides what the
   * client capabilities declare (`lib/mcp/input-requests.ts`); default none.
   */
  input?: InputHandler;
  /** First restart backoff in ms, doubled per failed attempt; default 500. */
  restartBaseMs?: number;
  /** Longest restart backoff in ms; default 30000. */
  restartMaxMs?: number;
  /** Failed restart attempts after which a server's tools disappear; default 3. */
  restartMaxAttempts?: number;
  /** Clock in ms; default `Date.now`. */
  now?: () => number;
  /** Jitter source in [0, 1); default `Math.random`. */
  random?: () => number;
}

/**
 * A server that could not start.
 * @example
 * for (const failure of agent.failures) console.warn(`${failure.server}: ${failure.message}`);
 */
export interface RegistryFailure {
  /** The server's configured name. */
  server: string;
  /**
   * Why, naming the server (for example `Cannot start server "x": …`), with the stderr tail
   * when a stdio server exited. The CLI prints it as a warning; ACP fails `session/new` with
   * it (SPEC section 11).
   */
  message: string;
}

/**
 * Connects every server concurrently (each bounded by `initTimeoutMs` for connecting and
 * for `tools/list`) and returns the registry plus the servers that could not start, in
 * configuration order. Servers past the 16th are not started: each is a failure
 * `Cannot start server "x": at most 16 MCP servers are allowed per session`. A server that
 * fails at start stays out of the session (it is never restarted). Never throws.
 * @example
 * const { registry, failures } = await createRegistry(servers, { sessionId: "s1" });
 * for (const f of failures) console.error(f.message);
 */
export async function createRegistry(
  servers: McpServerConfig[],
  options: RegistryOptions,
): Promise<{ registry: ToolRegistry; failures: RegistryFailure[] }> {
  const registry = new McpRegistry(options);
  const failures = await registry.start(servers, options.signal);
  return { registry, failures };
}

class McpRegistry implements ToolRegistry {
  #handleOptions: ServerHandleOptions;
  #servers: ServerHandle[] = [];
  #names = new ToolNames();
  #visible = new Map<string, { server: ServerHandle; bare: string }>();
  #defs: ToolDef[] = [];
  #dirty = true;
  #warned = new Set<string>();
  #lastDropped = "";
  #closed = false;
  #warn: (message: string) => void;

  constructor(options: RegistryOptions) {
    this.#warn = (message) => options.onWarning?.(message);
    const connectOptions: McpConnectOptions = { sessionId: options.sessionId };
    if (options.maxLineBytes !== undefined) connectOptions.maxLineBytes = options.maxLineBytes;
    if (options.eraCache !== undefined) connectOptions.eraCache = options.eraCache;
    if (options.prefetchTools !== undefined) connectOptions.prefetchTools = options.prefetchTools;
    if (options.fetch !== undefined) connectOptions.fetch = options.fetch;
    if (options.cwd !== undefined) connectOptions.cwd = options.cwd;
    if (options.env !== undefined) connectOptions.env = options.env;
    if (options.input !== undefined) connectOptions.input = options.input;
    this.#handleOptions = {
      connect: options.connect ?? connectMcp,
      connectOptions,
      initTimeoutMs: options.initTimeoutMs ?? 30_000,
      restart: {
        baseMs: options.restartBaseMs ?? 500,
        maxMs: options.restartMaxMs ?? 30_000,
        maxAttempts: options.restartMaxAttempts ?? 3,
      },
      now: options.now ?? Date.now,
      random: options.random ?? Math.random,
      warn: this.#warn,
      stderr: options.onServerStderr,
      changed: () => {
        this.#dirty = true;
      },
    };
  }

  async start(configs: McpServerConfig[], signal?: AbortSignal): Promise<RegistryFailure[]> {
    const seen = new Set<string>();
    const started: ServerHandle[] = [];
    const failures = await Promise.all(configs.map(async (config, index): Promise<RegistryFailure | undefined> => {
      const name = config.name;
      if (index >= MAX_SERVERS) {
        return {
          server: name,
          message: `Cannot start server "${name}": at most ${MAX_SERVERS} MCP servers are allowed per session`,
        };
      }
      if (seen.has(name)) return { server: name, message: `Cannot start server "${name}": the name is used twice` };
      seen.add(name);
      const server = new ServerHandle(config, this.#handleOptions);
      try {
        await server.open(signal);
        started.push(server);
        return undefined;
      } catch (error) {
        const message = messageOf(error);
        return {
          server: name,
          message: message.includes(`"${name}"`) ? message : `Cannot start server "${name}": ${message}`,
        };
      }
    }));
    // Configuration order, whatever order the connections finished in.
    this.#servers = configs.flatMap((c) => started.filter((s) => s.config === c));
    this.#dirty = true;
    return failures.filter((f): f is RegistryFailure => f !== undefined);
  }

  async listTools(): Promise<ToolDef[]> {
    if (this.#closed) return [];
    await Promise.all(this.#servers.filter((s) => s.stale).map((s) => s.relist()));
    this.#build();
    for (const server of this.#servers) server.used();
    return this.#defs.map((d) => ({ ...d }));
  }

  /** Rebuilds the visible tool table when a list or a status changed. */
  #build(): void {
    if (!this.#dirty) return;
    this.#dirty = false;
    this.#visible.clear();
    this.#defs = [];
    const dropped: string[] = [];
    for (const server of this.#servers) {
      if (server.status === "exhausted") continue;
      const seen = new Set<string>();
      for (const tool of server.tools) {
        if (typeof tool.name !== "string" || seen.has(tool.name)) continue;
        seen.add(tool.name);
        if (tool.name.startsWith("_")) continue; // hooks and reserved names (SPEC 2.1)
        const name = this.#names.nameFor(server.name, tool.name);
        const schema = objectSchema(tool.inputSchema);
        if ("skip" in schema) {
          this.#warnOnce(`Skipped tool "${tool.name}" of server "${server.name}": ${schema.skip}`);
          continue;
        }
        if (this.#defs.length >= MAX_VISIBLE_TOOLS) {
          dropped.push(name);
          continue;
        }
        this.#defs.push({ name, description: toolDescription(tool), inputSchema: schema.schema });
        this.#visible.set(name, { server, bare: tool.name });
      }
    }
    const key = dropped.join(", ");
    if (key !== "" && key !== this.#lastDropped) {
      this.#warn(
        `Too many tools: kept the first ${MAX_VISIBLE_TOOLS} in configuration order, dropped ${dropped.length}: ${key}`,
      );
    }
    this.#lastDropped = key;
  }

  #warnOnce(message: string): void {
    if (this.#warned.has(message)) return;
    this.#warned.add(message);
    this.#warn(message);
  }

  async callTool(
    name: string,
    args: Record<string, unknown>,
    options: { signal?: AbortSignal; timeoutMs: number; onProgress?: (message: string) => void; callId?: string },
  ): Promise<ToolOutcome> {
    options.signal?.throwIfAborted();
    this.#build();
    const route = this.#visible.get(name);
    if (route === undefined || this.#closed) return failure(`unknown tool: ${name}`);
    const { server, bare } = route;
    const conn = await server.ready();
    options.signal?.throwIfAborted();
    if (typeof conn === "string") return failure(conn);
    if (!server.tools.some((t) => t.name === bare)) return failure(`unknown tool: ${name}`);
    const request: McpRequestOptions = { timeoutMs: options.timeoutMs };
    if (options.signal !== undefined) request.signal = options.signal;
    if (options.onProgress !== undefined) request.onProgress = options.onProgress;
    if (options.callId !== undefined) request.callId = options.callId;
    try {
      return toolOutcome(await conn.callTool(bare, args, request));
    } catch (error) {
      if (isAbortError(error)) throw error;
      // The 2026-07-28 caching rules let a client list again early when a call's error says the
      // tool or its parameters are unknown: its list may be out of date (SPEC 6.3).
      const code = (error as { rpcCode?: unknown }).rpcCode;
      if (code === -32601 || code === -32602) server.stale = true;
      return failure(await this.#failureText(server, conn, name, error, options.timeoutMs));
    }
  }

  /**
   * The message of a failed `tools/call` (SPEC 6.8), naming the tool as the LLM called it;
   * a timeout kills a stdio server.
   */
  async #failureText(
    server: ServerHandle,
    conn: McpConnection,
    tool: string,
    error: unknown,
    timeoutMs: number,
  ): Promise<string> {
    if (error instanceof AgentError && error.code === "timeout") {
      // The client was still waiting (a person answering, a task running): the server answered throughout.
      if ((error as { serverAnswered?: unknown }).serverAnswered === true) return error.message;
      const text = `Tool "${tool}" timed out after ${formatSeconds(timeoutMs)} s`;
      if (server.config.transport.type !== "stdio") return text;
      this.killServer(server.name, `tool "${tool}" timed out`);
      return `${text}; server "${server.name}" was stopped and restarts on its next use`;
    }
    const rpc = error as { rpcCode?: unknown; rpcMessage?: unknown };
    if (typeof rpc.rpcCode === "number" && typeof rpc.rpcMessage === "string") {
      return `Tool call rejected by server "${server.name}": ${rpc.rpcMessage} (JSON-RPC error ${rpc.rpcCode})`;
    }
    const current = server.conn === conn;
    if (conn.closed || !current || server.status !== "connected") {
      if (current && server.exit === undefined) await sleep(100); // let onClose report the exit
      const info = current ? server.exit : undefined;
      if (current) server.died();
      const tail = info?.stderrTail.trim().slice(-RESULT_STDERR_CHARS) ?? "";
      const how = info === undefined ? messageOf(error) : exitText(info);
      return `Server "${server.name}" exited during tool "${tool}" (${how})${tail === "" ? "" : `; stderr:\n${tail}`}`;
    }
    // Not a JSON-RPC error: the call failed on our side (a reply too long to read, a transport
    // fault), so the server did not reject anything.
    return `Tool call to server "${server.name}" failed: ${messageOf(error)}`;
  }

  hookServers(hook: string, options: { orRequired?: boolean } = {}): string[] {
    return this.#servers
      .filter((s) =>
        (s.status === "connected" || (options.orRequired === true && s.config.required === true)) &&
        s.tools.some((t) => t.name === hook)
      )
      .map((s) => s.name);
  }

  isRequired(server: string): boolean {
    return this.#servers.some((s) => s.name === server && s.config.required === true);
  }

  hookTools(): Array<{ server: string; tools: McpTool[] }> {
    return this.#servers
      .filter((s) => s.status === "connected")
      .map((s) => ({
        server: s.name,
        tools: s.tools.filter((t) => typeof t.name === "string" && t.name.startsWith("_")),
      }));
  }

  hookTool(server: string, hook: string): McpTool | undefined {
    return this.#servers.find((s) => s.name === server)?.tools.find((t) => t.name === hook);
  }

  route(name: string): { server: string; tool: McpTool } | undefined {
    this.#build();
    const route = this.#visible.get(name);
    if (route === undefined) return undefined;
    const tool = route.server.tools.find((t) => t.name === route.bare);
    return tool === undefined ? undefined : { server: route.server.name, tool };
  }

  async callHook(
    name: string,
    hook: string,
    options: { timeoutMs: number; meta: Record<string, unknown> },
  ): Promise<CallToolResult> {
    const server = this.#servers.find((s) => s.name === name);
    if (server === undefined) throw new AgentError("mcp", `Cannot call hook "${hook}": unknown server "${name}"`);
    const conn = server.conn;
    if (server.status !== "connected" || conn === undefined) {
      throw new AgentError("mcp", `Server "${name}" is not running: ${server.reason}`);
    }
    if (!server.tools.some((t) => t.name === hook)) {
      throw new AgentError("mcp", `Server "${name}" does not list hook "${hook}"`);
    }
    try {
      return await conn.callTool(hook, {}, { timeoutMs: options.timeoutMs, meta: options.meta });
    } catch (error) {
      if (conn.closed && server.conn === conn) server.died();
      if (error instanceof AgentError) throw error;
      throw new AgentError("mcp", `Hook "${hook}" of server "${name}" failed: ${messageOf(error)}`, { cause: error });
    }
  }

  qualifiedName(server: string, bareName: string): string {
    return this.#names.nameFor(server, bareName);
  }

  killServer(name: string, reason: string): void {
    if (this.#servers.find((s) => s.name === name)?.kill(reason)) this.#warn(`Killed server "${name}": ${reason}`);
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled(this.#servers.map((s) => s.close()));
  }
}

function failure(text: string): ToolOutcome {
  return { content: [{ type: "text", text }], isError: true };
}
