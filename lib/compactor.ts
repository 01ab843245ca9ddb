/**
 * The compaction step of the loop (SPEC section 8): the gate before each round, the summary
 * request, the fresh context with `_PostCompact` output, and the truncation fallback. The
 * arithmetic and the history surgery are the pure functions of `compaction.ts`.
 * @module
 */

import type { Config } from "./config.ts";
import { isAbortError } from "./errors.ts";
import type { AgentEvent } from "./events.ts";
import { hookMeta } from "./hook-points.ts";
import type { HookRunner } from "./hooks.ts";
import type { ToolRegistry } from "./mcp/types.ts";
import type { HistoryItem, Model, ToolDef, Usage } from "./types.ts";
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
    if (usage !== undefined) this.#baseline.record(usage.inputTokens, sentBytes);
  }

  /**
   * Compacts `history` in place when the estimate of the next request (history, system prompt
   * and `context.tools`) reaches the threshold. A summary whose fresh context (before any
   * `_PostCompact` output) would not be smaller than that estimate is discarded for the
   * truncation fallback, so a summary never makes the context larger; a truncation that can
   * drop nothing changes nothing and emits no event (one warning per session says the newest
   * turn alone is over budget).
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
      originalTask: string | undefined;
      usage: Usage;
      /** The LLM-visible tools the next request sends. */
      tools: readonly ToolDef[];
    },
  ): Promise<"none" | "summary" | "truncation" | "cancelled"> {
    const { config } = this.#options;
    const threshold = tokenThreshold(config.maxContextTokens, config.maxOutputTokens);
    const overhead = requestOverheadBytes(config.systemPrompt, context.tools);
    const before = this.#baseline.estimateFromBytes(overhead + historyBytes(history));
    if (!shouldCompact(before, threshold)) return "none";

    if (this.handoffs < config.maxHandoffs) {
      const outcome = await this.#summarise(history, { ...context, before, overhead });
      if (outcome === "cancelled" || outcome === "summary") return outcome;
    }
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
    this.#baseline.clear();
    const afterTokens = overhead + historyBytes(history);
    context.emit({ type: "compaction", mode: "truncation", beforeTokens: before, afterTokens, injected: [] });
    return "truncation";
  }

  /**
   * The summary path (SPEC sections 8.2 and 8.3). Returns `"fallback"` when the summary
   * failed, was empty, or would not make the context smaller; the history is then unchanged
   * and no hook was called.
   */
  async #summarise(
    history: HistoryItem[],
    context: Parameters<Compactor["maybeCompact"]>[1] & { before: number; overhead: number },
  ): Promise<"summary" | "fallback" | "cancelled"> {
    const { config, model, hooks } = this.#options;
    const request = buildSummaryRequest({
      originalTask: context.originalTask ?? "(unknown)",
      history,
      toolNames: context.tools.map((t) => t.name),
      ctx: config.maxContextTokens,
      handoffNumber: this.handoffs + 1,
      maxOutputTokens: config.maxOutputTokens,
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
      if (response.usage) {
        context.usage.inputTokens += response.usage.inputTokens;
        context.usage.outputTokens += response.usage.outputTokens;
      }
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
    const currentPrompt = currentPromptText(history) || context.originalTask || "";
    // Measured like the estimate that triggered: the request the fresh context would send.
    const size = (postCompact: readonly HistoryItem[]) =>
      context.overhead + historyBytes(freshContext({ summary, currentPrompt, postCompact }));
    const larger = (after: number) => {
      context.emit({
        type: "warning",
        message:
          `Context summary would not shrink the context (${context.before} → ${after} tokens); dropping old turns instead`,
      });
      return "fallback" as const;
    };
    // Checked before _PostCompact runs, so a summary that cannot help calls no hook (SPEC 8.4).
    // The hooks' output is added on top and not held against the summary: it is the state
    // their authors chose to carry (each capped at 16 KiB, SPEC 4.3), and dropping it after the
    // call would lose it silently.
    const bare = size([]);
    if (bare >= context.before) return larger(bare);
    // The _PostCompact hook point (lib/hook-points.ts): its output joins the fresh context.
    const { injected, items: postCompact } = await hooks.fire(
      "_PostCompact",
      hookMeta(context.round, context.rejectionsUsed, config.stopMaxRejections),
    );
    const afterTokens = size(postCompact);
    history.splice(0, history.length, ...freshContext({ summary, currentPrompt, postCompact }));
    this.handoffs++;
    this.#baseline.clear();
    context.emit({
      type: "compaction",
      mode: "summary",
      beforeTokens: context.before,
      afterTokens,
      injected: injected.map((r) => r.server),
    });
    return "summary";
  }
}
