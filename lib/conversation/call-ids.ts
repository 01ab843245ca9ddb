/**
 * The tool-call ids the agent mints itself: hook injections (SPEC section 7), fresh ids for
 * calls whose provider id cannot enter history, ids for calls that came without one. Each is
 * exactly 9 ASCII letters and digits, the strictest rule a served model enforces: the
 * Mistral-family chat templates refuse any other id ("Tool call IDs should be alphanumeric
 * strings with length 9!"), and so does the Mistral API and vLLM's mistral tokenizer mode
 * ("Tool call id was … but must be a-z, A-Z, 0-9, with a length of 9."). Every other API
 * accepts such an id too (OpenAI: at most 40 characters; Anthropic: `[a-zA-Z0-9_-]+`).
 * @module
 */

import type { HistoryItem } from "./types.ts";

/** The form of every id the agent mints: 9 characters of `[a-zA-Z0-9]`. */
export const MINTED_ID_PATTERN: RegExp = /^[a-zA-Z0-9]{9}$/;

const DIGITS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/**
 * A readable numbered id: `prefix` (4 letters, `hook` or `call`) then `n` in base 62,
 * zero-padded to 9 characters in all (`hook00001`, `call0000a`). `n` wraps at 62^5 (916
 * million); callers that need uniqueness check the history (see {@link unusedId}).
 * @throws {RangeError} when `prefix` is not 4 ASCII letters or digits
 * @example numberedCallId("hook", 63) // "hook00011"
 */
export function numberedCallId(prefix: string, n: number): string {
  if (!/^[a-zA-Z0-9]{4}$/.test(prefix)) {
    throw new RangeError(`Cannot mint a tool-call id: prefix ${JSON.stringify(prefix)} is not 4 letters or digits`);
  }
  let rest = Math.abs(Math.trunc(n)) % 62 ** 5;
  let digits = "";
  for (let i = 0; i < 5; i++) {
    digits = DIGITS[rest % 62] + digits;
    rest = Math.floor(rest / 62);
  }
  return prefix + digits;
}

/**
 * 9 random characters of `[a-zA-Z0-9]` (53 bits of entropy), for a call that came without an
 * id and has no counter at hand (the wire clients).
 * @example randomCallId() // "q3ZL0vTa9"
 */
export function randomCallId(): string {
  let id = "";
  while (id.length < 9) {
    for (const byte of crypto.getRandomValues(new Uint8Array(12))) {
      // 248 = 4 × 62: bytes above it would favour the first digits.
      if (byte < 248 && id.length < 9) id += DIGITS[byte % 62];
    }
  }
  return id;
}

/**
 * The first id `next()` returns that is not in `used`. Gives up after 1000 tries with a
 * random id, which cannot realistically collide.
 */
export function unusedId(used: { has(id: string): boolean }, next: () => string): string {
  for (let i = 0; i < 1000; i++) {
    const id = next();
    if (!used.has(id)) return id;
  }
  let id = randomCallId();
  while (used.has(id)) id = randomCallId();
  return id;
}

/** Every tool-call id in `history` (assistant calls and tool results). */
export function usedCallIds(history: Iterable<HistoryItem>): Set<string> {
  const used = new Set<string>();
  for (const item of history) {
    if (item.role === "assistant") { for (const c of item.toolCalls) used.add(c.id); }
    else if (item.role === "tool") used.add(item.toolCallId);
  }
  return used;
}
