/**
 * The compaction step of the loop (SPEC section 8): the gate before each round, the summary
 * request, the fresh context with `_PostCompact` output, and the truncation fallback. The
 * arithmetic and the history surgery are the pure functions of `compaction.ts`.
 * @module
 */

import type { Config } from "./config.ts";
import { isAbortError } from "./errors.ts";
import type { AgentEvent } from "./events.ts";
import type { HookRunner } from "./hooks.ts";
import { injectionItems } from "./hooks.ts";
import type { ToolRegistry } from "./mcp/types.ts";
import type { HistoryItem, Model, Usage } from "./types.ts";
import {
  buildSummaryRequest,
  currentPromptText,
  freshContext,
  historyBytes,
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

  constructor(options: CompactorOptions) {
    this.#options = options;
  }

  /** UTF-8 bytes of the history's JSON (SPEC section 8.1). */
  historyBytes(history: readonly HistoryItem[]): number {
    return historyBytes(history);
  }

  /** Records what the provider reported for a request whose history had `sentBytes` bytes. */
  recordUsage(usage: Usage | undefined, sentBytes: number): void {
    if (usage !== undefined) this.#baseline.record(usage.inputTokens, sentBytes);
  }

  /**
   * Compacts `history` in place when the estimate reaches the threshold.
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
    },
  ): Promise<"none" | "summary" | "truncation" | "cancelled"> {
    const { config, model, hooks, registry } = this.#options;
    const threshold = tokenThreshold(config.maxContextTokens, config.maxOutputTokens);
    const before = this.#baseline.estimate(history);
    if (!shouldCompact(before, threshold)) return "none";

    if (this.handoffs < config.maxHandoffs) {
      const tools = await registry.listTools();
      const request = buildSummaryRequest({
        originalTask: context.originalTask ?? "(unknown)",
        history,
        toolNames: tools.map((t) => t.name),
        ctx: config.maxContextTokens,
        handoffNumber: this.handoffs + 1,
        maxOutputTokens: config.maxOutputTokens,
      });
      let summary = "";
      let failed = false;
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
        failed = true;
        context.emit({ type: "warning", message: `Context summary failed: ${(error as Error).message}; dropping old turns instead` });
      }
      if (summary !== "") {
        const currentPrompt = currentPromptText(history) || context.originalTask || "";
        history.length = 0;
        const results = await hooks.run("_PostCompact", {
          round: context.round,
          rejectionsUsed: context.rejectionsUsed,
          rejectionsLeft: Math.max(0, config.stopMaxRejections - context.rejectionsUsed),
        });
        const injected = results.filter((r) => r.outcome === "objection");
        history.push(...freshContext({
          summary,
          currentPrompt,
          postCompact: injectionItems("_PostCompact", injected, registry),
        }));
        this.handoffs++;
        this.#baseline.clear();
        context.emit({
          type: "compaction",
          mode: "summary",
          beforeTokens: before,
          afterTokens: historyBytes(history),
          injected: injected.map((r) => r.server),
        });
        return "summary";
      }
      if (!failed) context.emit({ type: "warning", message: "Context summary was empty; dropping old turns instead" });
    }
    const { history: kept } = truncateHistory(history, threshold);
    history.splice(0, history.length, ...kept);
    this.#baseline.clear();
    context.emit({ type: "compaction", mode: "truncation", beforeTokens: before, afterTokens: historyBytes(history), injected: [] });
    return "truncation";
  }
}
