/**
 * Context compaction (handoff), the pure parts: the budget estimate, the threshold, the summary
 * request, the fresh context and the truncation fallback (SPEC section 8). No I/O: the loop
 * (`lib/agent/loop.ts`) sends the summary request, calls `_PostCompact` and emits the event.
 *
 * @example
 * const baseline = new UsageBaseline();
 * const threshold = tokenThreshold(config.maxContextTokens, config.maxOutputTokens);
 * if (shouldCompact(baseline.estimate(history), threshold)) {
 *   const { system, prompt, maxOutputTokens } = buildSummaryRequest({ originalTask, history, toolNames,
 *     ctx: config.maxContextTokens, handoffNumber: handoffs + 1, maxOutputTokens: config.maxOutputTokens });
 *   // … ask the model; on success: history = freshContext({ summary, currentPrompt, postCompact });
 *   // on failure: history = truncateHistory(history, threshold).history;
 * }
 * @module
 */

import { historyIndex, historyItemBytes } from "../conversation/history-index.ts";
import { imageMarker } from "../conversation/results.ts";
import type { HistoryItem, ResultBlock, ToolDef } from "../conversation/types.ts";
import { byteLength, clampUtf8 } from "../util/utf8.ts";

/** Upper limit of the summary's output tokens (SPEC section 8.2). */
export const SUMMARY_MAX_OUTPUT_TOKENS = 8192;
/** The session's first prompt is clamped to this many UTF-8 bytes in the summary input. */
export const SUMMARY_TASK_MAX_BYTES = 16 * 1024;
/** At most this many tool names are listed in the summary input. */
export const SUMMARY_MAX_TOOL_NAMES = 20;
/** Each flattened history item is clamped to this many UTF-8 bytes in the summary input. */
export const SUMMARY_SNIPPET_MAX_BYTES = 2048;
/** The summary input never exceeds this many UTF-8 bytes (nor `ctx / 4`). */
export const SUMMARY_PROMPT_MAX_BYTES = 32 * 1024;
/** The first line of the user item that carries a summary in a fresh context (SPEC section 8.3). */
export const HANDOFF_PREFIX = "[Context Handoff]\n";

const ELLIPSIS = "…";

/**
 * The estimate at which the context is compacted: `min(floor(ctx / 4) * 3, ctx - out)`, in
 * tokens, never below 0 (SPEC section 8.1; integer math: `ctx / 4` is rounded down first).
 * @param ctx the context window in tokens (`SPROUT_AGENT_MAX_CONTEXT_TOKENS`)
 * @param out the output limit in tokens (`SPROUT_AGENT_MAX_OUTPUT_TOKENS`)
 * @example tokenThreshold(128000, 32768) // 95232
 */
export function tokenThreshold(ctx: number, out: number): number {
  const c = Math.max(0, Math.floor(ctx));
  const o = Math.max(0, Math.floor(out));
  return Math.max(0, Math.min(Math.floor(c / 4) * 3, c - o));
}

/**
 * The largest estimate a request may have to be sent: the window less the output tokens, so
 * that the input and the answer it asks for fit the window (SPEC section 8.6). A request over
 * the threshold but not over this is still sent; one over this never is.
 * @param ctx the context window in tokens (`SPROUT_AGENT_MAX_CONTEXT_TOKENS`)
 * @param out the output limit in tokens (`SPROUT_AGENT_MAX_OUTPUT_TOKENS`)
 * @example windowLimit(128000, 32768) // 95232
 */
export function windowLimit(ctx: number, out: number): number {
  return Math.max(0, Math.floor(ctx) - Math.max(0, Math.floor(out)));
}

/**
 * Size of a history in bytes: the UTF-8 length of `JSON.stringify(history)` (SPEC section 8.1;
 * 1 byte counts as 1 token). The tools and the system prompt are not included: see
 * {@link requestOverheadBytes}. Kept incrementally per history array (`lib/conversation/history-index.ts`):
 * only items not measured before are serialised, so measuring a growing history each round
 * costs the same at round 1000 as at round 1. Items must not be changed in place.
 * @example historyBytes([{ role: "user", text: "hi" }]) // 30
 */
export function historyBytes(history: readonly HistoryItem[]): number {
  return historyIndex(history).bytes;
}

/**
 * The bytes a request sends besides its history: the system prompt and the JSON of the tool
 * definitions (1 byte counts as 1 token). The estimate of SPEC section 8.1 adds them to the
 * history's bytes (issue 9): with 30 tools they outweigh a fresh history many times over, and
 * leaving them out made small budgets compact again right after each compaction. The last
 * figures are kept: tools equal to the last ones (the same definitions, or copies with the
 * same keys, names, descriptions and schema objects, as the registry lists them each round)
 * are not serialised again.
 * @param system the system prompt sent with the request (`""` when none)
 * @param tools the LLM-visible tool definitions sent with it
 * @example requestOverheadBytes("", []) // 0
 */
export function requestOverheadBytes(system: string, tools: readonly ToolDef[]): number {
  if (system !== lastSystem.text) lastSystem = { text: system, bytes: byteLength(system) };
  return lastSystem.bytes + toolsBytes(tools);
}

let lastSystem = { text: "", bytes: 0 };
/** The last tool list measured: each definition's own keys and values, in order, and its bytes. */
let lastTools: { entries: unknown[][]; bytes: number } | undefined;

/**
 * UTF-8 length of `JSON.stringify(tools)`, 0 for no tools. Definitions are compared one by
 * one, never the array alone, so an array changed in place is measured again; a schema object
 * changed in place is not seen (the registry builds a new one for a new list).
 */
function toolsBytes(tools: readonly ToolDef[]): number {
  if (tools.length === 0) return 0;
  if (lastTools !== undefined && sameDefinitions(lastTools.entries, tools)) return lastTools.bytes;
  const bytes = byteLength(JSON.stringify(tools));
  lastTools = { entries: tools.map((t) => Object.entries(t).flat()), bytes };
  return bytes;
}

/** True when each definition has the same own keys, in order, with identical values (`===`). */
function sameDefinitions(entries: readonly unknown[][], tools: readonly ToolDef[]): boolean {
  if (entries.length !== tools.length) return false;
  for (let i = 0; i < tools.length; i++) {
    const def = tools[i] as unknown as Record<string, unknown>;
    const known = entries[i]!;
    const keys = Object.keys(def);
    if (keys.length * 2 !== known.length) return false;
    for (let k = 0; k < keys.length; k++) {
      if (keys[k] !== known[2 * k] || def[keys[k]!] !== known[2 * k + 1]) return false;
    }
  }
  return true;
}

/**
 * The input tokens the provider reported for the last request, paired with the bytes that
 * request sent (its history's bytes plus {@link requestOverheadBytes}; SPEC section 8.1 and
 * 8.5). Record after each successful response, with the bytes measured before the reply is
 * appended; clear after a compaction. Estimates take the same measure of the next request.
 */
export class UsageBaseline {
  #inputTokens: number | undefined;
  #historyBytes = 0;

  /**
   * Records one response's usage. A response without usage (`inputTokens` undefined) keeps the
   * previous pair.
   * @param inputTokens reported input tokens (cache reads and writes included), or undefined
   * @param sentHistoryBytes the bytes that request sent: {@link historyBytes} of its history,
   *   plus {@link requestOverheadBytes} when estimates are given them too
   */
  record(inputTokens: number | undefined, sentHistoryBytes: number): void {
    if (inputTokens === undefined || !Number.isFinite(inputTokens)) return;
    this.#inputTokens = inputTokens;
    this.#historyBytes = sentHistoryBytes;
  }

  /**
   * Forgets the pair (SPEC section 8.5), so the next estimate is bytes. After a compaction the
   * loop uses {@link rebase} instead, which keeps the calibration.
   */
  clear(): void {
    this.#inputTokens = undefined;
    this.#historyBytes = 0;
  }

  /**
   * After a compaction (SPEC section 8.5): the reported pair no longer describes the history,
   * but its ratio of tokens to bytes still describes the system prompt, the tools and the kind
   * of text, so the pair is scaled to the fresh request: `currentBytes` at that ratio. Without
   * the ratio a fresh context was measured in bytes while the estimate that triggered it was in
   * reported tokens, so with a provider that packs 3–4 bytes in a token the fresh context
   * looked larger than the old one, and with large tool definitions it was over the threshold
   * again at once (issue 9). Nothing known: stays unknown.
   * @param currentBytes the bytes the next request sends
   */
  rebase(currentBytes: number): void {
    if (this.#inputTokens === undefined) return;
    this.#inputTokens = this.scale(currentBytes);
    this.#historyBytes = currentBytes;
  }

  /** True when a reported figure is held. */
  get known(): boolean {
    return this.#inputTokens !== undefined;
  }

  /**
   * Tokens for a request of `bytes` at the reported ratio of tokens to bytes (at most 1 token
   * a byte), with nothing added for growth: how a candidate fresh context is measured against
   * the estimate. Nothing known: `bytes`.
   */
  scale(bytes: number): number {
    return Math.ceil(bytes * this.ratio);
  }

  /** Reported tokens per byte of the last measured request, at most 1; 1 when nothing is known. */
  get ratio(): number {
    if (this.#inputTokens === undefined || this.#historyBytes <= 0) return 1;
    return Math.min(1, this.#inputTokens / this.#historyBytes);
  }

  /**
   * The next request's input tokens: the reported tokens plus the bytes added since (1 byte
   * counts as 1 token, an upper bound), or the bytes when nothing is known. A request smaller
   * than the one measured (it was truncated without a {@link rebase}) is {@link scale}d.
   */
  estimate(history: readonly HistoryItem[]): number {
    return this.estimateFromBytes(historyBytes(history));
  }

  /**
   * {@link estimate} for a request whose bytes are already known (in the unit given to
   * {@link record}: the loop passes history plus {@link requestOverheadBytes}).
   */
  estimateFromBytes(currentBytes: number): number {
    if (this.#inputTokens === undefined) return currentBytes;
    if (currentBytes < this.#historyBytes) return this.scale(currentBytes);
    return this.#inputTokens + (currentBytes - this.#historyBytes);
  }
}

/**
 * True when the estimate reaches the threshold (SPEC section 8.1: `estimate >= threshold`).
 * The caller also checks the per-session cap `SPROUT_AGENT_MAX_HANDOFFS` (0 disables compaction).
 */
export function shouldCompact(estimate: number, threshold: number): boolean {
  return estimate >= threshold;
}

/** The text of the last user item, or `""` when there is none. */
export function currentPromptText(history: readonly HistoryItem[]): string {
  const i = lastPromptIndex(history);
  const item = i < 0 ? undefined : history[i];
  return item?.role === "user" ? item.text : "";
}

/** What {@link buildSummaryRequest} needs. */
export interface SummaryInput {
  /** The session's first prompt; `(unknown)` when absent or blank. */
  originalTask: string | undefined;
  /** The history being compacted. */
  history: readonly HistoryItem[];
  /** LLM-visible tool names (hooks never among them), in list order. */
  toolNames: readonly string[];
  /** The context window in tokens; the input budget is `min(32 KiB, ctx / 4)` bytes. */
  ctx: number;
  /** The number shown in the first line: the count of compactions so far plus one. */
  handoffNumber: number;
  /** The configured output limit in tokens; the summary asks for at most `min(8192, this)`. */
  maxOutputTokens?: number;
  /**
   * The `_PreCompact` outputs, in the hooks' order (SPEC section 8.2): each becomes one line
   * `{"hook":"_PreCompact","server":…,"text":…}` of the prompt's guidance section, which takes
   * at most half of the input budget.
   */
  guidance?: readonly { server: string; text: string }[];
}

/** A tool-less summary request: send `prompt` as the only user message, with no tools. */
export interface SummaryRequest {
  /** The handoff system prompt. */
  system: string;
  /** The user message: task, tools, recent history as text, instructions. */
  prompt: string;
  /** The output limit for the summary request. */
  maxOutputTokens: number;
}

/**
 * Builds the summary request (SPEC section 8.2): its own system prompt and one plain-text user
 * prompt holding the first prompt (at most 16 KiB), up to 20 tool names, as much of the recent
 * history flattened to text as fits, and the instructions. The prompt stays within
 * `min(32 KiB, ctx / 4)` UTF-8 bytes unless its fixed parts alone are larger.
 */
export function buildSummaryRequest(input: SummaryInput): SummaryRequest {
  const maxOutputTokens = Math.max(
    1,
    Math.min(SUMMARY_MAX_OUTPUT_TOKENS, input.maxOutputTokens ?? SUMMARY_MAX_OUTPUT_TOKENS),
  );
  const system = "You are generating a context handoff summary for the next turn of an autonomous agent. " +
    "Be concise but thorough. Cover: what the original task was, what you accomplished, key decisions made, " +
    "what remains, and one concrete next step. Output plain text only: no tool calls, no JSON. " +
    `Stay under ${maxOutputTokens} tokens.`;
  const budget = Math.min(SUMMARY_PROMPT_MAX_BYTES, Math.max(0, Math.floor(input.ctx / 4)));

  const names = input.toolNames.slice(0, SUMMARY_MAX_TOOL_NAMES);
  const more = input.toolNames.length - names.length;
  const tools = names.length === 0 ? "(none)" : names.join(", ") + (more > 0 ? `, ${ELLIPSIS} (+${more} more)` : "");
  const head = `[Internal handoff #${input.handoffNumber} — context reset]\n\n# Original Task\n`;
  const middle = `\n\n# Available Tools\n${tools}`;
  const historyHeading = "\n\n# Recent History (most recent last)\n";
  const tail = "\n\n# Instructions\nProduce a context handoff summary covering: (1) the original task, " +
    "(2) what was done, (3) key decisions, (4) what remains, (5) one concrete next step. " +
    "Be concise but thorough. Plain text only.";
  const guidance = guidanceSection(input.guidance ?? [], Math.floor(budget / 2));
  // The previous summary and the _PostCompact context get their own section, so they never
  // fall off the oldest end of the history section (issue 23); they are left out of it.
  const { entries, skip } = handoffContext(input.history);
  const carried = carriedSection(entries, Math.floor(budget / 3));
  const rest = skip.size === 0 ? input.history : input.history.filter((_, i) => !skip.has(i));
  const fixed = head + middle + carried + historyHeading + guidance + tail;
  const omittedReserve = byteLength(`(${ELLIPSIS} ${rest.length} older items omitted)\n`);
  const available = Math.max(0, budget - byteLength(fixed) - omittedReserve);

  // The task takes at most 16 KiB, leaving the history at least half of what is available.
  const rawTask = input.originalTask?.trim() ? input.originalTask : "(unknown)";
  const wantedHistory = Math.min(Math.floor(available / 2), snippetsBytes(rest, available));
  const task = clampUtf8(rawTask, Math.min(SUMMARY_TASK_MAX_BYTES, available - wantedHistory), ELLIPSIS);
  const history = recentHistory(rest, available - byteLength(task));
  return {
    system,
    prompt: head + task + middle + carried + historyHeading + history + guidance + tail,
    maxOutputTokens,
  };
}

/** The first line of the summary prompt's carried-forward section (SPEC section 8.2). */
export const CARRIED_HEADING =
  "\n\n# Carried Forward (the previous handoff summary and the hooks' _PostCompact context: keep their conclusions)\n";

/**
 * What a fresh context carried in from the compaction before (SPEC section 8.3): each
 * `[Context Handoff]` user item, and the `_PostCompact` injection pairs right after it (an
 * assistant item with no text and one call, then that call's non-error result whose text is
 * the JSON `{"hook":"_PostCompact","server":…,"text":…}`). `skip` holds their indices.
 */
function handoffContext(history: readonly HistoryItem[]): {
  entries: { label: string; text: string }[];
  skip: Set<number>;
} {
  const entries: { label: string; text: string }[] = [];
  const skip = new Set<number>();
  for (let i = 0; i < history.length; i++) {
    const item = history[i];
    if (item?.role !== "user" || !item.text.startsWith(HANDOFF_PREFIX)) continue;
    entries.push({ label: "Previous handoff summary", text: item.text.slice(HANDOFF_PREFIX.length) });
    skip.add(i);
    for (let j = i + 1; j + 1 < history.length; j += 2) {
      const post = postCompactOf(history[j], history[j + 1]);
      if (post === undefined) break;
      entries.push({ label: `_PostCompact from ${post.server}`, text: post.text });
      skip.add(j).add(j + 1);
    }
  }
  return { entries, skip };
}

/** The server and text of a `_PostCompact` injection pair, or `undefined` when it is not one. */
function postCompactOf(
  call: HistoryItem | undefined,
  result: HistoryItem | undefined,
): { server: string; text: string } | undefined {
  if (call?.role !== "assistant" || call.text !== "" || call.toolCalls.length !== 1) return undefined;
  if (result?.role !== "tool" || result.isError || result.toolCallId !== call.toolCalls[0]!.id) return undefined;
  const block = result.content.length === 1 ? result.content[0] : undefined;
  if (block?.type !== "text") return undefined;
  try {
    const parsed = JSON.parse(block.text) as Record<string, unknown> | null;
    if (
      typeof parsed !== "object" || parsed === null || parsed["hook"] !== "_PostCompact" ||
      typeof parsed["server"] !== "string" || typeof parsed["text"] !== "string"
    ) return undefined;
    return { server: parsed["server"], text: parsed["text"] };
  } catch {
    return undefined;
  }
}

/**
 * The carried-forward section: {@link CARRIED_HEADING}, then `## label` and the text of each
 * entry, within `budget` UTF-8 bytes: shorter entries are kept whole and the longer ones share
 * what is left equally, each cut at its end with `…`; `""` when there is nothing to carry.
 */
function carriedSection(entries: readonly { label: string; text: string }[], budget: number): string {
  const kept = entries.filter((e) => e.text.trim() !== "");
  if (kept.length === 0) return "";
  const blocks = kept.map((e) => ({ head: `## ${e.label}\n`, text: e.text.trim() }));
  let left = Math.max(0, budget - byteLength(CARRIED_HEADING) + 1);
  const out = new Array<string>(blocks.length);
  const order = blocks.map((b, i) => ({ i, size: byteLength(b.head + b.text) }))
    .sort((a, b) => a.size - b.size);
  order.forEach(({ i, size }, n) => {
    const share = Math.floor(left / (order.length - n)) - 1;
    const block = blocks[i]!;
    const room = Math.min(size, share) - byteLength(block.head);
    // A share too small to say anything leaves a cut entry out.
    const whole = room >= byteLength(block.text);
    out[i] = !whole && room < 16 ? "" : block.head + clampUtf8(block.text, room, ELLIPSIS);
    left -= byteLength(out[i]!) + 1;
  });
  const text = out.filter((b) => b !== "");
  return text.length === 0 ? "" : CARRIED_HEADING + text.join("\n");
}

/** The first line of the summary prompt's guidance section (SPEC section 8.2). */
export const GUIDANCE_HEADING = "\n\n# Guidance from the _PreCompact hooks (JSON, one line per hook)\n";

/**
 * The guidance section of the summary prompt: {@link GUIDANCE_HEADING} and one JSON line per
 * hook, in order, within `budget` UTF-8 bytes: each text is cut (with `…`) to an equal share,
 * so no hook crowds the others out; `""` when there is no guidance. The text is data inside
 * the user message, never system text.
 */
function guidanceSection(guidance: readonly { server: string; text: string }[], budget: number): string {
  const entries = guidance.filter((g) => g.text.trim() !== "");
  if (entries.length === 0) return "";
  const share = Math.max(0, Math.floor((budget - byteLength(GUIDANCE_HEADING)) / entries.length) - 1);
  const lines = entries.map(({ server, text }) => {
    const line = (t: string) => JSON.stringify({ hook: "_PreCompact", server, text: t });
    // JSON escapes can make a line longer than its text: cut the text until the line fits.
    let room = share;
    let out = line(text);
    while (byteLength(out) > share && room > 0) {
      room = Math.floor(room / 2);
      out = line(clampUtf8(text, room, ELLIPSIS));
    }
    return out;
  });
  return GUIDANCE_HEADING + lines.join("\n");
}

/** Everything {@link freshContext} places. */
export interface FreshContextInput {
  /** The summary text (non-blank; a blank summary means the fallback runs instead). */
  summary: string;
  /** The current prompt's text, from {@link currentPromptText} before the history was cleared. */
  currentPrompt: string;
  /** The `_PostCompact` injection items (assistant tool call + tool result per server, in order). */
  postCompact: readonly HistoryItem[];
}

/**
 * The history after a compaction (SPEC section 8.3): a user item `[Context Handoff]\n<summary>`,
 * then the `_PostCompact` injection pairs, then the current prompt as a user item again (left
 * out only when blank, since no API accepts an empty text block).
 */
export function freshContext(input: FreshContextInput): HistoryItem[] {
  const out: HistoryItem[] = [{ role: "user", text: HANDOFF_PREFIX + input.summary.trim() }];
  out.push(...input.postCompact);
  if (input.currentPrompt.trim() !== "") out.push({ role: "user", text: input.currentPrompt });
  return out;
}

/** What {@link truncateHistory} returns. */
export interface Truncation {
  /** The kept suffix of the history (the same item objects). */
  history: HistoryItem[];
  /** How many items were dropped from the front. */
  dropped: number;
}

/**
 * The fallback when no summary can be made (SPEC section 8.4): drops the oldest whole turns (a
 * turn runs from a user item to the next one, so a tool call stays with its results) until
 * {@link historyBytes} is below `budgetTokens`. The turn of the newest prompt is always kept,
 * even when it alone is over budget. Leading items before the first user item are dropped too.
 * @param budgetTokens the size to get under, in tokens (1 byte = 1 token), usually the threshold
 */
export function truncateHistory(history: readonly HistoryItem[], budgetTokens: number): Truncation {
  const last = lastPromptIndex(history);
  const first = history.findIndex((item) => item.role === "user");
  if (last < 0 || first < 0) return { history: [...history], dropped: 0 };
  const sizes = history.map(historyItemBytes);
  let total = 2 + sizes.reduce((a, b) => a + b, 0) + Math.max(0, history.length - 1);
  let start = 0;
  const cut = (to: number): void => {
    for (let i = start; i < to; i++) total -= (sizes[i] ?? 0) + 1;
    start = to;
  };
  cut(first);
  while (total >= budgetTokens && start < last) {
    let next = start + 1;
    while (next < last && history[next]?.role !== "user") next++;
    cut(next);
  }
  return { history: history.slice(start), dropped: start };
}

// ---- helpers ----

/** Index of the last user item that is a prompt (not a handoff summary); -1 when none. */
function lastPromptIndex(history: readonly HistoryItem[]): number {
  let fallback = -1;
  for (let i = history.length - 1; i >= 0; i--) {
    const item = history[i];
    if (item?.role !== "user") continue;
    if (!item.text.startsWith(HANDOFF_PREFIX)) return i;
    if (fallback < 0) fallback = i;
  }
  return fallback;
}

/** The history section: newest snippets that fit `maxBytes`, oldest first, with a note. */
function recentHistory(history: readonly HistoryItem[], maxBytes: number): string {
  if (history.length === 0) return "(none)";
  const kept: string[] = [];
  let used = 0;
  for (let i = history.length - 1; i >= 0; i--) {
    const item = history[i];
    if (item === undefined) continue;
    const line = snippet(item, history, i);
    const size = byteLength(line) + (kept.length > 0 ? 1 : 0);
    if (used + size > maxBytes) {
      // Nothing fits yet: keep a shortened newest item rather than none.
      if (kept.length === 0 && maxBytes >= 16) kept.push(clampUtf8(line, maxBytes, ELLIPSIS));
      break;
    }
    kept.push(line);
    used += size;
  }
  const omitted = history.length - kept.length;
  kept.reverse();
  if (omitted > 0) kept.unshift(`(${ELLIPSIS} ${omitted} older items omitted)`);
  return kept.join("\n");
}

/** Bytes the history section would need without omissions, capped at `cap` (stops early). */
function snippetsBytes(history: readonly HistoryItem[], cap: number): number {
  let used = 0;
  for (let i = history.length - 1; i >= 0 && used < cap; i--) {
    const item = history[i];
    if (item !== undefined) used += byteLength(snippet(item, history, i)) + 1;
  }
  return Math.min(used, cap);
}

/** One history item as one line of text, at most 2 KiB: `[user] …`, `[assistant] …`, `[tool] …`. */
function snippet(item: HistoryItem, history: readonly HistoryItem[], index: number): string {
  let line: string;
  if (item.role === "user") {
    line = `[user] ${oneLine(item.text, SUMMARY_SNIPPET_MAX_BYTES)}`;
  } else if (item.role === "assistant") {
    const parts = [oneLine(item.text, SUMMARY_SNIPPET_MAX_BYTES)];
    for (const call of item.toolCalls) {
      parts.push(`tool: ${call.name} ${oneLine(JSON.stringify(call.arguments) ?? "{}", SUMMARY_SNIPPET_MAX_BYTES)}`);
    }
    line = `[assistant] ${parts.filter((p) => p !== "").join("  ")}`;
  } else {
    const name = toolNameFor(item.toolCallId, history, index);
    const label = item.isError ? "[tool error]" : "[tool]";
    line = `${label}${name === undefined ? "" : ` ${name}:`} ${
      oneLine(blocksText(item.content), SUMMARY_SNIPPET_MAX_BYTES)
    }`;
  }
  return clampUtf8(line.trimEnd(), SUMMARY_SNIPPET_MAX_BYTES, ELLIPSIS);
}

/** The name of the call a tool result answers, searched backwards from its position. */
function toolNameFor(id: string, history: readonly HistoryItem[], index: number): string | undefined {
  for (let i = index - 1; i >= 0 && i >= index - 70; i--) {
    const item = history[i];
    if (item?.role !== "assistant") continue;
    const call = item.toolCalls.find((c) => c.id === id);
    if (call !== undefined) return call.name;
  }
  return undefined;
}

function blocksText(blocks: readonly ResultBlock[]): string {
  return blocks.map((b) => b.type === "text" ? b.text : imageMarker(b.mimeType, b.data)).join("\n");
}

/** Whitespace runs (newlines included) become one space; only the first `maxBytes` are looked at. */
function oneLine(text: string, maxBytes: number): string {
  // A UTF-8 byte is at least one UTF-16 unit, so `2 * maxBytes` units are plenty to decide.
  let head = text.length > 2 * maxBytes ? text.slice(0, 2 * maxBytes) : text;
  const cut = head.length < text.length;
  if (cut && /[\ud800-\udbff]$/.test(head)) head = head.slice(0, -1);
  const flat = head.replace(/\s+/g, " ").trim();
  return cut ? flat + ELLIPSIS : flat;
}
