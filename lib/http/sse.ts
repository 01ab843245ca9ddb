/**
 * A Server-Sent Events parser (the WHATWG HTML "event stream" algorithm), shared by the LLM
 * wire clients and the MCP Streamable HTTP client. Correct for any chunking: lines split on
 * CRLF, LF or CR (a CR at a chunk's end waits for the next chunk), a leading BOM is dropped,
 * and multi-byte characters split across chunks are decoded whole. Each event is capped
 * (`maxEventBytes`), since a stream itself may rightly last for hours.
 * @module
 */

import { BodyLimitError, MAX_BODY_BYTES } from "./body.ts";

/** One dispatched event. `event` defaults to `"message"`. */
export interface SseEvent {
  /** The `event:` field's value, or `"message"` when the event had none (or an empty one). */
  event: string;
  /**
   * The event's `data:` lines joined with `\n` (one leading space of each value dropped).
   * An event without any `data:` line is never dispatched, so this is `""` only for an event
   * whose single `data:` line was empty.
   */
  data: string;
  /** The last event id seen (sticky, per the spec), or `""`. */
  id: string;
  /** A `retry:` field in this event, in milliseconds. */
  retry?: number;
}

/** Options of {@link SseParser} and {@link readSse}. */
export interface SseOptions {
  /**
   * Largest event accepted (its unfinished line plus its `data:` lines so far), in UTF-16
   * code units, which never exceed its bytes; default {@link MAX_BODY_BYTES}. An SSE stream
   * is long-lived, so it is this cap, not a total one, that bounds what an endless line or
   * an endless event costs.
   */
  maxEventBytes?: number;
  /** The variable that sets `maxEventBytes`, named in the {@link BodyLimitError}. */
  setting?: string;
}

/**
 * Incremental parser: feed decoded text, get whole events back.
 * @throws {BodyLimitError} from {@link SseParser.push} when an event grows past `maxEventBytes`
 * @example
 * const p = new SseParser();
 * p.push("data: a\r\n"); p.push("\r\n"); // → [{event: "message", data: "a", id: ""}]
 */
export class SseParser {
  #max: number;
  #setting: string | undefined;
  #buffer = "";
  #data: string[] = [];
  #dataLength = 0;
  #event = "";
  #id = "";
  #retry: number | undefined;
  #started = false;
  #pendingCr = false;

  /** An event may hold `options.maxEventBytes` (default {@link MAX_BODY_BYTES}). */
  constructor(options: SseOptions = {}) {
    this.#max = options.maxEventBytes ?? MAX_BODY_BYTES;
    this.#setting = options.setting;
  }

  /** Feeds text and returns the events it completes. */
  push(text: string): SseEvent[] {
    // An empty chunk (a decoder holding half a character) must not clear a pending CR.
    if (text.length === 0) return [];
    if (!this.#started) {
      this.#started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.#pendingCr && text.startsWith("\n")) text = text.slice(1);
    this.#pendingCr = false;
    // What is left of the buffer holds no line break: scan only the new text (a long line
    // arriving in many chunks stays linear).
    const scanned = this.#buffer.length;
    this.#buffer += text;
    const out: SseEvent[] = [];
    let start = 0;
    for (let i = scanned; i < this.#buffer.length; i++) {
      const c = this.#buffer.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const line = this.#buffer.slice(start, i);
      if (c === 13) {
        if (i + 1 === this.#buffer.length) this.#pendingCr = true;
        else if (this.#buffer.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
      const event = this.#line(line);
      if (event) out.push(event);
    }
    this.#buffer = this.#buffer.slice(start);
    if (this.#buffer.length + this.#dataLength > this.#max) {
      throw new BodyLimitError("an SSE event", this.#max, this.#setting);
    }
    return out;
  }

  /** Ends the stream: an unterminated last event is discarded, as the spec says. */
  end(): SseEvent[] {
    this.#buffer = "";
    this.#data = [];
    this.#dataLength = 0;
    this.#event = "";
    return [];
  }

  #line(line: string): SseEvent | undefined {
    if (line === "") {
      if (this.#data.length === 0) {
        this.#event = "";
        this.#retry = undefined;
        return undefined;
      }
      const event: SseEvent = { event: this.#event || "message", data: this.#data.join("\n"), id: this.#id };
      if (this.#retry !== undefined) event.retry = this.#retry;
      this.#data = [];
      this.#dataLength = 0;
      this.#event = "";
      this.#retry = undefined;
      return event;
    }
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") {
      this.#data.push(value);
      this.#dataLength += value.length + 1;
      if (this.#dataLength > this.#max) throw new BodyLimitError("an SSE event", this.#max, this.#setting);
    } else if (field === "event") this.#event = value;
    else if (field === "id") {
      if (!value.includes("\0")) this.#id = value;
    } else if (field === "retry" && /^\d+$/.test(value)) this.#retry = Number(value);
    return undefined;
  }
}

/**
 * Reads a byte stream (a `fetch` body) as SSE events, decoding UTF-8 as a stream.
 * When `signal` aborts, the reader is cancelled and the generator throws the abort reason
 * (also when the abort lands during a read). A consumer that breaks early cancels the body.
 * @throws {BodyLimitError} when an event grows past `options.maxEventBytes` (the body is
 *   cancelled first)
 */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
  signal?: AbortSignal,
  options: SseOptions = {},
): AsyncGenerator<SseEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8");
  const parser = new SseParser(options);
  const onAbort = () => void reader.cancel().catch(() => {});
  signal?.addEventListener("abort", onAbort, { once: true });
  let finished = false;
  try {
    while (true) {
      if (signal?.aborted) throw signal.reason ?? new DOMException("aborted", "AbortError");
      const { done, value } = await reader.read();
      if (done) break;
      for (const event of parser.push(decoder.decode(value, { stream: true }))) yield event;
    }
    finished = true;
    if (signal?.aborted) throw signal.reason ?? new DOMException("aborted", "AbortError");
    for (const event of parser.push(decoder.decode())) yield event;
    parser.end();
  } finally {
    signal?.removeEventListener("abort", onAbort);
    // A consumer that stops early (break) or an oversize event must not leave the HTTP body open.
    if (!finished) void reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}
