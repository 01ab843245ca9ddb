/**
 * Bounded reading of HTTP response bodies, shared by the LLM wire clients (`../llm/http.ts`) and the
 * MCP Streamable HTTP client (`../mcp/http.ts`): a JSON body is read up to a total cap and
 * cancelled (`reader.cancel()`, which closes the socket) the moment it goes over; an error
 * body is read up to a small cap and cut there. SSE streams are long-lived, so they are
 * capped per event instead (`sse.ts`).
 * @module
 */

/**
 * Default cap of one JSON body and of one SSE event, in bytes: the default of
 * `SPROUT_AGENT_MAX_LINE_BYTES` (SPEC section 9), the largest JSON-RPC message the agent
 * accepts from a stdio server (MCP answers follow that variable; LLM answers use this cap).
 */
export const MAX_BODY_BYTES = 4_194_304;
/** How much of an error body (a non-2xx answer) is read, in bytes; the rest is cancelled unread. */
export const MAX_ERROR_BODY_BYTES = 65_536;

/**
 * A body (or one SSE event) went over its cap: reading stopped and the body was cancelled.
 * `limit` is the cap in bytes; `what` names what was too large (`"the JSON body"`, `"an SSE event"`).
 */
export class BodyLimitError extends Error {
  /** The cap that was exceeded, in bytes. */
  readonly limit: number;
  /** What went over it, as the message names it. */
  readonly what: string;
  /** `what` names the body or event; `limit` is the cap in bytes, set by `setting` (a variable name) if any. */
  constructor(what: string, limit: number, setting?: string) {
    super(
      `${what} is larger than ${limit} bytes${setting === undefined ? "" : ` (${setting})`}; the rest was not read`,
    );
    this.name = "BodyLimitError";
    this.what = what;
    this.limit = limit;
  }
}

/** Options of {@link readBody}. */
export interface ReadBodyOptions {
  /** Largest body read, in bytes. */
  maxBytes: number;
  /** Past `maxBytes`: `true` returns the text so far (cut on a character boundary), `false` (default) throws. */
  truncate?: boolean;
  /** Names the body in the {@link BodyLimitError}; default `"the JSON body"`. */
  what?: string;
  /** The variable that sets `maxBytes`, named in the {@link BodyLimitError} (`SPROUT_AGENT_MAX_LINE_BYTES`). */
  setting?: string;
}

/**
 * Reads a body as UTF-8 text, at most `maxBytes`; the body is cancelled as soon as it goes
 * over (and on any failure), so an endless body costs at most `maxBytes` plus what the
 * transport had buffered. A `null` body is `""`.
 * @throws {BodyLimitError} past `maxBytes` unless `truncate`; the stream's own errors
 * @example
 * const text = await readBody(response.body, { maxBytes: MAX_BODY_BYTES });
 */
export async function readBody(body: ReadableStream<Uint8Array> | null, options: ReadBodyOptions): Promise<string> {
  if (body === null) return "";
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parts: string[] = [];
  let bytes = 0;
  let done = false;
  try {
    while (true) {
      const chunk = await reader.read();
      if (chunk.done) {
        done = true;
        break;
      }
      const value = chunk.value;
      if (bytes + value.length > options.maxBytes) {
        if (options.truncate !== true) {
          throw new BodyLimitError(options.what ?? "the JSON body", options.maxBytes, options.setting);
        }
        parts.push(decoder.decode(value.subarray(0, options.maxBytes - bytes), { stream: true }));
        break;
      }
      bytes += value.length;
      parts.push(decoder.decode(value, { stream: true }));
    }
    // A truncated body drops a character cut in half rather than show U+FFFD.
    if (done) parts.push(decoder.decode());
    return parts.join("");
  } finally {
    if (!done) void reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}
