/**
 * Loop events → ACP `session/update` payloads (issue 5): streamed text, the model's thinking as
 * `agent_thought_chunk`, tool calls with their status, and a one-line thought when a hook
 * objects. Hook calls never become tool calls.
 * @module
 */

import { type AgentEvent, PAUSE_TURNS_TEXT, type PromptResult } from "../conversation/events.ts";
import type { StopReason } from "../conversation/types.ts";
import { hookAnswerWords } from "../hooks/decisions.ts";
import { HOOK_POINTS, type HookName, type HookPoint } from "../hooks/points.ts";

/** One `session/update` payload (the `update` field), `sessionUpdate` first. */
export type SessionUpdate = { sessionUpdate: string } & Record<string, unknown>;

/**
 * The updates one loop event becomes (zero to three), and a line for the log, if any.
 * @example sessionUpdates({ type: "text-delta", text: "Hi" }).updates
 * // [{sessionUpdate: "agent_message_chunk", content: {type: "text", text: "Hi"}}]
 */
export function sessionUpdates(event: AgentEvent): { updates: SessionUpdate[]; log?: string } {
  switch (event.type) {
    case "text-delta":
      return {
        updates: event.text === ""
          ? []
          : [{ sessionUpdate: "agent_message_chunk", content: { type: "text", text: event.text } }],
      };
    case "thinking-delta":
      return {
        updates: event.text === ""
          ? []
          : [{ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: event.text } }],
      };
    case "tool-start":
      return {
        updates: [
          {
            sessionUpdate: "tool_call",
            toolCallId: event.id,
            title: event.name,
            kind: "other",
            status: "pending",
            rawInput: event.arguments,
          },
          { sessionUpdate: "tool_call_update", toolCallId: event.id, status: "in_progress" },
        ],
      };
    case "tool-progress":
      // A task's new status (SPEC 10): the call's content until it ends.
      return {
        updates: [{
          sessionUpdate: "tool_call_update",
          toolCallId: event.id,
          status: "in_progress",
          content: [{ type: "content", content: { type: "text", text: event.message } }],
        }],
      };
    case "tool-end":
      return {
        updates: [{
          sessionUpdate: "tool_call_update",
          toolCallId: event.id,
          status: event.ok ? "completed" : "failed",
          content: [{ type: "content", content: { type: "text", text: event.output } }],
          rawOutput: event.ok
            ? { isError: false, durationMs: event.durationMs }
            : { isError: true, error: event.output, durationMs: event.durationMs },
        }],
      };
    case "hook": {
      const effect = (HOOK_POINTS[event.hook as HookName] as HookPoint | undefined)?.effect;
      // _SessionEnd's text is only logged: the session is over.
      if (event.outcome === "objection" && effect === "log") {
        return {
          updates: [],
          log: `${event.hook} hook ${JSON.stringify(event.server)} said: ${oneLine(event.text ?? "")}`,
        };
      }
      const note = event.decision?.systemMessage?.trim()
        ? [
          thought(
            `${event.hook} hook ${JSON.stringify(event.server)} notes: ${oneLine(event.decision.systemMessage)}\n`,
          ),
        ]
        : [];
      if (event.outcome === "objection") {
        const [verb, said] = hookAnswerWords(effect, event.text, event.decision);
        const line = oneLine(said ?? "");
        const text = `${event.hook} hook ${JSON.stringify(event.server)} ${verb}${line === "" ? "" : `: ${line}`}\n`;
        return { updates: [thought(text), ...note] };
      }
      if (note.length > 0 && event.message === undefined) return { updates: note };
      if (event.outcome === "none" && event.message === undefined) return { updates: [] };
      return {
        updates: [],
        log: `${event.hook} hook "${event.server}": ${event.outcome}${event.message ? ` (${event.message})` : ""}`,
      };
    }
    case "compaction":
      return {
        updates: [{
          sessionUpdate: "agent_thought_chunk",
          content: {
            type: "text",
            text: `Context compacted (${event.mode}): about ${event.beforeTokens} → ${event.afterTokens} tokens ` +
              `(handoffs: ${event.handoffs}, repeated calls: ${event.repeatedCalls})\n`,
          },
        }],
      };
    case "warning":
      return { updates: [], log: `warning: ${event.message}` };
    case "round-start":
      return { updates: [] };
    case "subagent":
      // Stateful: SubagentProgress turns these into updates of the parent's tool call.
      return { updates: [] };
  }
}

/** Most progress blocks kept per subagent tool call: older ones give way (SPEC 13.6). */
export const MAX_PROGRESS_BLOCKS = 64;

/** The `_meta` key of a subagent progress update: `{agentId, name}` of the child. */
export const SUBAGENT_META_KEY = "sprout-agent/subagent";

/**
 * A session's subagent progress for ACP (SPEC 13.6): each child's text and tool calls become
 * `tool_call_update`s of the parent's tool call, whose `content` (which each update replaces,
 * as ACP says) lists what the child did so far: one text block per stretch of the child's
 * text, one per tool call (`✓ name → first line`), one per hook answer. An update is sent when
 * a child's call starts or ends, when its next round starts, and for a hook's answer; text
 * alone waits for one of those (no update per token). The parent's `tool-end` then gives the
 * call its report.
 */
export class SubagentProgress {
  readonly #calls = new Map<string, { blocks: string[]; text: string; meta: Record<string, unknown> }>();

  /** The updates of one event: none but for `subagent` events, and a `tool-end` forgets its call. */
  updates(event: AgentEvent): SessionUpdate[] {
    if (event.type === "tool-end") {
      this.#calls.delete(event.id);
      return [];
    }
    if (event.type !== "subagent") return [];
    let call = this.#calls.get(event.toolCallId);
    if (call === undefined) {
      call = { blocks: [], text: "", meta: { agentId: event.agentId, name: event.name } };
      this.#calls.set(event.toolCallId, call);
    }
    const line = progressLine(event.event, call);
    if (line === undefined) return [];
    if (line !== "") call.blocks.push(line);
    if (call.blocks.length > MAX_PROGRESS_BLOCKS) call.blocks.splice(0, call.blocks.length - MAX_PROGRESS_BLOCKS);
    return [{
      sessionUpdate: "tool_call_update",
      toolCallId: event.toolCallId,
      content: call.blocks.map((text) => ({ type: "content", content: { type: "text", text } })),
      _meta: { [SUBAGENT_META_KEY]: call.meta },
    }];
  }
}

/**
 * What a child's event adds to its progress: a line (`""` only flushes its text), or
 * `undefined` for nothing to send. A grandchild's events show with its name in front.
 */
function progressLine(event: AgentEvent, call: { blocks: string[]; text: string }, label = ""): string | undefined {
  const flush = () => {
    const text = call.text.trim();
    call.text = "";
    if (text !== "") call.blocks.push(`${label}${text}`);
    return text !== "";
  };
  switch (event.type) {
    case "text-delta":
      call.text += event.text;
      return undefined;
    case "round-start":
      return flush() ? "" : undefined;
    case "tool-start":
      flush();
      return `${label}… ${event.name}`;
    case "tool-end": {
      flush();
      const out = oneLine(event.output);
      return `${label}${event.ok ? "✓" : "✗"} ${event.name}${out === "" ? "" : ` → ${out}`}`;
    }
    case "hook": {
      if (event.outcome !== "objection") return undefined;
      const effect = (HOOK_POINTS[event.hook as HookName] as HookPoint | undefined)?.effect;
      const [verb, said] = hookAnswerWords(effect, event.text, event.decision);
      flush();
      return `${label}${event.hook} hook ${JSON.stringify(event.server)} ${verb}: ${oneLine(said ?? "")}`;
    }
    case "warning":
      return `${label}warning: ${oneLine(event.message)}`;
    case "subagent":
      return progressLine(event.event, call, `${label}[${event.name}] `);
    default:
      return undefined;
  }
}

/**
 * A subagent's history as the progress blocks of its parent's tool call (SPEC 13.7, for
 * `session/load`): its texts and its tool calls with their results' first lines; never its
 * task, hook calls or injected texts.
 * @example subagentProgressBlocks([{ role: "assistant", text: "Found 2.", toolCalls: [] }]) // ["Found 2."]
 */
export function subagentProgressBlocks(
  items: readonly import("../conversation/types.ts").HistoryItem[],
  injected: ReadonlySet<string>,
): string[] {
  const results = new Map<string, { text: string; isError: boolean }>();
  for (const item of items) {
    if (item.role !== "tool") continue;
    results.set(item.toolCallId, {
      text: item.content.map((b) => (b.type === "text" ? b.text : `[image ${b.mimeType}]`)).join("\n"),
      isError: item.isError,
    });
  }
  const blocks: string[] = [];
  for (const item of items) {
    if (item.role !== "assistant") continue;
    if (item.text.trim() !== "") blocks.push(item.text.trim());
    for (const call of item.toolCalls) {
      if (injected.has(call.id)) continue;
      const result = results.get(call.id);
      const out = oneLine(result?.text ?? "");
      blocks.push(`${result === undefined || result.isError ? "✗" : "✓"} ${call.name}${out === "" ? "" : ` → ${out}`}`);
    }
  }
  return blocks.slice(-MAX_PROGRESS_BLOCKS);
}

/**
 * The ACP `stopReason` of a prompt's stop reason: the same, but for the agent's own
 * `max_pause_turns`, which ACP's fixed values lack: `max_turn_requests`, the closest (the turn
 * took more model requests than allowed). SPEC section 6.5, docs/ACP.md.
 */
export function acpStopReason(stopReason: StopReason): Exclude<StopReason, "max_pause_turns"> {
  return stopReason === "max_pause_turns" ? "max_turn_requests" : stopReason;
}

/**
 * The updates sent after a prompt ends, before its `session/prompt` response: for a refusal,
 * its explanation as an `agent_message_chunk`, and for a prompt a hook halted (stop reason
 * `end_turn`), the hook, its server and its reason, since the stop reason alone carries
 * no text (ACP asks agents without the client's `session.notices` capability to use an agent
 * message for information the user should see); likewise for `max_pause_turns`, sent as
 * `max_turn_requests`.
 * @example resultUpdates({ stopReason: "refusal", refusal: "no", rounds: 1, toolCalls: 0, objections: 0, usage: { inputTokens: 0, outputTokens: 0 }, durationMs: 1 })
 * // [{sessionUpdate: "agent_message_chunk", content: {type: "text", text: "\n\nRefused: no\n"}}]
 */
export function resultUpdates(result: PromptResult): SessionUpdate[] {
  // A hook's halt (SPEC 7.7) ends the prompt with `end_turn`; the person is told why.
  if (result.halt !== undefined) {
    const { hook, server, reason } = result.halt;
    return [{
      sessionUpdate: "agent_message_chunk",
      content: { type: "text", text: `\n\nHalted by the ${hook} hook of ${JSON.stringify(server)}: ${reason}\n` },
    }];
  }
  // A session bound (SPEC 8.6): the stop reason is ACP's; the person is told which and why.
  if (result.limit !== undefined) {
    return [{ sessionUpdate: "agent_message_chunk", content: { type: "text", text: `\n\n${result.limit.reason}\n` } }];
  }
  // The agent's own stop reason, which ACP receives as `max_turn_requests` (acpStopReason).
  if (result.stopReason === "max_pause_turns") {
    return [{ sessionUpdate: "agent_message_chunk", content: { type: "text", text: `\n\n${PAUSE_TURNS_TEXT}\n` } }];
  }
  if (result.stopReason !== "refusal" || result.refusal === undefined) return [];
  return [{
    sessionUpdate: "agent_message_chunk",
    content: { type: "text", text: `\n\nRefused: ${result.refusal}\n` },
  }];
}

/** The first non-blank line of `text`, at most 200 characters. */
function oneLine(text: string): string {
  const line = text.split("\n").map((l) => l.trim()).find((l) => l !== "") ?? "";
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

/** An `agent_thought_chunk` update with `text`. */
function thought(text: string): SessionUpdate {
  return { sessionUpdate: "agent_thought_chunk", content: { type: "text", text } };
}
