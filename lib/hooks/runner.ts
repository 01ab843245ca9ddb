/**
 * Hook calls: which servers run a hook (SPEC section 3), concurrent calls with their own
 * timeouts and the kill on a second consecutive timeout (SPEC section 4), in-process hook
 * functions under the same rules (SPEC section 4.7), and the history items that inject hook
 * output (SPEC section 7).
 * @module
 */

import { numberedCallId, unusedId, usedCallIds } from "../conversation/call-ids.ts";
import { hooksEnabledFor, type HookServers } from "../config/config.ts";
import { AgentError } from "../util/errors.ts";
import type { AgentEvent, AgentObserver, HookHalt, HookOutcome, TraceEvent } from "../conversation/events.ts";
import { childSpan, currentSpan, inSpan, type SpanIds, spanIds } from "../util/trace.ts";
import type { CallToolResult, ToolRegistry } from "../mcp/types.ts";
import { TRUNCATED_MARKER } from "../mcp/registry-tools.ts";
import { formatSeconds } from "../util/time.ts";
import {
  HOOK_POINTS,
  type HookAgent,
  type HookContext,
  type HookMeta,
  type HookName,
  toolPatternsOf,
} from "./points.ts";
import { type HookDecision, parseDecision } from "./decisions.ts";
import { clampUtf8 } from "../util/utf8.ts";
import type { HistoryItem } from "../conversation/types.ts";

/** Largest hook text kept, in UTF-8 bytes (SPEC section 4.3). */
export const MAX_HOOK_TEXT_BYTES = 16 * 1024;
/** Consecutive hook timeouts after which a server is killed (SPEC section 4.4). */
export const HOOK_TIMEOUTS_BEFORE_KILL = 2;

export type { HookContext, HookMeta, HookName } from "./points.ts";

/**
 * What an in-process hook function receives: the `_meta["sprout-agent/hook"]` object an MCP
 * hook gets (SPEC section 2.3), every field filled in.
 * @example
 * const handler: HookHandler = (ctx: HookCall) => (ctx.rejectionsLeft > 0 ? `Check ${ctx.cwd} first` : "");
 */
export type HookCall = { event: string } & Omit<HookMeta, keyof HookContext> & HookContext & {
  /** The subagent the call is about (`_meta["sprout-agent/agent"]` of an MCP hook, SPEC 13.4); absent for the session's own agent. */
  agent?: HookAgent;
};

/**
 * An in-process hook (SPEC section 4.7): returns the hook's text, like an MCP hook's text
 * output: non-blank text objects (`_Stop`), denies the call (`_PreToolUse`), is appended to
 * the tool's result (`_PostToolUse`), is injected (`_PostCompact`, `_SessionStart`,
 * `_UserPromptSubmit`), guides the summary (`_PreCompact`) or logged (`_SessionEnd`); `""` or
 * `undefined` says nothing. It may
 * return a typed answer instead ({@link HookDecision}, SPEC section 7.7), as an MCP hook's
 * `structuredContent`. A throw or a rejection is an `error` outcome. `signal` aborts when the
 * call times out (`hookTimeoutMs`); two timeouts in a row disable the function's group for the
 * session.
 * @example
 * const stop: HookHandler = async (ctx, signal) => (await testsPass(ctx.cwd, signal)) ? "" : "Tests fail";
 * const guard: HookHandler = (ctx) => ctx.toolCall?.tool === "rm" ? { decision: "deny", reason: "no rm" } : undefined;
 */
export type HookHandler = (
  context: HookCall,
  signal: AbortSignal,
) => string | HookDecision | undefined | Promise<string | HookDecision | undefined>;

/**
 * In-process hooks by group name: each group stands where an MCP server would (its name is the
 * `server` of `hook` events and of the injected JSON, and the prefix of the injected call's
 * name), with at most one function per hook point.
 * @example
 * const hooks: InProcessHooks = { policy: { _Stop: (ctx) => ctx.lastAssistantText.includes("TODO") ? "Finish the TODOs" : "" } };
 */
export type InProcessHooks = Readonly<Record<string, Partial<Record<HookName, HookHandler>>>>;

/** How one hook call on one server ended. */
export interface HookResult {
  /** The server's configured name. */
  server: string;
  /** `objection` (non-blank text), `none`, `timeout` or `error` (SPEC section 4.3). */
  outcome: HookOutcome;
  /** The objection (or text to inject), capped at 16 KiB; only for `objection`. */
  text?: string;
  /** Why the call did not count, for `timeout`, `error` and some `none` outcomes. */
  message?: string;
  /**
   * The typed answer (SPEC section 7.7), when the hook sent one in `structuredContent` (or an
   * in-process hook returned an object); then its text blocks are not read.
   */
  decision?: HookDecision;
  /** Time from the call to its end, in whole milliseconds, by the runner's `now` clock. */
  durationMs: number;
}

/** Options of {@link HookRunner}. */
export interface HookRunnerOptions {
  /** The session's servers: which list a hook (`hookServers`), the calls (`callHook`), the kills (`killServer`). */
  registry: ToolRegistry;
  /** `MCP_HOOK_SERVERS`, parsed (SPEC section 3). */
  allow: HookServers;
  /** Per hook call, in ms (`SPROUT_AGENT_HOOK_TIMEOUT_MS`, default 2500). */
  timeoutMs: number;
  /**
   * Receives a `hook` event per call (with the call's span: SPEC 11, tracing) and a `warning` per call
   * that did not count.
   */
  onEvent?: (event: AgentEvent, span?: SpanIds) => void;
  /**
   * Receives a `hook-start` per call as it starts, with the span the call's `_meta.traceparent`
   * names (SPEC sections 10 and 11, tracing); default none.
   */
  observe?: AgentObserver;
  /** Clock in ms for `durationMs`; default `performance.now`. */
  now?: () => number;
  /** Told of each answer that halts the prompt (`continue: false`, SPEC section 7.7), in result order. */
  onHalt?: (halt: HookHalt) => void;
  /**
   * In-process hook functions (SPEC section 4.7), called after the servers, in key order;
   * `MCP_HOOK_SERVERS` does not apply to them (passing them is the opt-in). Names must not be
   * those of servers.
   */
  inProcess?: InProcessHooks;
  /**
   * The subagent this runner's session is (SPEC section 13.4): sent as
   * `_meta["sprout-agent/agent"]` with every hook call, and as `agent` to in-process hooks.
   * Default none: the session's own agent.
   */
  agent?: HookAgent;
}

/**
 * Runs hooks for one session and keeps each server's consecutive-timeout counter (shared by
 * all of the server's hooks). A completed call (any result, `isError` included) resets the
 * counter; a timeout raises it, and at 2 the server is killed through
 * `registry.killServer` and the counter cleared. A JSON-RPC or transport error neither
 * resets nor raises it (SPEC section 4.4): an error proves the server answers, but not that
 * the hook is fast.
 * @example
 * const hooks = new HookRunner({ registry, allow: config.hookServers, timeoutMs: 2500 });
 * const results = await hooks.run("_Stop", { round: 3, rejectionsUsed: 0, rejectionsLeft: 3 });
 * history.push(...injectionItems("_Stop", results, registry));
 */
export class HookRunner {
  #registry: ToolRegistry;
  #allow: HookServers;
  #timeoutMs: number;
  #onEvent: ((event: AgentEvent, span?: SpanIds) => void) | undefined;
  #observe: AgentObserver | undefined;
  #now: () => number;
  #onHalt: ((halt: HookHalt) => void) | undefined;
  #timeouts = new Map<string, number>();
  #inProcess: InProcessHooks;
  /** In-process groups disabled after two consecutive timeouts. */
  #disabled = new Set<string>();
  #agent: HookAgent | undefined;

  /** Creates a runner with every server's consecutive-timeout counter at 0; calls nothing. */
  constructor(options: HookRunnerOptions) {
    this.#registry = options.registry;
    this.#allow = options.allow;
    this.#timeoutMs = options.timeoutMs;
    this.#onEvent = options.onEvent;
    this.#observe = options.observe;
    this.#now = options.now ?? (() => performance.now());
    this.#onHalt = options.onHalt;
    this.#inProcess = options.inProcess ?? {};
    this.#agent = options.agent;
  }

  /**
   * The servers `hook` would be called on now, in configuration order, then the in-process
   * groups that define it and are not disabled. With `toolName` (the tool points), only the
   * servers whose hook tool applies to that qualified name (`toolPatternsOf`, SPEC 7.6).
   */
  targets(hook: string, toolName?: string): string[] {
    // The tool points call a required guard even when it is not running: it fails, and fails
    // closed (SPEC 3.1). Every other point skips a server that is not connected (SPEC 4.1).
    const listing = this.#registry.hookServers(hook, { orRequired: toolName !== undefined });
    const servers = this.#allow.kind === "none"
      ? []
      : listing.filter((server) =>
        hooksEnabledFor(this.#allow, server) &&
        (toolName === undefined || appliesTo(toolPatternsOf(this.#registry.hookTool(server, hook)), toolName))
      );
    const local = Object.keys(this.#inProcess).filter((name) =>
      !this.#disabled.has(name) && typeof this.#inProcess[name]?.[hook as HookName] === "function"
    );
    return [...servers, ...local];
  }

  /** The current consecutive-timeout count of `server` (0 when none). */
  consecutiveTimeouts(server: string): number {
    return this.#timeouts.get(server) ?? 0;
  }

  /**
   * Calls `hook` on every enabled, connected server that lists it, concurrently, each
   * bounded by `timeoutMs` and never cancelled by the session (SPEC section 4.6). Resolves
   * with one result per server in configuration order once every call has ended; never
   * throws. Events are emitted in the same order, to `options.onEvent` when given (a call
   * outside a prompt), else to the runner's `onEvent`. `options.toolName` (the tool points)
   * keeps only the hooks that apply to that qualified tool name. `options.agent` names the
   * agent of this call instead of the runner's (the hook bridge's proxy: one runner for a
   * host session, whose events come from its subagents too).
   */
  async run(
    hook: HookName,
    meta: HookMeta,
    options: { onEvent?: (event: AgentEvent, span?: SpanIds) => void; toolName?: string; agent?: HookAgent } = {},
  ): Promise<HookResult[]> {
    const emit = options.onEvent ?? this.#onEvent;
    const agent = options.agent ?? this.#agent;
    const hookMeta: { event: string } & HookMeta = { event: HOOK_POINTS[hook].event, ...meta };
    const targets = this.targets(hook, options.toolName);
    // Each call is a span of its own, under the current one; its `_meta` names it (SPEC 10).
    const parent = currentSpan();
    const spans = targets.map(() => childSpan(parent));
    const results = await Promise.all(targets.map((server, i) => {
      const span = spans[i]!;
      if (this.#observe !== undefined) {
        const start: Extract<TraceEvent, { type: "hook-start" }> = {
          type: "hook-start",
          hook,
          server,
          effect: HOOK_POINTS[hook].effect,
        };
        if (meta.toolCall !== undefined) start.toolCallId = meta.toolCall.id;
        try {
          this.#observe(start, spanIds(span));
        } catch {
          // an observer never breaks a run
        }
      }
      return inSpan(span, () => this.#callOne(server, hook, hookMeta, agent));
    }));
    for (const [i, result] of results.entries()) {
      const event: Extract<AgentEvent, { type: "hook" }> = {
        type: "hook",
        hook,
        server: result.server,
        outcome: result.outcome,
        durationMs: result.durationMs,
      };
      if (result.text !== undefined) event.text = result.text;
      if (result.message !== undefined) event.message = result.message;
      if (meta.toolCall !== undefined) event.toolCallId = meta.toolCall.id;
      if (result.decision !== undefined) event.decision = result.decision;
      emit?.(event, spanIds(spans[i]));
      if (result.message !== undefined) emit?.({ type: "warning", message: result.message }, spanIds(spans[i]));
    }
    for (const result of results) {
      if (result.decision?.continue !== false) continue;
      const reason = result.decision.stopReason?.trim() || `${hook} of "${result.server}" halted the prompt`;
      this.#onHalt?.({ hook, server: result.server, reason });
    }
    return results;
  }

  /**
   * Fires a hook point: {@link HookRunner.run}, then the history items that inject the
   * non-blank outputs ({@link injectionItems}, with ids not in `history`). What the items
   * mean is the point's effect (`HOOK_POINTS[hook].effect`): for an `objection` point, any
   * item is an objection.
   * @returns every result, the results that had output (`injected`) and their items
   * @example
   * const { injected, items } = await hooks.fire("_Stop", hookMeta(3, 0, 3), history);
   * if (injected.length > 0) history.push(...items);
   */
  async fire(
    hook: HookName,
    meta: HookMeta,
    history: readonly HistoryItem[] = [],
    options: { onEvent?: (event: AgentEvent, span?: SpanIds) => void } = {},
  ): Promise<{ results: HookResult[]; injected: HookResult[]; items: HistoryItem[] }> {
    const results = await this.run(hook, meta, options);
    const injected = results.filter((r) => r.outcome === "objection");
    return { results, injected, items: injectionItems(hook, injected, this.#registry, history) };
  }

  async #callOne(
    server: string,
    hook: HookName,
    hookMeta: { event: string } & HookMeta,
    agent: HookAgent | undefined,
  ): Promise<HookResult> {
    const start = this.#now();
    const done = (fields: Omit<HookResult, "server" | "durationMs">): HookResult => ({
      server,
      ...fields,
      durationMs: Math.round(this.#now() - start),
    });
    let result: CallToolResult;
    try {
      const handler = this.#inProcess[server]?.[hook];
      result = handler !== undefined
        ? await this.#callFunction(server, hook, handler, {
          cwd: "",
          lastAssistantText: "",
          afterObjection: false,
          prompt: 0,
          ...structuredClone(hookMeta),
          ...(agent === undefined ? {} : { agent: { ...agent } }),
        })
        : await this.#registry.callHook(server, hook, {
          timeoutMs: this.#timeoutMs,
          meta: agent === undefined
            ? { "sprout-agent/hook": hookMeta }
            : { "sprout-agent/hook": hookMeta, "sprout-agent/agent": agent },
        });
    } catch (error) {
      if (error instanceof AgentError && error.code === "timeout") return done(this.#timedOut(server, hook));
      const detail = error instanceof Error ? error.message : String(error);
      return done({ outcome: "error", message: `Hook "${hook}" of ${this.#owner(server)} failed: ${detail}` });
    }
    this.#timeouts.set(server, 0);
    try {
      return done(classify(this.#owner(server), hook, result));
    } catch (error) {
      // An in-process hook can return anything, getters that throw included.
      const detail = error instanceof Error ? error.message : String(error);
      return done({ outcome: "error", message: `Hook "${hook}" of ${this.#owner(server)} failed: ${detail}` });
    }
  }

  /** `server "x"`, or `in-process hooks "x"`, for messages. */
  #owner(server: string): string {
    return `${this.#inProcess[server] !== undefined ? "in-process hooks" : "server"} ${JSON.stringify(server)}`;
  }

  /**
   * Runs an in-process hook as a tool call would run: bounded by the hook timeout (its
   * `signal` aborts then), a string result as one text block, a throw as an error.
   */
  async #callFunction(server: string, hook: string, handler: HookHandler, meta: HookCall): Promise<CallToolResult> {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        controller.abort(new AgentError("timeout", `Hook "${hook}" of "${server}" timed out`));
        reject(new AgentError("timeout", `Hook "${hook}" of "${server}" timed out`));
      }, this.#timeoutMs);
    });
    try {
      const value = await Promise.race([Promise.resolve().then(() => handler(meta, controller.signal)), timeout]);
      if (value === undefined) return { content: [] };
      if (typeof value === "object" && value !== null && !Array.isArray(value)) {
        return { content: [], structuredContent: value };
      }
      if (typeof value !== "string") {
        return {
          content: [{ type: "text", text: `the function returned ${typeof value}, not a string or an object` }],
          isError: true,
        };
      }
      return { content: [{ type: "text", text: value }] };
    } finally {
      clearTimeout(timer);
    }
  }

  #timedOut(server: string, hook: string): Omit<HookResult, "server" | "durationMs"> {
    const count = (this.#timeouts.get(server) ?? 0) + 1;
    const local = this.#inProcess[server] !== undefined;
    let message = `Hook "${hook}" of ${this.#owner(server)} timed out after ${
      formatSeconds(this.#timeoutMs)
    } s (${count}/${HOOK_TIMEOUTS_BEFORE_KILL})`;
    if (count >= HOOK_TIMEOUTS_BEFORE_KILL) {
      this.#timeouts.delete(server);
      if (local) {
        this.#disabled.add(server);
        message += "; its hooks are disabled for this session";
      } else {
        this.#registry.killServer(server, `hook timed out ${count} times in a row`);
        message += `; server killed`;
      }
    } else {
      this.#timeouts.set(server, count);
    }
    return { outcome: "timeout", message };
  }
}

/**
 * What a completed hook result counts as (SPEC section 4.3): non-blank text (text blocks
 * joined with `\n`, capped at 16 KiB) is an objection; `isError` is an `error`; whitespace-only
 * text and non-text-only content are `none` with a message (a warning). Empty output (no
 * content, or only empty strings) is the documented way to say "no objection": `none`, quiet.
 */
function classify(owner: string, hook: string, result: CallToolResult): Omit<HookResult, "server" | "durationMs"> {
  const blocks = Array.isArray(result.content) ? result.content : [];
  const texts = blocks.filter((b): b is { type: "text"; text: string } =>
    b.type === "text" && typeof b.text === "string"
  );
  const text = texts.map((b) => b.text).join("\n");
  if (result.isError === true) {
    const detail = text.trim() === "" ? "no message" : clampUtf8(text.trim(), 1024, TRUNCATED_MARKER);
    return { outcome: "error", message: `Hook "${hook}" of ${owner} returned an error: ${detail}` };
  }
  // A typed answer governs; its text blocks are usually the same JSON, serialised (SPEC 7.7).
  const typed = parseDecision(result.structuredContent);
  if (typed !== undefined) {
    const { decision, problems } = typed;
    // A field the point does not read says nothing there (the table of SPEC 7.7).
    const effect = HOOK_POINTS[hook as HookName]?.effect;
    const pre = effect === "deny"; // _PreToolUse
    // `block` at _PreToolUse is Claude Code's older word for deny (lib/hooks/tool-hooks.ts reads it so).
    const read = decision.decision === undefined || pre ||
      (effect === "objection" && decision.decision === "block");
    if (!read) {
      problems.push(
        `"decision" ${JSON.stringify(decision.decision)} means nothing to ${hook} (${
          effect === "objection" ? "block" : "it reads no decision"
        })`,
      );
    }
    const said = decisionText(hook, decision);
    const acts = said !== undefined || decision.continue === false ||
      (pre &&
        (decision.decision === "deny" || decision.decision === "block" || decision.decision === "ask" ||
          decision.updatedInput !== undefined)) ||
      (effect === "append" && decision.updatedResult !== undefined) ||
      (effect !== "objection" && (decision.additionalContext ?? "").trim() !== "");
    const out: Omit<HookResult, "server" | "durationMs"> = { outcome: acts ? "objection" : "none", decision };
    if (said !== undefined) out.text = clampUtf8(said, MAX_HOOK_TEXT_BYTES, TRUNCATED_MARKER);
    if (problems.length > 0) {
      out.message = `Hook "${hook}" of ${owner} sent a typed answer with ignored fields: ${problems.join("; ")}`;
    }
    return out;
  }
  if (text.trim() !== "") return { outcome: "objection", text: clampUtf8(text, MAX_HOOK_TEXT_BYTES, TRUNCATED_MARKER) };
  if (texts.length < blocks.length) {
    return { outcome: "none", message: `Hook "${hook}" of ${owner} returned no text, only other content` };
  }
  if (text !== "" && text.trim() === "") {
    return { outcome: "none", message: `Hook "${hook}" of ${owner} returned only whitespace` };
  }
  return { outcome: "none" };
}

/**
 * The text a typed answer gives a point that injects, guides, objects or logs (SPEC section 7.7):
 * `_Stop`'s `decision: "block"` with its `reason`; an injecting or guiding point's `additionalContext`; a
 * logging point's `additionalContext` or `systemMessage`. The tool points read the answer
 * itself (lib/hooks/tool-hooks.ts), so they get none.
 */
function decisionText(hook: string, decision: HookDecision): string | undefined {
  const effect = HOOK_POINTS[hook as HookName]?.effect;
  const context = (decision.additionalContext ?? "").trim() === "" ? undefined : decision.additionalContext;
  if (effect === "objection") {
    if (decision.decision !== "block") return undefined;
    return (decision.reason ?? "").trim() === "" ? "The stop was blocked (no reason given)." : decision.reason;
  }
  if (effect === "injection" || effect === "guidance") return context;
  if (effect === "log") return context ?? decision.reason;
  return undefined;
}

/**
 * Whether a hook that declares `patterns` (globs over qualified tool names: `*` any run of
 * characters, `?` one; `undefined` = every tool) applies to the tool `name`.
 */
export function appliesTo(patterns: readonly string[] | undefined, name: string): boolean {
  if (patterns === undefined) return true;
  const chars = [...name];
  return patterns.some((pattern) => globMatches([...pattern], chars));
}

/**
 * Whether the glob `pattern` (code points) matches all of `name`: `*` any run, `?` one code
 * point, everything else itself. Greedy with a return to the last `*` only, so at most
 * `pattern.length * name.length` steps whatever the pattern (a RegExp built from a glob such
 * as `*********a` backtracks exponentially, and the globs come from hook servers).
 */
function globMatches(pattern: readonly string[], name: readonly string[]): boolean {
  let p = 0;
  let n = 0;
  let star = -1; // the pattern index after the last `*` seen
  let from = 0; // where in `name` that `*` began to match
  while (n < name.length) {
    if (p < pattern.length && pattern[p] === "*") {
      star = ++p;
      from = n;
    } else if (p < pattern.length && (pattern[p] === "?" || pattern[p] === name[n])) {
      p++;
      n++;
    } else if (star >= 0) {
      p = star;
      n = ++from;
    } else return false;
  }
  while (p < pattern.length && pattern[p] === "*") p++;
  return p === pattern.length;
}

let injectedCount = 0;

/**
 * The history items that inject hook output (SPEC section 7): per objecting server, in the
 * order given, an assistant item with one tool call `{id, name: registry.qualifiedName(server,
 * hook), arguments: {}}` and empty text, then its tool result whose only text is
 * `JSON.stringify({hook, server, text})`. Results other than objections are ignored.
 *
 * The id is `hook` followed by a counter in base 62, 9 letters and digits in all
 * (`hook0000a`): unique within the process and, when `history` is given, never one already
 * in it (SPEC section 7; issue 9 replaced `sprout_hook_<hook>_<server>_<n>`: the
 * Mistral-family chat templates and the Mistral API refuse every id that is not exactly 9
 * alphanumeric characters, so the first objection ended a run with a 400. The hook and the
 * server are still in the call's name and in the result's JSON.)
 * @param history the session's history, whose ids the new ones must not repeat
 * @example
 * injectionItems("_Stop", [{ server: "todo", outcome: "objection", text: "2 open", durationMs: 5 }], registry)
 * // [{role: "assistant", text: "", toolCalls: [{id: "hook00000", name: "todo___Stop", arguments: {}}]},
 * //  {role: "tool", toolCallId: "hook00000", content: [{type: "text", text: '{"hook":"_Stop","server":"todo","text":"2 open"}'}], isError: false}]
 */
export function injectionItems(
  hook: string,
  results: readonly HookResult[],
  registry: ToolRegistry,
  history: readonly HistoryItem[] = [],
): HistoryItem[] {
  const items: HistoryItem[] = [];
  const used = usedCallIds(history);
  for (const result of results) {
    if (result.outcome !== "objection" || result.text === undefined) continue;
    const id = unusedId(used, () => numberedCallId("hook", injectedCount++));
    used.add(id);
    items.push({
      role: "assistant",
      text: "",
      toolCalls: [{ id, name: registry.qualifiedName(result.server, hook), arguments: {} }],
    });
    items.push({
      role: "tool",
      toolCallId: id,
      content: [{ type: "text", text: JSON.stringify({ hook, server: result.server, text: result.text }) }],
      isError: false,
    });
  }
  return items;
}
