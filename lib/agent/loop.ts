/**
 * One agent session and its prompts: rounds, tool execution, the `_Stop` gate, compaction and
 * the session's hook points (SPEC sections 6, 7 and 8). No I/O of its own: the model, the tool
 * registry and the clock are passed in, so tests can hand it fakes.
 * @module
 */

import process from "node:process";
import type { Config } from "../config/config.ts";
import { AgentError, isAbortError } from "../util/errors.ts";
import {
  addUsage,
  type AgentEvent,
  type HookHalt,
  NO_REFUSAL_EXPLANATION,
  type PromptLimit,
  type PromptResult,
} from "../conversation/events.ts";
import { type HookContext, type HookMeta, hookMeta, MAX_HOOK_CONTEXT_TEXT_BYTES } from "../hooks/points.ts";
import { HookRunner, type InProcessHooks } from "../hooks/runner.ts";
import type { PermissionAsk } from "../hooks/permission.ts";
import { toolCallHooks } from "../hooks/tool-hooks.ts";
import { TRUNCATED_MARKER } from "../mcp/registry-tools.ts";
import { clampUtf8 } from "../util/utf8.ts";
import type { ToolRegistry } from "../mcp/types.ts";
import { type EventStream, eventStream } from "../util/stream.ts";
import { prepareToolCalls, runToolCalls } from "./tool-calls.ts";
import type {
  HistoryItem,
  LlmResponse,
  Model,
  ResultBlock,
  StopReason,
  ToolCall,
  ToolDef,
  Usage,
} from "../conversation/types.ts";
import { Compactor } from "../context/compactor.ts";
import type { SessionCounters } from "../sessions/records.ts";
import type { Transcript } from "../sessions/transcript.ts";
import { RepeatedCalls } from "./repeated-calls.ts";

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
  /** The working directory hooks see as `cwd` (SPEC section 2.3); default `process.cwd()`. */
  cwd?: string;
  /** In-process hook functions, beside the servers' hooks (SPEC section 4.7); default none. */
  hooks?: InProcessHooks;
  /**
   * Answers an `ask` of the permission policy or a `_PreToolUse` hook (SPEC section 7.8);
   * default none: an `ask` denies the call with a reason naming the setting that allows it.
   */
  ask?: PermissionAsk;
  /**
   * Where the session's records go (SPEC section 12.3): written before each model request,
   * as each tool call ends, and when each prompt ends; default none.
   */
  transcript?: Transcript;
  /**
   * A session brought back from its transcript (`restoreSession`): its history and counters
   * are the session's, and `_SessionStart` says `source: "resume"`. Default: a new session.
   */
  restored?: { history: HistoryItem[]; counters: SessionCounters };
}

/**
 * A prompt in progress: iterate its events, await its result.
 * @example
 * const run: PromptRun = agent.prompt("fix the tests");
 * for await (const event of run) if (event.type === "text-delta") console.log(event.text);
 * const { stopReason } = await run.result;
 */
export type PromptRun = EventStream<AgentEvent, PromptResult>;

/** What the steps of one prompt share: its input and its counts so far. */
interface PromptState {
  readonly text: string;
  /** The prompt's 1-based number in the session. */
  readonly number: number;
  readonly signal: AbortSignal;
  /** `now()` when the prompt started. */
  readonly started: number;
  readonly usage: Usage;
  rounds: number;
  toolCalls: number;
  objections: number;
  /** The last round ended in a `_Stop` objection: the next end of turn is final (SPEC 7.1). */
  objectedLast: boolean;
  /** `pause_turn` continuations in a row. */
  pauses: number;
  /** The first hook answer that halted the prompt (`continue: false`, SPEC 7.7). */
  halt?: HookHalt;
  /** The session bound that ends the prompt (SPEC 8.6). */
  limit?: PromptLimit;
}

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
  /**
   * The conversation so far; valid for the next request after every prompt (SPEC section 6).
   * Change it between prompts only, by replacing, adding or removing items, never by editing
   * an item in place: each item's size is measured once (`lib/conversation/history-index.ts`).
   */
  readonly history: HistoryItem[] = [];
  /** `_Stop` objections used in this session (never reset; SPEC section 7.2). */
  stopRejections = 0;
  /** The first prompt of the session, kept for compaction summaries. */
  originalTask: string | undefined;
  /** Prompts started in this session. */
  prompts = 0;
  readonly #config: Config;
  readonly #model: Model;
  readonly #registry: ToolRegistry;
  readonly #now: () => number;
  readonly #hooks: HookRunner;
  readonly #compactor: Compactor;
  /** Identical tool calls in a row, per session: they survive compaction (SPEC 8.6). */
  readonly #repeats = new RepeatedCalls();
  readonly #cwd: string;
  /** `_SessionStart` in flight or done (it fires once). */
  #starting: Promise<void> | undefined;
  /** `_SessionStart` items waiting for the first prompt (SPEC section 7.5). */
  #pending: HistoryItem[] = [];
  #emit: (event: AgentEvent) => void = () => {};
  /** The prompt running now, for the halts its hooks announce. */
  #current: PromptState | undefined;
  /** A `_SessionStart` halt, waiting for the first prompt (which then ends at once). */
  #sessionHalt: HookHalt | undefined;
  /** True while `_SessionStart` runs: a halt then is kept for the first prompt. */
  #collectHalts = false;
  readonly #ask: PermissionAsk | undefined;
  /** "Always" answers of the person, by qualified tool name: they hold for the session. */
  readonly #remembered = new Map<string, "allow" | "deny">();
  #busy = false;
  #idCounter = 0;
  readonly #transcript: Transcript | undefined;
  readonly #resumed: boolean;

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
    this.#cwd = options.cwd ?? process.cwd();
    this.#ask = options.ask;
    this.#transcript = options.transcript;
    this.#resumed = options.restored !== undefined;
    this.#hooks = new HookRunner({
      registry: options.registry,
      allow: options.config.hookServers,
      timeoutMs: options.config.hookTimeoutMs,
      onEvent: (event) => this.#emit(event),
      // A halt outside a prompt is _SessionStart's (kept for the first prompt, see start()) or
      // _SessionEnd's (nothing is left to halt).
      onHalt: (halt) => {
        if (this.#current !== undefined) this.#current.halt ??= halt;
        else if (this.#collectHalts) this.#sessionHalt ??= halt;
      },
      ...(options.hooks === undefined ? {} : { inProcess: options.hooks }),
    });
    this.#compactor = new Compactor({
      config: options.config,
      model: options.model,
      hooks: this.#hooks,
      registry: options.registry,
    });
    const restored = options.restored;
    if (restored !== undefined) {
      const { counters } = restored;
      this.history.push(...restored.history);
      this.stopRejections = counters.stopRejections;
      this.prompts = counters.prompts;
      this.originalTask = counters.originalTask;
      this.#compactor.handoffs = counters.handoffs;
      for (const [name, answer] of Object.entries(counters.permissions)) this.#remembered.set(name, answer);
    }
  }

  /** The counters a transcript keeps (SPEC section 12.2). */
  get counters(): SessionCounters {
    const counters: SessionCounters = {
      stopRejections: this.stopRejections,
      prompts: this.prompts,
      handoffs: this.#compactor.handoffs,
      permissions: Object.fromEntries(this.#remembered),
    };
    if (this.originalTask !== undefined) counters.originalTask = this.originalTask;
    return counters;
  }

  /** Writes what changed to the transcript, if there is one (SPEC section 12.3). */
  #checkpoint(): Promise<void> {
    return this.#transcript?.checkpoint(this.history, this.counters) ?? Promise.resolve();
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
   * The `_SessionStart` hook point (SPEC section 7.5): fires once, before the first prompt;
   * its non-blank outputs are kept and injected right after the first prompt's user item. A
   * later call does nothing; a first prompt without it fires it itself. Never throws.
   * @param onEvent receives the `hook` and `warning` events of the calls
   */
  start(onEvent: (event: AgentEvent) => void = () => {}): Promise<void> {
    if (this.#starting === undefined) {
      this.#collectHalts = true;
      // Claude Code's SessionStart `source`: a session brought back from its transcript says so.
      const source = this.#resumed ? "resume" : "startup";
      this.#starting = this.#sessionHook("_SessionStart", onEvent, { source }).then((items) => {
        this.#pending = items;
      }).finally(() => (this.#collectHalts = false));
    }
    return this.#starting;
  }

  /**
   * The `_SessionEnd` hook point (SPEC section 7.5): called by `Agent.close` before the servers
   * close; each call bounded by the hook timeout. Its outputs are only reported, as `hook`
   * events with their text. Never throws.
   * @param onEvent receives the `hook` and `warning` events of the calls
   */
  async end(onEvent: (event: AgentEvent) => void = () => {}): Promise<void> {
    await this.#sessionHook("_SessionEnd", onEvent);
  }

  /** Fires a session hook point (round 0), its events to `onEvent`; resolves with its items. */
  async #sessionHook(
    hook: "_SessionStart" | "_SessionEnd",
    onEvent: (event: AgentEvent) => void,
    extra: Pick<HookMeta, "source"> = {},
  ): Promise<HistoryItem[]> {
    const meta = {
      ...hookMeta(0, this.stopRejections, this.#config.stopMaxRejections, this.#hookContext(undefined)),
      ...extra,
    };
    return (await this.#hooks.fire(hook, meta, this.history, { onEvent })).items;
  }

  /** The session fields of a hook's `_meta` (SPEC section 2.3). */
  #hookContext(prompt: PromptState | undefined): HookContext {
    return {
      cwd: this.#cwd,
      lastAssistantText: lastAssistantText(this.history),
      afterObjection: prompt?.objectedLast ?? false,
      prompt: prompt?.number ?? this.prompts,
    };
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
      async (result) => {
        // The prompt's last items and its end are written before the caller learns the result.
        await this.#checkpoint();
        await this.#transcript?.end(this.prompts, result);
        close({ result });
      },
      async (error: unknown) => {
        await this.#checkpoint();
        close({ error });
      },
    ).finally(() => {
      this.#busy = false;
      this.#current = undefined;
      this.#emit = () => {};
    });
    return stream;
  }

  /**
   * A prompt: rounds until one ends it. Each round is {@link AgentSession.#round}: compact,
   * list tools, call the model, then handle a pause, the end of the turn (with the `_Stop`
   * gate) or the tool calls.
   */
  async #run(text: string, signal: AbortSignal): Promise<PromptResult> {
    await this.start(this.#emit);
    this.originalTask ??= text;
    this.prompts++;
    this.history.push({ role: "user", text });
    const prompt: PromptState = {
      text,
      number: this.prompts,
      signal,
      started: this.#now(),
      usage: { inputTokens: 0, outputTokens: 0 },
      rounds: 0,
      toolCalls: 0,
      objections: 0,
      objectedLast: false,
      pauses: 0,
    };
    if (this.#sessionHalt !== undefined) prompt.halt = this.#sessionHalt;
    this.#sessionHalt = undefined;
    this.#current = prompt;
    // _SessionStart (first prompt) and _UserPromptSubmit output follows the user item: the
    // shape of a tool round, which every wire format and chat template accepts (SPEC 7.5).
    this.history.push(...this.#pending);
    this.#pending = [];
    const submitted = await this.#hooks.fire(
      "_UserPromptSubmit",
      hookMeta(1, this.stopRejections, this.#config.stopMaxRejections, this.#hookContext(prompt)),
      this.history,
    );
    this.history.push(...submitted.items);
    while (true) {
      const result = await this.#round(prompt);
      if (result !== undefined) return result;
    }
  }

  /** One round; resolves with the prompt's result when the round ends the prompt, else `undefined`. */
  async #round(prompt: PromptState): Promise<PromptResult | undefined> {
    const { maxRounds } = this.#config;
    // A hook's `continue: false` (SPEC 7.7) ends the prompt before any further model call.
    if (prompt.halt !== undefined) return this.#finish(prompt, "end_turn");
    if (maxRounds > 0 && prompt.rounds >= maxRounds) return this.#finish(prompt, "max_turn_requests");
    if (prompt.signal.aborted) return this.#finish(prompt, "cancelled");
    const tools = await this.#compact(prompt);
    if (tools === "cancelled") return this.#finish(prompt, "cancelled");
    if (prompt.halt !== undefined) return this.#finish(prompt, "end_turn");
    if (prompt.limit !== undefined) return this.#finish(prompt, "max_tokens");
    this.#emit({ type: "round-start", round: prompt.rounds + 1 });
    const called = await this.#callModel(prompt, tools);
    if (called === "cancelled") return this.#finish(prompt, "cancelled");
    const { response, streamedText } = called;
    if (this.#continuesPause(prompt, response)) return undefined;
    // One pause more than the agent continues: the prompt ends with a reason of its own,
    // not as an end of turn (no `_Stop` gate: the model did not end it). SPEC 6.5.
    if (response.stop === "pause_turn" && response.toolCalls.length === 0) {
      this.#pushAssistant(response, []);
      return this.#finish(prompt, "max_pause_turns");
    }
    // A response cut off by the length limit never has its tool calls run (SPEC 6.6).
    if (response.toolCalls.length === 0 || response.stop === "max_tokens") {
      return this.#endTurn(prompt, response, streamedText);
    }
    await this.#runTools(prompt, response);
    if (prompt.signal.aborted) return this.#finish(prompt, "cancelled");
    return prompt.limit === undefined ? undefined : this.#finish(prompt, "max_turn_requests");
  }

  /** The prompt's result with `stopReason` and the counts so far. */
  #finish(prompt: PromptState, stopReason: StopReason): PromptResult {
    const { rounds, toolCalls, objections, usage, halt } = prompt;
    const result: PromptResult = {
      stopReason,
      rounds,
      toolCalls,
      objections,
      usage,
      durationMs: this.#now() - prompt.started,
    };
    if (halt !== undefined && stopReason === "end_turn") result.halt = halt;
    else if (prompt.limit !== undefined && stopReason !== "cancelled") result.limit = prompt.limit;
    return result;
  }

  /**
   * The compaction gate before a round (SPEC section 8); resolves with the tools the round
   * sends, listed again after a compaction (a `_PostCompact` timeout may have killed a server).
   */
  async #compact(prompt: PromptState): Promise<ToolDef[] | "cancelled"> {
    const tools = await this.#registry.listTools();
    const compaction = await this.#compactor.maybeCompact(this.history, {
      signal: prompt.signal,
      emit: this.#emit,
      round: prompt.rounds + 1,
      rejectionsUsed: this.stopRejections,
      hookContext: () => this.#hookContext(prompt),
      originalTask: this.originalTask,
      usage: prompt.usage,
      tools,
      repeatedCalls: this.#repeats.max,
    });
    if (compaction === "cancelled") return "cancelled";
    const sent = compaction === "none" ? tools : await this.#registry.listTools();
    // The window guard (SPEC 8.6): a request over the window is never sent.
    const limit = prompt.limit ?? this.#compactor.overWindow(this.history, sent);
    if (limit !== undefined) prompt.limit = limit;
    return sent;
  }

  /** Sends the round's request, streaming its text; counts the round and its usage. */
  async #callModel(
    prompt: PromptState,
    tools: ToolDef[],
  ): Promise<{ response: LlmResponse; streamedText: boolean } | "cancelled"> {
    const { signal } = prompt;
    // Crash-safe: what the request sends is in the transcript before it is sent (SPEC 12.3).
    await this.#checkpoint();
    const sentBytes = this.#compactor.requestBytes(this.history, tools);
    let streamedText = false;
    let response: LlmResponse;
    try {
      response = await this.#model.complete({
        system: this.#config.systemPrompt,
        history: this.history,
        tools,
        maxOutputTokens: this.#config.maxOutputTokens,
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
      if (signal.aborted || isAbortError(error)) return "cancelled";
      throw error;
    }
    prompt.rounds++;
    addUsage(prompt.usage, response.usage);
    this.#compactor.recordUsage(response.usage, sentBytes);
    return { response, streamedText };
  }

  /**
   * True when the provider paused a long turn (`pause_turn`, no tool calls) and the pause is
   * sent back unchanged so the model continues (at most {@link MAX_PAUSE_CONTINUATIONS} in a row).
   */
  #continuesPause(prompt: PromptState, response: LlmResponse): boolean {
    if (response.stop === "pause_turn" && response.toolCalls.length === 0 && prompt.pauses < MAX_PAUSE_CONTINUATIONS) {
      prompt.pauses++;
      this.#pushAssistant(response, []);
      return true;
    }
    prompt.pauses = 0;
    return false;
  }

  /** A response without tool calls to run: the prompt ends, unless the `_Stop` gate objects. */
  async #endTurn(prompt: PromptState, response: LlmResponse, streamedText: boolean): Promise<PromptResult | undefined> {
    this.#pushAssistant(response, []);
    const stop = mapStop(response);
    if (stop === "refusal") {
      this.#forgetPrompt(prompt.text);
      // A refusal text that never streamed (OpenAI's `refusal` field) is the explanation.
      const unseen = streamedText ? "" : response.text.trim();
      return {
        ...this.#finish(prompt, stop),
        refusal: response.refusal ?? (unseen === "" ? NO_REFUSAL_EXPLANATION : unseen),
      };
    }
    if (stop !== "end_turn") return this.#finish(prompt, stop);
    return await this.#stopGate(prompt);
  }

  /**
   * The `_Stop` hook point (SPEC section 7, lib/hooks/points.ts): an objection injects its
   * text and the prompt goes on; no objection, an objection in the round before (unless
   * `stopDeclinedTwice` is off), or an exhausted budget ends the turn.
   */
  async #stopGate(prompt: PromptState): Promise<PromptResult | undefined> {
    const max = this.#config.stopMaxRejections;
    if (prompt.objectedLast && this.#config.stopDeclinedTwice) return this.#finish(prompt, "end_turn");
    if (this.stopRejections >= max) {
      if (max > 0 && this.#hooks.targets("_Stop").length > 0) {
        this.#emit({
          type: "warning",
          message: `Stop-hook budget exhausted (${max} objections used): ending the turn without calling _Stop`,
        });
      }
      return this.#finish(prompt, "end_turn");
    }
    const { injected, items } = await this.#hooks.fire(
      "_Stop",
      hookMeta(prompt.rounds, this.stopRejections, max, this.#hookContext(prompt)),
      this.history,
    );
    // A halt ends the turn as it is: no objection is injected or counted (SPEC 7.7).
    if (injected.length === 0 || prompt.halt !== undefined) return this.#finish(prompt, "end_turn");
    this.stopRejections++;
    prompt.objections++;
    prompt.objectedLast = true;
    this.history.push(...items);
    return undefined;
  }

  /** Runs the response's tool calls (at most {@link MAX_TOOL_CALLS_PER_RESPONSE}) and appends their results. */
  async #runTools(prompt: PromptState, response: LlmResponse): Promise<void> {
    const config = this.#config;
    // Legal ids and names for history; calls the loop answers itself (SPEC 2.2, 6.6).
    const prepared = prepareToolCalls(response, this.history, () => ++this.#idCounter);
    let calls = prepared.calls;
    if (calls.length > MAX_TOOL_CALLS_PER_RESPONSE) {
      this.#emit({
        type: "warning",
        message:
          `The model asked for ${calls.length} tool calls in one response: only the first ${MAX_TOOL_CALLS_PER_RESPONSE} run`,
      });
      calls = calls.slice(0, MAX_TOOL_CALLS_PER_RESPONSE);
    }
    this.#pushAssistant(response, calls);
    prompt.objectedLast = false;
    prompt.toolCalls += calls.length;
    // The calls are in the transcript before they run, each result as its call ends: a process
    // killed meanwhile leaves every finished result and the calls still running (SPEC 12.3).
    await this.#checkpoint();
    const items: Extract<HistoryItem, { role: "tool" }>[] = new Array(calls.length);
    const results = await runToolCalls(calls, {
      onResult: (index, outcome) => {
        const item = {
          role: "tool" as const,
          toolCallId: calls[index]!.id,
          content: outcome.content,
          isError: outcome.isError,
        };
        items[index] = item;
        void this.#transcript?.result(item);
      },
      registry: this.#registry,
      signal: prompt.signal,
      maxParallel: config.maxParallelTools,
      timeoutMs: config.toolTimeoutMs,
      maxResultBytes: config.maxToolResultBytes,
      refused: prepared.refused,
      emit: this.#emit,
      now: this.#now,
      hooks: toolCallHooks({
        runner: this.#hooks,
        registry: this.#registry,
        meta: () => hookMeta(prompt.rounds, this.stopRejections, config.stopMaxRejections, this.#hookContext(prompt)),
        policy: config.permissions,
        remembered: this.#remembered,
        ...(this.#ask === undefined ? {} : { ask: this.#ask }),
      }),
    });
    calls.forEach((call, i) => {
      const outcome = results[i] ??
        { content: [{ type: "text", text: "internal error: missing result" }], isError: true };
      this.history.push(
        items[i] ?? { role: "tool", toolCallId: call.id, content: outcome.content, isError: outcome.isError },
      );
      this.#countRepeat(prompt, call, outcome);
    });
    await this.#transcript?.flush();
  }

  /**
   * The bound on identical calls in a row (SPEC 8.6): the call that reaches
   * `SPROUT_AGENT_MAX_REPEATED_CALLS` has run and has its result; the prompt ends after the round.
   */
  #countRepeat(prompt: PromptState, call: ToolCall, outcome: { content: ResultBlock[]; isError: boolean }): void {
    const max = this.#config.maxRepeatedCalls;
    const count = this.#repeats.record(call.name, call.arguments, outcome.content, outcome.isError);
    if (max === 0 || count < max || prompt.limit !== undefined) return;
    this.#repeats.clear(); // the next prompt starts counting afresh
    prompt.limit = {
      kind: "repeated-call",
      variable: "SPROUT_AGENT_MAX_REPEATED_CALLS",
      tool: call.name,
      count,
      reason: `Stopped a loop: ${call.name} ran ${count} times in a row with the same arguments and the same ` +
        `result (SPROUT_AGENT_MAX_REPEATED_CALLS=${max}). Prompt again with another approach, or raise the ` +
        "bound (0 = no bound)",
    };
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

/**
 * The text of the last assistant item with text, clamped for a hook's `_meta` (SPEC 2.3):
 * injected hook calls have none, so they are skipped.
 */
function lastAssistantText(history: readonly HistoryItem[]): string {
  for (let i = history.length - 1; i >= 0; i--) {
    const item = history[i]!;
    if (item.role === "assistant" && item.text.trim() !== "") {
      return clampUtf8(item.text, MAX_HOOK_CONTEXT_TEXT_BYTES, TRUNCATED_MARKER);
    }
  }
  return "";
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
