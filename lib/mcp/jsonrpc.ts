/**
 * The transport-neutral JSON-RPC 2.0 engine of the MCP client: ids, pending requests,
 * timeouts, cancellation (`notifications/cancelled`), late replies, and answers to server
 * requests (`ping` → `{}`, everything else -32601). SPEC sections 4.5 and 10.
 * @module
 */

import { abortError, AgentError } from "../util/errors.ts";
import { formatSeconds } from "../util/time.ts";

/** A JSON-RPC request or response id. */
export type JsonRpcId = number | string;

/** Any JSON-RPC 2.0 message, loosely typed (validated where it is read). */
export interface JsonRpcMessage {
  jsonrpc: "2.0";
  id?: JsonRpcId | null;
  method?: string;
  params?: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/** JSON-RPC error code: the message is not a valid request (used for one too large to read). */
export const INVALID_REQUEST = -32600;
/** JSON-RPC error code: the method does not exist. */
export const METHOD_NOT_FOUND = -32601;
/** JSON-RPC error code of the official SDK for an unsupported protocol version (modern era). */
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;
/**
 * JSON-RPC error code of a modern (2026-07-28) server for a request whose HTTP headers
 * (`Mcp-Method`, `Mcp-Name`, `MCP-Protocol-Version`) disagree with its body (`HeaderMismatch`,
 * answered with HTTP 400 by the official v2 SDK). A modern answer, never a legacy one.
 */
export const HEADER_MISMATCH = -32020;

/**
 * A JSON-RPC error answer from a server, as an {@link AgentError} with code `mcp`.
 * `rpcCode` and `rpcData` are the server's `error.code` and `error.data`; `httpStatus` is set
 * when the error came in a non-2xx HTTP answer.
 */
export class JsonRpcError extends AgentError {
  readonly rpcCode: number;
  readonly rpcData: unknown;
  readonly rpcMessage: string;
  constructor(message: string, error: { code: number; message: string; data?: unknown }, status?: number) {
    super("mcp", message, status === undefined ? undefined : { status });
    this.rpcCode = error.code;
    this.rpcData = error.data;
    this.rpcMessage = error.message;
  }
}

/** What a transport learns about the message it is asked to send. */
export interface SendContext {
  /** Aborted when the request is abandoned (timeout, abort, close). */
  signal: AbortSignal;
  /** The request's method (`undefined` for responses). */
  method: string | undefined;
  /** The request's id, when the message is a request. */
  id: JsonRpcId | undefined;
}

/** Options of {@link JsonRpcPeer}. */
export interface JsonRpcPeerOptions {
  /** Used in messages: `server "name"`. */
  label: string;
  /**
   * Delivers one message to the server. A rejection fails the request it carries. HTTP
   * transports deliver the answer by calling {@link JsonRpcPeer.receive} before resolving.
   */
  send: (message: JsonRpcMessage, context: SendContext) => Promise<void>;
  /** A notification from the server (`notifications/tools/list_changed`, `notifications/cancelled`, …). */
  onNotification?: (method: string, params: unknown) => void;
  /** Non-fatal problems (a reply that is not JSON-RPC). */
  onWarning?: (message: string) => void;
}

/** Per-request options of {@link JsonRpcPeer.request}. */
export interface PeerRequestOptions {
  /** Rejects with `AgentError` code `timeout` after this many milliseconds. */
  timeoutMs?: number;
  /**
   * The timeout's message (a function is called when the timeout fires); default
   * `Request "<method>" to <label> timed out after N s`.
   */
  timeoutMessage?: string | (() => string);
  /** Aborting rejects with an `AbortError`. */
  signal?: AbortSignal;
  /** Called at once with the id the request is sent under (a subscription is known by it). */
  onId?: (id: JsonRpcId) => void;
  /**
   * A long-lived request (`subscriptions/listen`, answered only when it ends): left out of
   * {@link JsonRpcPeer.pendingCount} and {@link JsonRpcPeer.pendingIds}.
   */
  background?: boolean;
  /**
   * A stray error answer counts as this request's answer while it is the only request
   * pending (long-lived `background` ones aside): one whose `id` is null (JSON-RPC 2.0
   * section 5: a server that cannot read a request's id answers with a null one), or an id
   * this peer never issued (the PHP SDK answers an unknown method with `id: ""`, the Swift
   * SDK in strict mode a notification before `initialize` with a random one). Only for a
   * request alone on its channel, such as the era probe.
   */
  takesStrayError?: boolean;
}

interface Pending {
  method: string;
  background: boolean;
  takesStrayError: boolean;
  resolve: (result: unknown) => void;
  reject: (error: Error) => void;
  controller: AbortController;
  cleanup: () => void;
}

/**
 * One JSON-RPC conversation with one server. Ids are unique for the life of the peer, so a
 * late reply to an abandoned request can never match a later one: it is discarded.
 * @example
 * const peer = new JsonRpcPeer({ label: 'server "a"', send: async (m) => write(m) });
 * onLine((msg) => peer.receive(msg));
 * const tools = await peer.request("tools/list", {}, { timeoutMs: 30_000 });
 */
export class JsonRpcPeer {
  #options: JsonRpcPeerOptions;
  #nextId = 0;
  #pending = new Map<JsonRpcId, Pending>();
  #closedError: (() => Error) | undefined;
  /** Replies whose request was no longer pending (late or unknown). */
  discardedReplies = 0;

  constructor(options: JsonRpcPeerOptions) {
    this.#options = options;
  }

  /** Requests still waiting for their answer (long-lived `background` ones left out). */
  get pendingCount(): number {
    return this.pendingIds().length;
  }

  /**
   * Sends a request and resolves with its `result`.
   * @throws {JsonRpcError} for an error answer; {@link AgentError} `timeout` after
   *   `timeoutMs` (after sending `notifications/cancelled`); an `AbortError` when `signal`
   *   aborts (after `notifications/cancelled`); whatever the transport or
   *   {@link JsonRpcPeer.failAll} rejects with.
   */
  request(method: string, params: Record<string, unknown>, options: PeerRequestOptions = {}): Promise<unknown> {
    if (this.#closedError) return Promise.reject(this.#closedError());
    if (options.signal?.aborted) return Promise.reject(abortError());
    const id = ++this.#nextId;
    const controller = new AbortController();
    options.onId?.(id);
    return new Promise((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const onAbort = () => abandon(abortError(), "cancelled");
      const cleanup = () => {
        if (timer !== undefined) clearTimeout(timer);
        options.signal?.removeEventListener("abort", onAbort);
      };
      const abandon = (error: Error, reason: string) => {
        if (!this.#pending.delete(id)) return;
        cleanup();
        controller.abort();
        reject(error);
        this.notify("notifications/cancelled", { requestId: id, reason }).catch(() => {});
      };
      this.#pending.set(id, {
        method,
        background: options.background === true,
        takesStrayError: options.takesStrayError === true,
        resolve,
        reject,
        controller,
        cleanup,
      });
      if (options.timeoutMs !== undefined) {
        const seconds = formatSeconds(options.timeoutMs);
        const custom = options.timeoutMessage;
        const message = () =>
          typeof custom === "function"
            ? custom()
            : custom ?? `Request "${method}" to ${this.#options.label} timed out after ${seconds} s`;
        timer = setTimeout(() => abandon(new AgentError("timeout", message()), "timeout"), options.timeoutMs);
      }
      options.signal?.addEventListener("abort", onAbort, { once: true });
      const message: JsonRpcMessage = { jsonrpc: "2.0", id, method, params };
      this.#options.send(message, { signal: controller.signal, method, id }).catch((error: unknown) => {
        const entry = this.#pending.get(id);
        if (!entry) return;
        this.#pending.delete(id);
        entry.cleanup();
        reject(error instanceof Error ? error : new AgentError("mcp", String(error)));
      });
    });
  }

  /** Sends a notification. Rejects when the transport fails. */
  notify(method: string, params: Record<string, unknown>): Promise<void> {
    if (this.#closedError) return Promise.resolve();
    const controller = new AbortController();
    return this.#options.send({ jsonrpc: "2.0", method, params }, {
      signal: controller.signal,
      method,
      id: undefined,
    });
  }

  /** Ids of the requests still waiting, oldest first (long-lived `background` ones left out). */
  pendingIds(): JsonRpcId[] {
    return [...this.#pending].filter(([, entry]) => !entry.background).map(([id]) => id);
  }

  /**
   * Rejects one pending request now with `error(method)` (its reply arrived but cannot be
   * read) and sends `notifications/cancelled` for it (unless `cancel` is false: the server
   * itself ended it). Returns false when `id` is not pending; a later reply to it is discarded.
   */
  fail(id: JsonRpcId, error: (method: string) => Error, cancel = true): boolean {
    const entry = this.#pending.get(id);
    if (entry === undefined) return false;
    this.#pending.delete(id);
    entry.cleanup();
    entry.controller.abort();
    entry.reject(error(entry.method));
    if (cancel) this.notify("notifications/cancelled", { requestId: id, reason: "reply unreadable" }).catch(() => {});
    return true;
  }

  /** Answers a request from the server with a JSON-RPC error (best effort; failures are warnings). */
  answerError(id: JsonRpcId, code: number, message: string): void {
    const controller = new AbortController();
    this.#options.send({ jsonrpc: "2.0", id, error: { code, message } }, {
      signal: controller.signal,
      method: undefined,
      id: undefined,
    })
      .catch((error: unknown) => {
        this.#options.onWarning?.(
          `Cannot answer a request from ${this.#options.label}: ${
            error instanceof Error ? error.message : String(error)
          }`,
        );
      });
  }

  /** Feeds one parsed message (or a batch) that arrived from the server. */
  receive(message: unknown): void {
    if (Array.isArray(message)) {
      for (const m of message) this.receive(m);
      return;
    }
    if (typeof message !== "object" || message === null) {
      this.#options.onWarning?.(`Ignored a message from ${this.#options.label} that is not a JSON-RPC object`);
      return;
    }
    const m = message as JsonRpcMessage;
    if (typeof m.method === "string") {
      if (m.id === undefined || m.id === null) this.#notification(m.method, m.params);
      else this.#serverRequest(m.id, m.method);
      return;
    }
    let id = m.id;
    if (id === undefined || id === null || !this.#issued(id)) {
      const taker = m.error ? this.#strayTaker() : undefined;
      if (taker !== undefined) id = taker;
      else {
        if (m.error && (id === undefined || id === null)) {
          this.#options.onWarning?.(
            `${capitalize(this.#options.label)} sent an error without an id: ${m.error.message}`,
          );
        }
        if (id === undefined || id === null) return;
      }
    }
    const entry = this.#pending.get(id);
    if (!entry) {
      this.discardedReplies++;
      return;
    }
    this.#pending.delete(id);
    entry.cleanup();
    if (m.error && typeof m.error === "object") {
      const code = typeof m.error.code === "number" ? m.error.code : -32603;
      const text = typeof m.error.message === "string" ? m.error.message : "unknown error";
      entry.reject(
        new JsonRpcError(`Request "${entry.method}" to ${this.#options.label} failed: ${text} (code ${code})`, {
          code,
          message: text,
          data: m.error.data,
        }),
      );
    } else entry.resolve(m.result);
  }

  /**
   * Rejects every pending request at once with `error()` and, when `closed`, every later
   * request too (the server died or the connection was closed).
   */
  failAll(error: () => Error, closed = true): void {
    if (closed) this.#closedError = error;
    const entries = [...this.#pending.values()];
    this.#pending.clear();
    for (const entry of entries) {
      entry.cleanup();
      entry.controller.abort();
      entry.reject(error());
    }
  }

  /** Whether `id` is one this peer sent a request under (ids are 1, 2, 3, …). */
  #issued(id: JsonRpcId): boolean {
    return typeof id === "number" && Number.isInteger(id) && id >= 1 && id <= this.#nextId;
  }

  /** The request that takes a stray error answer: a `takesStrayError` one alone among the pending. */
  #strayTaker(): JsonRpcId | undefined {
    const waiting = [...this.#pending].filter(([, entry]) => !entry.background);
    return waiting.length === 1 && waiting[0]![1].takesStrayError ? waiting[0]![0] : undefined;
  }

  #notification(method: string, params: unknown): void {
    this.#options.onNotification?.(method, params);
  }

  #serverRequest(id: JsonRpcId, method: string): void {
    const controller = new AbortController();
    const context: SendContext = { signal: controller.signal, method: undefined, id: undefined };
    const reply: JsonRpcMessage = method === "ping"
      ? { jsonrpc: "2.0", id, result: {} }
      : { jsonrpc: "2.0", id, error: { code: METHOD_NOT_FOUND, message: `Method not found: ${method}` } };
    this.#options.send(reply, context).catch((error: unknown) => {
      this.#options.onWarning?.(
        `Cannot answer "${method}" from ${this.#options.label}: ${
          error instanceof Error ? error.message : String(error)
        }`,
      );
    });
  }
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
