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
 * @module
 */

import process from "node:process";
import { AgentError, isAbortError } from "../errors.ts";
import { HttpTransport, PROTOCOL_VERSION_META_KEY } from "./http.ts";
import { formatSeconds, INVALID_REQUEST, JsonRpcError, JsonRpcPeer, UNSUPPORTED_PROTOCOL_VERSION } from "./jsonrpc.ts";
import type { JsonRpcId, JsonRpcMessage, SendContext } from "./jsonrpc.ts";
import { spawnStdio } from "./stdio.ts";
import { AGENT_NAME, VERSION } from "../version.ts";
import type { OversizeLine, StdioProcess } from "./stdio.ts";
import {
  LEGACY_PROTOCOL_VERSION,
  LEGACY_PROTOCOL_VERSIONS,
  MODERN_PROTOCOL_VERSION,
} from "./types.ts";
import type {
  CallToolResult,
  McpConnection,
  McpConnectOptions,
  McpEra,
  McpExitInfo,
  McpRequestOptions,
  McpServerConfig,
  McpTool,
} from "./types.ts";

/** How long a stdio server may take to answer the `server/discover` probe (SPEC section 10). */
export const STDIO_PROBE_TIMEOUT_MS = 2000;
/** `tools/list` pages followed at most (SPEC section 10). */
export const MAX_TOOL_PAGES = 100;
/** Client info sent when `options.clientInfo` is absent. */
export const DEFAULT_CLIENT_INFO: { name: string; version: string } = { name: AGENT_NAME, version: VERSION };
/**
 * Longest `ttlMs` honoured, in ms (24 h, the official v2 client's cap): a server cannot pin
 * its tool list for longer (SPEC section 10).
 */
export const MAX_TOOLS_TTL_MS = 86_400_000;
/**
 * How many times in a row a connection opens `subscriptions/listen` again after the server or
 * the transport ended it (at the next `listTools()`, which lists anyway); a subscription that
 * lasted {@link STABLE_SUBSCRIPTION_MS} resets the count. Past it, the freshness hint alone
 * decides when to list again.
 */
export const MAX_RESUBSCRIBES = 3;
/**
 * After a failed `tools/list`, how long (ms) a modern server's previous list counts as fresh
 * before the registry tries again (the specification lets a client serve a stale list when
 * re-fetching fails).
 */
export const RELIST_AFTER_FAILURE_MS = 60_000;
/** A subscription that lasted this long (ms) before it ended was not a failing one. */
export const STABLE_SUBSCRIPTION_MS = 60_000;
/**
 * Longest wait for the acknowledgement of `subscriptions/listen`, in ms (also bounded by the
 * connect or list timeout): past it the connection goes on without change notices.
 */
export const SUBSCRIBE_ACK_TIMEOUT_MS = 10_000;

const CLIENT_INFO_META_KEY = "io.modelcontextprotocol/clientInfo";
const CLIENT_CAPABILITIES_META_KEY = "io.modelcontextprotocol/clientCapabilities";
const SESSION_META_KEY = "sprout-agent/session";
const SUBSCRIPTION_ID_META_KEY = "io.modelcontextprotocol/subscriptionId";
const TOOLS_LIST_CHANGED = "notifications/tools/list_changed";
/** Modern revisions this client speaks. */
const MODERN_VERSIONS: readonly string[] = [MODERN_PROTOCOL_VERSION];

/** The key under which `options.eraCache` remembers a server's era. */
export function eraCacheKey(config: McpServerConfig): string {
  return JSON.stringify(config.transport);
}

/**
 * Connects to one server: spawns it (stdio) or reaches it (HTTP), settles the era (pinned by
 * `config.protocol`, remembered in `options.eraCache`, or detected) and completes the
 * handshake (`initialize` + `notifications/initialized`, or `server/discover`).
 * @throws {AgentError} `mcp-connect` naming the server, with the stderr tail when a stdio
 *   server died; the message says `initialize timed out after N s` when it was too slow
 * @example
 * const conn = await connectMcp(
 *   { name: "fs", transport: { type: "stdio", command: "mcp-server-filesystem", args: ["/tmp"], env: {} } },
 *   { sessionId: "s1" },
 * );
 * const tools = await conn.listTools();
 * await conn.close();
 */
export async function connectMcp(config: McpServerConfig, options: McpConnectOptions): Promise<McpConnection> {
  const connection = new Connection(config, options);
  try {
    await connection.start();
  } catch (error) {
    connection.kill();
    if (error instanceof AgentError && error.code === "mcp-connect") throw error;
    const message = error instanceof Error ? error.message : String(error);
    const verb = config.transport.type === "stdio" ? "start" : "connect to";
    throw new AgentError("mcp-connect", `Cannot ${verb} server "${config.name}": ${message}`, { cause: error });
  }
  connection.connected();
  return connection;
}

type Probe =
  | { kind: "modern"; version: string; result: Record<string, unknown> }
  | { kind: "legacy-here" }
  | { kind: "legacy-restart" };

class Connection implements McpConnection {
  era: McpEra = "legacy";
  protocolVersion = "";
  serverInfo: { name: string; version: string } | undefined;
  #config: McpServerConfig;
  #options: McpConnectOptions;
  #name: string;
  #initTimeoutMs: number;
  #peer!: JsonRpcPeer;
  #proc: StdioProcess | undefined;
  #http: HttpTransport | undefined;
  #closing = false;
  #connected = false;
  #dead = false;
  #exit: McpExitInfo | undefined;
  /** Modern era: when the last tool list stops being fresh (`performance.now()` ms); -Infinity = stale. */
  #toolsFreshUntil = Number.NEGATIVE_INFINITY;
  /** Counts change notices, so a notice that arrives while listing leaves the new list stale. */
  #notices = 0;
  /** The server advertised `capabilities.tools.listChanged` in `server/discover`. */
  #announcesChanges = false;
  #subscription: Subscription | undefined;
  /** The server ended an acknowledged subscription: open it again at the next `listTools()`. */
  #relisten = false;
  #resubscribes = 0;
  #endWarned = false;

  constructor(config: McpServerConfig, options: McpConnectOptions) {
    this.#config = config;
    this.#options = options;
    this.#name = config.name;
    this.#initTimeoutMs = options.initTimeoutMs ?? 30_000;
  }

  get pid(): number | undefined {
    return this.#proc?.pid;
  }

  get closed(): boolean {
    return this.#closing || this.#dead;
  }

  get toolsStale(): boolean {
    return this.era === "modern" && !this.closed && performance.now() >= this.#toolsFreshUntil;
  }

  async start(): Promise<void> {
    const pinned = this.#config.protocol ?? this.#options.eraCache?.get(eraCacheKey(this.#config));
    const transport = this.#config.transport;
    if (transport.type === "http") {
      this.#http = new HttpTransport(transport, {
        name: this.#name,
        fetch: this.#options.fetch ?? fetch,
        onMessage: (m) => this.#peer.receive(m),
        onWarning: (m) => this.#warn(m),
        reinitialize: () => this.#initialize(),
      });
      this.#peer = this.#newPeer((m, c) => this.#http!.send(m, c));
    } else {
      this.#spawn();
    }
    const deadline = Date.now() + this.#initTimeoutMs;
    if (pinned === "legacy") return this.#initialize(deadline);
    if (pinned === "modern") {
      const probe = await this.#probe(deadline, false);
      if (probe.kind !== "modern") {
        throw new AgentError("mcp-connect", `Cannot connect to server "${this.#name}": it does not speak protocol ${MODERN_PROTOCOL_VERSION} (pinned "modern")`);
      }
      this.#useModern(probe);
      return this.#subscribe(deadline);
    }
    const probe = await this.#probe(deadline, true);
    if (probe.kind === "modern") {
      this.#useModern(probe);
      await this.#subscribe(deadline);
    } else {
      if (probe.kind === "legacy-restart") {
        const old = this.#proc;
        this.#proc = undefined;
        old?.kill();
        await old?.exited;
        this.#dead = false;
        this.#exit = undefined;
        this.#spawn();
      }
      await this.#initialize(deadline);
    }
    this.#options.eraCache?.set(eraCacheKey(this.#config), this.era);
  }

  /** Marks the handshake done: from now on a death is reported through `onClose`. */
  connected(): void {
    this.#connected = true;
    if (this.#dead && this.#exit && !this.#closing) this.#options.onClose?.(this.#exit);
  }

  #spawn(): void {
    const transport = this.#config.transport;
    if (transport.type !== "stdio") return;
    const proc = spawnStdio(transport, {
      name: this.#name,
      cwd: this.#options.cwd ?? process.cwd(),
      env: this.#options.env ?? process.env,
      maxLineBytes: this.#options.maxLineBytes ?? 4_194_304,
      onMessage: (m) => peer.receive(m),
      onWarning: (m) => this.#warn(m),
      onOversize: (line) => this.#oversize(peer, line),
      onExit: (info) => {
        if (this.#proc !== proc) return;
        this.#dead = true;
        this.#exit = info;
        peer.failAll(() => this.#exitError(info));
        if (!this.#closing && this.#connected) this.#options.onClose?.(info);
      },
    });
    this.#proc = proc;
    // A write to a server that just died fails (EPIPE) before its exit is seen: wait for the
    // exit briefly, so the error gives the exit code and the stderr tail, not "write EPIPE".
    const peer = this.#newPeer((m) =>
      proc.send(m).catch(async (error: unknown) => {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const info = await Promise.race([proc.exited, new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), 500)))]);
        clearTimeout(timer);
        throw info === undefined ? error : this.#exitError(info);
      })
    );
    this.#peer = peer;
  }

  /**
   * A reply too long to read must not leave its request waiting for its timeout (660 s for a
   * tool): fail that request now, naming the size and the variable. The request is found by
   * the id read from the skipped bytes (exact: the top level of the JSON, not a guess). When
   * no id can be read (the line is not a JSON-RPC object) and exactly one request is
   * pending, the line can only be that request's reply, so it fails; with several pending,
   * failing the oldest could fail a call whose reply is still to come, so they are left to
   * their own timeouts. A request from the server that is too long is answered with -32600,
   * so the server does not wait on it either.
   */
  #oversize(peer: JsonRpcPeer, line: OversizeLine): void {
    const max = this.#options.maxLineBytes ?? 4_194_304;
    const size = line.complete ? `is ${line.bytes} bytes` : `is longer than ${max} bytes`;
    if (line.isRequest) {
      if (line.id !== undefined) {
        peer.answerError(line.id, INVALID_REQUEST, `Request too large: the message ${size}, over the ${max}-byte limit of the client`);
      }
      return;
    }
    const id = line.id ?? (line.complete && peer.pendingCount === 1 ? peer.pendingIds()[0] : undefined);
    if (id === undefined) return;
    peer.fail(id, (method) =>
      new AgentError(
        "mcp",
        `Request "${method}" to server "${this.#name}" failed: its reply ${size}, over the ${max}-byte limit set by SPROUT_AGENT_MAX_LINE_BYTES (raise it, or make the server answer with less)`,
      ));
  }

  #newPeer(send: (m: JsonRpcMessage, c: SendContext) => Promise<void>): JsonRpcPeer {
    return new JsonRpcPeer({
      label: `server "${this.#name}"`,
      send,
      onWarning: (m) => this.#warn(m),
      onNotification: (method, params) => this.#notification(method, params),
    });
  }

  /**
   * Change notices: `notifications/tools/list_changed` (unsolicited from a legacy server, on
   * the `subscriptions/listen` stream from a modern one) makes the list stale at once; the
   * acknowledgement and the server's `notifications/cancelled` drive the subscription.
   */
  #notification(method: string, params: unknown): void {
    const p = asObject(params);
    const subscriptionId = asObject(p?._meta)?.[SUBSCRIPTION_ID_META_KEY];
    const sub = this.#subscription;
    if (method === TOOLS_LIST_CHANGED) {
      this.#notices++;
      this.#toolsFreshUntil = Number.NEGATIVE_INFINITY;
      this.#options.onToolsChanged?.();
    } else if (method === "notifications/subscriptions/acknowledged") {
      if (sub !== undefined && sub.id !== undefined && subscriptionId === sub.id) sub.acknowledged(asObject(p?.notifications) ?? {});
    } else if (method === "notifications/cancelled") {
      if (sub !== undefined && sub.id !== undefined && p?.requestId === sub.id) {
        this.#peer.fail(sub.id, () => new AgentError("mcp", "the server cancelled it"), false);
      }
    }
  }

  /**
   * Opens `subscriptions/listen` for `toolsListChanged` (as the official v2 client does for
   * a `listChanged` option on a modern connection) when the server advertised
   * `capabilities.tools.listChanged`, and waits for its acknowledgement until `deadline`.
   * Over stdio the request shares the channel; over HTTP it is a POST whose SSE answer stays
   * open. Never throws: a refusal, a timeout or an unhonoured filter is a warning, and the
   * freshness hint (`ttlMs`) still applies.
   */
  async #subscribe(deadline: number): Promise<void> {
    if (!this.#announcesChanges || this.#subscription !== undefined || this.closed) return;
    const controller = new AbortController();
    let acknowledged!: (honoured: Record<string, unknown> | Error) => void;
    const ack = new Promise<Record<string, unknown> | Error>((resolve) => {
      acknowledged = resolve;
    });
    const sub: Subscription = { id: undefined, controller, acknowledged, open: false, openedAt: 0 };
    this.#subscription = sub;
    const listen = this.#peer.request(
      "subscriptions/listen",
      { _meta: this.#meta(), notifications: { toolsListChanged: true } },
      { signal: controller.signal, background: true, onId: (id) => (sub.id = id) },
    );
    listen.then(
      () => {
        acknowledged(new Error("the server ended it before acknowledging it"));
        this.#subscriptionEnded(sub, "the server ended it");
      },
      (error: unknown) => {
        acknowledged(error instanceof Error ? error : new Error(String(error)));
        this.#subscriptionEnded(sub, isAbortError(error) ? undefined : messageOf(error));
      },
    );
    let timer: ReturnType<typeof setTimeout> | undefined;
    const waitMs = Math.min(this.#remaining(deadline), SUBSCRIBE_ACK_TIMEOUT_MS);
    const timeout = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), waitMs)));
    const outcome = await Promise.race([ack, timeout]);
    clearTimeout(timer);
    if (outcome === "timeout" || outcome instanceof Error) {
      const why = outcome === "timeout" ? `no acknowledgement within ${formatSeconds(waitMs)} s` : outcome.message;
      if (this.#subscription === sub) this.#subscription = undefined;
      controller.abort();
      if (!this.closed) this.#warn(`Cannot subscribe to the tool-list changes of server "${this.#name}": ${why}`);
      return;
    }
    if (outcome.toolsListChanged !== true) {
      if (this.#subscription === sub) this.#subscription = undefined;
      this.#announcesChanges = false;
      controller.abort();
      this.#warn(`Server "${this.#name}" did not accept a subscription to its tool-list changes; relying on its freshness hint`);
      return;
    }
    sub.open = true;
    sub.openedAt = performance.now();
  }

  /**
   * A subscription ended: by us (nothing to do), or by the server or the transport: changes
   * may have been missed, so the list is stale and the subscription opens again at the next
   * `listTools()` (the first such end is a warning).
   */
  #subscriptionEnded(sub: Subscription, why: string | undefined): void {
    if (this.#subscription !== sub) return;
    this.#subscription = undefined;
    if (!sub.open || why === undefined || this.closed) return;
    if (performance.now() - sub.openedAt >= STABLE_SUBSCRIPTION_MS) this.#resubscribes = 0;
    if (!this.#endWarned) {
      this.#endWarned = true;
      this.#warn(`Server "${this.#name}" ended the subscription to its tool-list changes (${why}); listing its tools again and subscribing again`);
    }
    this.#relisten = true;
    this.#toolsFreshUntil = Number.NEGATIVE_INFINITY;
    this.#options.onToolsChanged?.();
  }

  #warn(message: string): void {
    this.#options.onWarning?.(message);
  }

  #exitError(info: McpExitInfo, method?: string): AgentError {
    const how = info.signal ? `signal ${info.signal}` : `code ${info.code}`;
    const tail = info.stderrTail.trim();
    const prefix = method ? `Request "${method}" to server "${this.#name}" failed: ` : "";
    return new AgentError("mcp", `${prefix}server exited (${how})${tail ? `; stderr:\n${tail}` : ""}`);
  }

  #withStderr(message: string): string {
    const tail = this.#proc?.stderrTail().trim();
    return tail ? `${message}; stderr:\n${tail}` : message;
  }

  /** The `_meta` of every request: the session id, per-request entries, the modern envelope. */
  #meta(extra?: Record<string, unknown>, version?: string): Record<string, unknown> {
    const meta: Record<string, unknown> = { [SESSION_META_KEY]: this.#options.sessionId, ...extra };
    const modern = version ?? (this.era === "modern" ? this.protocolVersion : undefined);
    if (modern !== undefined) {
      meta[PROTOCOL_VERSION_META_KEY] = modern;
      meta[CLIENT_INFO_META_KEY] = this.#options.clientInfo ?? DEFAULT_CLIENT_INFO;
      meta[CLIENT_CAPABILITIES_META_KEY] = {};
    }
    return meta;
  }

  #remaining(deadline: number): number {
    return Math.max(1, deadline - Date.now());
  }

  #initTimeoutMessage(): string {
    return this.#withStderr(`initialize timed out after ${formatSeconds(this.#initTimeoutMs)} s`);
  }

  /** One `server/discover` exchange (plus one corrective retry on -32022), classified. */
  async #probe(deadline: number, fallback: boolean): Promise<Probe> {
    const stdio = this.#proc !== undefined;
    let version = MODERN_PROTOCOL_VERSION;
    for (let corrective = 0;; corrective++) {
      const timeoutMs = stdio && fallback
        ? Math.min(STDIO_PROBE_TIMEOUT_MS, this.#remaining(deadline))
        : this.#remaining(deadline);
      try {
        const result = await this.#peer.request("server/discover", { _meta: this.#meta(undefined, version) }, {
          timeoutMs,
          timeoutMessage: () => this.#initTimeoutMessage(),
        });
        const discover = asObject(result);
        const supported = discover?.supportedVersions;
        if (discover && Array.isArray(supported) && supported.includes(version)) {
          return { kind: "modern", version, result: discover };
        }
        return { kind: "legacy-here" };
      } catch (error) {
        if (error instanceof JsonRpcError) {
          if (error.status === 401 || error.status === 403) throw error;
          if (error.rpcCode === UNSUPPORTED_PROTOCOL_VERSION) {
            const list = asObject(error.rpcData)?.supported;
            const supported = Array.isArray(list) ? list.filter((v): v is string => typeof v === "string") : [];
            const mutual = MODERN_VERSIONS.find((v) => supported.includes(v) && v !== version);
            if (mutual !== undefined && corrective === 0) {
              version = mutual;
              continue;
            }
            if (supported.some((v) => (LEGACY_PROTOCOL_VERSIONS as readonly string[]).includes(v)) || supported.length === 0) {
              return this.#legacyAfterError(stdio);
            }
            throw new AgentError(
              "mcp-connect",
              `Cannot connect to server "${this.#name}": no common protocol version (server supports ${JSON.stringify(supported)})`,
            );
          }
          if (error.status !== undefined && error.status >= 500) throw error;
          return this.#legacyAfterError(stdio);
        }
        if (error instanceof AgentError && stdio && fallback) {
          // Silence (probe timeout) or exit: restart and speak legacy, unless time is up.
          if (error.code === "timeout" && Date.now() >= deadline) throw new AgentError("mcp-connect", `Cannot start server "${this.#name}": ${error.message}`);
          return { kind: "legacy-restart" };
        }
        if (error instanceof AgentError && error.status !== undefined) {
          if (error.status === 401 || error.status === 403 || error.status >= 500) throw error;
          return { kind: "legacy-here" };
        }
        throw error;
      }
    }
  }

  #legacyAfterError(stdio: boolean): Probe {
    if (stdio && this.#proc && !this.#proc.alive) return { kind: "legacy-restart" };
    return { kind: "legacy-here" };
  }

  #useModern(probe: { version: string; result: Record<string, unknown> }): void {
    this.era = "modern";
    this.protocolVersion = probe.version;
    this.#announcesChanges = asObject(asObject(probe.result.capabilities)?.tools)?.listChanged === true;
    const info = asObject(probe.result.serverInfo) ??
      asObject(asObject(probe.result._meta)?.["io.modelcontextprotocol/serverInfo"]);
    if (info && typeof info.name === "string") {
      this.serverInfo = { name: info.name, version: typeof info.version === "string" ? info.version : "" };
    }
  }

  /** The legacy handshake; also run again when an HTTP session is lost. */
  async #initialize(deadline = Date.now() + this.#initTimeoutMs): Promise<void> {
    this.era = "legacy";
    this.#http?.resetSession();
    const result = asObject(
      await this.#peer.request("initialize", {
        protocolVersion: LEGACY_PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: this.#options.clientInfo ?? DEFAULT_CLIENT_INFO,
        _meta: this.#meta(),
      }, { timeoutMs: this.#remaining(deadline), timeoutMessage: () => this.#initTimeoutMessage() }),
    );
    const version = result?.protocolVersion;
    if (typeof version !== "string" || !(LEGACY_PROTOCOL_VERSIONS as readonly string[]).includes(version)) {
      throw new AgentError(
        "mcp-connect",
        `Cannot connect to server "${this.#name}": it answered initialize with unsupported protocol version ${JSON.stringify(version)}`,
      );
    }
    this.protocolVersion = version;
    if (this.#http) this.#http.legacyVersion = version;
    const info = asObject(result?.serverInfo);
    if (info && typeof info.name === "string") {
      this.serverInfo = { name: info.name, version: typeof info.version === "string" ? info.version : "" };
    }
    await this.#peer.notify("notifications/initialized", {});
    this.#http?.listen();
  }

  async #request(
    method: string,
    params: Record<string, unknown>,
    options: McpRequestOptions,
  ): Promise<Record<string, unknown>> {
    if (this.#dead && this.#exit) {
      throw new AgentError("mcp", `Cannot send "${method}" to server "${this.#name}": server not connected (it exited with ${this.#exit.signal ? `signal ${this.#exit.signal}` : `code ${this.#exit.code}`})`);
    }
    if (this.#closing || this.#dead) {
      throw new AgentError("mcp", `Cannot send "${method}" to server "${this.#name}": server not connected`);
    }
    const requestOptions: { timeoutMs?: number; signal?: AbortSignal } = {};
    if (options.timeoutMs !== undefined) requestOptions.timeoutMs = options.timeoutMs;
    if (options.signal !== undefined) requestOptions.signal = options.signal;
    let result: unknown;
    try {
      result = await this.#peer.request(method, { ...params, _meta: this.#meta(options.meta) }, requestOptions);
    } catch (error) {
      if (isAbortError(error)) throw error;
      if (this.#exit && !(error instanceof JsonRpcError)) throw this.#exitError(this.#exit, method);
      throw error;
    }
    return this.#decode(method, result);
  }

  /** Modern results carry `resultType`; only `complete` is usable here. */
  #decode(method: string, result: unknown): Record<string, unknown> {
    const object = asObject(result);
    if (!object) throw new AgentError("mcp", `Request "${method}" to server "${this.#name}" failed: the result is not an object`);
    const type = object.resultType;
    if (type === undefined || type === "complete") {
      if (type !== undefined) {
        const copy = { ...object };
        delete copy.resultType;
        return copy;
      }
      return object;
    }
    throw new AgentError(
      "mcp",
      `Request "${method}" to server "${this.#name}" failed: result type "${String(type)}" is not supported (the agent cannot provide input)`,
    );
  }

  async listTools(options: McpRequestOptions = {}): Promise<McpTool[]> {
    const byName = new Map<string, McpTool>();
    const seen = new Set<string>();
    let duplicates = 0;
    let nameless = 0;
    let cursor: string | undefined;
    const pageOptions: McpRequestOptions = { ...options, timeoutMs: options.timeoutMs ?? this.#initTimeoutMs };
    if (this.#relisten && this.#subscription === undefined && this.#resubscribes < MAX_RESUBSCRIBES) {
      this.#relisten = false;
      this.#resubscribes++;
      await this.#subscribe(Date.now() + pageOptions.timeoutMs!);
    }
    const notices = this.#notices;
    let freshUntil = Number.POSITIVE_INFINITY;
    for (let page = 0;; page++) {
      if (page === MAX_TOOL_PAGES) {
        this.#warn(`Stopped listing the tools of server "${this.#name}" after ${MAX_TOOL_PAGES} pages`);
        break;
      }
      let result: { tools?: unknown; nextCursor?: unknown; ttlMs?: unknown };
      try {
        result = await this.#request("tools/list", cursor === undefined ? {} : { cursor }, pageOptions);
      } catch (error) {
        // The caller keeps the previous list: let it serve a while rather than wait on a
        // failing server every round (a change notice still ends the wait).
        if (this.#notices === notices) this.#toolsFreshUntil = performance.now() + RELIST_AFTER_FAILURE_MS;
        throw error;
      }
      if (!Array.isArray(result.tools)) {
        throw new AgentError("mcp", `Request "tools/list" to server "${this.#name}" failed: the result has no "tools" list`);
      }
      // Each page is fresh for its own ttlMs from its arrival; the list, until the first expires.
      freshUntil = Math.min(freshUntil, performance.now() + ttlOf(result));
      for (const tool of result.tools) {
        const t = asObject(tool);
        if (!t || typeof t.name !== "string" || t.name === "") {
          nameless++;
          continue;
        }
        if (byName.has(t.name)) duplicates++;
        else byName.set(t.name, t as McpTool);
      }
      const next = result.nextCursor;
      if (typeof next !== "string" || next === "") break;
      if (seen.has(next)) {
        this.#warn(`Stopped listing the tools of server "${this.#name}": it repeated cursor "${next}"`);
        break;
      }
      seen.add(next);
      cursor = next;
    }
    this.#toolsFreshUntil = this.#notices === notices ? freshUntil : Number.NEGATIVE_INFINITY;
    if (nameless > 0) this.#warn(`Skipped ${nameless} tool${nameless === 1 ? "" : "s"} of server "${this.#name}" without a name (a non-empty string)`);
    if (duplicates > 0) this.#warn(`Server "${this.#name}" listed ${duplicates} tool names more than once; kept the first of each`);
    return [...byName.values()];
  }

  async callTool(name: string, args: Record<string, unknown>, options: McpRequestOptions = {}): Promise<CallToolResult> {
    const result = await this.#request("tools/call", { name, arguments: args }, options);
    const content = Array.isArray(result.content) ? result.content : [];
    const out: CallToolResult = { content };
    if (typeof result.isError === "boolean") out.isError = result.isError;
    if (result.structuredContent !== undefined) out.structuredContent = result.structuredContent;
    return out;
  }

  kill(): void {
    if (this.#closing) return;
    this.#closing = true;
    this.#peer?.failAll(() => new AgentError("mcp", `Server "${this.#name}" was killed`));
    this.#proc?.kill();
    this.#http?.kill();
  }

  async close(): Promise<void> {
    if (this.#closing) {
      if (this.#proc) await this.#proc.close(0);
      return;
    }
    this.#closing = true;
    this.#peer?.failAll(() => new AgentError("mcp", `Server "${this.#name}" was closed`));
    await Promise.all([this.#proc?.close(), this.#http?.close()]);
  }
}

/** A subscription to tool-list changes (`subscriptions/listen`), known by its request id. */
interface Subscription {
  id: JsonRpcId | undefined;
  /** Aborting ends it: `notifications/cancelled` (stdio) and the POST aborted (HTTP). */
  controller: AbortController;
  /** Settles the wait for the acknowledgement: the honoured filter, or why there is none. */
  acknowledged: (honoured: Record<string, unknown> | Error) => void;
  /** Acknowledged with `toolsListChanged`. */
  open: boolean;
  /** When it was acknowledged (`performance.now()` ms). */
  openedAt: number;
}

/**
 * The `ttlMs` freshness hint of one `tools/list` page in ms (SPEC section 10; the
 * specification's caching rules): absent, not a number or negative is 0 (stale at once);
 * capped at {@link MAX_TOOLS_TTL_MS}.
 */
function ttlOf(result: { ttlMs?: unknown }): number {
  const ttl = result.ttlMs;
  if (typeof ttl !== "number" || !Number.isFinite(ttl) || ttl <= 0) return 0;
  return Math.min(ttl, MAX_TOOLS_TTL_MS);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function asObject(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Record<string, unknown>
    : undefined;
}
