/**
 * Shapes of the MCP client (`lib/mcp/`): server configuration, the wire data the agent
 * reads (tools, call results) and the interface one connection offers. SPEC section 10.
 * @module
 */

import type { InputHandler } from "./input-requests.ts";

/**
 * The two protocol eras (SPEC section 10): 2026-07-28 and later, or 2025-11-25 and earlier.
 * @example
 * const pinned: McpServerConfig = { name: "old", transport: { type: "http", url: "http://127.0.0.1:3000/mcp", headers: {} }, protocol: "legacy" satisfies McpEra };
 */
export type McpEra = "modern" | "legacy";

/** The newest revision the client speaks; sent first (modern era). */
export const MODERN_PROTOCOL_VERSION = "2026-07-28";
/** The newest legacy revision, offered in `initialize`. */
export const LEGACY_PROTOCOL_VERSION = "2025-11-25";
/** Every legacy revision the client accepts from `initialize`. */
export const LEGACY_PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] as const;

/**
 * A stdio server: a child process speaking newline-delimited JSON-RPC.
 * @example
 * const transport: StdioServerConfig = { type: "stdio", command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "."], env: {} };
 */
export interface StdioServerConfig {
  /** Discriminant; `.mcp.json` entries without `type` and without `url` are stdio. */
  type: "stdio";
  /**
   * The program, `${VAR}`-expanded: a name without `/` is looked up on the child's `PATH`,
   * a path with `/` is resolved against `cwd` (SPEC section 11). Never run through a shell.
   */
  command: string;
  /** Its arguments, `${VAR}`-expanded, passed as they are (no shell splitting or quoting). */
  args: string[];
  /** Added to the cleared environment (SPEC section 10). */
  env: Record<string, string>;
  /** Absolute; defaults to the agent's working folder. */
  cwd?: string;
}

/**
 * A Streamable HTTP server.
 * @example
 * const transport: HttpServerConfig = { type: "http", url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer …" } };
 */
export interface HttpServerConfig {
  /** Discriminant; `.mcp.json` `"http"` and `"streamable-http"` both become `"http"`. */
  type: "http";
  /** The MCP endpoint, an absolute `http:` or `https:` URL (`${VAR}`-expanded); every POST, GET and DELETE goes here. */
  url: string;
  /**
   * Extra headers sent with every request, for example `Authorization` (`${VAR}`-expanded,
   * checked to be sendable). Their values are treated as secrets and redacted from messages.
   */
  headers: Record<string, string>;
}

/**
 * One configured server.
 * @example
 * const server: McpServerConfig = { name: "todo", transport: { type: "http", url: "http://127.0.0.1:8787/mcp", headers: {} } };
 */
export interface McpServerConfig {
  /** Matches `^[A-Za-z0-9_-]{1,64}$` without `__` (SPEC section 5.2). */
  name: string;
  /** The name as the user wrote it, when it had to be sanitised (ACP). */
  displayName?: string;
  /** How to reach the server: a child process or a Streamable HTTP endpoint (SPEC section 10). */
  transport: StdioServerConfig | HttpServerConfig;
  /** Pins the era and skips detection. */
  protocol?: McpEra;
  /**
   * A guard that must not pass silently (SPEC section 3.1): the agent does not start without
   * it (`createAgent` throws `AgentError("mcp-connect")`, `run` exits 3, ACP `session/new`
   * fails), and its `_PreToolUse` denies the call when it times out, fails or is not running.
   * Default false: hooks are advisory.
   */
  required?: boolean;
}

/** A tool as `tools/list` returns it. */
export interface McpTool {
  /** The bare name (SPEC section 1); one starting with `_` is a hook and never shown to the LLM. */
  name: string;
  /** Display name; the LLM's description when `description` is absent. */
  title?: string;
  /** Sent to the LLM, clamped to 1024 bytes (SPEC section 5.4). */
  description?: string;
  /**
   * The arguments' JSON Schema as the server sent it, unchecked; the registry rewrites it to
   * an object schema or skips the tool with a warning (SPEC section 5.4).
   */
  inputSchema?: unknown;
  /**
   * MCP 2025-11-25 `ToolExecution`: `taskSupport` `"required"` means the tool answers a plain
   * `tools/call` with -32601, so a legacy server's such tool is called as a task
   * (`lib/mcp/tasks.ts`); `"optional"` tools keep the plain call.
   */
  execution?: unknown;
  /** Any other field the server sent (`annotations`, `outputSchema`, `_meta`…); unused by the agent. */
  [key: string]: unknown;
}

/** A content block of a `tools/call` result. */
export type McpContent =
  | { type: "text"; text: string }
  | { type: "image"; data: string; mimeType: string }
  | { type: "audio"; data: string; mimeType: string }
  | { type: "resource_link"; uri: string; name?: string; mimeType?: string }
  | { type: "resource"; resource: { uri: string; mimeType?: string; text?: string; blob?: string } }
  | { type: string; [key: string]: unknown };

/** The result of `tools/call`. */
export interface CallToolResult {
  /** The result's blocks; `[]` when the server sent no `content` array. */
  content: McpContent[];
  /**
   * The server's `isError`; present only when it sent a boolean. An error result resolves
   * (it is data for the LLM, SPEC section 6.8), it never throws.
   */
  isError?: boolean;
  /** The server's `structuredContent`, when sent; becomes the text of a result with no content blocks. */
  structuredContent?: unknown;
}

/** Options of one request to a server. */
export interface McpRequestOptions {
  /** Aborting sends `notifications/cancelled` and rejects with an `AbortError`. */
  signal?: AbortSignal;
  /** Rejects with `AgentError` code `timeout` and sends `notifications/cancelled`. */
  timeoutMs?: number;
  /** Extra `params._meta` entries (for example `sprout-agent/hook`). */
  meta?: Record<string, unknown>;
  /**
   * `tools/call` only: each change of a task's status or status message (`task working: 40 %
   * done`), for the person (the tool call's updates). Default none.
   */
  onProgress?: (message: string) => void;
  /** `tools/call` only: the agent's id of the call, handed to input requests (`InputContext.callId`). */
  callId?: string;
}

/** How a stdio server's process ended. */
export interface McpExitInfo {
  /** The exit code; `null` when a signal ended the process or it could not be started. */
  code: number | null;
  /** The name of the signal that ended it (for example `"SIGKILL"`), or `null`. */
  signal: string | null;
  /** The last bytes of its stderr (at most 64 KiB). */
  stderrTail: string;
}

/**
 * One end of an in-memory message channel, with the members of the official MCP SDK's
 * `Transport` that a server uses, so an SDK server accepts it as its transport. Messages are
 * JSON-RPC objects, copied through `JSON.stringify`/`JSON.parse` as a stdio line would be,
 * and delivered in order, each in its own microtask (never inside `send`).
 * @example
 * const serve = (transport: InProcessTransport) => serveStdio(createServer, { transport });
 */
export interface InProcessTransport {
  /** Set by the receiving side; messages that arrive before `start()` wait in a queue. */
  onmessage?: ((message: unknown, extra?: unknown) => void) | undefined;
  /** Called once when either end closes. */
  onclose?: (() => void) | undefined;
  /** Never called by this channel (it has no transport errors); present for the SDK's shape. */
  onerror?: ((error: Error) => void) | undefined;
  /** Delivers the messages queued before it was called, then every later one as it comes. */
  start(): Promise<void>;
  /**
   * Sends one JSON-RPC message to the other end.
   * @throws {Error} `Cannot send on an in-process MCP channel: it is closed` once either end closed
   */
  send(message: unknown, options?: unknown): Promise<void>;
  /** Closes both ends; each end's `onclose` runs once. */
  close(): Promise<void>;
}

/** Options for {@link McpConnection} creation (`connectMcp` in `lib/mcp/client.ts`). */
export interface McpConnectOptions {
  /**
   * Answers the server's input requests (elicitation, sampling, roots; `lib/mcp/input-requests.ts`)
   * and decides which are declared in the client capabilities. Default none: nothing is
   * declared and each such request is refused.
   */
  input?: InputHandler;
  /** Sent as `_meta["sprout-agent/session"]` on every request (SPEC section 10). */
  sessionId: string;
  /** `initialize`/`server/discover` and each `tools/list`; default 30000. */
  initTimeoutMs?: number;
  /** Largest line accepted from a stdio server, and largest JSON answer or SSE event from an HTTP one, in bytes; default 4194304. */
  maxLineBytes?: number;
  /**
   * Sent as `clientInfo` in `initialize` (legacy) and as `_meta["io.modelcontextprotocol/clientInfo"]`
   * (modern); default `{name: "sprout-agent", version: "0.1.0"}`.
   */
  clientInfo?: { name: string; version: string };
  /** For HTTP servers; defaults to the global `fetch`. */
  fetch?: typeof fetch;
  /**
   * Aborts connecting: the server is killed (a stdio server's process group, an HTTP server's
   * requests) and `connectMcp` throws an `AbortError` at once. It does not bound the
   * connection once made.
   */
  signal?: AbortSignal;
  /** The agent's working folder, default cwd for stdio servers. */
  cwd?: string;
  /** Environment the pass-through list is taken from; default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Era remembered per server configuration for the life of the process (SPEC section 10). */
  eraCache?: Map<string, McpEra>;
  /**
   * Over Streamable HTTP, send the first `tools/list` (in the modern era, at
   * MODERN_PROTOCOL_VERSION) beside `server/discover` instead of after it, saving a round
   * trip. Its answer is the first page of the first `listTools()` when the server turns out to
   * speak that version and announces no `tools.listChanged` (whose stream opens before any
   * list); otherwise it is dropped and the tools are listed as usual. A legacy server sees one
   * request it refuses. Default false; for a client that connects once per process (the hook
   * bridge, docs/BRIDGE.md).
   */
  prefetchTools?: boolean;
  /** Non-fatal problems (a repeated cursor, an unparseable line). */
  onWarning?: (message: string) => void;
  /**
   * Each line a stdio server writes to stderr, as it arrives, without its line end (pieces of
   * 16 KiB for longer lines); never called for HTTP servers. Its tail is kept either way.
   */
  onStderr?: (line: string) => void;
  /**
   * The server announced that its tool list changed: `notifications/tools/list_changed`,
   * unsolicited from a legacy server or on the `subscriptions/listen` stream of a modern one
   * (opened when its `server/discover` advertises `tools.listChanged`); also after such a
   * subscription ended unexpectedly. A modern list's freshness hint is read through
   * {@link McpConnection.toolsStale}, not announced here.
   */
  onToolsChanged?: () => void;
  /** The connection died (process exit, stream end). Not called after `close()` or `kill()`. */
  onClose?: (info: McpExitInfo) => void;
}

/** One live connection to one MCP server. */
export interface McpConnection {
  /**
   * The era in use: pinned by `McpServerConfig.protocol`, remembered in `eraCache`, or
   * detected when connecting (SPEC section 10).
   */
  readonly era: McpEra;
  /**
   * The revision in use: for `modern`, the one agreed through `server/discover`; for `legacy`,
   * the one the server answered `initialize` with (one of {@link LEGACY_PROTOCOL_VERSIONS}).
   */
  readonly protocolVersion: string;
  /** The server's `serverInfo` (`version` `""` when it sent none), or `undefined` when it sent no name. */
  readonly serverInfo: { name: string; version: string } | undefined;
  /** The stdio child's pid (its process group id), if any. */
  readonly pid: number | undefined;
  /** True once the connection is closed, killed or dead. */
  readonly closed: boolean;
  /**
   * True when the last tool list has expired and must be listed again before it is used:
   * modern era only, once its `ttlMs` freshness hint has elapsed since it arrived (at once
   * for `ttlMs` 0, the official SDK's default), or at once after a change notice. A list
   * without a hint stays fresh until a change notice (or the end of the subscription that
   * carries them), as a legacy server's does. Legacy servers announce changes through
   * `onToolsChanged` only; absent means false. SPEC sections 6.3 and 10.
   */
  readonly toolsStale?: boolean;
  /**
   * Every tool, following `nextCursor` (stops on a repeated cursor or after 100 pages,
   * with a warning).
   * @throws {AgentError} `mcp` or `timeout`
   */
  listTools(options?: McpRequestOptions): Promise<McpTool[]>;
  /**
   * `tools/call`, through its `input_required` rounds (answered by `McpConnectOptions.input`,
   * at most 10) and its task, when the server answers with one (polled to its end within
   * `timeoutMs`; a cancel sends `tasks/cancel`). A JSON-RPC error, a dead server or a
   * transport failure throws; an `isError` result resolves.
   * @throws {AgentError} `mcp` (message says what failed, with exit code and stderr tail
   *   when the server exited), `timeout`; an `AbortError` when `signal` aborts.
   */
  callTool(name: string, args: Record<string, unknown>, options?: McpRequestOptions): Promise<CallToolResult>;
  /**
   * Kills at once: stdio SIGKILL to the process group; HTTP aborts requests (and DELETEs a
   * legacy session). Every pending request fails at once.
   */
  kill(): void;
  /** Graceful close: stdin closed, then SIGTERM, then SIGKILL to the group; HTTP DELETE for legacy sessions. */
  close(): Promise<void>;
}

/** A tool call's outcome as the loop sees it: content mapped to history blocks, not yet truncated. */
export interface ToolOutcome {
  /** Text and image blocks; other MCP content becomes text markers (`[resource: uri]`). */
  content: import("../conversation/types.ts").ResultBlock[];
  /** True for an `isError` result and for every failure turned into data (SPEC section 6.8). */
  isError: boolean;
}

/**
 * All of a session's servers behind one surface (`lib/mcp/registry.ts`): names and limits
 * (SPEC section 5), list changes, lazy restart (SPEC section 6.10). The loop and the hook
 * runner (`lib/hooks/runner.ts`) use only this.
 */
export interface ToolRegistry {
  /**
   * The LLM-visible tools for the next round, hooks removed, qualified and mapped names,
   * limits applied. Re-lists servers that announced a change first.
   */
  listTools(): Promise<import("../conversation/types.ts").ToolDef[]>;
  /**
   * Calls an LLM-visible tool by the name the LLM used. Never throws for tool, server or
   * transport failures: they come back as `isError` outcomes with a clear message
   * (`unknown tool: <name>` for hooks and unknown names, SPEC section 2.2). A timeout kills
   * a stdio server (SPEC section 6.8).
   * @throws an `AbortError` when `options.signal` aborts (after `notifications/cancelled`)
   */
  callTool(
    name: string,
    args: Record<string, unknown>,
    options: {
      signal?: AbortSignal;
      timeoutMs: number;
      /** A task's status changes ({@link McpRequestOptions.onProgress}). */
      onProgress?: (message: string) => void;
      /** The agent's id of the call, for input requests. */
      callId?: string;
    },
  ): Promise<ToolOutcome>;
  /**
   * Server names, in configuration order, that list `hook` and are connected now; with
   * `orRequired`, also each `required` server that listed it when it was last connected,
   * whatever its state now (so that a dead guard is called, fails and fails closed).
   */
  hookServers(hook: string, options?: { orRequired?: boolean }): string[];
  /** True when `server` is configured `required` (SPEC section 3.1). */
  isRequired(server: string): boolean;
  /**
   * Every connected server, in configuration order, with the `_`-named tools it lists (hooks
   * and reserved names, SPEC section 2.1) as the server sent them; for start-up warnings and
   * `cli.ts hooks`.
   */
  hookTools(): Array<{ server: string; tools: McpTool[] }>;
  /** The definition of `hook` as server `server` listed it when last connected, or `undefined`. */
  hookTool(server: string, hook: string): McpTool | undefined;
  /**
   * What an LLM-visible name (as in the last `listTools`) routes to: the server's configured
   * name and the tool's definition as the server listed it (bare `name`, `inputSchema`,
   * `annotations`…), or `undefined` for a hook, a reserved or an unknown name.
   */
  route(name: string): { server: string; tool: McpTool } | undefined;
  /**
   * Calls `hook` on one server with arguments `{}`; never restarts a server.
   * @throws {AgentError} `timeout` (after `notifications/cancelled`), `mcp` for any failure
   */
  callHook(
    server: string,
    hook: string,
    options: { timeoutMs: number; meta: Record<string, unknown> },
  ): Promise<CallToolResult>;
  /** The name the LLM would see for `<server>__<hook>` (mapped as SPEC section 5.1). */
  qualifiedName(server: string, bareName: string): string;
  /** Kills a server at once and marks it dead (SPEC section 4.4). */
  killServer(server: string, reason: string): void;
  /** Closes every server; no process is left behind. */
  close(): Promise<void>;
}
