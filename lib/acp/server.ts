/**
 * The Agent Client Protocol server (SPEC section 11, issue 5): JSON-RPC 2.0, one message per
 * line, on stdin/stdout. Editors and agent hosts create sessions (`session/new`), send prompts
 * (`session/prompt`), receive `session/update` notifications while the agent works, and cancel
 * (`session/cancel`) and close sessions (`session/close`, which fires `_SessionEnd`). Each
 * session has its own MCP servers, history, `_Stop` budget and compaction count; sessions run
 * concurrently. `cli.ts acp` starts it.
 * @module
 */

import { traceParentFromMeta } from "../util/trace.ts";
import { readFileSync } from "node:fs";
import { isAbsolute } from "node:path";
import process from "node:process";
import { type Agent, createAgent } from "../agent/agent.ts";
import type { ElicitationRequest, ElicitationResult, InputContext } from "../mcp/input-requests.ts";
import { clientElicitationModes, elicitationAnswer, elicitationParams } from "./elicitation.ts";
import { agentOptionsFromEnv, optionKeys } from "../agent/from-env.ts";
import type { AgentOptions } from "../agent/options.ts";
import { serverStderrShown } from "../config/config.ts";
import { AgentError } from "../util/errors.ts";
import type { AgentEvent, AgentObserver } from "../conversation/events.ts";
import { readLines } from "./lines.ts";
import { redirectConsole } from "../util/console.ts";
import { FLUSH_TIMEOUT_MS, type TrackedOutput, trackedOutput } from "../util/output.ts";
import type { McpEra, McpServerConfig } from "../mcp/types.ts";
import { MAX_SERVERS } from "../mcp/config.ts";
import type { PermissionOutcome, PermissionRequest } from "../hooks/permission.ts";
import { acpServers, invalidParams as invalid, promptText, RPC_ERRORS, RpcError } from "./params.ts";
import { permissionAnswer, permissionParams } from "./permission.ts";
import { acpStopReason, resultUpdates, sessionUpdates, SubagentProgress } from "./updates.ts";
import { configSecrets, redact, redactEvent, redactValue } from "../util/redact.ts";
import { formatSeconds, withTimeout } from "../util/time.ts";
import { AGENT_NAME, VERSION } from "../util/version.ts";
import type { SessionInfo, SessionStore } from "../sessions/records.ts";
import { fileSessionStore } from "../sessions/file-store.ts";
import { replayUpdates } from "./replay.ts";
import type { SubagentDefinition } from "../subagents/definitions.ts";
import { loadSubagentFiles } from "../subagents/files.ts";

/** Sessions per `session/list` page. */
export const SESSION_LIST_PAGE = 50;

export { RPC_ERRORS } from "./params.ts";

/** The ACP protocol version this agent speaks. */
export const ACP_PROTOCOL_VERSION = 1;

/**
 * A text sink such as `process.stdout` or `process.stderr`. A `write` declared with a second
 * parameter (Node's `Writable.write(chunk, callback)`) must call it once the chunk is handed
 * to the OS or failed: {@link serveAcp} waits for the last one before it resolves, so exiting
 * right after loses nothing. A `write(chunk)` is taken as synchronous.
 * @example
 * const lines: string[] = [];
 * const sink: TextSink = { write: (chunk: string) => lines.push(chunk) };
 */
export interface TextSink {
  /** Writes one whole line (a JSON-RPC message or a log line, `\n` included); the return value is ignored. */
  write(chunk: string, callback?: (error?: Error | null) => void): unknown;
  /** Used, when present, to swallow `EPIPE` once the client has gone. */
  on?(event: "error", listener: (error: Error) => void): unknown;
}

/**
 * Options of {@link serveAcp}.
 * @example
 * const options: AcpOptions = { env: process.env, stdin: process.stdin, stdout: process.stdout, handleSignals: false };
 */
export interface AcpOptions {
  /** The environment the configuration is read from (SPEC section 9); usually `process.env`. */
  env: Record<string, string | undefined>;
  /** Where client messages arrive: `process.stdin` or any byte stream. */
  stdin: AsyncIterable<Uint8Array | string>;
  /** Where protocol messages go, and nothing else: `process.stdout`. */
  stdout: TextSink;
  /** Logs and warnings; default `process.stderr`. */
  stderr?: TextSink;
  /** Reads the system prompt and script files; default `readFileSync(path, "utf8")`. */
  readFile?: (path: string) => string;
  /** For LLM and MCP HTTP requests; default the global `fetch`. */
  fetch?: typeof fetch;
  /** Listen for SIGTERM (exit 0) and SIGINT (exit 130); default true. */
  handleSignals?: boolean;
  /** Stops the server as SIGTERM would (exit 0). */
  signal?: AbortSignal;
  /**
   * The operator's MCP servers, joined to every session's (`cli.ts acp --mcp-config FILE`, or
   * `./.mcp.json`): they come first, before the servers of the client's `session/new`, so
   * their hooks come first in configuration order. A client server of the same name (after
   * sanitising) fails `session/new` with -32602 naming both; a `required` one that cannot
   * start fails it as well (SPEC section 3.1). `MCP_HOOK_SERVERS` enables hooks over both
   * lists. A stdio server without a `cwd` runs in the session's `cwd`, as the client's do.
   * Default none.
   */
  mcpServers?: readonly McpServerConfig[];
  /** Where {@link AcpOptions.mcpServers} came from, for error messages (a file's path); default `the operator's configuration`. */
  mcpServersSource?: string;
  /**
   * Rules added to the permission policy read from `SPROUT_AGENT_ALLOW`, `SPROUT_AGENT_ASK`
   * and `SPROUT_AGENT_DENY` (SPEC section 7.8; `cli.ts acp --allow/--ask/--deny GLOB`).
   * An `ask` goes to the client as `session/request_permission`.
   */
  permissions?: { allow?: readonly string[]; ask?: readonly string[]; deny?: readonly string[] };
  /** Values never sent or logged, beside the known ones (the credentials a configuration file references). */
  secrets?: readonly string[];
  /**
   * Where sessions are kept (SPEC section 12): `session/load`, `session/list` and
   * `session/resume` read it, and every session writes its transcript to it. Default: the
   * store of `SPROUT_AGENT_SESSION_DIR`, else the file store in the state folder; `false` (or
   * `SPROUT_AGENT_SESSION_DIR=off`) keeps none and advertises `loadSession: false`.
   */
  sessionStore?: SessionStore | false;
  /**
   * Subagents every session has (SPEC section 13), beside the agent files of the session's
   * `cwd` and of the user (`loadSubagentFiles`), which each `session/new` and `session/load`
   * reads; a definition given here wins over a file of the same name. Default none.
   */
  subagents?: readonly SubagentDefinition[];
  /**
   * Sees every session's events with their spans (`createAgent`'s `observe`, SPEC section 11,
   * tracing): how `cli.ts acp` exports traces. Default none.
   */
  observe?: AgentObserver;
}

/**
 * Serves ACP until stdin ends or SIGTERM arrives; then cancels every session, closes every
 * MCP server (no orphan processes), waits for what it wrote to stdout and stderr to be flushed
 * (giving up, with a line on stderr, once the client has taken no output for 5 s) and resolves
 * with the exit code. While it serves, every console method that writes to stdout (`console.log`, `info`,
 * `debug`, `dir`, `table`…, from any module) writes to `stderr` instead: stdout carries
 * JSON-RPC only.
 * @returns `0` after stdin EOF or SIGTERM, `130` after SIGINT, `2` when the configuration is
 *   invalid (the message goes to stderr and stdin is never read)
 * @example
 * const code = await serveAcp({ env: process.env, stdin: process.stdin, stdout: process.stdout });
 */
export async function serveAcp(options: AcpOptions): Promise<number> {
  const stderr = trackedOutput(options.stderr ?? process.stderr);
  const readFile = options.readFile ?? ((path: string) => readFileSync(path, "utf8"));
  let agentOptions: ReturnType<typeof agentOptionsFromEnv>;
  let showStderr: boolean;
  try {
    // Surfaces a bad value, a missing key or a bad script now, before stdin is read.
    agentOptions = agentOptionsFromEnv(options.env, { readFile });
    // The operator's flags (cli.ts acp --allow/--ask/--deny) add to the environment's rules.
    const extra = options.permissions;
    if (extra !== undefined) {
      const base = agentOptions.permissions ?? {};
      agentOptions = {
        ...agentOptions,
        permissions: {
          ...base,
          allow: [...(base.allow ?? []), ...(extra.allow ?? [])],
          ask: [...(base.ask ?? []), ...(extra.ask ?? [])],
          deny: [...(base.deny ?? []), ...(extra.deny ?? [])],
        },
      };
    }
    // Servers' stderr lines only when asked: ACP hosts show our stderr as a log, if at all.
    showStderr = serverStderrShown(options.env, false);
  } catch (error) {
    stderr.write(`sprout-agent: ${redact((error as Error).message)}\n`);
    await stderr.flush(FLUSH_TIMEOUT_MS);
    return 2;
  }
  const restoreConsole = redirectConsole((line) => stderr.write(line));
  try {
    return await new AcpServer(options, agentOptions, stderr, showStderr).serve();
  } finally {
    restoreConsole();
    await stderr.flush(FLUSH_TIMEOUT_MS);
  }
}

type Id = string | number | null;

interface SessionState {
  readonly id: string;
  readonly agent: Agent;
  /** Set while a prompt runs. */
  controller: AbortController | undefined;
  /** Settles when the running prompt has ended (set while one runs). */
  running: Promise<unknown> | undefined;
  /** The running prompt's tool calls whose `tool_call` has been sent. */
  readonly announced: Set<string>;
  /** Permission requests waiting for their call's `tool_call` to be sent, by call id. */
  readonly waiting: Map<string, () => void>;
}

/** A client's response to one of our requests. */
type Response = { result?: unknown; error?: unknown };

class AcpServer {
  readonly #options: AcpOptions;
  /** Every session's agent options but its servers, read from the environment once. */
  readonly #agentOptions: AgentOptions & { maxLineBytes: number };
  readonly #stderr: TrackedOutput;
  /** The one writer of stdout. */
  readonly #stdout: TrackedOutput;
  readonly #sessions = new Map<string, SessionState>();
  /** Requests still being handled (session/new connecting servers, prompts running). */
  readonly #inflight = new Set<Promise<void>>();
  readonly #eraCache = new Map<string, McpEra>();
  readonly #decoder = new TextDecoder("utf-8", { fatal: true });
  /** API keys and every header value and credential variable clients gave: never sent or logged. */
  readonly #secrets = new Set<string>();
  #closing = false;
  /** The elicitation modes the client declared in `initialize` (`elicitation/create`); none: declined. */
  #elicitationModes: ("form" | "url")[] = [];
  /** The id of the next request the agent sends the client (`session/request_permission`, `elicitation/create`). */
  #nextRequestId = 1;
  /** Requests sent to the client and not answered yet, by id: each resolves with the response. */
  readonly #pending = new Map<number, (response: Response) => void>();
  /** `SPROUT_AGENT_SERVER_STDERR=show`: stdio servers' stderr lines go to the log. */
  readonly #showStderr: boolean;
  /** Where sessions are kept (SPEC 12); undefined: none, and no load, list or resume. */
  readonly #store: SessionStore | undefined;

  constructor(
    options: AcpOptions,
    agentOptions: AgentOptions & { maxLineBytes: number },
    stderr: TrackedOutput,
    showStderr = false,
  ) {
    this.#showStderr = showStderr;
    this.#options = options;
    // A write that fails (EPIPE once the client has gone) closes it: later messages are dropped.
    this.#stdout = trackedOutput(options.stdout, {
      onClosed: (error) => this.#log(`Cannot write to stdout: ${error.message}`),
    });
    this.#agentOptions = agentOptions;
    this.#stderr = stderr;
    this.#store = this.#chooseStore(options.sessionStore ?? agentOptions.sessionStore);
    for (const secret of configSecrets(optionKeys(agentOptions), [...(options.mcpServers ?? [])])) {
      this.#secrets.add(secret);
    }
    for (const secret of options.secrets ?? []) if (secret !== "") this.#secrets.add(secret);
  }

  /** The sessions' store: the one given, else the default file store (none when it cannot be found). */
  #chooseStore(option: SessionStore | false | undefined): SessionStore | undefined {
    if (option === false) return undefined;
    if (option !== undefined) return option;
    try {
      return fileSessionStore();
    } catch (error) {
      this.#log(`${(error as Error).message}: sessions are not saved`);
      return undefined;
    }
  }

  async serve(): Promise<number> {
    let stopWith!: (code: number) => void;
    const stopped = new Promise<number>((resolve) => (stopWith = resolve));
    const onTerm = () => stopWith(0);
    const onInt = () => stopWith(130);
    const handleSignals = this.#options.handleSignals ?? true;
    if (handleSignals) {
      process.on("SIGTERM", onTerm);
      process.on("SIGINT", onInt);
    }
    const external = this.#options.signal;
    external?.addEventListener("abort", onTerm, { once: true });
    if (external?.aborted) onTerm();
    const reading = readLines(this.#options.stdin, { maxLineBytes: this.#agentOptions.maxLineBytes }, {
      onLine: (line) => this.#onLine(line),
      onOversize: () => {
        this.#log(`skipped a line longer than ${this.#agentOptions.maxLineBytes} bytes`);
        this.#error(
          null,
          RPC_ERRORS.invalidRequest,
          `Invalid request: line longer than ${this.#agentOptions.maxLineBytes} bytes (SPROUT_AGENT_MAX_LINE_BYTES), skipped`,
        );
      },
      onTrailing: (bytes) => this.#log(`dropped ${bytes} bytes after the last newline at end of input`),
    }).then(
      () => 0,
      (error: unknown) => {
        this.#log(`Cannot read stdin: ${(error as Error).message}`);
        return 0;
      },
    );
    const code = await Promise.race([reading, stopped]);
    try {
      await this.#shutdown();
      // Responses still queued behind a slow reader (a pipe holds 64 KiB) reach it before exit.
      if (!(await this.#stdout.flush(FLUSH_TIMEOUT_MS))) {
        this.#log(
          `Cannot flush stdout: the client took no output for ${
            formatSeconds(FLUSH_TIMEOUT_MS)
          } s, ${this.#stdout.pending} messages lost`,
        );
      }
    } finally {
      if (handleSignals) {
        process.off("SIGTERM", onTerm);
        process.off("SIGINT", onInt);
      }
      external?.removeEventListener("abort", onTerm);
    }
    return code;
  }

  /** Cancels every prompt, waits (bounded) for them to answer, closes every registry. */
  async #shutdown(): Promise<void> {
    this.#closing = true;
    for (const session of this.#sessions.values()) session.controller?.abort();
    await withTimeout(Promise.allSettled([...this.#inflight]), 5000);
    const sessions = [...this.#sessions.values()];
    this.#sessions.clear();
    await withTimeout(Promise.allSettled(sessions.map((s) => s.agent.close())), 5000);
  }

  #log(message: string): void {
    this.#stderr.write(`sprout-agent acp: ${redact(message, this.#secrets)}\n`);
  }

  /** The one writer of stdout: one `write` per message, so lines never interleave. */
  #send(message: Record<string, unknown>): void {
    this.#stdout.write(`${JSON.stringify(message)}\n`);
  }

  #error(id: Id, code: number, message: string): void {
    this.#send({ jsonrpc: "2.0", id, error: { code, message: redact(message, this.#secrets) } });
  }

  #notify(sessionId: string, update: Record<string, unknown>): void {
    this.#send({ jsonrpc: "2.0", method: "session/update", params: { sessionId, update } });
  }

  #onLine(bytes: Uint8Array): void {
    if (this.#closing) return;
    let text: string;
    try {
      text = this.#decoder.decode(bytes);
    } catch {
      this.#error(null, RPC_ERRORS.parse, "Parse error: the line is not valid UTF-8");
      return;
    }
    if (text.trim() === "") return;
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch (error) {
      this.#error(null, RPC_ERRORS.parse, `Parse error: ${(error as Error).message}`);
      return;
    }
    if (typeof message !== "object" || message === null || Array.isArray(message)) {
      this.#error(
        null,
        RPC_ERRORS.invalidRequest,
        `Invalid request: expected a JSON object${Array.isArray(message) ? " (batches are not supported)" : ""}`,
      );
      return;
    }
    const m = message as Record<string, unknown>;
    const hasId = "id" in m;
    const idOk = typeof m["id"] === "string" || typeof m["id"] === "number" || m["id"] === null;
    const id: Id = hasId && idOk ? (m["id"] as Id) : null;
    if (hasId && !idOk) {
      this.#error(null, RPC_ERRORS.invalidRequest, "Invalid request: id must be a string, a number or null");
      return;
    }
    if (m["method"] === undefined && hasId && ("result" in m || "error" in m)) {
      // A response to one of our requests; one to a request withdrawn (or never sent) is dropped.
      const settle = typeof id === "number" ? this.#pending.get(id) : undefined;
      if (settle !== undefined) {
        this.#pending.delete(id as number);
        settle({ result: m["result"], error: m["error"] });
      }
      return;
    }
    if (m["jsonrpc"] !== "2.0") {
      this.#error(id, RPC_ERRORS.invalidRequest, 'Invalid request: jsonrpc must be "2.0"');
      return;
    }
    if (typeof m["method"] !== "string" || m["method"] === "") {
      this.#error(id, RPC_ERRORS.invalidRequest, "Invalid request: method must be a non-empty string");
      return;
    }
    const method = m["method"];
    const params = m["params"] ?? {};
    if (!hasId) {
      if (method === "session/cancel") this.#cancel(params, false);
      return; // other notifications are ignored, as JSON-RPC asks
    }
    const task = this.#request(id, method, params).finally(() => this.#inflight.delete(task));
    this.#inflight.add(task);
  }

  async #request(id: Id, method: string, params: unknown): Promise<void> {
    try {
      if (typeof params !== "object" || params === null || Array.isArray(params)) {
        throw invalid(method, "params must be an object");
      }
      const p = params as Record<string, unknown>;
      let result: unknown;
      let afterReply: (() => void) | undefined;
      switch (method) {
        case "initialize":
          result = this.#initialize(p);
          break;
        case "session/new": {
          const created = await this.#newSession(p);
          result = { sessionId: created.sessionId };
          afterReply = created.afterReply;
          break;
        }
        case "session/load":
        case "session/resume": {
          const opened = await this.#newSession(p, method);
          result = {};
          afterReply = opened.afterReply;
          break;
        }
        case "session/list":
          result = await this.#listSessions(p);
          break;
        case "session/prompt":
          result = await this.#prompt(p);
          break;
        case "session/cancel":
          result = this.#cancel(p, true);
          break;
        case "session/close":
          result = await this.#closeSession(p);
          break;
        default:
          throw new RpcError(RPC_ERRORS.methodNotFound, `Method not found: ${JSON.stringify(method)}`);
      }
      this.#send({ jsonrpc: "2.0", id, result });
      afterReply?.();
    } catch (error) {
      if (error instanceof RpcError) this.#error(id, error.code, error.message);
      else if (error instanceof AgentError) {
        this.#error(id, RPC_ERRORS.agent, `${error.code === "llm" ? "llm" : "agent"}: ${error.message}`);
      } else {
        this.#log(
          `Internal error in ${method}: ${error instanceof Error ? error.stack ?? error.message : String(error)}`,
        );
        this.#error(id, RPC_ERRORS.internal, `Internal error: ${(error as Error)?.message ?? String(error)}`);
      }
    }
  }

  #initialize(p: Record<string, unknown>): Record<string, unknown> {
    const version = p["protocolVersion"];
    if (typeof version !== "number" || !Number.isInteger(version) || version < 0) {
      throw invalid("initialize", "protocolVersion must be a whole number");
    }
    this.#elicitationModes = clientElicitationModes(p["clientCapabilities"]);
    return {
      // The client's version when we speak it, else ours: the client decides whether to go on.
      protocolVersion: version === ACP_PROTOCOL_VERSION ? version : ACP_PROTOCOL_VERSION,
      agentCapabilities: {
        // Sessions come back from their transcripts (SPEC 12.7) when a store keeps them.
        loadSession: this.#store !== undefined,
        promptCapabilities: { image: false, audio: false, embeddedContext: false },
        mcpCapabilities: { http: true, sse: false },
        sessionCapabilities: this.#store === undefined ? { close: {} } : { close: {}, list: {}, resume: {} },
      },
      authMethods: [],
      agentInfo: { name: AGENT_NAME, title: "sprout-agent", version: VERSION },
    };
  }

  /**
   * Creates a session (`session/new`), or brings a saved one back (`session/load`, which first
   * replays it, and `session/resume`, which does not; SPEC 12.7). `_SessionStart` of a new
   * session runs in `createAgent`, before the client knows the session id: its events are
   * sent by `afterReply`, right after the response. A session brought back calls no hook and
   * no model until its first prompt.
   */
  async #newSession(
    p: Record<string, unknown>,
    method: "session/new" | "session/load" | "session/resume" = "session/new",
  ): Promise<{ sessionId: string; afterReply: () => void }> {
    const cwd = p["cwd"];
    if (typeof cwd !== "string" || cwd === "" || !isAbsolute(cwd)) {
      throw invalid(method, `cwd ${JSON.stringify(cwd ?? null)} must be an absolute path`);
    }
    let resume: string | undefined;
    if (method !== "session/new") {
      if (this.#store === undefined) {
        throw new RpcError(
          RPC_ERRORS.methodNotFound,
          `Method not found: ${JSON.stringify(method)} (sessions are not saved)`,
        );
      }
      const id = p["sessionId"];
      if (typeof id !== "string" || id === "") throw invalid(method, "sessionId must be a non-empty string");
      if (this.#sessions.has(id)) throw invalid(method, `session ${JSON.stringify(id)} is already open`);
      resume = id;
    }
    const operator = this.#options.mcpServers ?? [];
    const client = acpServers(p["mcpServers"] ?? [], cwd);
    if (operator.length + client.length > MAX_SERVERS) {
      throw invalid(
        method,
        `${client.length} MCP servers given and ${operator.length} configured by the operator, at most ${MAX_SERVERS} in all are allowed`,
      );
    }
    client.forEach((server, i) => {
      const taken = operator.find((o) => o.name === server.name);
      if (taken === undefined) return;
      const source = this.#options.mcpServersSource ?? "the operator's configuration";
      throw invalid(
        method,
        `the client's server mcpServers[${i}] ${
          JSON.stringify(server.displayName ?? server.name)
        } and the operator's server ${
          JSON.stringify(taken.name)
        } (from ${source}) have the same name: rename one of them`,
      );
    });
    // The operator's servers first: their hooks come first in configuration order.
    const servers = [...operator, ...client];
    for (const secret of configSecrets(optionKeys(this.#agentOptions), servers)) this.#secrets.add(secret);
    if (this.#closing) throw new RpcError(RPC_ERRORS.agent, "Cannot create a session: the agent is shutting down");
    const sessionId = resume ?? `ses_${randomHex(8)}`;
    const early: AgentEvent[] = [];
    let replied = false;
    // The subagents of this session (SPEC 13.2): the operator's, then the agent files of its folder.
    const files = await loadSubagentFiles({ cwd, env: this.#options.env });
    for (const warning of files.warnings) this.#log(`[${sessionId}] warning: ${warning}`);
    const given = this.#options.subagents ?? [];
    const subagents = [...given, ...files.definitions.filter((d) => !given.some((g) => g.name === d.name))];
    let agent: Agent;
    try {
      agent = await createAgent({
        ...this.#agentOptions,
        ...(subagents.length === 0 ? {} : { subagents }),
        mcpServers: servers,
        sessionId,
        eraCache: this.#eraCache,
        cwd,
        env: this.#options.env,
        fetch: this.#options.fetch,
        sessionStore: this.#store ?? false,
        ...(resume === undefined ? {} : { resume }),
        // A person is present: asks go to the client (so the auto default asks for destructiveHint tools).
        requestPermission: (request, signal) => this.#askClient(sessionId, request, signal),
        // Elicitations go to the client when it declared them; else the agent declines them, with a log line.
        ...(this.#elicitationModes.length === 0 ? {} : {
          input: {
            elicit: (request, context) => this.#elicitClient(sessionId, request, context),
            elicitationModes: this.#elicitationModes,
          },
        }),
        onWarning: (message) => this.#log(`[${sessionId}] warning: ${message}`),
        onEvent: (event) => (replied ? this.#onEvent(sessionId, event) : early.push(event)),
        ...(this.#options.observe === undefined ? {} : { observe: this.#options.observe }),
        // The trace context of session/new (or load, resume): its servers' start and, unless a
        // session/prompt sends its own, every prompt continue it (SPEC 10).
        ...(traceParentFromMeta(p["_meta"]) === undefined ? {} : { trace: traceParentFromMeta(p["_meta"])! }),
        ...(this.#showStderr
          ? { onServerStderr: (server, line) => this.#log(`[${sessionId}] [${server}] ${line}`) }
          : {}),
      });
    } catch (error) {
      // A required server that cannot start (SPEC 3.1): createAgent has closed the others.
      // A session that is unknown, in use or not readable (SPEC 12.4) says so as it is.
      if (error instanceof AgentError && (error.code === "mcp-connect" || error.code === "session")) {
        this.#log(`[${sessionId}] ${error.message}`);
        throw new RpcError(RPC_ERRORS.agent, error.message);
      }
      throw error;
    }
    const failures = agent.failures;
    const display = (name: string) => servers.find((s) => s.name === name)?.displayName ?? name;
    const problems = failures.map((f) => {
      // The registry's message already names the server (by its sanitised name).
      const detail = f.message.replace(`Cannot start server ${JSON.stringify(f.server)}: `, "");
      return `Cannot start server ${JSON.stringify(display(f.server))}: ${detail}`;
    });
    // Diagnostics go to stderr as well as into the error: a client may not show the error.
    for (const problem of problems) this.#log(`[${sessionId}] ${problem}`);
    if (failures.length > 0 || this.#closing) {
      await agent.close();
      if (failures.length === 0) {
        throw new RpcError(RPC_ERRORS.agent, "Cannot create a session: the agent is shutting down");
      }
      throw new RpcError(RPC_ERRORS.agent, problems.join("; "));
    }
    // session/load replays the conversation before its response (SPEC 12.7, CASES C37).
    if (method === "session/load") {
      const read = await this.#store!.read(sessionId);
      for (const update of replayUpdates(read?.records ?? [])) {
        this.#notify(sessionId, redactValue(update, this.#secrets, { patterns: false }));
      }
    }
    this.#sessions.set(sessionId, {
      id: sessionId,
      agent,
      controller: undefined,
      running: undefined,
      announced: new Set(),
      waiting: new Map(),
    });
    return {
      sessionId,
      afterReply: () => {
        replied = true;
        for (const event of early.splice(0)) this.#onEvent(sessionId, event);
      },
    };
  }

  /**
   * `session/list` (SPEC 12.7): the saved sessions, newest first, `cwd` keeping those that ran
   * there, {@link SESSION_LIST_PAGE} a page; `nextCursor` (opaque: the last one's update time
   * and id) asks for the next. A session that cannot be resumed is listed with its problem as
   * the title.
   */
  async #listSessions(p: Record<string, unknown>): Promise<Record<string, unknown>> {
    if (this.#store === undefined) {
      throw new RpcError(RPC_ERRORS.methodNotFound, 'Method not found: "session/list" (sessions are not saved)');
    }
    const cwd = p["cwd"] ?? undefined;
    if (cwd !== undefined && cwd !== null && (typeof cwd !== "string" || !isAbsolute(cwd))) {
      throw invalid("session/list", `cwd ${JSON.stringify(cwd)} must be an absolute path`);
    }
    const cursor = p["cursor"] ?? undefined;
    let after: [string, string] | undefined;
    if (cursor !== undefined && cursor !== null) {
      try {
        const value = JSON.parse(atob(String(cursor))) as unknown;
        if (!Array.isArray(value) || value.length !== 2 || !value.every((v) => typeof v === "string")) throw 0;
        after = value as [string, string];
      } catch {
        throw invalid("session/list", `cursor ${JSON.stringify(cursor)} is not one this agent gave`);
      }
    }
    const listed = await this.#store.list(typeof cwd === "string" ? { cwd } : {});
    for (const warning of listed.warnings) this.#log(`session/list: ${warning}`);
    // The store's order: newest update first, then id. A cursor is the last entry sent.
    const rest = after === undefined
      ? listed.sessions
      : listed.sessions.filter((s) => s.updated < after![0] || (s.updated === after![0] && s.id > after![1]));
    const page = rest.slice(0, SESSION_LIST_PAGE);
    const last = page.at(-1);
    return {
      sessions: page.map(sessionInfo),
      ...(rest.length > page.length && last !== undefined
        ? { nextCursor: btoa(JSON.stringify([last.updated, last.id])) }
        : {}),
    };
  }

  /**
   * `session/close`: cancels the running prompt, waits for it to end, then closes the agent
   * (`_SessionEnd`, then its servers) and forgets the session.
   */
  async #closeSession(p: Record<string, unknown>): Promise<Record<string, never>> {
    const session = this.#session("session/close", p);
    this.#sessions.delete(session.id);
    session.controller?.abort();
    await session.running?.catch(() => {});
    await session.agent.close();
    return {};
  }

  #session(method: string, p: Record<string, unknown>): SessionState {
    const id = p["sessionId"];
    if (typeof id !== "string") throw invalid(method, "sessionId must be a string");
    const session = this.#sessions.get(id);
    if (session === undefined) throw invalid(method, `unknown session ${JSON.stringify(id)}`);
    return session;
  }

  async #prompt(p: Record<string, unknown>): Promise<{ stopReason: string }> {
    const session = this.#session("session/prompt", p);
    const text = promptText(p["prompt"]);
    if (session.controller !== undefined || session.agent.busy) {
      throw invalid("session/prompt", `prompt already in flight in session ${JSON.stringify(session.id)}`);
    }
    if (this.#closing) throw new RpcError(RPC_ERRORS.agent, "Cannot run the prompt: the agent is shutting down");
    const controller = new AbortController();
    session.controller = controller;
    let ended = () => {};
    session.running = new Promise<void>((resolve) => (ended = resolve));
    try {
      // The client's W3C trace context in the request's `_meta` is continued (SPEC 10).
      const trace = traceParentFromMeta(p["_meta"]);
      const run = session.agent.prompt(text, { signal: controller.signal, ...(trace === undefined ? {} : { trace }) });
      for await (const event of run) {
        this.#onEvent(session.id, event);
        if (event.type === "tool-start") {
          session.announced.add(event.id);
          session.waiting.get(event.id)?.();
        }
      }
      const result = await run.result;
      const refusal = result.refusal === undefined ? {} : { refusal: redact(result.refusal, this.#secrets) };
      for (const update of resultUpdates({ ...result, ...refusal })) this.#notify(session.id, update);
      return { stopReason: acpStopReason(result.stopReason) };
    } finally {
      session.controller = undefined;
      session.running = undefined;
      session.announced.clear();
      ended();
    }
  }

  /**
   * The session's {@link PermissionAsk}: `session/request_permission` to the client (SPEC 7.8).
   * The call shows as `pending` while the question is open, and `in_progress` again once
   * allowed. A cancel (or close, or shutdown) withdraws the question at once: it resolves, the
   * pending entry is dropped (a late answer is ignored) and `$/cancel_request` tells the
   * client. An error response or a malformed result rejects the call, with a log line.
   */
  async #askClient(sessionId: string, request: PermissionRequest, signal: AbortSignal): Promise<PermissionOutcome> {
    const session = this.#sessions.get(sessionId);
    if (session === undefined || signal.aborted || this.#closing) return "reject_once";
    const toolCallId = request.call.id;
    const name = JSON.stringify(request.call.name);
    // The call's tool_call goes out with the prompt's events, a few microtasks behind: the
    // client must know the call before it is asked about it.
    await whenAnnounced(session, toolCallId, signal);
    if (signal.aborted || this.#closing) return "reject_once";
    this.#notify(sessionId, { sessionUpdate: "tool_call_update", toolCallId, status: "pending" });
    const response = await this.#requestClient(
      "session/request_permission",
      redactValue(permissionParams(sessionId, request), this.#secrets),
      signal,
    );
    // Withdrawn: the answer no longer matters, the call is answered cancelled.
    if (response === undefined || signal.aborted) return "reject_once";
    const read = permissionAnswer(response);
    if ("problem" in read) {
      this.#log(`[${sessionId}] session/request_permission for ${name}: ${read.problem}; the call is rejected`);
      return "reject_once";
    }
    if (read.outcome === "cancelled") {
      this.#log(
        `[${sessionId}] session/request_permission for ${name}: the client answered cancelled without session/cancel; the call is rejected`,
      );
      return "reject_once";
    }
    if (read.outcome === "allow_once" || read.outcome === "allow_always") {
      this.#notify(sessionId, { sessionUpdate: "tool_call_update", toolCallId, status: "in_progress" });
    }
    return read.outcome;
  }

  /**
   * Sends the client a request of the agent's own and resolves with its response, or with
   * `undefined` once `signal` aborts: the pending entry is dropped (a late answer is ignored)
   * and `$/cancel_request` withdraws the request. Shared by the permission question and the
   * elicitation.
   */
  #requestClient(method: string, params: unknown, signal: AbortSignal): Promise<Response | undefined> {
    const id = this.#nextRequestId++;
    return new Promise<Response | undefined>((resolve) => {
      const withdraw = () => {
        if (this.#pending.delete(id)) {
          this.#send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: id } });
        }
        resolve(undefined);
      };
      this.#pending.set(id, (answer) => {
        signal.removeEventListener("abort", withdraw);
        resolve(answer);
      });
      signal.addEventListener("abort", withdraw, { once: true });
      this.#send({ jsonrpc: "2.0", id, method, params });
    });
  }

  /**
   * The session's elicitation handler: `elicitation/create` to the client, tied to the tool
   * call when known (after its `tool_call` went out). A cancel (or close, or shutdown)
   * withdraws it with `$/cancel_request` and answers `cancel`; an error response or a
   * malformed result answers `cancel`, with a log line. What the person typed is never logged.
   */
  async #elicitClient(
    sessionId: string,
    request: ElicitationRequest,
    context: InputContext,
  ): Promise<ElicitationResult> {
    const session = this.#sessions.get(sessionId);
    const { signal } = context;
    if (session === undefined || signal.aborted || this.#closing) return { action: "cancel" };
    const toolCallId = context.callId;
    if (toolCallId !== undefined) await whenAnnounced(session, toolCallId, signal);
    if (signal.aborted || this.#closing) return { action: "cancel" };
    const response = await this.#requestClient(
      "elicitation/create",
      redactValue(elicitationParams(sessionId, toolCallId, context.server, request), this.#secrets),
      signal,
    );
    if (response === undefined || signal.aborted) return { action: "cancel" };
    const read = elicitationAnswer(response);
    if ("problem" in read) {
      this.#log(
        `[${sessionId}] elicitation/create for server ${
          JSON.stringify(context.server)
        }: ${read.problem}; answered cancel`,
      );
      return { action: "cancel" };
    }
    return read.result;
  }

  #cancel(params: unknown, isRequest: boolean): null {
    const p = typeof params === "object" && params !== null ? (params as Record<string, unknown>) : {};
    try {
      const session = this.#session("session/cancel", p);
      session.controller?.abort();
    } catch (error) {
      if (isRequest) throw error;
      this.#log(`Ignored session/cancel: ${(error as Error).message}`);
    }
    return null;
  }

  /** Each session's subagent progress (SPEC 13.6), by session id. */
  readonly #progress = new Map<string, SubagentProgress>();

  #onEvent(sessionId: string, event: AgentEvent): void {
    const safe = redactEvent(event, this.#secrets);
    const { updates, log } = sessionUpdates(safe);
    for (const update of updates) this.#notify(sessionId, update);
    if (safe.type === "subagent" || safe.type === "tool-end") {
      let progress = this.#progress.get(sessionId);
      if (progress === undefined) this.#progress.set(sessionId, progress = new SubagentProgress());
      for (const update of progress.updates(safe)) this.#notify(sessionId, update);
    }
    if (log !== undefined) this.#log(`[${sessionId}] ${log}`);
  }
}

/** Resolves once the call's `tool_call` has gone out (or `signal` aborts); several may wait for one call. */
function whenAnnounced(
  session: { announced: Set<string>; waiting: Map<string, () => void> },
  toolCallId: string,
  signal: AbortSignal,
): Promise<void> {
  if (session.announced.has(toolCallId) || signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const before = session.waiting.get(toolCallId);
    const done = () => {
      signal.removeEventListener("abort", done);
      resolve();
    };
    session.waiting.set(toolCallId, () => {
      session.waiting.delete(toolCallId);
      before?.();
      done();
    });
    signal.addEventListener("abort", done, { once: true });
  });
}

/** A store's {@link SessionInfo} as ACP's `SessionInfo`. */
function sessionInfo(s: SessionInfo): Record<string, unknown> {
  return {
    sessionId: s.id,
    cwd: s.cwd,
    title: s.problem === undefined ? s.title : `(cannot resume: ${s.problem})`,
    ...(s.updated === "" ? {} : { updatedAt: s.updated }),
  };
}

function randomHex(bytes: number): string {
  const data = crypto.getRandomValues(new Uint8Array(bytes));
  return Array.from(data, (b) => b.toString(16).padStart(2, "0")).join("");
}
