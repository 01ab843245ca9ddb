/**
 * The scripted model (SPEC section 11, provider `scripted`): replays a JSON array of turns
 * from `SPROUT_AGENT_SCRIPT`, so the agent can run end to end without a network.
 * @module
 */

import process from "node:process";
import { type Env, expandVars } from "../util/env.ts";
import { sleep } from "../util/time.ts";
import { abortError, AgentError } from "../util/errors.ts";
import type { HistoryItem, LlmRequest, LlmResponse, Model, ProviderStop, ToolCall } from "../conversation/types.ts";

/**
 * One scripted LLM response (SPEC section 11).
 * @example
 * const turns: ScriptTurn[] = [{ toolCalls: [{ name: "fs__read", arguments: { path: "a" } }] }, { text: "done", usage: { inputTokens: 10, outputTokens: 2 } }];
 */
export interface ScriptTurn {
  /** The assistant's text, emitted through `onTextDelta` in a few chunks; default `""`. */
  text?: string;
  /** `name` is the name the LLM sees (qualified, mapped). Ids are `call_<n>`. */
  toolCalls?: { name: string; arguments?: Record<string, unknown> }[];
  /**
   * Default `tool_use` with tool calls, else `end_turn`. `max_tokens` with calls = truncated;
   * `pause_turn` = the provider paused the turn (Anthropic), continued by the loop.
   */
  stop?: "end_turn" | "max_tokens" | "refusal" | "tool_use" | "pause_turn";
  /** No usage: none reported. */
  usage?: { inputTokens: number; outputTokens: number };
}

/**
 * Options of {@link createScriptedModel}.
 * @example
 * const model = createScriptedModel([{ text: "hi" }], { path: "greeting.json" } satisfies ScriptedOptions);
 */
export interface ScriptedOptions {
  /** Names the script in errors; default `(in-memory script)`. */
  path?: string;
}

const STOPS = ["end_turn", "max_tokens", "refusal", "tool_use", "pause_turn"];

/**
 * A model that answers each turn request with the next scripted turn. Requests with
 * `purpose: "summary"` do not consume turns: they get a fixed summary made from the request's
 * user text. Text is emitted through `onTextDelta` in a few chunks. Tool-call ids are
 * `call_1`, `call_2`, … counted across this model instance (one session).
 * @throws {AgentError} code `llm` from `complete` when the turns run out:
 *   `Scripted model ran out of turns: "script.json" has 2 turns`
 * @example
 * const model = createScriptedModel([{ toolCalls: [{ name: "fs__read", arguments: { path: "a" } }] }, { text: "done" }]);
 */
export function createScriptedModel(turns: readonly ScriptTurn[], options: ScriptedOptions = {}): Model {
  const path = options.path ?? "(in-memory script)";
  let next = 0;
  let callCount = 0;
  return {
    name: `scripted:${path}`,
    async complete(request: LlmRequest): Promise<LlmResponse> {
      if (request.signal?.aborted) throw abortError();
      if (request.purpose === "summary") {
        const text = summaryOf(request.history);
        await emit(text, request);
        return { text, toolCalls: [], stop: "end_turn" };
      }
      const turn = turns[next];
      if (turn === undefined) {
        throw new AgentError(
          "llm",
          `Scripted model ran out of turns: ${JSON.stringify(path)} has ${turns.length} turns`,
        );
      }
      next++;
      const toolCalls: ToolCall[] = (turn.toolCalls ?? []).map((c) => ({
        id: `call_${++callCount}`,
        name: c.name,
        arguments: c.arguments ?? {},
      }));
      const text = turn.text ?? "";
      await emit(text, request);
      const stop: ProviderStop = turn.stop ?? (toolCalls.length > 0 ? "tool_use" : "end_turn");
      const response: LlmResponse = { text, toolCalls, stop };
      if (turn.usage !== undefined) response.usage = { ...turn.usage };
      return response;
    },
  };
}

async function emit(text: string, request: LlmRequest): Promise<void> {
  if (text === "" || request.onTextDelta === undefined) return;
  const size = Math.max(1, Math.ceil(text.length / 3));
  for (let i = 0; i < text.length; i += size) {
    if (i > 0) await sleep(0);
    if (request.signal?.aborted) throw abortError();
    request.onTextDelta(text.slice(i, i + size));
  }
}

function summaryOf(history: readonly HistoryItem[]): string {
  const texts = history.filter((h) => h.role === "user").map((h) => (h as { text: string }).text.trim()).filter((t) =>
    t !== ""
  );
  const body = texts.join("\n").slice(0, 8000);
  return `Summary (scripted): ${body === "" ? "(nothing to summarise)" : body}`;
}

/**
 * Replaces `${VAR}` and `${VAR:-default}` in every string value (not keys) of `value`.
 * An unset `${VAR}` becomes `""`; the default applies when the variable is unset or empty.
 */
export function expandEnv<T>(value: T, env: Env): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return expandVars(v, env);
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v === "object" && v !== null) {
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, walk(x)]));
    }
    return v;
  };
  return walk(value) as T;
}

/**
 * Validates a parsed script (an array of {@link ScriptTurn}).
 * @throws {AgentError} code `config` naming the file, the turn and the field
 */
export function parseScript(raw: unknown, path: string): ScriptTurn[] {
  const fail = (where: string, what: string): never => {
    throw new AgentError("config", `Invalid SPROUT_AGENT_SCRIPT ${JSON.stringify(path)}: ${where} ${what}`);
  };
  if (!Array.isArray(raw)) return fail("the file", "must hold a JSON array of turns");
  const isObject = (v: unknown) => typeof v === "object" && v !== null && !Array.isArray(v);
  raw.forEach((turn: unknown, i) => {
    const at = `turn ${i + 1}`;
    if (!isObject(turn)) fail(at, "must be an object");
    const t = turn as Record<string, unknown>;
    if (t["text"] !== undefined && typeof t["text"] !== "string") fail(`${at}: "text"`, "must be a string");
    if (t["stop"] !== undefined && !STOPS.includes(t["stop"] as string)) {
      fail(`${at}: "stop"`, `must be one of ${STOPS.join(", ")}`);
    }
    if (t["toolCalls"] !== undefined) {
      if (!Array.isArray(t["toolCalls"])) fail(`${at}: "toolCalls"`, "must be an array");
      (t["toolCalls"] as unknown[]).forEach((c, j) => {
        const field = `${at}: "toolCalls[${j}]`;
        if (!isObject(c)) fail(`${field}"`, "must be an object");
        const call = c as Record<string, unknown>;
        if (typeof call["name"] !== "string" || call["name"] === "") {
          fail(`${field}.name"`, "must be a non-empty string");
        }
        if (call["arguments"] !== undefined && call["arguments"] !== null && !isObject(call["arguments"])) {
          fail(`${field}.arguments"`, "must be an object");
        }
        if (call["arguments"] === null) delete call["arguments"];
      });
    }
    if (t["usage"] !== undefined) {
      const u = t["usage"] as Record<string, unknown>;
      if (!isObject(u) || typeof u["inputTokens"] !== "number" || typeof u["outputTokens"] !== "number") {
        fail(`${at}: "usage"`, 'must be {"inputTokens": number, "outputTokens": number}');
      }
    }
  });
  return raw as ScriptTurn[];
}

/**
 * Reads, parses, validates and expands a script file.
 * @param env for `${VAR}` expansion; default `process.env`
 * @throws {AgentError} code `config` naming the file (unreadable, not JSON, wrong shape)
 */
export function loadScript(
  path: string,
  options: { readFile: (path: string) => string; env?: Record<string, string | undefined> },
): ScriptTurn[] {
  let text: string;
  try {
    text = options.readFile(path);
  } catch (error) {
    throw new AgentError(
      "config",
      `Invalid SPROUT_AGENT_SCRIPT ${JSON.stringify(path)}: cannot read it: ${(error as Error).message}`,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new AgentError(
      "config",
      `Invalid SPROUT_AGENT_SCRIPT ${JSON.stringify(path)}: not JSON: ${(error as Error).message}`,
    );
  }
  return parseScript(expandEnv(raw, options.env ?? process.env), path);
}
