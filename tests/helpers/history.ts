/**
 * Test helpers for histories: the invariant checker of SPEC section 6 and a seeded generator
 * of random valid histories (prompts, assistant texts, parallel tool calls with their results,
 * injected hook pairs, handoff summaries).
 * @module
 */
import type { HistoryItem } from "../../lib/conversation/types.ts";

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Every way `history` breaks the invariants of SPEC section 6, as messages (empty when valid):
 * it starts with a user item; each assistant tool call is followed at once by exactly one
 * result per call, in call order, before anything else; no orphan or duplicate results; tool
 * call ids are unique; no user text is blank; no assistant item is empty; tool names match
 * `^[a-zA-Z0-9_-]{1,64}$`.
 */
export function historyProblems(history: readonly HistoryItem[]): string[] {
  const problems: string[] = [];
  if (history.length > 0 && history[0]?.role !== "user") {
    problems.push(`history starts with a ${history[0]?.role} item, not a user item`);
  }
  const seenIds = new Set<string>();
  let pending: string[] = []; // ids still owed a result, in call order
  history.forEach((item, i) => {
    if (item.role === "tool") {
      const expected = pending.shift();
      if (expected === undefined) problems.push(`item ${i}: orphan tool result "${item.toolCallId}"`);
      else if (expected !== item.toolCallId) {
        problems.push(`item ${i}: tool result "${item.toolCallId}" where "${expected}" was due`);
      }
      if (item.content.length === 0) problems.push(`item ${i}: tool result "${item.toolCallId}" has no content`);
      return;
    }
    if (pending.length > 0) {
      problems.push(`item ${i}: ${item.role} item before the results of ${pending.map((id) => `"${id}"`).join(", ")}`);
      pending = [];
    }
    if (item.role === "user") {
      if (item.text.trim() === "") problems.push(`item ${i}: blank user text`);
      return;
    }
    if (item.text.trim() === "" && item.toolCalls.length === 0) problems.push(`item ${i}: empty assistant item`);
    for (const call of item.toolCalls) {
      if (!TOOL_NAME.test(call.name)) problems.push(`item ${i}: invalid tool name "${call.name}"`);
      if (seenIds.has(call.id)) problems.push(`item ${i}: duplicate tool call id "${call.id}"`);
      seenIds.add(call.id);
      pending.push(call.id);
    }
  });
  if (pending.length > 0) {
    problems.push(`history ends before the results of ${pending.map((id) => `"${id}"`).join(", ")}`);
  }
  return problems;
}

/** A small seeded PRNG (mulberry32): the same seed gives the same sequence on every runtime. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = ["alpha", "beta", "gamma", "δέλτα", "émoji 😀", "日本語", "line\nbreak", "tab\there", "x"];

/**
 * A random valid history of about `turns` prompts: each turn is a user prompt followed by
 * rounds of parallel tool calls with results, assistant texts and injected `_Stop`/`_PostCompact`
 * pairs; some turns start with a `[Context Handoff]` summary. Text sizes vary widely.
 */
export function randomHistory(random: () => number, turns: number): HistoryItem[] {
  const int = (n: number): number => Math.floor(random() * n);
  const text = (): string => {
    const words = 1 + int(random() < 0.1 ? 400 : 20);
    return Array.from({ length: words }, () => WORDS[int(WORDS.length)]).join(" ");
  };
  let nextId = 0;
  const out: HistoryItem[] = [];
  for (let t = 0; t < turns; t++) {
    if (random() < 0.15) out.push({ role: "user", text: `[Context Handoff]\n${text()}` });
    out.push({ role: "user", text: `prompt ${t}: ${text()}` });
    const rounds = int(5);
    for (let r = 0; r < rounds; r++) {
      const kind = random();
      if (kind < 0.55) {
        const calls = Array.from({ length: 1 + int(random() < 0.2 ? 8 : 2) }, () => ({
          id: `call_${nextId++}`,
          name: `srv__tool_${int(5)}`,
          arguments: random() < 0.5 ? {} : { q: text() },
        }));
        out.push({ role: "assistant", text: random() < 0.5 ? "" : text(), toolCalls: calls });
        for (const call of calls) {
          out.push({
            role: "tool",
            toolCallId: call.id,
            content: [{ type: "text", text: text() }],
            isError: random() < 0.2,
          });
        }
      } else if (kind < 0.8) {
        const hook = random() < 0.5 ? "_Stop" : "_PostCompact";
        const server = `s${int(3)}`;
        const id = `sprout_hook_${hook}_${server}_${nextId++}`;
        out.push({
          role: "assistant",
          text: random() < 0.5 ? "" : text(),
          toolCalls: [{ id, name: `${server}__${hook}`, arguments: {} }],
        });
        out.push({
          role: "tool",
          toolCallId: id,
          content: [{ type: "text", text: JSON.stringify({ hook, server, text: text() }) }],
          isError: false,
        });
      } else {
        out.push({ role: "assistant", text: text(), toolCalls: [] });
      }
    }
  }
  return out;
}
