/**
 * The todo list itself: validation, rendering and the texts the two hooks return.
 * Pure functions; no MCP, no I/O. app.ts wires them to tools, store.ts keeps the lists.
 * @module
 */

/** One item of an agent session's todo list. */
export interface TodoItem {
  /** 1–9999, unique within the list. */
  id: number;
  /** 1–200 characters, one line, no control, bidi or zero-width characters. */
  title: string;
  /** `true` once the work is finished. */
  done: boolean;
}

/** Largest number of items a list may hold. */
export const MAX_ITEMS = 50;
/** Largest allowed item id (ids start at 1). */
export const MAX_ID = 9999;
/** Longest allowed title, in characters (Unicode code points). */
export const MAX_TITLE_CHARS = 200;

/**
 * Characters that can make a title lie about itself when it is shown to the LLM or to a human:
 * C0/C1 controls (newlines included: a title is one line), bidi embeddings, overrides and
 * isolates, zero-width characters, the word joiner and the BOM.
 */
// deno-lint-ignore no-control-regex
const SPOOFING_CHARS = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/u;

/** The result of {@link validateTodos}: the clean list, or what is wrong with the input. */
export type ValidationResult = { ok: true; items: TodoItem[] } | { ok: false; error: string };

/**
 * Checks a replacement list as the `todo` tool receives it and returns it normalised
 * (titles trimmed, `done` defaulted to `false`), or the first problem found, worded for the LLM.
 * Accepts `unknown` so that it holds on its own, whatever the schema layer let through.
 * @example
 * validateTodos([{ id: 1, title: "Write the test" }]) // {ok: true, items: [{id: 1, title: "Write the test", done: false}]}
 */
export function validateTodos(input: unknown): ValidationResult {
  if (!Array.isArray(input)) return { ok: false, error: "todos must be an array of {id, title, done?}" };
  if (input.length > MAX_ITEMS) return { ok: false, error: `too many items: ${input.length} (max ${MAX_ITEMS})` };
  const items: TodoItem[] = [];
  const seen = new Set<number>();
  for (const [index, raw] of input.entries()) {
    const where = `item ${index + 1}`;
    if (typeof raw !== "object" || raw === null) {
      return { ok: false, error: `${where}: must be an object {id, title, done?}` };
    }
    const { id, title, done } = raw as { id?: unknown; title?: unknown; done?: unknown };
    if (typeof id !== "number" || !Number.isInteger(id) || id < 1 || id > MAX_ID) {
      return { ok: false, error: `${where}: id must be a whole number from 1 to ${MAX_ID}, got ${JSON.stringify(id)}` };
    }
    if (seen.has(id)) return { ok: false, error: `duplicate id ${id}` };
    seen.add(id);
    if (typeof title !== "string") return { ok: false, error: `item ${id}: title must be a string` };
    const trimmed = title.trim();
    if (trimmed === "") return { ok: false, error: `item ${id}: title is empty` };
    if ([...trimmed].length > MAX_TITLE_CHARS) {
      return { ok: false, error: `item ${id}: title exceeds ${MAX_TITLE_CHARS} characters` };
    }
    if (SPOOFING_CHARS.test(trimmed)) {
      return { ok: false, error: `item ${id}: title contains a control, bidi or zero-width character` };
    }
    if (done !== undefined && typeof done !== "boolean") {
      return { ok: false, error: `item ${id}: done must be true or false` };
    }
    items.push({ id, title: trimmed, done: done ?? false });
  }
  return { ok: true, items };
}

/**
 * Renders the list, one line per item: `[x] 1. title` or `[ ] 2. title`, the first open item
 * marked `  ← next`. An empty list renders as `(todo list is empty)`.
 */
export function renderTodos(items: readonly TodoItem[]): string {
  if (items.length === 0) return "(todo list is empty)";
  const next = items.find((item) => !item.done);
  return items
    .map((item) => `${item.done ? "[x]" : "[ ]"} ${item.id}. ${item.title}${item === next ? "  ← next" : ""}`)
    .join("\n");
}

/**
 * The warning for open items that a replacement dropped without marking them done, or `""`.
 * An item counts as kept when its id is still in the new list.
 */
export function removalWarning(before: readonly TodoItem[], after: readonly TodoItem[]): string {
  const kept = new Set(after.map((item) => item.id));
  const dropped = before.filter((item) => !item.done && !kept.has(item.id));
  if (dropped.length === 0) return "";
  const names = dropped.map((item) => `${item.id}. ${item.title}`).join("; ");
  const count = dropped.length === 1 ? "1 open item was" : `${dropped.length} open items were`;
  return `⚠️ ${count} removed from the list without being marked done: ${names}`;
}

/**
 * The `_Stop` text: an objection while any item is open, else `""` (the empty string is how a
 * hook says "no objection": the agent drops blank hook output and lets the turn end).
 */
export function stopText(items: readonly TodoItem[]): string {
  if (!items.some((item) => !item.done)) return "";
  return `You have open todo items. Keep working.\n\n${renderTodos(items)}`;
}

/** The `_PostCompact` text: the list under a heading while it is not empty, else `""`. */
export function postCompactText(items: readonly TodoItem[]): string {
  return items.length === 0 ? "" : `# Todo List\n${renderTodos(items)}`;
}

/**
 * The `_SessionStart` text: a session that starts with open items (its id was seen before, by a
 * server that outlived the last agent) gets its list back; else `""`.
 */
export function sessionStartText(items: readonly TodoItem[]): string {
  if (!items.some((item) => !item.done)) return "";
  return `# Todo List (restored from an earlier run of this session)\n${renderTodos(items)}`;
}

/** The `_SessionEnd` text, only logged by the agent: what was left open, or `""`. */
export function sessionEndText(items: readonly TodoItem[]): string {
  const open = items.filter((item) => !item.done);
  if (open.length === 0) return "";
  const count = open.length === 1 ? "1 todo item" : `${open.length} todo items`;
  return `${count} left open: ${open.map((item) => `${item.id}. ${item.title}`).join("; ")}`;
}
