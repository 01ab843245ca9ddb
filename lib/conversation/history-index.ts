/**
 * What the loop needs to know about a history every round, kept incrementally: its size in
 * bytes (SPEC section 8.1: the UTF-8 length of `JSON.stringify(history)`) and the tool-call ids
 * it holds (SPEC section 2.2). Measuring the whole history again each round made a round's
 * cost grow with the history, and a prompt's with the square of its rounds (issue 11).
 *
 * Each history array gets one {@link HistoryIndex}, found through {@link historyIndex}. The
 * index remembers which item objects it has counted, in order. When the array still holds
 * them where they were (its first, middle and last counted items are the same objects, and it
 * is no shorter), only the items after them are counted: the cost of a round does not depend
 * on the history's length. Otherwise, and whenever a full check is asked for (the loop asks at
 * the start of each prompt, so changes an embedder makes to `AgentSession.history` between
 * prompts are always seen), the index compares every item by identity, forgets the tail from
 * the first item that differs (an item replaced or removed, the array spliced by a compaction
 * or cut by a refusal), and counts the items after it. Each item object is serialised once,
 * whatever the arrays it is in: items are plain data that is never changed in place (the loop
 * and the compaction replace items, never edit them; an embedder must do the same).
 * @module
 */

import type { HistoryItem } from "./types.ts";
import { byteLength } from "../util/utf8.ts";

/** UTF-8 bytes of `JSON.stringify(item)` per item object; items are never changed in place. */
const itemSizes = new WeakMap<object, number>();

/**
 * The UTF-8 length of `JSON.stringify(item)` as an element of an array (`null` for a value
 * JSON has no text for), measured once per item object.
 * @returns the bytes, and whether they were measured now (not known before)
 */
function itemBytes(item: unknown): { bytes: number; fresh: boolean } {
  const cacheable = typeof item === "object" && item !== null;
  if (cacheable) {
    const known = itemSizes.get(item);
    if (known !== undefined) return { bytes: known, fresh: false };
  }
  const bytes = byteLength(JSON.stringify(item) ?? "null");
  if (cacheable) itemSizes.set(item, bytes);
  return { bytes, fresh: true };
}

/**
 * The UTF-8 length of `JSON.stringify(item)` for one history item, measured once per item
 * object (SPEC section 8.1).
 * @example historyItemBytes({ role: "user", text: "hi" }) // 28
 */
export function historyItemBytes(item: HistoryItem): number {
  return itemBytes(item).bytes;
}

/** The tool-call ids one item holds: its calls' ids (assistant) or the id it answers (tool). */
function idsOf(item: HistoryItem | undefined): string[] {
  if (typeof item !== "object" || item === null) return [];
  if (item.role === "assistant" && Array.isArray(item.toolCalls)) return item.toolCalls.map((c) => c?.id);
  if (item.role === "tool") return [item.toolCallId];
  return [];
}

/**
 * The size and the tool-call ids of one history array, brought up to date by
 * {@link HistoryIndex.sync}. Get it with {@link historyIndex}.
 */
export class HistoryIndex {
  /** The item objects counted, in order. */
  readonly #items: (HistoryItem | undefined)[] = [];
  /** Their sizes, in the same order. */
  readonly #sizes: number[] = [];
  #itemBytes = 0;
  /** How many times each id occurs (a call and its result share one). */
  readonly #ids = new Map<unknown, number>();
  #serialised = 0;

  /**
   * Items this index serialised because no index had measured them yet: after the first
   * count each round adds only the new items, whatever the history's length.
   */
  get serialised(): number {
    return this.#serialised;
  }

  /**
   * Brings the index up to date with `history`: items from the first one that differs (by
   * identity) from what was counted are counted again, the rest are kept.
   * @param full compare every counted item, not only the first, middle and last ones
   * @returns this index
   */
  sync(history: readonly HistoryItem[], full = false): this {
    const items = this.#items;
    const n = history.length;
    let same = items.length;
    const last = same - 1;
    const mid = last >> 1;
    const grown = n >= same &&
      (same === 0 || (history[0] === items[0] && history[mid] === items[mid] && history[last] === items[last]));
    if (full || !grown) {
      same = 0;
      const limit = Math.min(n, items.length);
      while (same < limit && history[same] === items[same]) same++;
    }
    while (items.length > same) {
      const item = items.pop();
      this.#itemBytes -= this.#sizes.pop() ?? 0;
      for (const id of idsOf(item)) {
        const count = (this.#ids.get(id) ?? 0) - 1;
        if (count > 0) this.#ids.set(id, count);
        else this.#ids.delete(id);
      }
    }
    for (let i = same; i < n; i++) {
      const item = history[i];
      const { bytes, fresh } = itemBytes(item);
      if (fresh) this.#serialised++;
      items.push(item);
      this.#sizes.push(bytes);
      this.#itemBytes += bytes;
      for (const id of idsOf(item)) this.#ids.set(id, (this.#ids.get(id) ?? 0) + 1);
    }
    return this;
  }

  /**
   * The UTF-8 length of `JSON.stringify(history)` at the last {@link sync}: `[`, the items
   * separated by commas, `]`.
   */
  get bytes(): number {
    return 2 + this.#itemBytes + Math.max(0, this.#items.length - 1);
  }

  /** True when a tool call or a tool result of the history (at the last {@link sync}) has `id`. */
  has(id: string): boolean {
    return this.#ids.has(id);
  }
}

const indexes = new WeakMap<readonly HistoryItem[], HistoryIndex>();

/**
 * The {@link HistoryIndex} of a history array, up to date with its contents: created at the
 * first call (which counts every item), then kept with the array.
 * @param options.full compare every item by identity (see {@link HistoryIndex.sync}); default
 *   only the first, middle and last items counted before
 * @example historyIndex(session.history).bytes // === byteLength(JSON.stringify(session.history))
 */
export function historyIndex(history: readonly HistoryItem[], options: { full?: boolean } = {}): HistoryIndex {
  let index = indexes.get(history);
  if (index === undefined) {
    index = new HistoryIndex();
    indexes.set(history, index);
  }
  return index.sync(history, options.full === true);
}
