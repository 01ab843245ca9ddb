/**
 * The MCP proxy for Claude Code's `mcp_tool` hooks (`cli.ts hook-proxy`, docs/BRIDGE.md): an
 * MCP server (the legacy `initialize` handshake, `tools/list`, `tools/call`, `ping`) in front
 * of one hook server, reached over stdio or Streamable HTTP through the agent's own registry.
 * Its ordinary tools are served as the server lists them and called unchanged; every `_` tool
 * is hidden from `tools/list`, so the host's model never sees a hook. A call of a hook point's
 * name (`_Stop`, `_PreToolUse`…: how an `mcp_tool` hook reaches it) reads its arguments as the
 * host's hook payload (the printed settings fill them with `${session_id}`, `${tool_input}`…),
 * fires the point through the same code as the command bridge (the agent's `HookRunner`: the
 * hook timeout, typed answers, fail-open) with the `_Stop` budget kept in memory, and answers
 * with Claude Code's hook JSON as the tool's text. The hook server's tools and hooks are one
 * connection, so its in-memory state works unchanged. Transport-neutral: the caller frames
 * the messages (lib/cli/hook-proxy.ts does stdio).
 * @module
 */

import type { Config, HookServers } from "../config/config.ts";
import { HOOK_POINTS, type HookName } from "../hooks/points.ts";
import { HookRunner } from "../hooks/runner.ts";
import { JsonRpcError, type JsonRpcId, type JsonRpcMessage, METHOD_NOT_FOUND } from "../mcp/jsonrpc.ts";
import { type ConnectFn, createRegistry } from "../mcp/registry.ts";
import {
  LEGACY_PROTOCOL_VERSION,
  LEGACY_PROTOCOL_VERSIONS,
  type McpConnection,
  type McpServerConfig,
  type ToolRegistry,
} from "../mcp/types.ts";
import { AGENT_NAME, VERSION } from "../util/version.ts";
import { type BridgeResult, budgetRefusal, failOpen, fireEvent } from "./bridge.ts";
import { memoryBudget } from "./budget.ts";
import { HOST_EVENTS, readEvent } from "./hosts.ts";

/** JSON-RPC error code: invalid params (an unknown tool, MCP's answer to it). */
const INVALID_PARAMS = -32602;
/** How long after a failed start the next request tries again, in ms. */
const RETRY_AFTER_MS = 5_000;

const PREFIX = "sprout-agent hook-proxy";

/** Options of {@link HookProxy}. */
export interface HookProxyOptions {
  /** The one hook server. */
  server: McpServerConfig;
  /** The agent's configuration (`loadConfig`): hook timeout, `_Stop` budget, init timeout, tool timeout. */
  config: Config;
  /** The environment the stdio server's pass-through variables come from. */
  env: Record<string, string | undefined>;
  /** The proxy's folder, absolute: a stdio server starts there; `_meta.cwd` when the payload names none. */
  cwd: string;
  /** Sends one message to the host (a response or a notification). */
  send: (message: JsonRpcMessage) => void;
  /** A line for the person (the proxy's stderr). */
  warn: (line: string) => void;
  /** For HTTP servers; default the global `fetch`. */
  fetch?: typeof fetch;
  /** How to connect (tests: `inProcessMcp(…).connect`); default the MCP client. */
  connect?: ConnectFn;
  /** The `sprout-agent/session` id sent to the server; default `hook-proxy-<uuid>`, one per process. */
  sessionId?: string;
}

/** The host event each hook point stands for when the call names none (`hook_event_name`). */
const DEFAULT_EVENT: Partial<Record<HookName, string>> = {};
for (const [event, hook] of Object.entries(HOST_EVENTS.claude)) DEFAULT_EVENT[hook] ??= event;

/** Payload fields whose substituted value is JSON text (`${tool_input}` becomes a string). */
const JSON_FIELDS = ["tool_input", "tool_response"];

/**
 * A hook call's arguments as a Claude Code payload: `""` (a `${field}` the event lacks) is
 * dropped, `"true"`/`"false"` of `stop_hook_active` become booleans, JSON text of the tool
 * fields is parsed, and `hook_event_name` defaults to the hook point's event.
 * @example hookPayload("_PreToolUse", { tool_name: "Bash", tool_input: "{\"command\":\"ls\"}", cwd: "" }) // { tool_name: "Bash", tool_input: { command: "ls" }, hook_event_name: "PreToolUse" }
 */
export function hookPayload(hook: HookName, args: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(args)) {
    if (value === "" || value === undefined || value === null) continue;
    if (key === "stop_hook_active" && typeof value === "string") out[key] = value === "true";
    else if (JSON_FIELDS.includes(key) && typeof value === "string") {
      try {
        out[key] = JSON.parse(value);
      } catch {
        out[key] = value;
      }
    } else out[key] = value;
  }
  if (typeof out.hook_event_name !== "string") {
    const event = DEFAULT_EVENT[hook];
    if (event !== undefined) out.hook_event_name = event;
  }
  return out;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const messageOf = (error: unknown) => error instanceof Error ? error.message : String(error);
const textResult = (text: string, isError = false) => ({
  content: [{ type: "text", text }],
  ...(isError ? { isError: true } : {}),
});

/** A JSON-RPC error answer to send back. */
class RpcFault extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

/**
 * One host connection's proxy (see the module doc). {@link HookProxy.start} connects the
 * server in the background; {@link HookProxy.receive} takes each message from the host and
 * answers through `send`; {@link HookProxy.close} closes the server. Never throws.
 * @example
 * const proxy = new HookProxy({ server, config: loadConfig(process.env, readText), env: process.env, cwd: process.cwd(),
 *   send: (m) => process.stdout.write(`${JSON.stringify(m)}\n`), warn: (l) => process.stderr.write(`${l}\n`) });
 * proxy.start();
 * for (const message of messages) void proxy.receive(message);
 */
export class HookProxy {
  #o: HookProxyOptions;
  #sessionId: string;
  #registry: ToolRegistry | undefined;
  #starting: Promise<ToolRegistry | undefined> | undefined;
  #failedAt = 0;
  #failure = "";
  #conn: McpConnection | undefined;
  #counts = new Map<string, number>();
  /** One runner for the connection's life: a server's consecutive hook timeouts count across events (SPEC 4.4). */
  #runner: { registry: ToolRegistry; runner: HookRunner } | undefined;
  #inFlight = new Map<JsonRpcId, AbortController>();
  #closed = false;

  constructor(options: HookProxyOptions) {
    this.#o = options;
    this.#sessionId = options.sessionId ?? `hook-proxy-${crypto.randomUUID()}`;
  }

  /** Starts connecting the server (each request waits for it). */
  start(): void {
    void this.#ready();
  }

  /** The registry once the server is connected; `undefined` while it cannot be (retried after 5 s). */
  #ready(): Promise<ToolRegistry | undefined> {
    if (this.#registry !== undefined || this.#closed) return Promise.resolve(this.#registry);
    if (this.#starting !== undefined) return this.#starting;
    if (this.#failedAt !== 0 && Date.now() - this.#failedAt < RETRY_AFTER_MS) return Promise.resolve(undefined);
    const o = this.#o;
    const base = o.connect;
    // The connection is kept, so ordinary calls go to it unchanged (the registry would map results).
    const connect: ConnectFn = async (config, options) => {
      const conn = await (base ?? (await import("../mcp/client.ts")).connectMcp)(config, {
        ...options,
        onToolsChanged: () => {
          options.onToolsChanged?.();
          o.send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
        },
      });
      this.#conn = conn;
      return conn;
    };
    this.#starting = createRegistry([o.server], {
      sessionId: this.#sessionId,
      initTimeoutMs: o.config.mcpInitTimeoutMs,
      maxLineBytes: o.config.maxLineBytes,
      cwd: o.cwd,
      env: o.env,
      connect,
      onWarning: (message) => o.warn(`${PREFIX}: ${message}`),
      ...(o.fetch === undefined ? {} : { fetch: o.fetch }),
    }).then(async ({ registry, failures }) => {
      this.#starting = undefined;
      if (failures.length > 0 || this.#closed) {
        await registry.close();
        this.#failedAt = Date.now();
        this.#failure = failures.map((f) => f.message).join("; ") || "the proxy is closed";
        o.warn(`${PREFIX}: ${this.#failure} (retried on the next request after ${RETRY_AFTER_MS / 1000} s)`);
        return undefined;
      }
      this.#registry = registry;
      return registry;
    });
    return this.#starting;
  }

  /** Takes one message from the host; answers requests through `send`. Never throws. */
  async receive(message: unknown): Promise<void> {
    if (!isRecord(message) || message.jsonrpc !== "2.0") {
      this.#o.send({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "Invalid Request" } });
      return;
    }
    const id = message.id as JsonRpcId | undefined | null;
    const method = typeof message.method === "string" ? message.method : undefined;
    if (method === undefined) return; // a response: the proxy sends the host no requests
    const params = isRecord(message.params) ? message.params : {};
    if (id === undefined || id === null) {
      if (method === "notifications/cancelled") this.#inFlight.get(params.requestId as JsonRpcId)?.abort();
      return;
    }
    try {
      const result = await this.#answer(id, method, params);
      this.#o.send({ jsonrpc: "2.0", id, result });
    } catch (error) {
      const fault = error instanceof RpcFault ? error : new RpcFault(-32603, messageOf(error));
      this.#o.send({
        jsonrpc: "2.0",
        id,
        error: { code: fault.code, message: fault.message, ...(fault.data === undefined ? {} : { data: fault.data }) },
      });
    }
  }

  async #answer(id: JsonRpcId, method: string, params: Record<string, unknown>): Promise<unknown> {
    switch (method) {
      case "initialize": {
        const asked = params.protocolVersion;
        const version = (LEGACY_PROTOCOL_VERSIONS as readonly unknown[]).includes(asked)
          ? asked as string
          : LEGACY_PROTOCOL_VERSION;
        return {
          protocolVersion: version,
          capabilities: { tools: { listChanged: true } },
          serverInfo: { name: `${AGENT_NAME}-hook-proxy`, version: VERSION },
        };
      }
      case "ping":
        return {};
      case "tools/list":
        return { tools: await this.#tools() };
      case "tools/call":
        return await this.#call(id, params);
      default:
        throw new RpcFault(METHOD_NOT_FOUND, `Method not found: ${method}`);
    }
  }

  /** The server's ordinary tools as it listed them (the registry's checks applied), hooks left out. */
  async #tools(): Promise<unknown[]> {
    const registry = await this.#ready();
    if (registry === undefined) return [];
    const defs = await registry.listTools();
    return defs.flatMap((d) => {
      const tool = registry.route(d.name)?.tool;
      return tool === undefined || tool.name.startsWith("_") ? [] : [tool];
    });
  }

  async #call(id: JsonRpcId, params: Record<string, unknown>): Promise<unknown> {
    const name = params.name;
    if (typeof name !== "string") throw new RpcFault(INVALID_PARAMS, "tools/call needs a tool name");
    const args = isRecord(params.arguments) ? params.arguments : {};
    if (Object.hasOwn(HOOK_POINTS, name)) return textResult(await this.#hook(name as HookName, args));
    const registry = await this.#ready();
    if (registry === undefined) {
      return textResult(`Server "${this.#o.server.name}" is not running: ${this.#failure}`, true);
    }
    const qualified = registry.qualifiedName(this.#o.server.name, name);
    if (name.startsWith("_") || registry.route(qualified) === undefined) {
      throw new RpcFault(INVALID_PARAMS, `Unknown tool: ${name}`);
    }
    const controller = new AbortController();
    this.#inFlight.set(id, controller);
    try {
      const conn = this.#conn;
      if (conn === undefined || conn.closed) {
        // The server died: the registry restarts it (SPEC 6.10) and maps this one result.
        return await registry.callTool(qualified, args, {
          timeoutMs: this.#o.config.toolTimeoutMs,
          signal: controller.signal,
        });
      }
      const meta = isRecord(params._meta) ? { ...params._meta } : {};
      delete meta.progressToken; // no progress is relayed
      try {
        return await conn.callTool(name, args, {
          timeoutMs: this.#o.config.toolTimeoutMs,
          signal: controller.signal,
          meta,
        });
      } catch (error) {
        if (error instanceof JsonRpcError) throw new RpcFault(error.rpcCode, error.rpcMessage, error.rpcData);
        return textResult(`Tool call to server "${this.#o.server.name}" failed: ${messageOf(error)}`, true);
      }
    } finally {
      this.#inFlight.delete(id);
    }
  }

  /**
   * Fires `hook` with the call's arguments as the host's payload; resolves with the hook
   * JSON's text (`""`: nothing to say). Every failure of its own fails open.
   */
  async #hook(hook: HookName, args: Record<string, unknown>): Promise<string> {
    const o = this.#o;
    const say = (result: BridgeResult): string => {
      for (const line of result.stderr) o.warn(line.startsWith(PREFIX) ? line : `${PREFIX}: ${line}`);
      return result.json === undefined ? "" : JSON.stringify(result.json);
    };
    try {
      const event = readEvent("claude", hookPayload(hook, args));
      if (event.hook !== hook) {
        return say(
          failOpen(
            "claude",
            `${hook} was called for the event ${event.event}, which fires ${event.hook ?? "no hook"}`,
            PREFIX,
          ),
        );
      }
      // A subagent's stops spend a budget of their own (SPEC 13.4).
      const subagent = event.hook !== undefined && HOOK_POINTS[event.hook].agent === "subagent";
      const budget = memoryBudget(this.#counts, `${event.sessionId ?? ""}${subagent ? "\nsubagent" : ""}`);
      const refused = budgetRefusal("claude", event, o.config, budget);
      if (refused !== undefined) return say(refused);
      const registry = await this.#ready();
      const required = o.server.required === true;
      if (registry === undefined) {
        if (HOOK_POINTS[hook].effect === "deny" && required) {
          const { registry: none } = await createRegistry([], { sessionId: this.#sessionId });
          return say(
            await fireEvent({
              host: "claude",
              event,
              config: o.config,
              registry: none,
              budget,
              cwd: o.cwd,
              notes: [],
              requiredDown: [{ server: o.server.name, message: this.#failure }],
            }),
          );
        }
        return say(failOpen("claude", `Server "${o.server.name}" is not running: ${this.#failure}`, PREFIX));
      }
      const allow: HookServers = { kind: "only", names: [o.server.name] };
      if (this.#runner?.registry !== registry) {
        this.#runner = {
          registry,
          runner: new HookRunner({ registry, allow, timeoutMs: o.config.hookTimeoutMs }),
        };
      }
      return say(
        await fireEvent({
          host: "claude",
          event,
          config: o.config,
          registry,
          budget,
          cwd: o.cwd,
          notes: [],
          requiredDown: [],
          allow,
          runner: this.#runner.runner,
          forgetSubagentBudget: () => void this.#counts.delete(`${event.sessionId ?? ""}\nsubagent`),
        }),
      );
    } catch (error) {
      return say(failOpen("claude", messageOf(error), PREFIX));
    }
  }

  /** Aborts the calls in flight and closes the server. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const c of this.#inFlight.values()) c.abort();
    const registry = this.#registry ?? await this.#starting;
    await registry?.close();
  }
}
