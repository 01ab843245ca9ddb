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
  }
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
