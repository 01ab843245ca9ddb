/**
 * The {@link McpConnection} behind `connectMcp`: one server over stdio or Streamable HTTP,
 * its handshake in the era that `era.ts` settles, requests and their results, tool-list
 * freshness through `list-changes.ts`, and its end (exit, close, kill). SPEC section 10.
 * @module
 */

import process from "node:process";
import { AgentError, isAbortError } from "../util/errors.ts";
import {
  decodeResult,
  initializeLegacy,
  knownEra,
  nudgeParams,
  probeEra,
  readDiscover,
  remainingMs,
  rememberEra,
  requestMeta,
} from "./era.ts";
import type { Probe } from "./era.ts";
import { HttpTransport } from "./http.ts";
import { formatSeconds } from "../util/time.ts";
import { JsonRpcError, JsonRpcPeer } from "./jsonrpc.ts";
import type { JsonRpcMessage, SendContext } from "./jsonrpc.ts";
import { ToolListChanges } from "./list-changes.ts";
import type { StdioProcess } from "./stdio.ts";
import { exitError } from "./exit.ts";
import { listToolPages } from "./tools-list.ts";
import {
  answerInputRequest,
  clientCapabilities,
  ClientWaitTimeoutError,
  INPUT_METHODS,
  runInputRounds,
} from "./input-requests.ts";
import type { InputContext } from "./input-requests.ts";
import { awaitTask, taskOf } from "./tasks.ts";
import { MODERN_PROTOCOL_VERSION } from "./types.ts";
import type {
  CallToolResult,
  InProcessTransport,
  McpConnection,
  McpConnectOptions,
  McpEra,
  McpExitInfo,
  McpRequestOptions,
  McpServerConfig,
  McpTool,
} from "./types.ts";

/** A tool call in flight, for the legacy server's input requests made during it. */
interface ActiveCall {
  tool: string;
  callId: string | undefined;
  /** Aborts on a cancel and at the tool timeout. */
  signal: AbortSignal;
  /** Input requests of the server being answered now. */
  asking: number;
  /** The tool timeout came while one was being answered: the client, not the server, was slow. */
  waited: boolean;
}

/** The tool declares `execution.taskSupport: "required"` (MCP 2025-11-25). */
function requiresTask(tool: McpTool): boolean {
  const execution = tool.execution;
  return typeof execution === "object" && execution !== null &&
    (execution as { taskSupport?: unknown }).taskSupport === "required";
}

/** A result that must be an object (`decodeResult` says so otherwise). */
function asRecord(value: unknown, name: string): Record<string, unknown> {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  return decodeResult(value, { name, method: "tools/call" });
}

/** How many of a process's first stderr lines are kept to be compared with the next start's. */
const MAX_REPEATED_STDERR_LINES = 200;

/** A request's options, with the message its timeout rejects with (a tool call's legs name the call's own timeout). */
type LegOptions = McpRequestOptions & { timeoutMessage?: string };

/**
 * One connection, not yet started: `connectMcp` calls {@link Connection.start}, then
 * {@link Connection.connected}, or {@link Connection.kill} when starting failed.
 */
export class Connection implements McpConnection {
  /** The era in use (SPEC section 10). */
  era: McpEra = "legacy";
  /** The revision in use. */
  protocolVersion = "";
  /** The server's `serverInfo`, when it sent a name. */
  serverInfo: { name: string; version: string } | undefined;
  #config: McpServerConfig;
  #options: McpConnectOptions;
  #name: string;
  #initTimeoutMs: number;
  #peer!: JsonRpcPeer;
  #proc: StdioProcess | undefined;
  #http: HttpTransport | undefined;
  #channel: InProcessTransport | undefined;
  #closing = false;
  #connected = false;
  #dead = false;
  #exit: McpExitInfo | undefined;
  #changes: ToolListChanges;
  /** The `tools/list` sent beside `server/discover` (`prefetchTools`), until used or dropped. */
  #prefetched: Promise<{ result: Record<string, unknown> } | undefined> | undefined;
  /** The first stderr lines of the last process spawned, for {@link #stderrOnce}. */
  #stderrLines: string[] = [];
  /** Tools the last list marked `execution.taskSupport: "required"`: called as tasks (legacy era). */
  #taskTools = new Set<string>();
  /** The tool calls in flight: a legacy server's input request is tied to the call when only one is. */
  #calls = new Set<ActiveCall>();

  /**
   * Nothing starts until {@link start}; `initTimeoutMs` defaults to 30000. With `channel`
   * (`lib/mcp/in-process.ts`), the server is spoken to over that in-memory channel instead of
   * the configuration's transport.
   */
  constructor(config: McpServerConfig, options: McpConnectOptions, channel?: InProcessTransport) {
    this.#config = config;
    this.#channel = channel;
    this.#options = options;
    this.#name = config.name;
    this.#initTimeoutMs = options.initTimeoutMs ?? 30_000;
    this.#changes = new ToolListChanges({
      name: this.#name,
      peer: () => this.#peer,
      meta: () => this.#meta(),
      closed: () => this.closed,
      warn: (m) => this.#warn(m),
      changed: () => this.#options.onToolsChanged?.(),
    });
  }

  /** The stdio child's pid, if any. */
  get pid(): number | undefined {
    return this.#proc?.pid;
  }

  /** Closing, closed, killed or dead. */
  get closed(): boolean {
    return this.#closing || this.#dead;
  }

  /** Modern era only: the last tool list must be listed again. */
  get toolsStale(): boolean {
    return this.era === "modern" && !this.closed && this.#changes.stale;
  }

  /**
   * Spawns or reaches the server, settles the era (pinned, remembered or detected) and
   * completes its handshake, within `initTimeoutMs`.
   * @throws {AgentError} `mcp-connect`, `timeout`, `mcp`
   */
  async start(): Promise<void> {
    // The handshake's deadline counts from here, the spawn included, as the registry's own
    // backstop does: the connection's timeout, whose message names the fix, fires first.
    const deadline = Date.now() + this.#initTimeoutMs;
    const pinned = knownEra(this.#config, this.#options.eraCache);
    const transport = this.#config.transport;
    if (transport.type === "http") {
      this.#http = new HttpTransport(transport, {
        name: this.#name,
        fetch: this.#options.fetch ?? fetch,
        onMessage: (m) => this.#peer.receive(m),
        onWarning: (m) => this.#warn(m),
        reinitialize: () => this.#initialize(),
        maxBodyBytes: this.#options.maxLineBytes ?? 4_194_304,
      });
      this.#peer = this.#newPeer((m, c) => this.#http!.send(m, c));
    } else if (this.#channel !== undefined) {
      await this.#openChannel(this.#channel);
    } else {
      await this.#spawn();
    }
    if (pinned === "legacy") return this.#initialize(deadline);
    if (pinned === "modern") {
      const probe = await this.#prefetchBeside(this.#probe(deadline, false), deadline);
      if (probe.kind !== "modern") {
        throw new AgentError(
          "mcp-connect",
          `Cannot connect to server "${this.#name}": it does not speak protocol ${MODERN_PROTOCOL_VERSION} (pinned "modern")`,
        );
      }
      this.#useModern(probe);
      return this.#changes.subscribe(deadline);
    }
    const probe = await this.#prefetchBeside(this.#probe(deadline, true), deadline);
    if (probe.kind === "modern") {
      this.#useModern(probe);
      await this.#changes.subscribe(deadline);
    } else {
      if (probe.kind === "legacy-restart") {
        const old = this.#proc;
        this.#proc = undefined;
        old?.kill();
        await old?.exited;
        this.#dead = false;
        this.#exit = undefined;
        await this.#spawn();
      }
      await this.#initialize(deadline);
    }
    rememberEra(this.#config, this.#options.eraCache, this.era);
  }

  /** Marks the handshake done: from now on a death is reported through `onClose`. */
  connected(): void {
    this.#connected = true;
    if (this.#dead && this.#exit && !this.#closing) this.#options.onClose?.(this.#exit);
  }

  async #spawn(): Promise<void> {
    const transport = this.#config.transport;
    if (transport.type !== "stdio") return;
    // Loaded here, not at start-up: a run without stdio servers never loads the stdio client
    // nor `node:child_process` (issue 21).
    const { openStdioPeer } = await import("./stdio-peer.ts");
    // Killed during the handshake (an aborted start, or while the module loaded): the legacy
    // restart, or the first spawn, must not spawn at all.
    if (this.#closing) throw new AgentError("mcp", `Server "${this.#name}" was killed`);
    // Set once spawned; an exit is this connection's only while its process is the current one.
    const spawned: { proc?: StdioProcess } = {};
    const stdio = await openStdioPeer(transport, {
      name: this.#name,
      cwd: this.#options.cwd ?? process.cwd(),
      env: this.#options.env ?? process.env,
      maxLineBytes: this.#options.maxLineBytes ?? 4_194_304,
      newPeer: (send) => this.#newPeer(send),
      onWarning: (m) => this.#warn(m),
      ...this.#stderrOnce(),
      onExit: (info) => {
        if (spawned.proc === undefined || this.#proc !== spawned.proc) return;
        this.#dead = true;
        this.#exit = info;
        this.#peer.failAll(() => exitError(this.#name, info));
        if (!this.#closing && this.#connected) this.#options.onClose?.(info);
      },
    });
    spawned.proc = stdio.proc;
    this.#proc = stdio.proc;
    this.#peer = stdio.peer;
  }

  /**
   * The `onStderrLine` of a spawn. A server that exits on the era probe is started again
   * (SPEC 10), and a second start mostly repeats the first one's lines word for word: those are
   * handed on once. From the first line that differs, every line is handed on.
   */
  #stderrOnce(): { onStderrLine?: (line: string) => void } {
    const onStderr = this.#options.onStderr;
    if (onStderr === undefined) return {};
    const before = this.#stderrLines;
    const lines: string[] = [];
    this.#stderrLines = lines;
    let seen = 0;
    let repeating = before.length > 0;
    return {
      onStderrLine: (line) => {
        if (lines.length < MAX_REPEATED_STDERR_LINES) lines.push(line);
        if (repeating && before[seen++] === line) return;
        repeating = false;
        onStderr(line);
      },
    };
  }

  /** An in-process server: the peer over the channel; the server closing its end is an exit with code 0. */
  async #openChannel(channel: InProcessTransport): Promise<void> {
    const peer = this.#newPeer((m) => channel.send(m));
    this.#peer = peer;
    channel.onmessage = (m) => peer.receive(m);
    channel.onclose = () => {
      if (this.#dead) return;
      const info: McpExitInfo = { code: 0, signal: null, stderrTail: "" };
      this.#dead = true;
      this.#exit = info;
      peer.failAll(() => exitError(this.#name, info));
      if (!this.#closing && this.#connected) this.#options.onClose?.(info);
    };
    await channel.start();
  }

  #newPeer(send: (m: JsonRpcMessage, c: SendContext) => Promise<void>): JsonRpcPeer {
    return new JsonRpcPeer({
      label: `server "${this.#name}"`,
      send,
      onWarning: (m) => this.#warn(m),
      onNotification: (method, params) => this.#changes.notification(method, params),
      onRequest: (method, params, signal) =>
        INPUT_METHODS.includes(method) ? this.#answerServerRequest(method, params, signal) : undefined,
    });
  }

  /**
   * A legacy server's own `elicitation/create`, `sampling/createMessage` or `roots/list`:
   * answered through `options.input`, tied to the tool call in flight when there is one.
   */
  #answerServerRequest(method: string, params: unknown, signal: AbortSignal): Promise<unknown> {
    const calls = [...this.#calls];
    const call = calls.length === 1 ? calls[0] : undefined;
    const context: InputContext = {
      server: this.#name,
      tool: call?.tool,
      callId: call?.callId,
      signal: call === undefined ? signal : AbortSignal.any([signal, call.signal]),
    };
    if (call === undefined) return answerInputRequest(method, params, this.#options.input, context);
    call.asking++;
    return answerInputRequest(method, params, this.#options.input, context).finally(() => call.asking--);
  }

  #warn(message: string): void {
    this.#options.onWarning?.(message);
  }

  /** The `_meta` of a request: with the modern envelope of `version`, or of the era in use. */
  #meta(extra?: Record<string, unknown>, version?: string): Record<string, unknown> {
    return requestMeta({
      sessionId: this.#options.sessionId,
      version: version ?? (this.era === "modern" ? this.protocolVersion : undefined),
      clientInfo: this.#options.clientInfo,
      extra,
      capabilities: clientCapabilities(this.#options.input, true),
    });
  }

  #initTimeoutMessage(detail = ""): string {
    const message = `initialize timed out after ${formatSeconds(this.#initTimeoutMs)} s${detail}`;
    const tail = this.#proc?.stderrTail().trim();
    return tail ? `${message}; stderr:\n${tail}` : message;
  }

  #probe(deadline: number, fallback: boolean): Promise<Probe> {
    return probeEra(this.#peer, {
      name: this.#name,
      deadline,
      fallback,
      stdio: this.#proc !== undefined,
      alive: () => this.#proc?.alive ?? true,
      meta: (version) => this.#meta(undefined, version),
      // Only a stdio server being detected is nudged: over HTTP each POST has its own answer.
      nudge: this.#proc !== undefined && fallback
        ? (version) =>
          void this.#peer.notify("notifications/cancelled", nudgeParams(this.#meta(undefined, version))).catch(() => {})
        : undefined,
      // A stdio server that ignores unknown requests never answers the probe (SPEC 10).
      timeoutMessage: () =>
        this.#initTimeoutMessage(
          this.#proc !== undefined && fallback
            ? ` without an answer to server/discover (a server that answers initialize but ignores unknown requests needs "protocol": "legacy" in its configuration)`
            : "",
        ),
    });
  }

  /**
   * With `prefetchTools`, over HTTP: sends the first `tools/list` in the modern era's shape
   * right after the probe (already sent: `probeEra` sends before its first await).
   */
  #prefetchBeside(probe: Promise<Probe>, deadline: number): Promise<Probe> {
    if (this.#options.prefetchTools !== true || this.#http === undefined) return probe;
    this.#prefetched = this.#peer.request(
      "tools/list",
      { _meta: this.#meta(undefined, MODERN_PROTOCOL_VERSION) },
      { timeoutMs: remainingMs(deadline) },
    ).then((result) => ({ result: decodeResult(result, { name: this.#name, method: "tools/list" }) }))
      .catch(() => undefined);
    return probe;
  }

  #useModern(probe: { version: string; result: Record<string, unknown> }): void {
    this.era = "modern";
    this.protocolVersion = probe.version;
    const discovered = readDiscover(probe.result);
    if (discovered.listChanged || probe.version !== MODERN_PROTOCOL_VERSION) this.#prefetched = undefined;
    this.#changes.announced(discovered.listChanged);
    if (discovered.serverInfo) this.serverInfo = discovered.serverInfo;
  }

  /** The legacy handshake; also run again when an HTTP session is lost. */
  async #initialize(deadline = Date.now() + this.#initTimeoutMs): Promise<void> {
    this.era = "legacy";
    this.#prefetched = undefined;
    this.#http?.resetSession();
    const { version, serverInfo } = await initializeLegacy(this.#peer, {
      name: this.#name,
      clientInfo: this.#options.clientInfo,
      meta: this.#meta(),
      capabilities: clientCapabilities(this.#options.input, false),
      timeoutMs: remainingMs(deadline),
      timeoutMessage: () => this.#initTimeoutMessage(),
    });
    this.protocolVersion = version;
    if (this.#http) this.#http.legacyVersion = version;
    if (serverInfo) this.serverInfo = serverInfo;
    await this.#peer.notify("notifications/initialized", {});
    // The standalone GET stream at once, as the official clients open it: a legacy server
    // sends its own requests there (SDK 1.x elicitInput), even while it answers our first one.
    this.#http?.listen();
  }

  async #request(
    method: string,
    params: Record<string, unknown>,
    options: McpRequestOptions,
  ): Promise<Record<string, unknown>> {
    return decodeResult(await this.#requestRaw(method, params, options), { name: this.#name, method });
  }

  /** One request; resolves with its result as sent (`resultType` kept). */
  async #requestRaw(
    method: string,
    params: Record<string, unknown>,
    options: LegOptions,
  ): Promise<unknown> {
    if (this.#dead && this.#exit) {
      throw new AgentError(
        "mcp",
        `Cannot send "${method}" to server "${this.#name}": server not connected (it exited with ${
          this.#exit.signal ? `signal ${this.#exit.signal}` : `code ${this.#exit.code}`
        })`,
      );
    }
    if (this.#closing || this.#dead) {
      throw new AgentError("mcp", `Cannot send "${method}" to server "${this.#name}": server not connected`);
    }
    const requestOptions: { timeoutMs?: number; signal?: AbortSignal; timeoutMessage?: string } = {};
    if (options.timeoutMs !== undefined) requestOptions.timeoutMs = options.timeoutMs;
    if (options.timeoutMessage !== undefined) requestOptions.timeoutMessage = options.timeoutMessage;
    if (options.signal !== undefined) requestOptions.signal = options.signal;
    let result: unknown;
    try {
      result = await this.#peer.request(method, { ...params, _meta: this.#meta(options.meta) }, requestOptions);
    } catch (error) {
      if (isAbortError(error)) throw error;
      if (this.#exit && !(error instanceof JsonRpcError)) throw exitError(this.#name, this.#exit, method);
      throw error;
    }
    return result;
  }

  /** Every tool, all pages; `timeoutMs` per page defaults to `initTimeoutMs`. */
  async listTools(options: McpRequestOptions = {}): Promise<McpTool[]> {
    const pageOptions: McpRequestOptions = { ...options, timeoutMs: options.timeoutMs ?? this.#initTimeoutMs };
    await this.#changes.resubscribeIfEnded(pageOptions.timeoutMs!);
    const mark = this.#changes.listStarted();
    let prefetched = this.era === "modern" ? this.#prefetched : undefined;
    this.#prefetched = undefined;
    const { tools, freshUntil } = await listToolPages(
      async (params) => {
        // The first page may be the answer to the request sent beside server/discover; a
        // failed one is asked again, so its error is the usual request's.
        const early = params.cursor === undefined ? await prefetched : undefined;
        prefetched = undefined;
        if (early !== undefined) return early.result;
        return await this.#request("tools/list", params, pageOptions).catch((error: unknown) => {
          this.#changes.listFailed(mark);
          throw error;
        });
      },
      { name: this.#name, warn: (m) => this.#warn(m) },
    );
    this.#changes.listed(mark, freshUntil);
    this.#taskTools = new Set(tools.filter(requiresTask).map((t) => t.name));
    return tools;
  }

  /**
   * `tools/call`; an `isError` result resolves. Its `input_required` rounds and its task are
   * bounded together by `timeoutMs`, each request by what is left of it.
   */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    options: McpRequestOptions = {},
  ): Promise<CallToolResult> {
    const timeoutMs = options.timeoutMs;
    const deadline = timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeoutMs;
    const controller = new AbortController();
    const signal = options.signal === undefined
      ? controller.signal
      : AbortSignal.any([options.signal, controller.signal]);
    // Whoever answers an input request is not asked past the tool timeout.
    const asking = new AbortController();
    const waiting = () =>
      new ClientWaitTimeoutError(
        `Tool "${name}" timed out after ${
          formatSeconds(timeoutMs ?? 0)
        } s waiting for an answer to server "${this.#name}"'s question`,
      );
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => {
      if (call.asking > 0) call.waited = true;
      asking.abort(waiting());
    }, timeoutMs);
    const inputSignal = AbortSignal.any([signal, asking.signal]);
    const call: ActiveCall = { tool: name, callId: options.callId, signal: inputSignal, asking: 0, waited: false };
    this.#calls.add(call);
    const leg = (
      ms?: number,
      detached = false,
      method = "tools/call",
    ): LegOptions => {
      const out: LegOptions = {};
      if (options.signal !== undefined && !detached) out.signal = options.signal;
      if (options.meta !== undefined) out.meta = options.meta;
      const left = Math.min(
        ms ?? Number.POSITIVE_INFINITY,
        detached ? Number.POSITIVE_INFINITY : deadline - Date.now(),
      );
      if (Number.isFinite(left)) out.timeoutMs = Math.max(1, left);
      // A leg waits for what is left of the call's time: its timeout names the call's own
      // (`timeoutMs`), not the remainder (149 ms of a 150 ms call would read "0.1 s").
      if (ms === undefined && !detached && timeoutMs !== undefined) {
        out.timeoutMessage = `Request "${method}" to server "${this.#name}" timed out after ${
          formatSeconds(timeoutMs)
        } s`;
      }
      return out;
    };
    const params: Record<string, unknown> = { name, arguments: args };
    // A legacy tool that requires a task is asked for one (MCP 2025-11-25), kept as long as the call may last.
    if (this.era === "legacy" && this.#taskTools.has(name)) {
      params.task = timeoutMs === undefined ? {} : { ttl: timeoutMs };
    }
    const context: InputContext = { server: this.#name, tool: name, callId: options.callId, signal };
    const inputContext: InputContext = { ...context, signal: inputSignal };
    let result: Record<string, unknown>;
    try {
      let raw = asRecord(await this.#requestRaw("tools/call", params, leg()), this.#name);
      raw = await runInputRounds(raw, {
        context: inputContext,
        method: "tools/call",
        input: this.#options.input,
        retry: async (extra) =>
          asRecord(await this.#requestRaw("tools/call", { ...params, ...extra }, leg()), this.#name),
      });
      const task = taskOf(raw);
      if (task !== undefined) {
        raw = await awaitTask(task, {
          modern: this.era === "modern",
          context,
          deadline,
          timeoutMs: timeoutMs ?? 0,
          input: this.#options.input,
          inputContext,
          request: async (method, p, ms, detached) =>
            asRecord(await this.#requestRaw(method, p, leg(ms, detached, method)), this.#name),
          onProgress: options.onProgress,
        });
      }
      result = decodeResult(raw, { name: this.#name, method: "tools/call" });
    } catch (error) {
      // A legacy server still waiting for our answer at the timeout is not at fault.
      if (call.waited && error instanceof AgentError && error.code === "timeout") throw waiting();
      throw error;
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      this.#calls.delete(call);
      controller.abort();
    }
    const content = Array.isArray(result.content) ? result.content : [];
    const out: CallToolResult = { content };
    if (typeof result.isError === "boolean") out.isError = result.isError;
    if (result.structuredContent !== undefined) out.structuredContent = result.structuredContent;
    return out;
  }

  /** Kills at once and fails every pending request. */
  kill(): void {
    if (this.#closing) return;
    this.#closing = true;
    this.#peer?.failAll(() => new AgentError("mcp", `Server "${this.#name}" was killed`));
    this.#proc?.kill();
    this.#http?.kill();
    void this.#channel?.close();
  }

  /** Closes gracefully and fails every pending request. */
  async close(): Promise<void> {
    if (this.#closing) {
      if (this.#proc) await this.#proc.close(0);
      return;
    }
    this.#closing = true;
    this.#peer?.failAll(() => new AgentError("mcp", `Server "${this.#name}" was closed`));
    await Promise.all([this.#proc?.close(), this.#http?.close(), this.#channel?.close()]);
  }
}
