/**
 * All of a session's MCP servers behind one {@link ToolRegistry}: LLM-legal names, limits,
 * schema repair (SPEC section 5), result mapping and failures as data (SPEC 6.7, 6.8), list
 * changes (SPEC 6.3), lazy restart with backoff (SPEC 6.10) and hook calls (SPEC 2, 4).
 * @module
 */

import { AgentError, isAbortError } from "../errors.ts";
import type { ToolDef } from "../types.ts";
import { connectMcp } from "./client.ts";
import { objectSchema, ToolNames, toolDescription, toolOutcome } from "./registry-tools.ts";
import type {
  CallToolResult,
  McpConnection,
  McpConnectOptions,
  McpEra,
  McpExitInfo,
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

/** Options of {@link createRegistry}. */
export interface RegistryOptions {
  /** Sent as `_meta["sprout-agent/session"]` on every request. */
  sessionId: string;
  /** Bound of connecting and of each `tools/list`, in ms; default 30000. */
  initTimeoutMs?: number;
  maxLineBytes?: number;
  eraCache?: Map<string, McpEra>;
  fetch?: typeof fetch;
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** Non-fatal problems: a server died (with its stderr tail), tools dropped or skipped. */
  onWarning?: (message: string) => void;
  /** Default: `connectMcp` of `./client.ts`. */
  connect?: ConnectFn;
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

/** A server that could not start. */
export interface RegistryFailure {
  server: string;
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
  const failures = await registry.start(servers);
  return { registry, failures };
}

type Status = "connected" | "dead" | "exhausted";

interface Entry {
  config: McpServerConfig;
  name: string;
  status: Status;
  conn: McpConnection | undefined;
  /** Bumped per connection so events of an old connection are ignored. */
  generation: number;
  /** The last list the server gave (kept while dead, so its tools stay routable). */
  tools: McpTool[];
  stale: boolean;
  failedRestarts: number;
  nextRetryAt: number;
  reason: string;
  exit: McpExitInfo | undefined;
  restarting: Promise<void> | undefined;
}

class McpRegistry implements ToolRegistry {
  #options: RegistryOptions;
  #connect: ConnectFn;
  #initTimeoutMs: number;
  #now: () => number;
  #entries: Entry[] = [];
  #names = new ToolNames();
  #visible = new Map<string, { entry: Entry; bare: string }>();
  #defs: ToolDef[] = [];
  #dirty = true;
  #warned = new Set<string>();
  #lastDropped = "";
  #closed = false;

  constructor(options: RegistryOptions) {
    this.#options = options;
    this.#connect = options.connect ?? connectMcp;
    this.#initTimeoutMs = options.initTimeoutMs ?? 30_000;
    this.#now = options.now ?? Date.now;
  }

  async start(servers: McpServerConfig[]): Promise<RegistryFailure[]> {
    const seen = new Set<string>();
    const results = await Promise.all(servers.map(async (config, index): Promise<RegistryFailure | undefined> => {
      if (index >= MAX_SERVERS) {
        return {
          server: config.name,
          message: `Cannot start server "${config.name}": at most ${MAX_SERVERS} MCP servers are allowed per session`,
        };
      }
      if (seen.has(config.name)) {
        return { server: config.name, message: `Cannot start server "${config.name}": the name is used twice` };
      }
      seen.add(config.name);
      const entry: Entry = {
        config,
        name: config.name,
        status: "dead",
        conn: undefined,
        generation: 0,
        tools: [],
        stale: false,
        failedRestarts: 0,
        nextRetryAt: 0,
        reason: "",
        exit: undefined,
        restarting: undefined,
      };
      try {
        await this.#open(entry);
        return undefined;
      } catch (error) {
        return { server: config.name, message: startMessage(config.name, error) };
      }
    }));
    // Entries are kept in configuration order, whatever order the connections finished in.
    const byName = new Map(this.#entries.map((e) => [e.name, e]));
    this.#entries = servers.flatMap((s) => byName.get(s.name) ?? []).filter((e, i, all) => all.indexOf(e) === i);
    this.#dirty = true;
    return results.filter((r): r is RegistryFailure => r !== undefined);
  }

  /** Connects and lists `entry`; on success it is `connected` and registered. */
  async #open(entry: Entry): Promise<void> {
    const generation = ++entry.generation;
    const o = this.#options;
    const name = entry.name;
    const options: McpConnectOptions = {
      sessionId: o.sessionId,
      initTimeoutMs: this.#initTimeoutMs,
      onWarning: (message) => this.#warn(`Server "${name}": ${message}`),
      onToolsChanged: () => {
        if (entry.generation === generation) entry.stale = true;
      },
      onClose: (info) => {
        if (entry.generation !== generation) return;
        entry.exit = info;
        if (entry.status === "connected") this.#died(entry, info);
      },
    };
    if (o.maxLineBytes !== undefined) options.maxLineBytes = o.maxLineBytes;
    if (o.eraCache !== undefined) options.eraCache = o.eraCache;
    if (o.fetch !== undefined) options.fetch = o.fetch;
    if (o.cwd !== undefined) options.cwd = o.cwd;
    if (o.env !== undefined) options.env = o.env;
    entry.exit = undefined;
    const conn = await settleWithin(
      this.#connect(entry.config, options),
      this.#initTimeoutMs,
      `Cannot start server "${name}": connecting timed out after ${seconds(this.#initTimeoutMs)} s`,
      (late) => late.kill(),
    );
    let tools: McpTool[];
    try {
      tools = await conn.listTools({ timeoutMs: this.#initTimeoutMs });
    } catch (error) {
      conn.kill();
      throw new AgentError("mcp-connect", `Cannot list the tools of server "${name}": ${messageOf(error)}`, {
        cause: error,
      });
    }
    if (this.#closed) {
      conn.kill();
      throw new AgentError("mcp-connect", `Cannot start server "${name}": the registry is closed`);
    }
    entry.conn = conn;
    entry.tools = tools;
    entry.status = "connected";
    entry.stale = false;
    entry.reason = "";
    if (!this.#entries.includes(entry)) this.#entries.push(entry);
    this.#dirty = true;
  }

  /** Marks a connected server dead after its connection ended on its own. */
  #died(entry: Entry, info: McpExitInfo | undefined, reason?: string): void {
    const why = reason ?? `exited (${exitText(info)})`;
    this.#markDead(entry, why);
    const tail = info?.stderrTail.trim() ?? "";
    this.#warn(`Server "${entry.name}" ${why}${tail === "" ? "" : `; stderr:\n${tail}`}`);
  }

  #markDead(entry: Entry, reason: string): void {
    if (entry.status !== "connected") return;
    entry.status = "dead";
    entry.reason = reason;
    entry.failedRestarts = 0;
    entry.nextRetryAt = this.#now() + this.#backoff(1);
    entry.stale = false;
  }

  /** Backoff before restart attempt `n` (1-based): 500 ms doubling, at most 30 s, ±20 %. */
  #backoff(n: number): number {
    const base = this.#options.restartBaseMs ?? 500;
    const max = this.#options.restartMaxMs ?? 30_000;
    const random = this.#options.random ?? Math.random;
    return Math.min(base * 2 ** (n - 1), max) * (0.8 + 0.4 * random());
  }

  #warn(message: string): void {
    this.#options.onWarning?.(message);
  }

  #warnOnce(message: string): void {
    if (this.#warned.has(message)) return;
    this.#warned.add(message);
    this.#warn(message);
  }

  async listTools(): Promise<ToolDef[]> {
    if (this.#closed) return [];
    await Promise.all(this.#entries.filter((e) => e.stale && e.status === "connected").map((e) => this.#relist(e)));
    this.#build();
    return this.#defs.map((d) => ({ ...d }));
  }

  async #relist(entry: Entry): Promise<void> {
    const conn = entry.conn;
    if (conn === undefined) return;
    entry.stale = false; // a change announced while listing marks it stale again
    try {
      const tools = await conn.listTools({ timeoutMs: this.#initTimeoutMs });
      if (entry.conn === conn && entry.status === "connected") {
        entry.tools = tools;
        this.#dirty = true;
      }
    } catch (error) {
      this.#warn(`Cannot re-list the tools of server "${entry.name}": ${messageOf(error)}`);
      if (conn.closed && entry.conn === conn) this.#died(entry, entry.exit);
    }
  }

  /** Rebuilds the visible tool table when a list or a status changed. */
  #build(): void {
    if (!this.#dirty) return;
    this.#dirty = false;
    this.#visible.clear();
    this.#defs = [];
    const dropped: string[] = [];
    for (const entry of this.#entries) {
      if (entry.status === "exhausted") continue;
      const seen = new Set<string>();
      for (const tool of entry.tools) {
        if (typeof tool.name !== "string" || seen.has(tool.name)) continue;
        seen.add(tool.name);
        if (tool.name.startsWith("_")) continue; // hooks and reserved names (SPEC 2.1)
        const name = this.#names.nameFor(entry.name, tool.name);
        const schema = objectSchema(tool.inputSchema);
        if ("skip" in schema) {
          this.#warnOnce(`Skipped tool "${tool.name}" of server "${entry.name}": ${schema.skip}`);
          continue;
        }
        if (this.#defs.length >= MAX_VISIBLE_TOOLS) {
          dropped.push(name);
          continue;
        }
        this.#defs.push({ name, description: toolDescription(tool), inputSchema: schema.schema });
        this.#visible.set(name, { entry, bare: tool.name });
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

  async callTool(
    name: string,
    args: Record<string, unknown>,
    options: { signal?: AbortSignal; timeoutMs: number },
  ): Promise<ToolOutcome> {
    options.signal?.throwIfAborted();
    this.#build();
    const route = this.#visible.get(name);
    if (route === undefined || this.#closed) return failure(`unknown tool: ${name}`);
    const { entry, bare } = route;
    const ready = await this.#ready(entry);
    options.signal?.throwIfAborted();
    if (typeof ready === "string") return failure(ready);
    if (!entry.tools.some((t) => t.name === bare)) return failure(`unknown tool: ${name}`);
    const request: { signal?: AbortSignal; timeoutMs: number } = { timeoutMs: options.timeoutMs };
    if (options.signal !== undefined) request.signal = options.signal;
    try {
      return toolOutcome(await ready.callTool(bare, args, request));
    } catch (error) {
      if (isAbortError(error)) throw error;
      return failure(await this.#failureText(entry, ready, bare, error, options.timeoutMs));
    }
  }

  /** The live connection of `entry`, restarting it when due, or why there is none. */
  async #ready(entry: Entry): Promise<McpConnection | string> {
    if (entry.status === "dead" && entry.restarting === undefined) {
      const wait = entry.nextRetryAt - this.#now();
      if (wait > 0) {
        return `Server "${entry.name}" is not running: ${entry.reason}; next restart attempt in ${seconds(wait)} s`;
      }
      entry.restarting = this.#restart(entry).finally(() => {
        entry.restarting = undefined;
      });
    }
    if (entry.restarting !== undefined) await entry.restarting;
    if (entry.status === "connected" && entry.conn !== undefined) return entry.conn;
    if (entry.status === "exhausted") {
      return `Server "${entry.name}" is not running: gave up after ${this.#maxAttempts()} failed restarts (${entry.reason})`;
    }
    return `Server "${entry.name}" is not running: ${entry.reason}`;
  }

  #maxAttempts(): number {
    return this.#options.restartMaxAttempts ?? 3;
  }

  async #restart(entry: Entry): Promise<void> {
    try {
      await this.#open(entry);
      entry.failedRestarts = 0;
      this.#warn(`Restarted server "${entry.name}"`);
    } catch (error) {
      entry.failedRestarts++;
      entry.reason = `restart failed: ${messageOf(error)}`;
      if (entry.failedRestarts >= this.#maxAttempts()) {
        entry.status = "exhausted";
        this.#dirty = true;
        this.#warn(
          `Server "${entry.name}" failed to restart ${entry.failedRestarts} times; its tools are removed for this session: ${
            messageOf(error)
          }`,
        );
      } else {
        entry.nextRetryAt = this.#now() + this.#backoff(entry.failedRestarts + 1);
        this.#warn(`Cannot restart server "${entry.name}": ${messageOf(error)}`);
      }
    }
  }

  async #failureText(entry: Entry, conn: McpConnection, bare: string, error: unknown, timeoutMs: number): Promise<string> {
    if (error instanceof AgentError && error.code === "timeout") {
      const text = `Tool "${bare}" timed out after ${seconds(timeoutMs)} s`;
      if (entry.config.transport.type !== "stdio") return text;
      this.killServer(entry.name, `tool "${bare}" timed out`);
      return `${text}; server "${entry.name}" was stopped and restarts on its next use`;
    }
    const rpc = error as { rpcCode?: unknown; rpcMessage?: unknown };
    if (typeof rpc.rpcCode === "number" && typeof rpc.rpcMessage === "string") {
      return `Tool call rejected by server "${entry.name}": ${rpc.rpcMessage} (JSON-RPC error ${rpc.rpcCode})`;
    }
    if (conn.closed || entry.conn !== conn || entry.status !== "connected") {
      if (entry.exit === undefined && entry.conn === conn) await delay(100); // let onClose report the exit
      const info = entry.conn === conn ? entry.exit : undefined;
      if (entry.conn === conn && entry.status === "connected") this.#died(entry, info);
      const tail = info?.stderrTail.trim().slice(-RESULT_STDERR_CHARS) ?? "";
      const how = info === undefined ? messageOf(error) : exitText(info);
      return `Server "${entry.name}" exited during tool "${bare}" (${how})${tail === "" ? "" : `; stderr:\n${tail}`}`;
    }
    if (error instanceof AgentError) return `Tool call rejected by server "${entry.name}": ${error.message}`;
    return `Tool call to server "${entry.name}" failed: ${messageOf(error)}`;
  }

  hookServers(hook: string): string[] {
    return this.#entries
      .filter((e) => e.status === "connected" && e.tools.some((t) => t.name === hook))
      .map((e) => e.name);
  }

  async callHook(
    server: string,
    hook: string,
    options: { timeoutMs: number; meta: Record<string, unknown> },
  ): Promise<CallToolResult> {
    const entry = this.#entries.find((e) => e.name === server);
    if (entry === undefined) throw new AgentError("mcp", `Cannot call hook "${hook}": unknown server "${server}"`);
    const conn = entry.conn;
    if (entry.status !== "connected" || conn === undefined) {
      throw new AgentError("mcp", `Server "${server}" is not running: ${entry.reason}`);
    }
    if (!entry.tools.some((t) => t.name === hook)) {
      throw new AgentError("mcp", `Server "${server}" does not list hook "${hook}"`);
    }
    try {
      return await conn.callTool(hook, {}, { timeoutMs: options.timeoutMs, meta: options.meta });
    } catch (error) {
      if (conn.closed && entry.conn === conn && entry.status === "connected") this.#died(entry, entry.exit);
      if (error instanceof AgentError) throw error;
      throw new AgentError("mcp", `Hook "${hook}" of server "${server}" failed: ${messageOf(error)}`, { cause: error });
    }
  }

  qualifiedName(server: string, bareName: string): string {
    return this.#names.nameFor(server, bareName);
  }

  killServer(server: string, reason: string): void {
    const entry = this.#entries.find((e) => e.name === server);
    if (entry === undefined || entry.status !== "connected") return;
    entry.generation++; // ignore whatever the killed connection reports later
    entry.conn?.kill();
    this.#markDead(entry, `killed: ${reason}`);
    this.#warn(`Killed server "${server}": ${reason}`);
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled(this.#entries.map((e) => e.restarting));
    await Promise.allSettled(this.#entries.map(async (e) => {
      e.generation++;
      const conn = e.conn;
      if (e.status === "connected") e.status = "dead";
      e.reason = "the registry is closed";
      if (conn !== undefined && !conn.closed) await conn.close();
    }));
  }
}

function failure(text: string): ToolOutcome {
  return { content: [{ type: "text", text }], isError: true };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function startMessage(server: string, error: unknown): string {
  const message = messageOf(error);
  return message.includes(`"${server}"`) ? message : `Cannot start server "${server}": ${message}`;
}

function exitText(info: McpExitInfo | undefined): string {
  if (info === undefined) return "connection lost";
  if (info.code !== null) return `exit code ${info.code}`;
  return info.signal !== null ? `signal ${info.signal}` : "connection closed";
}

/** `ms` as seconds for messages: `2.5`, `660`. */
function seconds(ms: number): string {
  return String(Math.round(ms / 100) / 10);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Rejects with `AgentError("timeout", message)` after `ms`; a late value goes to `onLate`. */
function settleWithin<T>(promise: Promise<T>, ms: number, message: string, onLate: (value: T) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const timer = setTimeout(() => {
      done = true;
      reject(new AgentError("timeout", message));
    }, ms);
    promise.then(
      (value) => {
        if (done) return onLate(value);
        done = true;
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
