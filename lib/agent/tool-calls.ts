/**
 * The tool calls of one response: made safe for history (legal ids and names), then run
 * concurrently with results in call order (SPEC sections 2.2 and 6.6–6.9).
 * @module
 */

import { numberedCallId, unusedId } from "../conversation/call-ids.ts";
import { isAbortError } from "../util/errors.ts";
import type { AgentEvent } from "../conversation/events.ts";
import { TOOL_NAME_PATTERN } from "../mcp/registry-tools.ts";
import type { ToolOutcome, ToolRegistry } from "../mcp/types.ts";
import { historyIndex } from "../conversation/history-index.ts";
import { contentText, formatToolContent } from "../conversation/results.ts";
import type { HistoryItem, LlmResponse, ResultBlock, ToolCall } from "../conversation/types.ts";
import type { BeforeTool, ToolCallHooks } from "../hooks/tool-hooks.ts";
import { childSpan, currentSpan, inSpan } from "../util/trace.ts";

/** The largest result of a tool the session runs itself (a subagent's report), in UTF-8 bytes: 1 MiB. */
export const MAX_LOCAL_RESULT_BYTES = 1024 * 1024;

/** The name kept in history for a tool call whose name no LLM API accepts. */
export const INVALID_TOOL_NAME = "invalid_tool_name";

/** Tool-call ids every API accepts: OpenAI allows at most 40 characters, Anthropic `[a-zA-Z0-9_-]`. */
const LEGAL_ID = /^[a-zA-Z0-9_-]{1,40}$/;

/** A response's calls as they may enter history, and the ones the loop answers itself. */
export interface PreparedCalls {
  /** The calls, in order, with legal unique ids and names. */
  calls: ToolCall[];
  /** Error texts for calls that must not run, by (legal) call id. */
  refused: Record<string, string>;
}

/**
 * Makes a response's tool calls safe for history. Some compatible servers send ids that
 * repeat (`call_0` on every turn), exceed 40 characters or hold other characters: those get a
 * fresh id `call<n in base 62>` of exactly 9 letters and digits (`call00001`, see
 * `lib/conversation/call-ids.ts`: the only form strict chat templates accept), `n` from `newId`, unique
 * within the history. Provider ids that are legal are kept as sent. A name no API accepts would make every later
 * request fail: it is kept as {@link INVALID_TOOL_NAME} and answered `unknown tool: "<name>"`
 * (SPEC section 2.2). Arguments that were not a JSON object (`response.argumentErrors`) are
 * answered with that error instead of running the tool.
 * @param history the session's history, whose ids must not be reused (looked up in its
 *   incremental index, `lib/conversation/history-index.ts`, so the cost does not grow with the history)
 * @param newId returns a new number for each fresh id
 * @example
 * prepareToolCalls({ toolCalls: [{ id: "call_0", name: "fs__read", arguments: {} }] }, history, () => ++n)
 * // {calls: [{id: "call00001", …}], refused: {}} when `call_0` is already in history
 */
export function prepareToolCalls(
  response: Pick<LlmResponse, "toolCalls" | "argumentErrors">,
  history: readonly HistoryItem[],
  newId: () => number,
): PreparedCalls {
  const index = historyIndex(history);
  const batch = new Set<string>();
  const used = { has: (id: string) => batch.has(id) || index.has(id) };
  const refused: Record<string, string> = {};
  const calls = response.toolCalls.map((original) => {
    let id = original.id;
    if (!LEGAL_ID.test(id) || used.has(id)) id = unusedId(used, () => numberedCallId("call", newId()));
    batch.add(id);
    const call = id === original.id ? original : { ...original, id };
    if (!TOOL_NAME_PATTERN.test(call.name)) {
      refused[id] = `unknown tool: ${JSON.stringify(call.name)} (not a tool name the API accepts)`;
      return { ...call, name: INVALID_TOOL_NAME };
    }
    const badArguments = response.argumentErrors?.[original.id];
    if (badArguments !== undefined) refused[id] = `Invalid tool arguments: ${badArguments}`;
    return call;
  });
  return { calls, refused };
}

/** Options of {@link runToolCalls}. */
export interface RunToolCallsOptions {
  /** Where the calls go (by the name the LLM used). */
  registry: ToolRegistry;
  /** Cancels the calls: in-flight ones get `notifications/cancelled`, all get a `cancelled` result. */
  signal: AbortSignal;
  /** At most this many at once (`SPROUT_AGENT_MAX_PARALLEL_TOOLS`). */
  maxParallel: number;
  /** Per call (`SPROUT_AGENT_TOOL_TIMEOUT_SECS` in milliseconds). */
  timeoutMs: number;
  /** Per result sent to the LLM (`SPROUT_AGENT_MAX_TOOL_RESULT_BYTES`). */
  maxResultBytes: number;
  /** Calls answered with this error text instead of running, by call id. */
  refused: Record<string, string>;
  /** Receives `tool-start`, `tool-progress` and `tool-end` events. */
  emit: (event: AgentEvent) => void;
  /** Milliseconds clock for durations. */
  now: () => number;
  /**
   * `_PreToolUse` and `_PostToolUse` around each call that runs (SPEC section 7.6); default
   * none. A call refused above, or cancelled, calls no hook.
   */
  hooks?: ToolCallHooks;
  /** Called with each call's outcome as the call ends, before `tool-end` (the transcript writes it then). */
  onResult?: (index: number, outcome: ToolOutcome) => void;
  /**
   * Tools the session runs itself (subagents, SPEC section 13.3) instead of sending them to
   * the registry: the permission policy and the tool hooks apply as to any call; the tool
   * timeout does not (a subagent has its own limits), and a cancel is waited for, so the
   * child has stopped when the call's `cancelled` result is given.
   */
  local?: LocalTools;
}

/** Tools a session answers itself (its subagents), by the name the model uses. */
export interface LocalTools {
  /** True when `name` is one of them. */
  has(name: string): boolean;
  /**
   * Runs the call; its events go to `emit`. Never throws: failures are `isError` outcomes.
   * `signal` aborts it (then it resolves, soon, with whatever it has).
   */
  call(
    call: ToolCall,
    args: Record<string, unknown>,
    options: { signal: AbortSignal; emit: (event: AgentEvent) => void },
  ): Promise<ToolOutcome>;
}

/**
 * Runs calls concurrently and returns one outcome per call, in call order whatever order they
 * finish in (SPEC section 6.6). Failures are outcomes with `isError` (SPEC 6.8); a cancel
 * answers every unfinished call `cancelled` at once (SPEC 6.9). Never throws.
 */
export async function runToolCalls(calls: readonly ToolCall[], options: RunToolCallsOptions): Promise<ToolOutcome[]> {
  const { signal } = options;
  const results: ToolOutcome[] = new Array(calls.length);
  let next = 0;
  const cancelled = (): ToolOutcome => ({ content: [{ type: "text", text: "cancelled" }], isError: true });
  // Each call is a span under the prompt's: its MCP request and its hooks carry it (SPEC 10).
  const parent = currentSpan();
  const worker = async () => {
    while (next < calls.length) {
      const index = next++;
      await inSpan(childSpan(parent), () => runOne(index));
    }
  };
  const runOne = async (index: number) => {
    {
      const call = calls[index]!;
      const started = options.now();
      options.emit({ type: "tool-start", id: call.id, name: call.name, arguments: call.arguments });
      let outcome: ToolOutcome;
      const refusal = options.refused[call.id];
      // The hooks run outside the cancel (SPEC 4.6), but a cancel during _PreToolUse runs nothing.
      const before = signal.aborted || refusal !== undefined || options.hooks === undefined
        ? undefined
        : await options.hooks.before(call, signal).catch((error: unknown): BeforeTool => ({
          // Never expected (before() never throws); but a call must get its one result.
          run: false,
          outcome: { content: [{ type: "text", text: `_PreToolUse failed: ${messageOf(error)}` }], isError: true },
        }));
      if (signal.aborted) outcome = cancelled();
      else if (refusal !== undefined) outcome = { content: [{ type: "text", text: refusal }], isError: true };
      else if (before !== undefined && !before.run) outcome = before.outcome;
      else {
        const args = before?.arguments ?? call.arguments;
        let ran = false;
        const local = options.local?.has(call.name) === true ? options.local : undefined;
        try {
          const raw = local !== undefined
            ? await local.call({ ...call, arguments: args }, args, { signal, emit: options.emit })
            : await raceAbort(
              options.registry.callTool(call.name, args, {
                signal,
                timeoutMs: options.timeoutMs,
                callId: call.id,
                onProgress: (message) => options.emit({ type: "tool-progress", id: call.id, name: call.name, message }),
              }),
              signal,
            );
          if (local !== undefined && signal.aborted) throw new DOMException("cancelled", "AbortError");
          // A subagent's report is its own (SPEC 13.5): whole, up to MAX_LOCAL_RESULT_BYTES.
          const max = local === undefined
            ? options.maxResultBytes
            : Math.max(options.maxResultBytes, MAX_LOCAL_RESULT_BYTES);
          outcome = { content: formatToolContent(raw.content, max), isError: raw.isError };
          ran = true;
        } catch (error) {
          outcome = signal.aborted || isAbortError(error) ? cancelled() : {
            content: [{ type: "text", text: `Tool call failed: ${(error as Error).message}` }],
            isError: true,
          };
          ran = !(signal.aborted || isAbortError(error));
        }
        const notes: ResultBlock[] = before?.run ? before.notes : [];
        if (options.hooks !== undefined && ran && !signal.aborted) {
          const shaped = outcome;
          outcome = await options.hooks.after({ ...call, arguments: args }, outcome, notes)
            .catch(() => ({ ...shaped, content: [...shaped.content, ...notes] }));
        } else if (notes.length > 0 && !signal.aborted) {
          outcome = { ...outcome, content: [...outcome.content, ...notes] };
        }
      }
      results[index] = outcome;
      options.onResult?.(index, outcome);
      options.emit({
        type: "tool-end",
        id: call.id,
        name: call.name,
        ok: !outcome.isError,
        durationMs: options.now() - started,
        output: contentText(outcome.content),
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.maxParallel, calls.length) }, worker));
  return results;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Settles with `promise`, or rejects with an `AbortError` as soon as `signal` aborts. */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new DOMException("cancelled", "AbortError"));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new DOMException("cancelled", "AbortError"));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
