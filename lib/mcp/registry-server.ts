/**
 * One server inside the tool registry (`registry.ts`): its connection, its last tool list,
 * whether it is connected, dead or given up, and its lazy restart with backoff (SPEC 6.10).
 * @module
 */

import { AgentError } from "../util/errors.ts";
import { formatSeconds } from "../util/time.ts";
import type { McpConnection, McpConnectOptions, McpExitInfo, McpServerConfig, McpTool } from "./types.ts";

/** Where a server stands: `dead` servers restart on their next tool use, `exhausted` ones never. */
export type ServerStatus = "starting" | "connected" | "dead" | "exhausted";

/** What a {@link ServerHandle} needs from the registry. */
export interface ServerHandleOptions {
  connect: (config: McpServerConfig, options: McpConnectOptions) => Promise<McpConnection>;
  /** Shared connect options; the handle adds its own callbacks. */
  connectOptions: McpConnectOptions;
  /** Bound of connecting and of each `tools/list`, in ms. */
  initTimeoutMs: number;
  /** First backoff in ms (doubling per attempt), the longest backoff, and the attempts before giving up. */
  restart: { baseMs: number; maxMs: number; maxAttempts: number };
  now: () => number;
  random: () => number;
  warn: (message: string) => void;
  /** Each line of a stdio server's stderr, with the server's name (`RegistryOptions.onServerStderr`). */
  stderr?: ((server: string, line: string) => void) | undefined;
  /** The visible tools may have changed (new list, server given up). */
  changed: () => void;
}

/**
 * One configured server. A death (exit, kill) makes it `dead` with a restart due after
 * `backoff(1)`; {@link ready} restarts it when due and fails fast before. Each failed
 * restart raises the backoff (500 ms doubling to 30 s, ±20 % jitter); after
 * `maxAttempts` failed restarts it is `exhausted` and its tools leave the list. A successful
 * restart starts the count again. Events of an old connection are ignored.
 */
export class ServerHandle {
  readonly config: McpServerConfig;
  readonly name: string;
  status: ServerStatus = "starting";
  conn: McpConnection | undefined;
  /** The last list the server gave, kept while dead so its tools stay routable. */
  tools: McpTool[] = [];
  /**
   * The list must be listed again before the next round: the server announced a change not
   * re-listed yet, or (modern era) the list's `ttlMs` freshness hint has elapsed
   * ({@link McpConnection.toolsStale}). Setting it sets only the announced part.
   */
  get stale(): boolean {
    return this.#stale || (this.status === "connected" && !this.#unused && this.conn?.toolsStale === true);
  }
  set stale(value: boolean) {
    this.#stale = value;
  }
  #stale = false;
  /**
   * The list {@link open} fetched has not been served yet: it was fetched to be used, so its
   * freshness hint does not expire it before its first use (the official SDK's servers send
   * `ttlMs: 0`, which would send `tools/list` again at the first round). A change notice
   * still makes it stale.
   */
  #unused = false;
  /** Why it is dead. */
  reason = "";
  /** How the current connection's process ended, once it did. */
  exit: McpExitInfo | undefined;
  #options: ServerHandleOptions;
  #generation = 0;
  #failedRestarts = 0;
  #nextRetryAt = 0;
  #restarting: Promise<void> | undefined;
  #closed = false;

  constructor(config: McpServerConfig, options: ServerHandleOptions) {
    this.config = config;
    this.name = config.name;
    this.#options = options;
  }

  /**
   * Connects and lists the tools, each bounded by `initTimeoutMs`; `signal` (the first start
   * only, never a restart) kills the server and fails both at once.
   * @throws {AgentError} `mcp-connect` or `timeout`, naming the server
   * @throws an `AbortError` when `signal` aborts first
   */
  async open(signal?: AbortSignal): Promise<void> {
    const generation = ++this.#generation;
    const o = this.#options;
    const options: McpConnectOptions = {
      ...o.connectOptions,
      initTimeoutMs: o.initTimeoutMs,
      onWarning: (message) => o.warn(`Server "${this.name}": ${message}`),
      ...(o.stderr === undefined ? {} : { onStderr: (line: string) => o.stderr?.(this.name, line) }),
      onToolsChanged: () => {
        if (this.#generation === generation) this.stale = true;
      },
      onClose: (info) => {
        if (this.#generation !== generation) return;
        this.exit = info;
        this.died();
      },
      ...(signal === undefined ? {} : { signal }),
    };
    this.exit = undefined;
    // A backstop a little after the connection's own init timeout, whose message is the one
    // worth showing (a silent stdio server's names the fix: `"protocol": "legacy"`).
    const conn = await settleWithin(
      o.connect(this.config, options),
      o.initTimeoutMs + Math.min(1000, Math.ceil(o.initTimeoutMs / 3)),
      `Cannot start server "${this.name}": connecting timed out after ${formatSeconds(o.initTimeoutMs)} s`,
      (late) => late.kill(),
    );
    let tools: McpTool[];
    const onAbort = () => conn.kill();
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      tools = await conn.listTools({ timeoutMs: o.initTimeoutMs });
      signal?.throwIfAborted();
    } catch (error) {
      conn.kill();
      signal?.throwIfAborted();
      throw new AgentError("mcp-connect", `Cannot list the tools of server "${this.name}": ${messageOf(error)}`, {
        cause: error,
      });
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
    if (this.#closed) {
      conn.kill();
      throw new AgentError("mcp-connect", `Cannot start server "${this.name}": the registry is closed`);
    }
    this.conn = conn;
    this.tools = tools;
    this.status = "connected";
    this.stale = false;
    this.#unused = true;
    this.reason = "";
    o.changed();
  }

  /** The registry served a tool list built from this server's list: its freshness hint applies from now on. */
  used(): void {
    this.#unused = false;
  }

  /** Lists the tools again after a change notice; a failure keeps the old list (with a warning). */
  async relist(): Promise<void> {
    const conn = this.conn;
    if (conn === undefined || this.status !== "connected") return;
    this.stale = false; // a change announced while listing marks it stale again
    try {
      const tools = await conn.listTools({ timeoutMs: this.#options.initTimeoutMs });
      if (this.conn === conn && this.status === "connected") {
        this.tools = tools;
        this.#options.changed();
      }
    } catch (error) {
      this.#options.warn(`Cannot re-list the tools of server "${this.name}": ${messageOf(error)}`);
      if (conn.closed && this.conn === conn) this.died();
    }
  }

  /** Marks a connected server dead after its connection ended on its own, with a warning (and stderr tail). */
  died(): void {
    if (this.status !== "connected") return;
    const why = `exited (${exitText(this.exit)})`;
    this.#markDead(why);
    const tail = this.exit?.stderrTail.trim() ?? "";
    this.#options.warn(`Server "${this.name}" ${why}${tail === "" ? "" : `; stderr:\n${tail}`}`);
  }

  /** Kills a connected server at once and marks it dead; false when it was not connected. */
  kill(reason: string): boolean {
    if (this.status !== "connected") return false;
    this.#generation++; // ignore whatever the killed connection reports later
    this.conn?.kill();
    this.#markDead(`killed: ${reason}`);
    return true;
  }

  #markDead(reason: string): void {
    this.status = "dead";
    this.reason = reason;
    this.stale = false;
    this.#failedRestarts = 0;
    this.#nextRetryAt = this.#options.now() + this.#backoff(1);
  }

  /** Backoff before restart attempt `n` (1-based) in ms. */
  #backoff(n: number): number {
    const { baseMs, maxMs } = this.#options.restart;
    return Math.min(baseMs * 2 ** (n - 1), maxMs) * (0.8 + 0.4 * this.#options.random());
  }

  /**
   * The live connection, restarting a dead server when its backoff has passed (concurrent
   * callers share one restart), or a message saying why there is none.
   */
  async ready(): Promise<McpConnection | string> {
    if (this.status === "dead" && this.#restarting === undefined && !this.#closed) {
      const wait = this.#nextRetryAt - this.#options.now();
      if (wait > 0) {
        return `Server "${this.name}" is not running: ${this.reason}; next restart attempt in ${formatSeconds(wait)} s`;
      }
      this.#restarting = this.#restart().finally(() => {
        this.#restarting = undefined;
      });
    }
    if (this.#restarting !== undefined) await this.#restarting;
    if (this.status === "connected" && this.conn !== undefined) return this.conn;
    if (this.status === "exhausted") {
      return `Server "${this.name}" is not running: gave up after ${this.#failedRestarts} failed restarts (${this.reason})`;
    }
    return `Server "${this.name}" is not running: ${this.reason}`;
  }

  async #restart(): Promise<void> {
    try {
      await this.open();
      this.#failedRestarts = 0;
      this.#options.warn(`Restarted server "${this.name}"`);
    } catch (error) {
      this.#failedRestarts++;
      this.reason = `restart failed: ${messageOf(error)}`;
      if (this.#failedRestarts >= this.#options.restart.maxAttempts) {
        this.status = "exhausted";
        this.#options.changed();
        this.#options.warn(
          `Server "${this.name}" failed to restart ${this.#failedRestarts} times; its tools are removed for this session: ${
            messageOf(error)
          }`,
        );
      } else {
        this.#nextRetryAt = this.#options.now() + this.#backoff(this.#failedRestarts + 1);
        this.#options.warn(`Cannot restart server "${this.name}": ${messageOf(error)}`);
      }
    }
  }

  /** Closes the connection for good (after any restart in flight); never restarts again. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#restarting?.catch(() => {});
    this.#generation++;
    if (this.status === "connected") this.status = "dead";
    this.reason = "the registry is closed";
    // Also for a killed connection: its process may still be in its SIGTERM grace, stopping
    // what it started (test-gate's test run); close() waits for it instead of leaving the
    // exit-time SIGKILL to cut that short. close() is idempotent.
    await this.conn?.close();
  }
}

/** An error's message, or the value as text. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** `exit code 1`, `signal SIGKILL` or `connection lost`. */
export function exitText(info: McpExitInfo | undefined): string {
  if (info === undefined) return "connection lost";
  if (info.code !== null) return `exit code ${info.code}`;
  return info.signal !== null ? `signal ${info.signal}` : "connection closed";
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
