/**
 * The compaction step of the loop (SPEC section 8): the gate before each round, the summary
 * request with the `_PreCompact` guidance, the fresh context with `_PostCompact` output, and the truncation fallback. The
 * arithmetic and the history surgery are the pure functions of `compaction.ts`.
 * @module
 */

import type { Config } from "../config/config.ts";
import { historyIndex } from "../conversation/history-index.ts";
import { isAbortError } from "../util/errors.ts";
import { addUsage, type AgentEvent, type PromptLimit } from "../conversation/events.ts";
import { type HookContext, hookMeta } from "../hooks/points.ts";
import type { HookRunner } from "../hooks/runner.ts";
import type { ToolRegistry } from "../mcp/types.ts";
import type { HistoryItem, Model, ToolDef, Usage } from "../conversation/types.ts";
import {
  buildSummaryRequest,
  currentPromptText,
  freshContext,
  historyBytes,
  requestOverheadBytes,
  shouldCompact,
  tokenThreshold,
  truncateHistory,
  UsageBaseline,
  windowLimit,
} from "./compaction.ts";

/** Options of {@link Compactor}. */
export interface CompactorOptions {
  config: Config;
  model: Model;
  hooks: HookRunner;
  registry: ToolRegistry;
}

/** Per-session compaction state: the usage baseline and the handoff count. */
export class Compactor {
  /** Compactions by summary done in this session. */
  handoffs = 0;
  readonly #options: CompactorOptions;
  readonly #baseline = new UsageBaseline();
  #warnedStuck = false;
  /** Main requests recorded ({@link recordUsage}), with or without a usage report. */
  #sent = 0;

  constructor(options: CompactorOptions) {
    this.#options = options;
  }

  /**
   * The bytes a request with this history and these tools sends: the history's JSON plus the
   * system prompt and the tool definitions (SPEC section 8.1, issue 9).
   */
  requestBytes(history: readonly HistoryItem[], tools: readonly ToolDef[]): number {
    return requestOverheadBytes(this.#options.config.systemPrompt, tools) + historyBytes(history);
  }

  /** Records what the provider reported for a request of `sentBytes` ({@link requestBytes}). */
  recordUsage(usage: Usage | undefined, sentBytes: number): void {
    this.#sent++;
    if (usage !== undefined) this.#baseline.record(usage.inputTokens, sentBytes);
  }

  /**
   * The window guard (SPEC section 8.6), after the compaction gate: the limit that ends the
   * prompt when the next request's estimate is over {@link windowLimit} (the window less the
   * output tokens), else `undefined`. The session's first request is exempt while nothing is
   * known but its bytes (no report yet, and the bytes are an upper bound a tokenizer beats three
   * to four times: tool definitions alone could refuse it); from the first report on, and from
   * the second request on for a provider that reports none, the guard holds.
   */
  overWindow(history: readonly HistoryItem[], tools: readonly ToolDef[]): PromptLimit | undefined {
    const { config } = this.#options;
    if (this.#sent === 0 && !this.#baseline.known) return undefined;
    const limit = windowLimit(config.maxContextTokens, config.maxOutputTokens);
    const estimate = this.#baseline.estimateFromBytes(this.requestBytes(history, tools));
    if (estimate <= limit) return undefined;
    const used = `${this.handoffs} of ${config.maxHandoffs} summaries (SPROUT_AGENT_MAX_HANDOFFS) used`;
    return {
      kind: "context-window",
      variable: "SPROUT_AGENT_MAX_CONTEXT_TOKENS",
      estimateTokens: estimate,
      limitTokens: limit,
      handoffs: this.handoffs,
      reason: `Cannot send the next request: about ${estimate} tokens, over the ${limit} a request may have ` +
        `(SPROUT_AGENT_MAX_CONTEXT_TOKENS=${config.maxContextTokens} less SPROUT_AGENT_MAX_OUTPUT_TOKENS=` +
        `${config.maxOutputTokens}), and compaction cannot bring it under (${used}). ` +
        "Raise SPROUT_AGENT_MAX_CONTEXT_TOKENS if the model's window allows, or start a new prompt",
    };
  }

  /**
   * Compacts `history` in place when the estimate of the next request (history, system prompt
   * and `context.tools`) reaches the threshold. A compaction never makes the context larger:
   * candidates are compared with the current request byte for byte (the same system prompt and
   * tools on both sides), so a summary whose fresh context, `_PostCompact` output included,
   * would not be smaller is discarded for the truncation fallback, and no summary is asked for
   * when even an empty one could not help (a history that is only the current prompt). Event
   * figures are estimated tokens in one unit: the reported ratio of tokens to bytes
   * ({@link UsageBaseline.scale}). A truncation that can drop nothing changes nothing and emits
   * no event (one warning per session says the current turn alone is over budget). A
   * `_PreCompact` halt (`continue: false`) leaves the history as it is and returns `"none"`:
   * the loop ends the prompt before any further model call (SPEC 7.7).
   * @returns `"none"`, `"summary"`, `"truncation"`, or `"cancelled"` when `signal` aborted the
   *   summary request (the history is then unchanged)
   */
  async maybeCompact(
    history: HistoryItem[],
    context: {
      signal: AbortSignal;
      emit: (event: AgentEvent) => void;
      round: number;
      rejectionsUsed: number;
      /**
       * The session fields of the `_PostCompact` call's `_meta` (SPEC section 2.3), asked for
       * only when the hook fires (finding the last assistant text is not a per-round cost).
       */
      hookContext?: () => HookContext;
      originalTask: string | undefined;
      usage: Usage;
      /** The LLM-visible tools the next request sends. */
      tools: readonly ToolDef[];
      /** The `repeatedCalls` figure of the `compaction` event (lib/agent/repeated-calls.ts). */
      repeatedCalls?: number;
    },
  ): Promise<"none" | "summary" | "truncation" | "cancelled"> {
    const { config } = this.#options;
    const threshold = tokenThreshold(config.maxContextTokens, config.maxOutputTokens);
    const overhead = requestOverheadBytes(config.systemPrompt, context.tools);
    // The history's size is kept incrementally (lib/conversation/history-index.ts); the first round of a
    // prompt compares every item, so edits made to the history between prompts are seen.
    const currentBytes = overhead + historyIndex(history, { full: context.round === 1 }).bytes;
    const before = this.#baseline.estimateFromBytes(currentBytes);
    if (!shouldCompact(before, threshold)) return "none";

    if (this.handoffs < config.maxHandoffs) {
      const outcome = await this.#summarise(history, { ...context, before, overhead, currentBytes });
      if (outcome === "cancelled" || outcome === "summary") return outcome;
      // A _PreCompact halt: the loop ends the prompt before any further model call.
      if (outcome === "halted") return "none";
    }
    // Drop old turns until the request's bytes (1 byte = 1 token, the SPEC 8.4 upper bound) are
    // under the threshold: more than the reported ratio would need, never less.
    const { history: kept, dropped } = truncateHistory(history, Math.max(0, threshold - overhead));
    if (dropped === 0) {
      if (!this.#warnedStuck) {
        this.#warnedStuck = true;
        context.emit({
          type: "warning",
          message:
            `The context is over budget (${before} of ${threshold} tokens) but holds only the current turn: nothing can be dropped`,
        });
      }
      return "none";
    }
    history.splice(0, history.length, ...kept);
    const keptBytes = overhead + historyBytes(history);
    const afterTokens = this.#baseline.scale(keptBytes);
    this.#baseline.rebase(keptBytes);
    context.emit({
      type: "compaction",
      mode: "truncation",
      beforeTokens: before,
      afterTokens,
      injected: [],
      handoffs: this.handoffs,
      repeatedCalls: context.repeatedCalls ?? 0,
    });
    return "truncation";
  }

  /** The `_meta` of the compaction points' calls (SPEC section 2.3). */
  #meta(context: Parameters<Compactor["maybeCompact"]>[1]) {
    const { config } = this.#options;
    return hookMeta(context.round, context.rejectionsUsed, config.stopMaxRejections, context.hookContext?.());
  }

  /**
   * The summary path (SPEC sections 8.2 and 8.3). Returns `"fallback"` when the summary could
   * not help, failed, was empty, or would not make the context smaller; the history is then
   * unchanged, and `_PostCompact` was called only in the last case, when its own output made
   * the fresh context too large (that output is then dropped, with a warning). `_PreCompact`
   * runs before the summary request whenever one is made; `"halted"` when one of its hooks
   * answered `continue: false` (no summary request is made; the history is unchanged).
   */
  async #summarise(
    history: HistoryItem[],
    context: Parameters<Compactor["maybeCompact"]>[1] & { before: number; overhead: number; currentBytes: number },
  ): Promise<"summary" | "fallback" | "cancelled" | "halted"> {
    const { config, model, hooks } = this.#options;
    const currentPrompt = currentPromptText(history) || context.originalTask || "";
    // Measured like the current request: the bytes the fresh context would send.
    const size = (summary: string, postCompact: readonly HistoryItem[]) =>
      context.overhead + historyBytes(freshContext({ summary, currentPrompt, postCompact }));
    // Nothing to summarise: even an empty summary would not shrink the request. No LLM call.
    if (size("", []) >= context.currentBytes) return "fallback";
    // The _PreCompact hook point (lib/hooks/points.ts): its output guides the summariser only.
    const pre = await hooks.fire("_PreCompact", this.#meta(context));
    // A `continue: false` halts the prompt (SPEC 7.7): no summary request, nothing compacted.
    if (pre.results.some((r) => r.decision?.continue === false)) return "halted";
    const request = buildSummaryRequest({
      originalTask: context.originalTask ?? "(unknown)",
      history,
      toolNames: context.tools.map((t) => t.name),
      ctx: config.maxContextTokens,
      handoffNumber: this.handoffs + 1,
      maxOutputTokens: config.maxOutputTokens,
      guidance: pre.injected.flatMap((r) => r.text === undefined ? [] : [{ server: r.server, text: r.text }]),
    });
    let summary = "";
    try {
      const response = await model.complete({
        system: request.system,
        history: [{ role: "user", text: request.prompt }],
        tools: [],
        maxOutputTokens: request.maxOutputTokens,
        signal: context.signal,
        purpose: "summary",
      });
      summary = response.text.trim();
      addUsage(context.usage, response.usage);
    } catch (error) {
      if (context.signal.aborted || isAbortError(error)) return "cancelled";
      context.emit({
        type: "warning",
        message: `Context summary failed: ${(error as Error).message}; dropping old turns instead`,
      });
      return "fallback";
    }
    if (summary === "") {
      context.emit({ type: "warning", message: "Context summary was empty; dropping old turns instead" });
      return "fallback";
    }
    const larger = (bytes: number, what: string) => {
      context.emit({
        type: "warning",
        message: `${what} would not shrink the context (${context.before} → ${
          this.#baseline.scale(bytes)
        } tokens); dropping old turns instead`,
      });
      return "fallback" as const;
    };
    // Checked before _PostCompact runs, so a summary that cannot help calls no hook (SPEC 8.4).
    const bare = size(summary, []);
    if (bare >= context.currentBytes) return larger(bare, "Context summary");
    // The _PostCompact hook point (lib/hooks/points.ts): its output joins the fresh context.
    const { injected, items: postCompact } = await hooks.fire("_PostCompact", this.#meta(context));
    const freshBytes = size(summary, postCompact);
    if (freshBytes >= context.currentBytes) return larger(freshBytes, "Context summary with the _PostCompact output");
    history.splice(0, history.length, ...freshContext({ summary, currentPrompt, postCompact }));
    this.handoffs++;
    const afterTokens = this.#baseline.scale(freshBytes);
    this.#baseline.rebase(freshBytes);
    context.emit({
      type: "compaction",
      mode: "summary",
      beforeTokens: context.before,
      afterTokens,
      injected: injected.map((r) => r.server),
      handoffs: this.handoffs,
      repeatedCalls: context.repeatedCalls ?? 0,
    });
    return "summary";
  }
}
