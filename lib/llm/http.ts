/**
 * One HTTP attempt of a streaming LLM request, shared by `anthropic.ts` and `openai.ts`:
 * POST JSON with a per-attempt timeout, turn a non-2xx answer into a {@link AttemptError}
 * (retryable per SPEC section 9), and hand the SSE events (or a JSON body, for endpoints that
 * ignore `stream: true`) to the caller.
 * @module
 */

import { BodyLimitError, MAX_BODY_BYTES, MAX_ERROR_BODY_BYTES, readBody } from "../http/body.ts";
import { AttemptError, isRetryableStatus, parseRetryAfter } from "./retry.ts";
import { abortReason } from "../util/time.ts";
import { readSse, type SseEvent } from "../http/sse.ts";
import { headerSecrets, redact } from "../util/redact.ts";
import { imageMarker } from "../conversation/results.ts";
import type { ResultBlock } from "../conversation/types.ts";

/** How one attempt is sent. */
export interface AttemptRequest {
  fetch: typeof fetch;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  /**
   * Idle deadline in milliseconds (`config.llmTimeoutMs`): how long the attempt may wait for
   * the response to start, and then between two SSE events. A long answer that keeps
   * streaming is never cut; a stalled one is (and retried).
   */
  timeoutMs: number;
  signal?: AbortSignal;
  /**
   * Largest JSON body and largest SSE event, in bytes; default {@link MAX_BODY_BYTES} (the
   * default of `SPROUT_AGENT_MAX_LINE_BYTES`). Past it the body is cancelled at once and the
   * attempt fails, not retried.
   */
  maxBodyBytes?: number;
}

/** What the caller does with the answer: read SSE events, or a JSON body. */
export interface AttemptHandlers<T> {
  events: (events: AsyncIterable<SseEvent>) => Promise<T>;
  json: (body: unknown) => T;
}

/**
 * Sends one attempt and hands its answer to `handlers`.
 * @throws {AttemptError} for a non-2xx status (with the provider's error text, of which at
 *   most {@link MAX_ERROR_BODY_BYTES} are read), a timeout (retryable) or what the handlers
 *   throw; a 2xx answer that is neither `text/event-stream` nor JSON (`application/json`,
 *   `*+json`, or no content type), a JSON body or an SSE event over `maxBodyBytes`: not
 *   retryable, the body cancelled unread; any other error (a connection error) becomes a
 *   retryable one. Every message has the request's credentials (`x-api-key`, `Authorization`)
 *   redacted, also when the provider's error body echoes them.
 */
export async function sendAttempt<T>(request: AttemptRequest, handlers: AttemptHandlers<T>): Promise<T> {
  const controller = new AbortController();
  const outer = request.signal;
  const onAbort = () => controller.abort(abortReason(outer));
  if (outer?.aborted) onAbort();
  outer?.addEventListener("abort", onAbort, { once: true });
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new DOMException("LLM request timed out", "TimeoutError"));
    }, request.timeoutMs);
  };
  arm();
  let body: ReadableStream<Uint8Array> | null = null;
  try {
    const response = await request.fetch(request.url, {
      method: "POST",
      headers: { "content-type": "application/json", ...request.headers },
      body: JSON.stringify(request.body),
      signal: controller.signal,
    });
    body = response.body;
    const maxBytes = request.maxBodyBytes ?? MAX_BODY_BYTES;
    if (!response.ok) {
      const text = await readBody(response.body, { maxBytes: MAX_ERROR_BODY_BYTES, truncate: true });
      body = null;
      const detail = providerErrorText(text) || `HTTP ${response.status} ${response.statusText}`.trim();
      // An overload reported under another status is retried too, but never 400/401/403/404.
      const overloaded = ![400, 401, 403, 404].includes(response.status) && /overload/i.test(detail);
      throw new AttemptError(detail, {
        status: response.status,
        retryable: isRetryableStatus(response.status) || overloaded,
        ...retryAfter(response.headers),
      });
    }
    const type = response.headers.get("content-type") ?? "";
    const mediaType = type.split(";")[0]!.trim().toLowerCase();
    if (mediaType !== "text/event-stream") {
      if (mediaType !== "" && mediaType !== "application/json" && !mediaType.endsWith("+json")) {
        // An HTML page from a proxy, a file download…: never read (it may not end).
        throw new AttemptError(
          `unexpected content type "${type}" (HTTP ${response.status}; expected text/event-stream or application/json); the body was not read: check the base URL`,
          { retryable: false },
        );
      }
      const text = await readBody(response.body, {
        maxBytes,
        what: `the response body (${type || "no content type"})`,
      });
      body = null;
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw new AttemptError(`invalid response body (${type || "no content type"}): ${clip(text, 200)}`, {
          retryable: false,
        });
      }
      return handlers.json(json);
    }
    if (response.body === null) throw new AttemptError("empty response body", { retryable: true });
    const stream = response.body;
    arm();
    const result = await handlers.events(
      rearmEach(readSse(stream, controller.signal, { maxEventBytes: maxBytes }), arm),
    );
    return result;
  } catch (error) {
    if (error instanceof BodyLimitError) throw new AttemptError(error.message, { retryable: false });
    if (timedOut && !(outer?.aborted ?? false)) {
      throw new AttemptError(`timed out after ${request.timeoutMs} ms without data`, { retryable: true, cause: error });
    }
    if (outer?.aborted ?? false) throw error;
    throw redactAttempt(error, headerSecrets(request.headers, false));
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener("abort", onAbort);
    if (body !== null && !body.locked) await body.cancel().catch(() => {});
  }
}

/** Passes `events` through, calling `arm` before each one is handed on (the idle deadline). */
async function* rearmEach(events: AsyncIterable<SseEvent>, arm: () => void): AsyncGenerator<SseEvent> {
  for await (const event of events) {
    arm();
    yield event;
  }
}

/** `error` as an {@link AttemptError} whose text holds none of `secrets`; a non-attempt error is a retryable connection error. */
function redactAttempt(error: unknown, secrets: string[]): AttemptError {
  if (error instanceof AttemptError) {
    const detail = redact(error.detail, secrets);
    if (detail === error.detail) return error;
    return new AttemptError(detail, {
      retryable: error.retryable,
      ...(error.status === undefined ? {} : { status: error.status }),
      ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
    });
  }
  return new AttemptError(`connection error: ${redact(describeError(error), secrets)}`, { retryable: true });
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  const inner = cause instanceof Error && cause.message && cause.message !== error.message ? ` (${cause.message})` : "";
  return `${error.message}${inner}`;
}

function retryAfter(headers: Headers): { retryAfterMs?: number } {
  const ms = parseRetryAfter(headers);
  return ms === undefined ? {} : { retryAfterMs: ms };
}

/**
 * The provider's error text from an error body: `type: message` from
 * `{"error": {"type", "message"}}` (both APIs use this shape), else the raw text clipped.
 */
export function providerErrorText(raw: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return clip(raw.trim(), 500);
  }
  return errorObjectText(parsed) ?? clip(raw.trim(), 500);
}

/** `type: message` of an `{error: {type, message}}` object (or a bare `{type, message}`), if any. */
export function errorObjectText(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const error = (value as { error?: unknown }).error ?? value;
  if (typeof error === "string") return error;
  if (typeof error !== "object" || error === null) return undefined;
  const { type, message, code } = error as { type?: unknown; message?: unknown; code?: unknown };
  const kind = typeof type === "string" && type !== "" ? type : typeof code === "string" ? code : undefined;
  if (typeof message !== "string") return kind;
  return kind === undefined ? message : `${kind}: ${message}`;
}

/** Cuts `text` to `max` characters with an ellipsis. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/**
 * Parses a tool call's JSON arguments into an object: empty, `null` → `{}`.
 * @returns `{ok: false}` for invalid JSON or a non-object value
 */
export function parseArguments(
  raw: string,
): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  if (raw.trim() === "") return { ok: true, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
  if (value === null) return { ok: true, value: {} };
  if (typeof value !== "object" || Array.isArray(value)) return { ok: false, error: "arguments are not a JSON object" };
  return { ok: true, value: value as Record<string, unknown> };
}

/** A tool result as plain text: text blocks joined with `\n`, images as a marker. */
export function resultText(content: readonly ResultBlock[]): string {
  const parts = content.map((b) => b.type === "text" ? b.text : imageMarker(b.mimeType, b.data));
  const text = parts.filter((p) => p.trim() !== "").join("\n");
  return text === "" ? "(no output)" : text;
}

/** Emits a non-streamed response's whole text through `onTextDelta`, then returns it. */
export function withText<T extends { text: string }>(response: T, onTextDelta?: (text: string) => void): T {
  if (response.text !== "") onTextDelta?.(response.text);
  return response;
}
