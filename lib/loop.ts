/**
 * One agent session and its prompts: rounds, tool execution, the `_Stop` gate and
 * compaction (SPEC sections 6, 7 and 8). No I/O of its own: the model, the tool registry
 * and the clock are passed in (CONVENTIONS lesson 1).
 * @module
 */

import { type Config, hooksEnabledFor } from "./config.ts";
import { AgentError, isAbortError } from "./errors.ts";
import { type AgentEvent, NO_REFUSAL_EXPLANATION, type PromptResult } from "./events.ts";
import { HookRunner, injectionItems } from "./hooks.ts";
import type { ToolRegistry } from "./mcp/types.ts";
import { eventStream, type EventStream } from "./stream.ts";
import { prepareToolCalls, runToolCalls } from "./tool-calls.ts";
import type { HistoryItem, LlmResponse, Model, StopReason, ToolCall, ToolDef, Usage } from "./types.ts";
import { Compactor } from "./compactor.ts";

/** At most this many tool calls of one response are kept (SPEC section 6.6). */
export const MAX_TOOL_CALLS_PER_RESPONSE = 64;
/** At most this many `pause_turn` continuations in a row (SPEC section 6.5). */
export const MAX_PAUSE_CONTINUATIONS = 5;

/** Options of {@link AgentSession}. */
export interface SessionOptions {
  /**
   * The validated configuration (`loadConfig`): the system prompt, token limits, rounds,
   * tool and hook timeouts, the `_Stop` budget and the hook allowlist come from it.
   */
  config: Config;
  /** The LLM, usually from `createModel(config)`; used for every round and for compaction summaries. */
  model: Model;
  /**
   * The session's MCP servers, usually from `createRegistry`. The session uses it but does
   * not own it: the caller closes it after the last prompt.
   */
  registry: ToolRegistry;
  /**
   * The session id, kept as {@link AgentSession.id}; default a random UUID. The session sends
   * nothing with it: MCP servers see the `sessionId` given to `createRegistry` as
   * `_meta["sprout-agent/session"]` (SPEC section 10), so pass the same value to both.
   */
  id?: string;
  /** Milliseconds clock for durations; default `Date.now`. */
  now?: () => number;
}

/**
 * A prompt in progress: iterate its events, await its result.
 * @example
 * const run: PromptRun = agent.prompt("fix the tests");
 * for await (const event of run) if (event.type === "text-delta") console.log(event.text);
 * const { stopReason } = await run.result;
 */
export type PromptRun = EventStream<AgentEvent, PromptResult>;

/**
 * One conversation: the history, the `_Stop` budget and the compaction count live here and
 * survive across prompts (SPEC sections 7.2 and 8.4).
 * @example
 * const session = new AgentSession({ config, model, registry });
 * const run = session.prompt("fix the tests");
 * for await (const event of run) console.log(event.type);
 * const { stopReason } = await run.result;
 */
export class AgentSession {
  /** The session id. */
  readonly id: string;
  /** The conversation so far; valid for the next request after every prompt (SPEC section 6). */
  readonly history: HistoryItem[] = [];
  /** `_Stop` objections used in this session (never reset; SPEC section 7.2). */
  stopRejections = 0;
  /** The first prompt of the session, kept for compaction summaries. */
  originalTask: string | undefined;
  readonly #config: Config;
  readonly #model: Model;
  readonly #registry: ToolRegistry;
  readonly #now: () => number;
  readonly #hooks: HookRunner;
  readonly #compactor: Compactor;
  #emit: (event: AgentEvent) => void = () => {};
  #busy = false;
  #idCounter = 0;

  /**
   * Creates a session with an empty history and an unused `_Stop` budget. Connects nothing
   * and sends nothing until {@link AgentSession.prompt}.
   */
  constructor(options: SessionOptions) {
    this.id = options.id ?? crypto.randomUUID();
    this.#config = options.config;
    this.#model = options.model;
    this.#registry = options.registry;
    this.#now = options.now ?? Date.now;
    this.#hooks = new HookRunner({
      registry: options.registry,
      allow: options.config.hookServers,
      timeoutMs: options.config.hookTimeoutMs,
      onEvent: (event) => this.#emit(event),
    });
    this.#compactor = new Compactor({
      config: options.config,
      model: options.model,
      hooks: this.#hooks,
      registry: options.registry,
    });
  }

  /** Compactions done in this session (at most `SPROUT_AGENT_MAX_HANDOFFS`). */
  get handoffs(): number {
    return this.#compactor.handoffs;
  }

  /** True while a prompt runs. */
  get busy(): boolean {
    return this.#busy;
  }

  /**
   * Runs one prompt to its end. Events stream as they happen; `result` resolves with the
   * stop reason and counts.
   * @param text the user's prompt (non-empty)
   * @param options.signal cancels the prompt: stop reason `cancelled`, history kept valid
   * @throws (through `result`) {AgentError} `llm` when the LLM fails after its retries; the
   *   history stays valid for the next prompt. Calling `prompt` while one runs throws at once.
   */
  prompt(text: string, options: { signal?: AbortSignal } = {}): PromptRun {
    if (this.#busy) throw new AgentError("usage", "Cannot start a prompt: prompt already in flight");
    if (text.trim() === "") throw new AgentError("usage", "Cannot start a prompt: the prompt is empty");
    this.#busy = true;
    const { stream, push, close } = eventStream<AgentEvent, PromptResult>();
    this.#emit = push;
    const signal = options.signal ?? new AbortController().signal;
    this.#run(text, signal).then(
      (result) => close({ result }),
      (error: unknown) => close({ error }),
    ).finally(() => {
      this.#busy = false;
      this.#emit = () => {};
    });
    return stream;
  }

  async #run(text: string, signal: AbortSignal): Promise<PromptResult> {
    const started = this.#now();
    const config = this.#config;
    this.originalTask ??= text;
    this.history.push({ role: "user", text });
    const usage: Usage = { inputTokens: 0, outputTokens: 0 };
    let rounds = 0;
    let toolCalls = 0;
    let objections = 0;
    let objectedLast = false;
    let pauses = 0;
    const finish = (stopReason: StopReason): PromptResult => ({
      stopReason,
      rounds,
      toolCalls,
      objections,
      usage,
      durationMs: this.#now() - started,
    });

    while (true) {
      if (config.maxRounds > 0 && rounds >= config.maxRounds) return finish("max_turn_requests");
      if (signal.aborted) return finish("cancelled");

      let tools: ToolDef[] = await this.#registry.listTools();
      const compaction = await this.#compactor.maybeCompact(this.history, {
        signal,
        emit: this.#emit,
        round: rounds + 1,
        rejectionsUsed: this.stopRejections,
        originalTask: this.originalTask,
        usage,
        tools,
      });
      if (compaction === "cancelled") return finish("cancelled");
      // A _PostCompact timeout may have killed a server: list again after a compaction.
      if (compaction !== "none") tools = await this.#registry.listTools();

      this.#emit({ type: "round-start", round: rounds + 1 });
      const sentBytes = this.#compactor.requestBytes(this.history, tools);
      let streamedText = false;
      let response: LlmResponse;
      try {
        response = await this.#model.complete({
          system: config.systemPrompt,
          history: this.history,
          tools,
          maxOutputTokens: config.maxOutputTokens,
          signal,
          onTextDelta: (delta) => {
            streamedText = true;
            this.#emit({ type: "text-delta", text: delta });
          },
          onThinkingDelta: (delta) => this.#emit({ type: "thinking-delta", text: delta }),
          onRetry: ({ attempt, delayMs, reason }) =>
            this.#emit({ type: "warning", message: `LLM request failed (${reason}); retry ${attempt} in ${delayMs} ms` }),
        });
      } catch (error) {
        if (signal.aborted || isAbortError(error)) return finish("cancelled");
        throw error;
      }
      rounds++;
      if (response.usage) {
        usage.inputTokens += response.usage.inputTokens;
        usage.outputTokens += response.usage.outputTokens;
      }
      this.#compactor.recordUsage(response.usage, sentBytes);

      if (response.stop === "pause_turn" && response.toolCalls.length === 0 && pauses < MAX_PAUSE_CONTINUATIONS) {
        // The provider paused a long turn: send it back unchanged so the model continues.
        pauses++;
        this.#pushAssistant(response, []);
        continue;
      }
      pauses = 0;

      if (response.toolCalls.length === 0 || response.stop === "max_tokens") {
        // A response cut off by the length limit never has its tool calls run (SPEC 6.6).
        this.#pushAssistant(response, []);
        const stop = mapStop(response);
        if (stop === "refusal") {
          this.#forgetPrompt(text);
          // A refusal text that never streamed (OpenAI's `refusal` field) is the explanation.
          const unseen = streamedText ? "" : response.text.trim();
          return { ...finish(stop), refusal: response.refusal ?? (unseen === "" ? NO_REFUSAL_EXPLANATION : unseen) };
        }
        if (stop !== "end_turn") return finish(stop);
        // The _Stop gate (SPEC section 7).
        if (objectedLast) return finish("end_turn");
        if (this.stopRejections >= config.stopMaxRejections) {
          if (config.stopMaxRejections > 0 && this.#registry.hookServers("_Stop").some((s) => hooksEnabledFor(config.hookServers, s))) {
            this.#emit({
              type: "warning",
              message: `Stop-hook budget exhausted (${config.stopMaxRejections} objections used): ending the turn without calling _Stop`,
            });
          }
          return finish("end_turn");
        }
        const results = await this.#hooks.run("_Stop", {
          round: rounds,
          rejectionsUsed: this.stopRejections,
          rejectionsLeft: config.stopMaxRejections - this.stopRejections,
        });
        const objecting = results.filter((r) => r.outcome === "objection");
        if (objecting.length === 0) return finish("end_turn");
        this.stopRejections++;
        objections++;
        objectedLast = true;
        this.history.push(...injectionItems("_Stop", objecting, this.#registry, this.history));
        continue;
      }

      // Legal ids and names for history; calls the loop answers itself (SPEC 2.2, 6.6).
      const prepared = prepareToolCalls(response, this.history, () => ++this.#idCounter);
      let calls = prepared.calls;
      if (calls.length > MAX_TOOL_CALLS_PER_RESPONSE) {
        this.#emit({
          type: "warning",
          message: `The model asked for ${calls.length} tool calls in one response: only the first ${MAX_TOOL_CALLS_PER_RESPONSE} run`,
        });
        calls = calls.slice(0, MAX_TOOL_CALLS_PER_RESPONSE);
      }
      this.#pushAssistant(response, calls);
      objectedLast = false;
      toolCalls += calls.length;
      const results = await runToolCalls(calls, {
        registry: this.#registry,
        signal,
        maxParallel: config.maxParallelTools,
        timeoutMs: config.toolTimeoutMs,
        maxResultBytes: config.maxToolResultBytes,
        refused: prepared.refused,
        emit: this.#emit,
        now: this.#now,
      });
      calls.forEach((call, i) => {
        const outcome = results[i] ?? { content: [{ type: "text", text: "internal error: missing result" }], isError: true };
        this.history.push({ role: "tool", toolCallId: call.id, content: outcome.content, isError: outcome.isError });
      });
      if (signal.aborted) return finish("cancelled");
    }
  }

  /**
   * Drops the refused prompt and everything after it from history: ACP's `refusal` stop
   * reason promises the client that "the user prompt and everything that comes after it won't
   * be included in the next prompt", and Anthropic asks callers to reset the context after a
   * refusal, which the model would otherwise keep refusing. The prompt is found as the last
   * user item with its text (a compaction in between re-appends it).
   */
  #forgetPrompt(text: string): void {
    let i = this.history.length - 1;
    while (i >= 0 && !(this.history[i]!.role === "user" && (this.history[i] as { text: string }).text === text)) i--;
    if (i < 0) return;
    this.history.length = i;
    if (i === 0 && this.originalTask === text) this.originalTask = undefined;
  }

  /**
   * Appends the response as an assistant item with the calls the loop kept. `calls` is always
   * a prefix of the response's calls, in order, some with a new id or name (prepareToolCalls),
   * so the native content goes with it unchanged: the wire client keeps its tool-call blocks
   * in step with `toolCalls` and resends every other block (thinking, unknown types) as is.
   */
  #pushAssistant(response: LlmResponse, calls: ToolCall[]): void {
    const hasNative = (response.native?.content.length ?? 0) > 0;
    if (response.text.trim() === "" && calls.length === 0 && !hasNative) return;
    const item: HistoryItem = { role: "assistant", text: response.text, toolCalls: calls };
    if (response.native !== undefined && hasNative) item.native = response.native;
    this.history.push(item);
  }
}

/** Maps a tool-less response's provider stop to a prompt stop (SPEC section 6.5). */
export function mapStop(response: Pick<LlmResponse, "stop">): StopReason {
  switch (response.stop) {
    case "max_tokens":
      return "max_tokens";
    case "refusal":
      return "refusal";
    default:
      return "end_turn";
  }
}
