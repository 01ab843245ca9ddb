/**
 * An in-memory MCP server and {@link McpConnection} for registry and hook tests: a real object
 * that implements the interface (a fake, not a mock) with scriptable tools, results, delays,
 * JSON-RPC errors, exits and failed starts. `fakeConnect(servers)` is a `connect` function
 * for `createRegistry`.
 * @module
 */

import { abortError, AgentError } from "../../lib/util/errors.ts";
import type {
  CallToolResult,
  McpConnection,
  McpConnectOptions,
  McpExitInfo,
  McpRequestOptions,
  McpServerConfig,
  McpTool,
} from "../../lib/mcp/types.ts";

/** Thrown by a handler to answer with a JSON-RPC error. */
export class FakeRpcError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

/** How the fake connection reports a JSON-RPC error: like `JsonRpcError` of `lib/mcp/jsonrpc.ts`. */
export class FakeJsonRpcError extends AgentError {
  readonly rpcCode: number;
  readonly rpcMessage: string;
  readonly rpcData: unknown = undefined;
  constructor(server: string, code: number, message: string) {
    super("mcp", `Server "${server}" answered error ${code}: ${message}`);
    this.rpcCode = code;
    this.rpcMessage = message;
  }
}

/** What a handler gets besides the arguments. */
export interface FakeCallContext {
  meta: Record<string, unknown> | undefined;
  /** Aborted when the call is abandoned (timeout, cancel) or the connection ends. */
  signal: AbortSignal;
  /** Makes the server exit while this call is in flight. */
  die: (code?: number, stderr?: string) => void;
}

/** A tool's behaviour: return a result (or throw {@link FakeRpcError}). */
export type FakeHandler = (
  args: Record<string, unknown>,
  ctx: FakeCallContext,
) => CallToolResult | Promise<CallToolResult>;

/** One recorded `tools/call`. */
export interface FakeCall {
  tool: string;
  args: Record<string, unknown>;
  meta: Record<string, unknown> | undefined;
  /** How it ended for the client: `result`, `error`, `timeout`, `aborted`, `closed`; `late` for a reply after that. */
  end?: "result" | "error" | "timeout" | "aborted" | "closed";
  late?: boolean;
}

/** A text result. */
export function text(value: string, isError = false): CallToolResult {
  return isError ? { content: [{ type: "text", text: value }], isError } : { content: [{ type: "text", text: value }] };
}

/** Resolves after `ms`, or rejects when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(abortError());
    }, { once: true });
  });
}

/** One scripted server; its connections come from {@link fakeConnect}. */
export class FakeServer {
  readonly name: string;
  tools: McpTool[];
  handlers: Record<string, FakeHandler>;
  /** Delay before a connection is ready, in ms. */
  connectDelayMs = 0;
  /** The next `failConnects` connection attempts throw this message. */
  failConnects = 0;
  connectError = "command not found";
  /** Delay of each `tools/list`, in ms. */
  listDelayMs = 0;
  readonly calls: FakeCall[] = [];
  readonly connections: FakeConnection[] = [];
  listCount = 0;

  constructor(name: string, tools: Array<McpTool | string>, handlers: Record<string, FakeHandler> = {}) {
    this.name = name;
    this.tools = tools.map((t) => (typeof t === "string" ? { name: t, inputSchema: { type: "object" } } : t));
    this.handlers = handlers;
  }

  /** The connection that is open now, if any. */
  get live(): FakeConnection | undefined {
    return this.connections.find((c) => !c.closed);
  }

  /** Replaces the tool list and announces the change (`notifications/tools/list_changed`). */
  setTools(tools: Array<McpTool | string>, handlers: Record<string, FakeHandler> = {}): void {
    this.tools = tools.map((t) => (typeof t === "string" ? { name: t, inputSchema: { type: "object" } } : t));
    Object.assign(this.handlers, handlers);
    this.live?.announceToolsChanged();
  }

  /** Makes the open connection end as if the process exited. */
  die(code = 1, stderr = ""): void {
    this.live?.exit({ code, signal: null, stderrTail: stderr });
  }
}

/** One connection to a {@link FakeServer}. */
export class FakeConnection implements McpConnection {
  readonly era = "legacy" as const;
  readonly protocolVersion = "2025-11-25";
  readonly serverInfo = { name: "fake", version: "1.0.0" };
  readonly pid = undefined;
  readonly server: FakeServer;
  readonly options: McpConnectOptions;
  killed = false;
  #closed = false;
  #pending = new Set<(reason: Error) => void>();
  #ended = new AbortController();

  constructor(server: FakeServer, options: McpConnectOptions) {
    this.server = server;
    this.options = options;
  }

  get closed(): boolean {
    return this.#closed;
  }

  announceToolsChanged(): void {
    if (!this.#closed) this.options.onToolsChanged?.();
  }

  async listTools(options?: McpRequestOptions): Promise<McpTool[]> {
    this.#assertOpen();
    this.server.listCount++;
    // kill() and close() fail a pending tools/list at once, as McpConnection.kill promises.
    if (this.server.listDelayMs > 0) await sleep(this.server.listDelayMs, this.#ended.signal).catch(() => {});
    this.#assertOpen();
    void options;
    return structuredClone(this.server.tools);
  }

  callTool(name: string, args: Record<string, unknown>, options: McpRequestOptions = {}): Promise<CallToolResult> {
    this.#assertOpen();
    const call: FakeCall = { tool: name, args, meta: options.meta };
    this.server.calls.push(call);
    const abandon = new AbortController();
    const onEnd = () => abandon.abort();
    this.#ended.signal.addEventListener("abort", onEnd, { once: true });
    return new Promise<CallToolResult>((resolve, reject) => {
      let settled = false;
      const finish = (end: NonNullable<FakeCall["end"]>, settle: () => void) => {
        if (settled) {
          if (end === "result") call.late = true;
          return;
        }
        settled = true;
        call.end = end;
        clearTimeout(timer);
        this.#pending.delete(onClose);
        this.#ended.signal.removeEventListener("abort", onEnd);
        if (end !== "result" && end !== "error") abandon.abort();
        settle();
      };
      const onClose = (reason: Error) => finish("closed", () => reject(reason));
      this.#pending.add(onClose);
      const timer = options.timeoutMs === undefined ? undefined : setTimeout(() => {
        finish(
          "timeout",
          () => reject(new AgentError("timeout", `Request "tools/call" timed out after ${options.timeoutMs} ms`)),
        );
      }, options.timeoutMs);
      options.signal?.addEventListener("abort", () => finish("aborted", () => reject(abortError())), { once: true });
      if (options.signal?.aborted) finish("aborted", () => reject(abortError()));
      const handler = this.server.handlers[name];
      const known = this.server.tools.some((t) => t.name === name);
      const ctx: FakeCallContext = {
        meta: options.meta,
        signal: abandon.signal,
        die: (code = 1, stderr = "") => this.exit({ code, signal: null, stderrTail: stderr }),
      };
      Promise.resolve()
        .then(() => {
          if (!known) throw new FakeRpcError(-32602, `Tool ${name} not found`);
          return handler === undefined ? text(`${name} ok`) : handler(args, ctx);
        })
        .then(
          (result) => finish("result", () => resolve(result)),
          (error: unknown) => {
            if (error instanceof FakeRpcError) {
              finish("error", () => reject(new FakeJsonRpcError(this.server.name, error.code, error.message)));
            } else if (!this.#closed) {
              finish("error", () => reject(error instanceof Error ? error : new Error(String(error))));
            }
          },
        );
    });
  }

  /** Ends the connection as a process exit: pending calls fail, `onClose` is called. */
  exit(info: McpExitInfo): void {
    if (this.#closed) return;
    this.options.onClose?.(info);
    this.#end(new AgentError("mcp", `Server "${this.server.name}" exited with code ${info.code}`));
  }

  kill(): void {
    this.killed = true;
    this.#end(new AgentError("mcp", `Server "${this.server.name}" was killed`));
  }

  close(): Promise<void> {
    this.#end(new AgentError("mcp", `Server "${this.server.name}" is closed`));
    return Promise.resolve();
  }

  #end(reason: Error): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const reject of [...this.#pending]) reject(reason);
    this.#ended.abort();
  }

  #assertOpen(): void {
    if (this.#closed) throw new AgentError("mcp", `Server "${this.server.name}" is not connected`);
  }
}

/** A `connect` function over `servers` (matched by name); unknown names fail to start. */
export function fakeConnect(
  servers: FakeServer[],
): (config: McpServerConfig, options: McpConnectOptions) => Promise<McpConnection> {
  return async (config, options) => {
    const server = servers.find((s) => s.name === config.name);
    if (server === undefined) throw new AgentError("mcp-connect", `Cannot start server "${config.name}": no such fake`);
    if (server.connectDelayMs > 0) await sleep(server.connectDelayMs);
    if (server.failConnects > 0) {
      server.failConnects--;
      throw new AgentError("mcp-connect", `Cannot start server "${config.name}": ${server.connectError}`);
    }
    const connection = new FakeConnection(server, options);
    server.connections.push(connection);
    return connection;
  };
}

/** A stdio server configuration named `name` (the fake ignores the command). */
export function stdioConfig(name: string): McpServerConfig {
  return { name, transport: { type: "stdio", command: "fake", args: [], env: {} } };
}

/** An HTTP server configuration named `name`. */
export function httpConfig(name: string): McpServerConfig {
  return { name, transport: { type: "http", url: `http://127.0.0.1:1/${name}`, headers: {} } };
}
