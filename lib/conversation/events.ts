/**
 * The events the loop emits while a prompt runs, as data (never printed by the core). The CLI prints them,
 * `--json` writes them one per line (SPEC section 11), the ACP server turns them into
 * `session/update` notifications, and tests assert on them.
 * @module
 */

import type { StopReason, Usage } from "./types.ts";

/**
 * How one hook call ended (SPEC section 4.3).
 * @example
 * const counted = (outcome: HookOutcome) => outcome === "objection";
 */
export type HookOutcome = "objection" | "none" | "timeout" | "error";

/**
 * A typed hook answer. Every field is optional; a hook that sends none of them answers in
 * plain text as before. Which fields a point reads is SPEC section 7.7's table (lib/hooks/decisions.ts reads it):
 * - `decision`: `_PreToolUse`: `allow` | `deny` | `ask`; `_Stop`: `block` (an objection).
 * - `reason`: why (the denial the model reads, the objection, the question asked).
 * - `updatedInput`: `_PreToolUse`: the arguments to run the tool with instead.
 * - `additionalContext`: text for the model (injected, or appended to a tool's result).
 * - `updatedResult`: `_PostToolUse`: replaces the text of the tool's result.
 * - `continue: false` with `stopReason`: halts the prompt now, at any point.
 * - `systemMessage`: a note for the person only, never sent to the model.
 * @example
 * const answer: HookDecision = { decision: "deny", reason: "writes outside the project are not allowed" };
 */
export interface HookDecision {
  /** `allow`, `deny` or `ask` (`_PreToolUse`); `block` (`_Stop`: an objection). */
  decision?: "allow" | "deny" | "ask" | "block";
  /** Why; for `deny` the text the model gets, for `block` the objection, for `ask` the question. */
  reason?: string;
  /** `_PreToolUse`: replaces the call's arguments (checked against the tool's input schema). */
  updatedInput?: Record<string, unknown>;
  /** Text for the model: injected (session points, `_Stop`) or appended to the tool result (tool points). */
  additionalContext?: string;
  /** `_PostToolUse`: the text that replaces the tool result's text content. */
  updatedResult?: string;
  /** `false` halts the prompt at once: no further model call (default true). */
  continue?: boolean;
  /** With `continue: false`: why, shown to the person and kept in the result. */
  stopReason?: string;
  /** A note shown to the person only (CLI stderr, ACP log); never sent to the model. */
  systemMessage?: string;
}

/** A prompt halted by a hook's `continue: false` (SPEC section 7.7). */
export interface HookHalt {
  /** The hook point that halted it (`_PreToolUse`, …). */
  hook: string;
  /** The server (or in-process group) whose hook said so. */
  server: string;
  /** Its `stopReason`, or a sentence naming the hook and the server. */
  reason: string;
}

/**
 * Every event of a prompt run. `type` is always the first key.
 * @example
 * for await (const event of agent.prompt("go")) {
 *   if (event.type === "tool-end") console.log(event.name, event.ok ? "ok" : event.output);
 * }
 */
export type AgentEvent =
  /** A main LLM request starts (1-based within the prompt). */
  | { type: "round-start"; round: number }
  /** Assistant text as it streams in. */
  | { type: "text-delta"; text: string }
  /**
   * The model's reasoning as it streams in (Anthropic extended thinking), never part of the
   * answer: the CLI shows it dimmed on stderr, ACP sends it as `agent_thought_chunk`, and
   * `--json` leaves it out (its event types are pinned by SPEC section 11).
   */
  | { type: "thinking-delta"; text: string }
  /** The LLM asked for a tool; `name` is the qualified name it used. */
  | { type: "tool-start"; id: string; name: string; arguments: Record<string, unknown> }
  /**
   * A tool call finished. `ok` is false for `isError` results and every failure; `output` is
   * the text sent to the LLM (after truncation).
   */
  | { type: "tool-end"; id: string; name: string; ok: boolean; durationMs: number; output: string }
  /**
   * One hook call on one server finished. `text` is the objection or injected text;
   * `decision` the typed answer, when the hook sent one (SPEC 7.7); `toolCallId` the call a
   * tool point's hook was about (SPEC 7.6).
   */
  | {
    type: "hook";
    hook: string;
    server: string;
    outcome: HookOutcome;
    durationMs: number;
    text?: string;
    message?: string;
    toolCallId?: string;
    decision?: HookDecision;
  }
  /** The context was compacted (SPEC section 8); sizes in estimated tokens. */
  | {
    type: "compaction";
    mode: "summary" | "truncation";
    beforeTokens: number;
    afterTokens: number;
    /** Servers whose `_PostCompact` output was injected. */
    injected: string[];
    /** Summary compactions done in the session, this one included (at most `SPROUT_AGENT_MAX_HANDOFFS`). */
    handoffs: number;
    /**
     * The most times one identical tool call (same name, arguments and result) has been made in a
     * row so far in the session (SPEC section 8.6; bounded by `SPROUT_AGENT_MAX_REPEATED_CALLS`).
     */
    repeatedCalls: number;
  }
  /** Something went wrong that does not stop the run (a hook timed out, a server died). */
  | { type: "warning"; message: string };

/**
 * What a prompt run resolves with.
 * @example
 * const { stopReason, rounds, usage }: PromptResult = await run.result;
 */
export interface PromptResult {
  /**
   * Why the prompt ended (SPEC sections 6.1, 6.5, 6.6 and 8.6): `end_turn` (after the `_Stop`
   * gate), `max_tokens` (also when the next request would be over the window: see
   * {@link PromptResult.limit}), `refusal`, `max_turn_requests` (also for repeated identical
   * tool calls) or `cancelled`.
   */
  stopReason: StopReason;
  /** Main LLM requests that completed in this prompt (SPEC section 6.1). */
  rounds: number;
  /** Tool calls the LLM asked for in this prompt (injected hook pairs not counted). */
  toolCalls: number;
  /** `_Stop` rounds that objected in this prompt. */
  objections: number;
  /** Summed over the prompt's requests, compaction summaries included. */
  usage: Usage;
  /** Wall-clock time of the prompt in milliseconds, by the session's `now` clock. */
  durationMs: number;
  /**
   * Present exactly when `stopReason` is `refusal`: the provider's explanation for the user
   * (`LlmResponse.refusal`: Anthropic `stop_details.explanation` and its category; else the
   * response's text when none of it was streamed, as with OpenAI's `refusal` field), or
   * {@link NO_REFUSAL_EXPLANATION} when it gave none.
   */
  refusal?: string;
  /**
   * Present when a hook halted the prompt (`continue: false`, SPEC section 7.7); `stopReason`
   * is then `end_turn`.
   */
  halt?: HookHalt;
  /**
   * Present when one of the session's bounds ended the prompt (SPEC section 8.6): the context
   * could not be brought under the window (`stopReason` `max_tokens`), or one identical tool
   * call was repeated too often (`stopReason` `max_turn_requests`).
   */
  limit?: PromptLimit;
}

/**
 * Which bound ended a prompt, with its figures and a sentence for the person (SPEC section 8.6).
 * - `context-window`: the next request's estimate (`estimateTokens`) is over `limitTokens`
 *   (`SPROUT_AGENT_MAX_CONTEXT_TOKENS` less `SPROUT_AGENT_MAX_OUTPUT_TOKENS`) and compaction
 *   could not bring it under; the request was not sent.
 * - `repeated-call`: the call `tool` with the same arguments returned the same result `count`
 *   times in a row (`SPROUT_AGENT_MAX_REPEATED_CALLS`).
 * @example
 * const { limit } = await run.result;
 * if (limit?.kind === "context-window") console.error(limit.reason);
 */
export type PromptLimit =
  | {
    kind: "context-window";
    /** The variable that sets the window. */
    variable: "SPROUT_AGENT_MAX_CONTEXT_TOKENS";
    /** The estimate of the request that was not sent, in tokens. */
    estimateTokens: number;
    /** The largest estimate a request may have: the window less the output tokens. */
    limitTokens: number;
    /** Summary compactions used in the session when it ended. */
    handoffs: number;
    /** What happened and what to do, naming the variables and the figures. */
    reason: string;
  }
  | {
    kind: "repeated-call";
    /** The variable that sets the bound. */
    variable: "SPROUT_AGENT_MAX_REPEATED_CALLS";
    /** The qualified name of the repeated call. */
    tool: string;
    /** Times it ran in a row with the same arguments and the same result. */
    count: number;
    /** What happened and what to do, naming the variable, the tool and the count. */
    reason: string;
  };

/**
 * What the person is told when a prompt ends with `max_pause_turns` (SPEC section 6.5): by the
 * CLI on stderr, by the ACP server as a last `agent_message_chunk`.
 */
export const PAUSE_TURNS_TEXT =
  "Stopped: the provider paused the turn (pause_turn) more times in a row than the agent continues it";

/** The `refusal` of a {@link PromptResult} when the provider gave no explanation. */
export const NO_REFUSAL_EXPLANATION = "the model declined the request and gave no explanation";

/**
 * Adds one model request's usage to a prompt's sum; a request the provider reported none for
 * is counted in `sum.unreported` (SPEC section 11: unknown, never `0`).
 */
export function addUsage(sum: Usage, usage: Usage | undefined): void {
  if (usage === undefined) {
    sum.unreported = (sum.unreported ?? 0) + 1;
    return;
  }
  sum.inputTokens += usage.inputTokens;
  sum.outputTokens += usage.outputTokens;
}
