/**
 * The Streamable HTTP side of the MCP client: one POST per message, JSON or SSE answers
 * (with resumption by GET + `Last-Event-ID` when a stream ends early or is interrupted: a reset,
 * a cut inside an event; each message handed on once), the era's headers
 * (`MCP-Protocol-Version`; modern `Mcp-Method`/`Mcp-Name`; legacy `Mcp-Session-Id`), one
 * re-initialise and retry when a legacy session is lost, and DELETE on close. SPEC section 10.
 * @module
 */

import { AgentError } from "../util/errors.ts";
import { BodyLimitError, MAX_BODY_BYTES, MAX_ERROR_BODY_BYTES, readBody } from "../http/body.ts";
import { readSse } from "../http/sse.ts";
import { headerSecrets, redact } from "../util/redact.ts";
import { sleep } from "../util/time.ts";
import { headerProblem } from "./config.ts";
import { JsonRpcError } from "./jsonrpc.ts";
import type { JsonRpcMessage, SendContext } from "./jsonrpc.ts";
import type { HttpServerConfig } from "./types.ts";

/** The `_meta` key carrying the protocol version of a modern request. */
export const PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion";

/** The variable that sets the cap of an answer (as of a stdio line). */
const LIMIT_SETTING = "SPROUT_AGENT_MAX_LINE_BYTES";

/** How many times in a row, without a new event, a POST's SSE stream is resumed by GET before the request fails. */
const MAX_RESUMES = 3;

/** Options of {@link HttpTransport}. */
export interface HttpTransportOptions {
  /** Server name, for messages. */
  name: string;
  fetch: typeof fetch;
  /** Every message the server sends (answers, requests, notifications). */
  onMessage: (message: unknown) => void;
  onWarning: (message: string) => void;
  /**
   * Called when a legacy server answers 404 to a known session: must run `initialize`
   * again (a new session); the request is then retried once.
   */
  reinitialize: () => Promise<void>;
  /**
   * Largest JSON answer and largest SSE event, in bytes (`SPROUT_AGENT_MAX_LINE_BYTES`, as for
   * a stdio line); default {@link MAX_BODY_BYTES}. Past it the answer is cancelled at once
   * and the request fails naming the server.
   */
  maxBodyBytes?: number;
}

/**
 * One Streamable HTTP connection. Stateless for modern servers (every header derives from
 * the message); for legacy servers it holds the session id and the negotiated version.
 */
export class HttpTransport {
  #config: HttpServerConfig;
  #options: HttpTransportOptions;
  #all = new AbortController();
  #sessionId: string | undefined;
  #reinit: Promise<void> | undefined;
  #listening: AbortController | undefined;
  /** The configured header values: never shown in an error message (guarantee 6). */
  #secrets: string[];
  /** The legacy protocol version, sent as `MCP-Protocol-Version` once negotiated. */
  legacyVersion: string | undefined;

  constructor(config: HttpServerConfig, options: HttpTransportOptions) {
    this.#config = config;
    this.#options = options;
    this.#secrets = headerSecrets(config.headers, true);
  }

  /** The legacy session id, if the server gave one. */
  get sessionId(): string | undefined {
    return this.#sessionId;
  }

  /**
   * POSTs one message. For a request, resolves once its answer was handed to `onMessage`.
   * @throws {AgentError} `mcp` for HTTP and stream failures (`status` set for HTTP errors);
   *   {@link JsonRpcError} when a non-2xx answer carries a JSON-RPC error
   */
  async send(message: JsonRpcMessage, context: SendContext): Promise<void> {
    const retried = await this.#post(message, context, false);
    if (retried) await this.#post(message, context, true);
  }

  /** Aborts every request in flight and, for a legacy session, sends DELETE (not awaited). */
  kill(): void {
    this.#all.abort();
    void this.#delete();
  }

  /** Aborts every request in flight and, for a legacy session, sends DELETE (bounded by 2 s). */
  async close(): Promise<void> {
    this.#all.abort();
    await this.#delete();
  }

  /** Forgets the session (before a new `initialize`). */
  resetSession(): void {
    this.#listening?.abort();
    this.#sessionId = undefined;
    this.legacyVersion = undefined;
  }

  /**
   * Opens the standalone GET event stream of a legacy server (as the official client does
   * after `notifications/initialized`): servers send `notifications/tools/list_changed` and
   * requests unrelated to a POST there. A 405 or an HTTP error ends it quietly; a stream that
   * ends or is interrupted (a reset, a cut inside an event) is resumed with `Last-Event-ID`
   * after the server's `retry` delay, at most 3 times in a row without an event.
   */
  listen(): void {
    this.#listening?.abort();
    const controller = new AbortController();
    this.#listening = controller;
    const signal = AbortSignal.any([controller.signal, this.#all.signal]);
    void this.#listenLoop(signal).catch(() => {});
  }

  async #listenLoop(signal: AbortSignal): Promise<void> {
    let lastEventId = "";
    let retryMs = 1000;
    for (let idle = 0; idle < 3 && !signal.aborted; idle++) {
      const headers = this.#headers();
      headers["accept"] = "text/event-stream";
      if (this.#sessionId !== undefined) headers["mcp-session-id"] = this.#sessionId;
      if (lastEventId !== "") headers["last-event-id"] = lastEventId;
      let response: Response | undefined;
      try {
        response = await this.#options.fetch(this.#config.url, { method: "GET", headers, signal });
      } catch {
        // the network failed: tried again after the delay, as a stream that ended
      }
      if (response !== undefined) {
        const type = (response.headers.get("content-type") ?? "").split(";")[0]?.trim().toLowerCase();
        if (!response.ok || type !== "text/event-stream" || !response.body) {
          await response.body?.cancel().catch(() => {});
          return;
        }
        try {
          for await (
            const event of readSse(response.body, signal, { maxEventBytes: this.#maxBytes, setting: LIMIT_SETTING })
          ) {
            if (event.id !== "") lastEventId = event.id;
            if (event.retry !== undefined) retryMs = event.retry;
            if (event.data.trim() === "") continue;
            idle = -1;
            try {
              this.#options.onMessage(JSON.parse(event.data));
            } catch {
              this.#options.onWarning(`Ignored an event from server "${this.#options.name}" that is not JSON`);
            }
          }
        } catch (error) {
          // A reset or a cut inside an event is resumed like an end; an oversize event is not.
          if (signal.aborted || error instanceof BodyLimitError) return;
        }
      }
      await sleep(retryMs, signal);
    }
  }

  async #delete(): Promise<void> {
    const sessionId = this.#sessionId;
    if (sessionId === undefined) return;
    this.#sessionId = undefined;
    const headers = this.#headers();
    headers["mcp-session-id"] = sessionId;
    try {
      const response = await this.#options.fetch(this.#config.url, {
        method: "DELETE",
        headers,
        signal: AbortSignal.timeout(2000),
      });
      await response.body?.cancel().catch(() => {});
    } catch {
      // best effort
    }
  }

  /**
   * The request's headers, lower-cased names, as a plain object: a `Headers` would load Node's
   * fetch implementation (undici, ~90 ms of a Node process's wall time, issue 24) even where the
   * caller brings a `fetch` of its own (`cli.ts hook-bridge` under Node).
   */
  #headers(): Record<string, string> {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(this.#config.headers)) {
      const problem = headerProblem(name, value);
      if (problem !== undefined) {
        throw new AgentError(
          "mcp",
          `Cannot send to server "${this.#options.name}": invalid headers in its configuration: header ${
            JSON.stringify(redact(name, this.#secrets))
          } ${problem}`,
        );
      }
      headers[name.toLowerCase()] = value;
    }
    if (this.legacyVersion !== undefined) headers["mcp-protocol-version"] = this.legacyVersion;
    return headers;
  }

  /** Returns true when the request must be retried after a re-initialise. */
  async #post(message: JsonRpcMessage, context: SendContext, isRetry: boolean): Promise<boolean> {
    const isInitialize = message.method === "initialize";
    const headers = this.#headers();
    headers["content-type"] = "application/json";
    headers["accept"] = "application/json, text/event-stream";
    const params = message.params as { _meta?: Record<string, unknown>; name?: unknown } | undefined;
    const modernVersion = params?._meta?.[PROTOCOL_VERSION_META_KEY];
    if (typeof modernVersion === "string" && message.method !== undefined && message.id !== undefined) {
      headers["mcp-protocol-version"] = modernVersion;
      headers["mcp-method"] = message.method;
      if (message.method === "tools/call" && typeof params?.name === "string") {
        headers["mcp-name"] = encodeHeaderValue(params.name);
      }
      // The tasks extension routes a task's requests by its id (SPEC 10, lib/mcp/tasks.ts).
      const taskId = (params as { taskId?: unknown } | undefined)?.taskId;
      if (message.method.startsWith("tasks/") && typeof taskId === "string") {
        headers["mcp-name"] = encodeHeaderValue(taskId);
      }
    }
    const sessionId = this.#sessionId;
    if (sessionId !== undefined && !isInitialize) headers["mcp-session-id"] = sessionId;
    const signal = AbortSignal.any([context.signal, this.#all.signal]);
    let response: Response;
    try {
      response = await this.#options.fetch(this.#config.url, {
        method: "POST",
        headers,
        body: JSON.stringify(message),
        signal,
      });
    } catch (error) {
      throw this.#failure(context, signal, error);
    }
    if (isInitialize && response.ok) {
      const id = response.headers.get("mcp-session-id");
      if (id) this.#sessionId = id;
    }
    if (!response.ok) {
      const text = await this.#errorText(response);
      if (response.status === 404 && sessionId !== undefined && !isInitialize && !isRetry) {
        await this.#reinitialize(sessionId);
        return true;
      }
      throw this.#httpError(context, response.status, text);
    }
    if (context.id === undefined) {
      await response.body?.cancel().catch(() => {});
      return false;
    }
    const type = (response.headers.get("content-type") ?? "").split(";")[0]?.trim().toLowerCase();
    if (type === "text/event-stream" && response.body) {
      await this.#readStream(response.body, context, signal);
      return false;
    }
    if (type === "application/json") {
      let body: unknown;
      try {
        body = JSON.parse(
          await readBody(response.body, { maxBytes: this.#maxBytes, what: "the JSON answer", setting: LIMIT_SETTING }),
        );
      } catch (error) {
        throw this.#failure(context, signal, error);
      }
      this.#options.onMessage(answerOf(body, context.id));
      return false;
    }
    await response.body?.cancel().catch(() => {});
    throw new AgentError(
      "mcp",
      `Request "${context.method}" to server "${this.#options.name}" failed: unexpected answer (HTTP ${response.status}, content type "${
        type ?? ""
      }")`,
      { status: response.status },
    );
  }

  async #reinitialize(lostSession: string): Promise<void> {
    if (this.#reinit === undefined) {
      this.#sessionId = undefined;
      this.legacyVersion = undefined;
      this.#options.onWarning(`Server "${this.#options.name}" lost session "${lostSession}": initializing again`);
      this.#reinit = this.#options.reinitialize().finally(() => (this.#reinit = undefined));
    }
    await this.#reinit;
  }

  /**
   * Reads SSE events until the answer to `context.id` arrived. When the stream is interrupted
   * first (it ends, the connection is reset, or it stops inside an event, which is then
   * dropped unread), it is resumed by GET with `Last-Event-ID` (the id of the last whole
   * event) after the server's `retry` delay, at most {@link MAX_RESUMES} times in a row
   * without a new event. Events whose id was already read are skipped, so every message,
   * the answer included, is handed on once.
   */
  async #readStream(body: ReadableStream<Uint8Array>, context: SendContext, signal: AbortSignal): Promise<void> {
    let lastEventId = "";
    let retryMs = 1000;
    const seen = new Set<string>();
    let stream: ReadableStream<Uint8Array> | undefined = body;
    for (let idle = 0;; idle++) {
      let interruption = stream === undefined
        ? "the event stream was interrupted before the answer, and resuming it failed"
        : "the event stream ended before the answer";
      if (stream !== undefined) {
        try {
          for await (
            const event of readSse(stream, signal, { maxEventBytes: this.#maxBytes, setting: LIMIT_SETTING })
          ) {
            if (event.retry !== undefined) retryMs = event.retry;
            if (event.id !== "") {
              if (seen.has(event.id)) continue; // replayed by the server after a resume
              seen.add(event.id);
              lastEventId = event.id;
            }
            if (event.data.trim() === "") continue;
            idle = 0;
            let message: unknown;
            try {
              message = JSON.parse(event.data);
            } catch {
              this.#options.onWarning(`Ignored an event from server "${this.#options.name}" that is not JSON`);
              continue;
            }
            const answered = answers(message, context.id);
            this.#options.onMessage(message);
            if (answered) return;
          }
        } catch (error) {
          if (signal.aborted || error instanceof BodyLimitError) throw this.#failure(context, signal, error);
          interruption = `the event stream was interrupted before the answer (${
            redact(error instanceof Error ? error.message : String(error), this.#secrets)
          })`;
        }
      }
      if (signal.aborted) throw this.#failure(context, signal, signal.reason);
      if (lastEventId === "" || idle >= MAX_RESUMES) {
        const why = lastEventId === "" ? "" : ` and ${MAX_RESUMES} resumptions brought no new event`;
        throw new AgentError(
          "mcp",
          `Request "${context.method}" to server "${this.#options.name}" failed: ${interruption}${why}`,
        );
      }
      await sleep(retryMs, signal).catch(() => {});
      if (signal.aborted) throw this.#failure(context, signal, signal.reason);
      stream = await this.#resume(lastEventId, context, signal);
    }
  }

  /**
   * The GET that resumes a POST's stream after `lastEventId`. Resolves `undefined` when it
   * could not be sent (the network failed again: another interruption, counted by the caller).
   * @throws {AgentError} for an HTTP error answer
   */
  async #resume(
    lastEventId: string,
    context: SendContext,
    signal: AbortSignal,
  ): Promise<ReadableStream<Uint8Array> | undefined> {
    const headers = this.#headers();
    headers["accept"] = "text/event-stream";
    headers["last-event-id"] = lastEventId;
    if (this.#sessionId !== undefined) headers["mcp-session-id"] = this.#sessionId;
    let response: Response;
    try {
      response = await this.#options.fetch(this.#config.url, { method: "GET", headers, signal });
    } catch (error) {
      if (signal.aborted) throw this.#failure(context, signal, error);
      return undefined;
    }
    if (!response.ok || !response.body) {
      const text = await this.#errorText(response);
      throw this.#httpError(context, response.status, text);
    }
    return response.body;
  }

  get #maxBytes(): number {
    return this.#options.maxBodyBytes ?? MAX_BODY_BYTES;
  }

  /** The start of an error answer's body (at most {@link MAX_ERROR_BODY_BYTES}; the rest is cancelled unread). */
  #errorText(response: Response): Promise<string> {
    return readBody(response.body, { maxBytes: MAX_ERROR_BODY_BYTES, truncate: true }).catch(() => "");
  }

  #httpError(context: SendContext, status: number, text: string): AgentError {
    const prefix = `Request "${context.method ?? "response"}" to server "${this.#options.name}" failed`;
    const rpc = parseRpcError(text);
    const hostHint = status === 403 && /\bInvalid Host\b/i.test(rpc?.message ?? text) ? this.#hostHint() : "";
    if (rpc !== undefined) {
      const message = redact(rpc.message, this.#secrets);
      return new JsonRpcError(
        `${prefix}: HTTP ${status}: ${message} (code ${rpc.code})${hostHint}`,
        { ...rpc, message },
        status,
      );
    }
    const auth = status === 401 || (status === 403 && hostHint === "")
      ? " (check the server's headers, for example Authorization)"
      : "";
    const snippet = redact(text.trim().slice(0, 300), this.#secrets);
    return new AgentError("mcp", `${prefix}: HTTP ${status}${auth}${snippet ? `: ${snippet}` : ""}${hostHint}`, {
      status,
    });
  }

  /**
   * What to do about a 403 "Invalid Host": the server checks the `Host` header against the
   * names it accepts (DNS-rebinding protection), and the one this URL sends is not among them.
   */
  #hostHint(): string {
    const { host, hostname } = new URL(this.#config.url);
    return `; the server does not accept the Host "${host}" of its URL: add "${hostname}" to the names it accepts ` +
      `(--allowed-hosts for the example servers) or use a URL with a name it accepts`;
  }

  #failure(context: SendContext, signal: AbortSignal, error: unknown): Error {
    if (error instanceof AgentError) return error;
    const reason = signal.aborted
      ? "the request was abandoned"
      : redact(error instanceof Error ? error.message : String(error), this.#secrets);
    return new AgentError(
      "mcp",
      `Request "${context.method ?? "response"}" to server "${this.#options.name}" failed: ${reason}`,
      {
        cause: error,
      },
    );
  }
}

function answers(message: unknown, id: unknown): boolean {
  const list = Array.isArray(message) ? message : [message];
  return list.some((m) => typeof m === "object" && m !== null && !("method" in m) && (m as { id?: unknown }).id === id);
}

/**
 * A JSON answer to a POST: an error whose `id` is null (a server that could not read the
 * request answers so, JSON-RPC 2.0 section 5) or `""` (the PHP SDK 0.7.1's answer to an
 * unknown method) is the answer to that POST's request.
 */
function answerOf(body: unknown, id: unknown): unknown {
  if (typeof body !== "object" || body === null || Array.isArray(body) || id === undefined) return body;
  const message = body as { id?: unknown; error?: unknown; method?: unknown };
  const stray = message.id === null || message.id === "";
  if (stray && message.error !== undefined && message.method === undefined) return { ...message, id };
  return body;
}

function parseRpcError(text: string): { code: number; message: string; data?: unknown } | undefined {
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; data?: unknown } };
    const error = body?.error;
    if (typeof error !== "object" || error === null || typeof error.code !== "number") return undefined;
    return { code: error.code, message: typeof error.message === "string" ? error.message : "", data: error.data };
  } catch {
    return undefined;
  }
}

/**
 * An HTTP header value for `Mcp-Name`: plain printable ASCII passes unchanged, anything else
 * is sent as `=?base64?<base64 of UTF-8>?=` (the official SDK's encoding).
 */
export function encodeHeaderValue(value: string): string {
  const plain = value.length > 0 && value === value.trim() && /^[\x20-\x7e\t]*$/.test(value) &&
    !(value.startsWith("=?base64?") && value.endsWith("?="));
  if (plain) return value;
  let binary = "";
  for (const byte of new TextEncoder().encode(value)) binary += String.fromCharCode(byte);
  return `=?base64?${btoa(binary)}?=`;
}
