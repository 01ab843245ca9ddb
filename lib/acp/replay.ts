/**
 * A saved session as ACP `session/update`s, for `session/load` (SPEC section 12.7): the
 * conversation as the person saw it, in order, from the transcript's `items` and `result`
 * records (not the model's context, which a compaction replaced with a summary). The user's
 * messages, the agent's text and thoughts, and each tool call with exactly one terminal
 * update; never a hook call, an objection or an injected text.
 * @module
 */

import type { HistoryItem, ResultBlock } from "../conversation/types.ts";
import { MINTED_ID_PATTERN } from "../conversation/call-ids.ts";
import { INTERRUPTED_RESULT, recordProblem, type SessionRecord } from "../sessions/records.ts";
import { type SessionUpdate, SUBAGENT_META_KEY, subagentProgressBlocks } from "./updates.ts";

/**
 * The updates that replay `records`. A hook's injected pair (an assistant item whose one call
 * has an id the agent minted, `hook` + 5 characters, answered by `{"hook": …}` JSON) is left
 * out, as the hook calls of a live prompt are; so is the text of a `_Stop` objection. A call
 * whose result was never written ends `failed` with the interrupted text.
 * @example replayUpdates([{ type: "items", at: "…", items: [{ role: "user", text: "hi" }] }])
 * // [{sessionUpdate: "user_message_chunk", content: {type: "text", text: "hi"}}]
 */
export function replayUpdates(records: readonly SessionRecord[]): SessionUpdate[] {
  const shown: HistoryItem[] = [];
  /** Each subagent's history, by the parent's tool call that ran it (SPEC 13.7). */
  const children = new Map<string, Extract<SessionRecord, { type: "subagent" }>[]>();
  for (const record of records) {
    if (recordProblem(record) !== undefined) continue; // restoreSession skipped it too, with a warning
    if (record.type === "items") shown.push(...record.items);
    else if (record.type === "result") shown.push(record.item);
    else if (record.type === "subagent") {
      children.set(record.toolCallId, [...(children.get(record.toolCallId) ?? []), record]);
    }
  }
  const injected = injectedIds(shown);
  const results = new Map<string, Extract<HistoryItem, { role: "tool" }>>();
  for (const item of shown) {
    if (item.role === "tool" && !results.has(item.toolCallId)) results.set(item.toolCallId, item);
  }
  const updates: SessionUpdate[] = [];
  const ended = new Set<string>();
  for (const item of shown) {
    if (item.role === "user") {
      updates.push({ sessionUpdate: "user_message_chunk", content: { type: "text", text: item.text } });
    } else if (item.role === "assistant") {
      if (item.toolCalls.length > 0 && item.toolCalls.every((c) => injected.has(c.id))) continue;
      for (const thought of thoughts(item)) {
        updates.push({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: thought } });
      }
      if (item.text !== "") {
        updates.push({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: item.text } });
      }
      for (const call of item.toolCalls) {
        if (injected.has(call.id) || ended.has(call.id)) continue;
        ended.add(call.id);
        updates.push({
          sessionUpdate: "tool_call",
          toolCallId: call.id,
          title: call.name,
          kind: "other",
          status: "pending",
          rawInput: call.arguments,
        });
        for (const child of children.get(call.id) ?? []) {
          const blocks = subagentProgressBlocks(child.items, injectedIds(child.items));
          if (blocks.length === 0) continue;
          updates.push({
            sessionUpdate: "tool_call_update",
            toolCallId: call.id,
            content: blocks.map((text) => ({ type: "content", content: { type: "text", text } })),
            _meta: { [SUBAGENT_META_KEY]: { agentId: child.agent.id, name: child.agent.name } },
          });
        }
        const result = results.get(call.id);
        const text = result === undefined ? INTERRUPTED_RESULT : blocksText(result.content);
        const failed = result === undefined || result.isError;
        updates.push({
          sessionUpdate: "tool_call_update",
          toolCallId: call.id,
          status: failed ? "failed" : "completed",
          content: [{ type: "content", content: { type: "text", text } }],
          rawOutput: failed ? { isError: true, error: text } : { isError: false },
        });
      }
    }
  }
  return updates;
}

/** The ids of hook injections: a minted `hook…` id whose result is the hook's JSON (SPEC 7.4). */
function injectedIds(items: readonly HistoryItem[]): Set<string> {
  const ids = new Set<string>();
  for (const item of items) {
    if (item.role !== "tool" || !item.toolCallId.startsWith("hook") || !MINTED_ID_PATTERN.test(item.toolCallId)) {
      continue;
    }
    const first = item.content[0];
    if (first?.type !== "text") continue;
    try {
      const value = JSON.parse(first.text) as { hook?: unknown };
      if (typeof value.hook === "string" && value.hook.startsWith("_")) ids.add(item.toolCallId);
    } catch {
      // A tool's own result: shown.
    }
  }
  return ids;
}

/** The model's reasoning kept in an assistant item's native content (Anthropic `thinking` blocks). */
function thoughts(item: Extract<HistoryItem, { role: "assistant" }>): string[] {
  const out: string[] = [];
  for (const block of item.native?.content ?? []) {
    const b = block as { type?: unknown; thinking?: unknown };
    if (b.type === "thinking" && typeof b.thinking === "string" && b.thinking !== "") out.push(b.thinking);
  }
  return out;
}

function blocksText(content: readonly ResultBlock[]): string {
  return content.map((b) => (b.type === "text" ? b.text : `[image ${b.mimeType}]`)).join("\n");
}
