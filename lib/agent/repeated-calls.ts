/**
 * The session's bound on repeated identical tool calls (SPEC section 8.6,
 * `SPROUT_AGENT_MAX_REPEATED_CALLS`). A call is identical to an earlier one when it has the
 * same qualified name, the same arguments as canonical JSON (object keys sorted, at every
 * depth) and the same result (`isError` and content). The counts live in the session, never in
 * the history, so a loop that goes on across compactions is still counted.
 * @module
 */

import type { ResultBlock } from "../conversation/types.ts";

/**
 * JSON with every object's keys sorted, at every depth: two argument objects that differ only
 * in key order give the same text.
 * @example canonicalJson({ b: 1, a: [{ d: 2, c: 3 }] }) // '{"a":[{"c":3,"d":2}],"b":1}'
 */
export function canonicalJson(value: unknown): string {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (typeof v !== "object" || v === null) return v;
    const o = v as Record<string, unknown>;
    return Object.fromEntries(Object.keys(o).sort().map((k) => [k, sort(o[k])]));
  };
  return JSON.stringify(sort(value)) ?? "null";
}

/** A 53-bit hash of a string (cyrb53): results are compared by it, never kept whole. */
function hash(text: string): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/**
 * Per-session counts of identical tool calls in a row: a call whose result differs from the
 * last result of the same name and arguments starts its count again at 1 (something changed:
 * progress). Memory: one number pair per distinct name and arguments.
 * @example
 * const repeats = new RepeatedCalls();
 * repeats.record("fs__read", { path: "a" }, [{ type: "text", text: "x" }], false); // 1
 * repeats.record("fs__read", { path: "a" }, [{ type: "text", text: "x" }], false); // 2
 */
export class RepeatedCalls {
  readonly #counts = new Map<string, { result: number; count: number }>();
  #max = 0;

  /** Counts one call that ran; returns how many times in a row it was made with this result. */
  record(name: string, args: unknown, content: readonly ResultBlock[], isError: boolean): number {
    const key = `${name}\u0000${canonicalJson(args)}`;
    const result = hash(`${isError ? "E" : "R"}${JSON.stringify(content)}`);
    const last = this.#counts.get(key);
    const count = last !== undefined && last.result === result ? last.count + 1 : 1;
    this.#counts.set(key, { result, count });
    if (count > this.#max) this.#max = count;
    return count;
  }

  /** The highest count reached since the session started or was last {@link clear}ed. */
  get max(): number {
    return this.#max;
  }

  /** Forgets every count: after the bound ended a prompt, the next one starts afresh. */
  clear(): void {
    this.#counts.clear();
    this.#max = 0;
  }
}
