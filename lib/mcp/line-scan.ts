/**
 * Finds the top-level `id` and `method` of a JSON-RPC message while its bytes stream past,
 * without holding the message: used on a stdio line that is too long to keep
 * (`SPROUT_AGENT_MAX_LINE_BYTES`), so that the request it answers can fail at once instead of
 * waiting for its timeout. SPEC section 10.
 * @module
 */

import type { JsonRpcId } from "./jsonrpc.ts";

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
/** Longest `id` value kept, in bytes; a longer one is not an id we sent. */
const MAX_ID_BYTES = 128;
const decoder = new TextDecoder();

/**
 * A byte-level scanner of one JSON object: it tracks strings, escapes and nesting depth, and
 * remembers the value of the top-level key `id` (a number or a string) and whether there is
 * a top-level key `method` (a request) or `result`/`error` (a response). Keys and values nested deeper (inside `result`) never count, and
 * neither do quotes inside strings, so a tool's text cannot pose as the id. Memory use is
 * constant whatever the line's size. Multi-byte UTF-8 characters need no care: all their
 * bytes are ≥ 0x80 and never look like JSON punctuation.
 * @example
 * const scan = new JsonIdScanner();
 * scan.push(new TextEncoder().encode('{"jsonrpc":"2.0","result":{"id":9},"id":4}'));
 * scan.id // 4
 */
export class JsonIdScanner {
  /** The top-level `id` once its value has been read whole. */
  id: JsonRpcId | undefined;
  /** True once a top-level `method` key was seen (a request or a notification). */
  hasMethod = false;
  /** True once a top-level `result` or `error` key was seen (a response). */
  hasResult = false;
  #depth = 0;
  #inString = false;
  #escape = false;
  /** Where we are inside the top-level object. */
  #state: "key" | "in-key" | "colon" | "value" = "key";
  #key: number[] = [];
  #lastKey = "";
  /** Bytes of the top-level `id` value being read, or undefined when not reading it. */
  #idBytes: number[] | undefined;

  /** Feeds the next bytes of the line (`start` to `end`, default the whole array). */
  push(bytes: Uint8Array, start = 0, end = bytes.length): void {
    for (let i = start; i < end; i++) this.#byte(bytes[i]!);
  }

  #byte(b: number): void {
    const top = this.#depth === 1;
    if (this.#inString) {
      if (top && this.#state === "in-key" && this.#key.length < 16) this.#key.push(b);
      if (top && this.#idBytes !== undefined) this.#keepId(b);
      if (this.#escape) this.#escape = false;
      else if (b === BACKSLASH) this.#escape = true;
      else if (b === QUOTE) {
        this.#inString = false;
        if (top && this.#state === "in-key") {
          this.#lastKey = decoder.decode(new Uint8Array(this.#key.slice(0, -1)));
          this.#state = "colon";
        }
      }
      return;
    }
    switch (b) {
      case QUOTE:
        this.#inString = true;
        if (top && this.#state === "key") {
          this.#state = "in-key";
          this.#key = [];
        } else if (top && this.#idBytes !== undefined) this.#keepId(b);
        return;
      case OPEN_BRACE:
      case OPEN_BRACKET:
        if (top) this.#idBytes = undefined; // an object or array is no id
        this.#depth++;
        if (this.#depth === 1) this.#state = "key";
        return;
      case CLOSE_BRACE:
      case CLOSE_BRACKET:
        if (top) this.#endValue();
        this.#depth--;
        return;
      case COMMA:
        if (top) {
          this.#endValue();
          this.#state = "key";
        }
        return;
      case COLON:
        if (top && this.#state === "colon") {
          this.#state = "value";
          if (this.#lastKey === "id") this.#idBytes = [];
          if (this.#lastKey === "method") this.hasMethod = true;
          if (this.#lastKey === "result" || this.#lastKey === "error") this.hasResult = true;
        }
        return;
      default:
        if (top && this.#idBytes !== undefined) this.#keepId(b);
    }
  }

  #keepId(b: number): void {
    if (this.#idBytes === undefined) return;
    if (this.#idBytes.length >= MAX_ID_BYTES) this.#idBytes = undefined;
    else this.#idBytes.push(b);
  }

  #endValue(): void {
    const bytes = this.#idBytes;
    this.#idBytes = undefined;
    if (bytes === undefined || this.id !== undefined) return;
    try {
      const value: unknown = JSON.parse(decoder.decode(new Uint8Array(bytes)));
      if (typeof value === "number" || typeof value === "string") this.id = value;
    } catch {
      // not a JSON value: no id
    }
  }
}
