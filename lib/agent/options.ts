/**
 * The options of `createAgent` (`lib/agent/agent.ts`) and their checking: which model, which MCP
 * servers, the hook allowlist and every limit, each optional with its SPEC default; and how they
 * become the loop's {@link Config}, a {@link Model} and a server list. Errors name the option.
 * @module
 */

import { resolve } from "node:path";
import {
  type Config,
  type HookServers,
  isHttpUrl,
  loadConfig,
  MAX_TIMER_MS,
  type PermissionDefault,
} from "../config/config.ts";
import { AgentError } from "../util/errors.ts";
import type { AgentEvent, AgentObserver } from "../conversation/events.ts";
import type { TraceParent } from "../util/trace.ts";
import { HOOK_POINTS } from "../hooks/points.ts";
import type { PermissionAsk } from "../hooks/permission.ts";
import type { InProcessHooks } from "../hooks/runner.ts";
import { createAnthropicModel, MIN_THINKING_BUDGET_TOKENS } from "../llm/anthropic.ts";
import { createScriptedModel, parseScript, type ScriptTurn } from "../llm/scripted.ts";
import { headerProblem, parseMcpConfig, SERVER_NAME_PATTERN } from "../mcp/config.ts";
import type { InProcessServer } from "../mcp/in-process.ts";
import type { InputHandler } from "../mcp/input-requests.ts";
import type { McpEra, McpServerConfig } from "../mcp/types.ts";
import type { Model } from "../conversation/types.ts";
import type { SessionStore } from "../sessions/records.ts";

/**
 * Which LLM to talk to, as plain data: the Anthropic Messages API, any Chat Completions
 * endpoint (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter…), or a scripted model that replays
 * fixed turns without a network (SPEC section 11).
 *
 * - `anthropic`: `apiKey` and `model` required; `baseUrl` default `https://api.anthropic.com`,
 *   `apiVersion` (the `anthropic-version` header) default `2023-06-01`, `thinkingBudgetTokens`
 *   extended thinking, default 0 = off, else at least 1024 and below `maxOutputTokens`.
 * - `openai`: `model` required; `apiKey` optional (local servers need none); `baseUrl` default
 *   `https://api.openai.com/v1`.
 * - `scripted`: `turns` as in a `SPROUT_AGENT_SCRIPT` file; `path` names them in errors.
 *
 * @example
 * const options: ModelOptions = { provider: "openai", model: "llama3.2", baseUrl: "http://127.0.0.1:11434/v1" };
 */
export type ModelOptions =
  | {
    provider: "anthropic";
    model: string;
    apiKey: string;
    baseUrl?: string | undefined;
    apiVersion?: string | undefined;
    thinkingBudgetTokens?: number | undefined;
  }
  | { provider: "openai"; model: string; apiKey?: string | undefined; baseUrl?: string | undefined }
  | { provider: "scripted"; turns: readonly ScriptTurn[]; path?: string | undefined };

/**
 * The agent's limits, each optional with the default of SPEC section 9 (the environment
 * variable that sets it from the command line in brackets). Whole numbers; durations in
 * milliseconds.
 * @example
 * const limits: AgentLimits = { maxRounds: 20, toolTimeoutMs: 60_000, stopMaxRejections: 2 };
 */
export interface AgentLimits {
  /** LLM rounds per prompt before it stops with `max_turn_requests`; default 0 = unlimited (`SPROUT_AGENT_MAX_ROUNDS`). */
  maxRounds?: number;
  /** Output tokens of each request; default 32768, at least 1 (`SPROUT_AGENT_MAX_OUTPUT_TOKENS`). */
  maxOutputTokens?: number;
  /** The context window compaction works from; default 128000, above `maxOutputTokens` (`SPROUT_AGENT_MAX_CONTEXT_TOKENS`). */
  maxContextTokens?: number;
  /** Idle deadline of each LLM attempt, in ms; default 120000 (`SPROUT_AGENT_LLM_TIMEOUT_SECS`). */
  llmTimeoutMs?: number;
  /** Bound of each tool call, in ms; default 660000 (`SPROUT_AGENT_TOOL_TIMEOUT_SECS`). */
  toolTimeoutMs?: number;
  /** Bound of connecting to a server and of each `tools/list`, in ms; default 30000 (`SPROUT_AGENT_MCP_INIT_TIMEOUT_SECS`). */
  mcpInitTimeoutMs?: number;
  /** Tool calls of one response run at once; default 8, at least 1 (`SPROUT_AGENT_MAX_PARALLEL_TOOLS`). */
  maxParallelTools?: number;
  /** A longer tool result is cut in the middle, in UTF-8 bytes; default 51200, at least 256 (`SPROUT_AGENT_MAX_TOOL_RESULT_BYTES`). */
  maxToolResultBytes?: number;
  /** Summary compactions per session, then old turns are dropped; default 5 (`SPROUT_AGENT_MAX_HANDOFFS`). */
  maxHandoffs?: number;
  /**
   * Times one identical tool call (same qualified name, same arguments, same result) may run in a
   * row in the session before the prompt ends with `max_turn_requests`; default 10, 0 = no
   * bound (`SPROUT_AGENT_MAX_REPEATED_CALLS`).
   */
  maxRepeatedCalls?: number;
  /** Bound of each hook call on each server, in ms; default 2500 (`SPROUT_AGENT_HOOK_TIMEOUT_MS`). */
  hookTimeoutMs?: number;
  /** `_Stop` objections the session may use, never reset; default 3, 0 = never call `_Stop` (`SPROUT_AGENT_STOP_MAX_REJECTIONS`). */
  stopMaxRejections?: number;
  /** Largest JSON-RPC line accepted from a stdio server or an ACP client, in bytes; default 4194304, at least 1024 (`SPROUT_AGENT_MAX_LINE_BYTES`). */
  maxLineBytes?: number;
}

/**
 * Options of {@link createAgent}. Nothing is read from the environment.
 * @example
 * const options: AgentOptions = {
 *   model: { provider: "openai", model: "gpt-4.1", apiKey: "sk-…" },
 *   mcpServers: [{ name: "fs", transport: { type: "stdio", command: "mcp-fs", args: ["."], env: {} } }],
 *   hookServers: "*",
 * };
 */
export interface AgentOptions extends AgentLimits {
  /** The LLM: {@link ModelOptions}, or a ready {@link Model} (your own, or from a `create*Model` factory). */
  model: ModelOptions | Model;
  /**
   * MCP servers, in the `.mcp.json` shape (`{mcpServers: {name: {command, args, env, cwd} |
   * {type: "http", url, headers}}}`, `${VAR}` expanded from `env`, a relative `cwd` resolved
   * against {@link AgentOptions.cwd}) or as a parsed list; default none.
   */
  mcpServers?: { mcpServers?: Record<string, unknown> } | readonly McpServerConfig[] | undefined;
  /**
   * MCP servers run in this process, by name (for tests and embedders; `lib/mcp/in-process.ts`):
   * each is handed the server's end of an in-memory channel shaped like the official SDK's
   * `Transport`, for example `{ todo: (transport) => serveStdio(createServer, { transport }) }`.
   * They come after `mcpServers` and behave as stdio servers do (era detection, hooks,
   * timeouts, restart) except for what only a process has: no pid, stderr or line limit.
   * Names follow `mcpServers`' rule (SPEC section 5.2); default none.
   * @throws {AgentError} `config` from {@link createAgent} for a name that breaks the rule
   */
  inProcessServers?: Readonly<Record<string, InProcessServer>> | undefined;
  /** Servers whose hooks (`_Stop`, `_PostCompact`…) run: `"*"` for every server, or names; default none, hooks off (SPEC section 3). */
  hookServers?: "*" | readonly string[] | undefined;
  /**
   * In-process hook functions by group name, beside the servers' hooks and under the same rules
   * (timeout, budget, fail-open, JSON-encoded injection; two timeouts in a row disable the
   * group): `{policy: {_Stop: (ctx, signal) => "…"}}` (SPEC section 4.7). They always run
   * (`hookServers` is for servers); a group name follows the server-name rules and must not
   * be a server's. Default none.
   */
  hooks?: InProcessHooks | undefined;
  /**
   * The "model declined" rule of SPEC section 7.1: when true (the default), an end of turn right
   * after a `_Stop` objection, without a tool call between, ends the turn without calling
   * `_Stop`; when false, `_Stop` is called again and only `stopMaxRejections` ends the loop
   * (`SPROUT_AGENT_STOP_DECLINED_TWICE`).
   */
  stopDeclinedTwice?: boolean | undefined;
  /**
   * The operator's permission policy for tool calls (SPEC section 7.8): `allow`, `ask` and
   * `deny` globs over qualified tool names (`deny` beats `ask` beats `allow`) and the
   * `default` for other tools: `auto` (ask for a `destructiveHint` tool when
   * `requestPermission` is given, allow the rest), `allow`, `ask` or `deny`. Default: no
   * rules, `auto`, so without `requestPermission` every tool runs, as before.
   */
  permissions?: {
    allow?: readonly string[] | undefined;
    ask?: readonly string[] | undefined;
    deny?: readonly string[] | undefined;
    default?: PermissionDefault | undefined;
  } | undefined;
  /**
   * Asks the person whether a tool call may run, when the policy or a `_PreToolUse` hook says
   * `ask` (SPEC section 7.8); "always" answers hold for the session. Default none: an `ask`
   * is then a denial whose text names the setting that would allow the tool.
   */
  requestPermission?: PermissionAsk | undefined;
  /**
   * How the servers' input requests are answered (SPEC section 10): `elicit` asks the person
   * (the CLI's terminal prompt, the ACP client's `elicitation/create`), with the
   * `elicitationModes` it can show; `sample`, `roots` and `maxRounds` override the defaults.
   * Defaults: an elicitation is declined with a warning (no one can answer), sampling follows
   * {@link AgentOptions.sampling}, the one root is {@link AgentOptions.cwd}, 10 rounds.
   */
  input?: InputHandler | undefined;
  /**
   * Lets servers sample the agent's own model (`sampling/createMessage`,
   * `SPROUT_AGENT_SAMPLING=on`): each request gets at most `maxTokens` output tokens
   * (`SPROUT_AGENT_SAMPLING_MAX_TOKENS`, default 1024), text only, no tools. Default off: not
   * declared, and a server that asks anyway is refused with an error naming the setting.
   */
  sampling?: { maxTokens: number } | false | undefined;
  /**
   * Receives the events that happen outside a prompt: the `hook` and `warning` events of
   * `_SessionStart` (in `createAgent`) and `_SessionEnd` (in `close`). Default: dropped.
   */
  onEvent?: ((event: AgentEvent) => void) | undefined;
  /**
   * Sees every event of the session as it happens, with its span, and the tracing events no
   * stream carries (`prompt-start`, `round-end`, `hook-start`, `prompt-end`): what a trace
   * exporter needs (`otelObserver` of `sprout-agent/telemetry/otel`, SPEC section 11, tracing). Called
   * synchronously; a throw is ignored. Default none.
   */
  observe?: AgentObserver | undefined;
  /**
   * The W3C trace context (`{traceparent, tracestate?}`) the session continues: every prompt
   * without a `trace` of its own is a child span of `traceparent`, and the requests sent while
   * the servers start carry it in `_meta` (SPEC section 10). Invalid values are ignored. Default
   * none: each prompt starts a new trace.
   */
  trace?: TraceParent | undefined;
  /** The system prompt; default the built-in one. */
  systemPrompt?: string | undefined;
  /** The session id, sent to every server as `_meta["sprout-agent/session"]`; default a random UUID. */
  sessionId?: string | undefined;
  /**
   * Where the session's transcript goes (SPEC section 12): a {@link SessionStore}
   * (`fileSessionStore({dir})`, `memorySessionStore()`, the Redis store of
   * `sprout-agent/stores/redis`), or `false` for none. Default: the file store in the state
   * folder (`$XDG_STATE_HOME/sprout-agent/sessions`); when it cannot be used (no home folder,
   * no permission to write) the session runs unsaved, with a warning.
   */
  sessionStore?: SessionStore | false | undefined;
  /**
   * The id of a session to resume from `sessionStore`: its history, `_Stop` budget, summaries
   * and "always" answers come back, its id is the session's, and `_SessionStart` fires with the
   * first prompt, with `source: "resume"` (SPEC section 12.5). Default: a new session.
   * @throws {AgentError} `session` from {@link createAgent} for an unknown id or a session in use
   */
  resume?: string | undefined;
  /** The working folder of stdio servers that set none; default `process.cwd()`. */
  cwd?: string | undefined;
  /**
   * `${VAR}` expansion in `mcpServers` (the `.mcp.json` shape) and the pass-through variables of
   * stdio servers (`PATH`, `HOME`…, SPEC section 10); default `process.env` for the pass-through
   * variables and `{}` for expansion.
   */
  env?: Record<string, string | undefined> | undefined;
  /** For LLM and MCP HTTP requests; default the global `fetch`. */
  fetch?: typeof fetch | undefined;
  /** Non-fatal problems while servers start and run (a server died, a tool was skipped). */
  onWarning?: ((message: string) => void) | undefined;
  /**
   * Each line a stdio MCP server writes to stderr, as it arrives, with the server's name;
   * default none (the last 64 KiB are kept either way, for the message when a server dies).
   */
  onServerStderr?: ((server: string, line: string) => void) | undefined;
  /**
   * Shares each server's detected protocol era between agents of one process, so it is detected
   * once (SPEC section 10); default a cache of this agent alone.
   */
  eraCache?: Map<string, McpEra> | undefined;
  /** Aborts creation while servers start: {@link createAgent} rejects with an `AbortError`. */
  signal?: AbortSignal | undefined;
  /** Milliseconds clock for durations; default `Date.now`. */
  now?: (() => number) | undefined;
  /**
   * Subagents the model may hand a task to (SPEC section 13): each is a tool
   * `subagent_<name>` whose call runs a child session with a fresh history, the subagent's
   * instructions, the permission policy, the tools its `tools` allow (never more than this
   * agent's) and its own limits, and answers with the child's report. Agent files are read by
   * `loadSubagentFiles` (the CLI does it); pass what it returns here. Default none.
   * @throws {AgentError} `config` from {@link createAgent} naming the field (`Invalid subagents[0].name: …`)
   */
  subagents?: readonly import("../subagents/definitions.ts").SubagentDefinition[] | undefined;
  /**
   * How deep subagents nest: 1 (the default) lets this agent's model call them and no child
   * call one; 2 lets children call them too; 0 turns them off (SPEC section 13.3).
   */
  maxSubagentDepth?: number | undefined;
}

/** Lowest (and highest) value of each limit; the defaults come from `loadConfig`. */
const LIMITS: Record<keyof AgentLimits, { min: number; max?: number }> = {
  maxRounds: { min: 0 },
  maxOutputTokens: { min: 1 },
  maxContextTokens: { min: 1 },
  llmTimeoutMs: { min: 1, max: MAX_TIMER_MS },
  toolTimeoutMs: { min: 1, max: MAX_TIMER_MS },
  mcpInitTimeoutMs: { min: 1, max: MAX_TIMER_MS },
  maxParallelTools: { min: 1 },
  maxToolResultBytes: { min: 256 },
  maxHandoffs: { min: 0 },
  maxRepeatedCalls: { min: 0 },
  hookTimeoutMs: { min: 1, max: MAX_TIMER_MS },
  stopMaxRejections: { min: 0 },
  maxLineBytes: { min: 1024 },
};

function invalid(option: string, message: string): never {
  throw new AgentError("config", `Invalid ${option}: ${message}`);
}

/** The loop's {@link Config}: SPEC defaults (those of `loadConfig`) overlaid with `options`, checked. */
export function agentConfig(options: AgentOptions): Config {
  const config = loadConfig({}, () => "");
  const limits = config as unknown as Record<keyof AgentLimits, number>;
  for (const [name, rule] of Object.entries(LIMITS) as [keyof AgentLimits, { min: number; max?: number }][]) {
    const value = options[name];
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isSafeInteger(value)) {
      invalid(name, `${JSON.stringify(value)} is not a whole number`);
    }
    if (value < rule.min) invalid(name, `${value} must be at least ${rule.min}`);
    if (rule.max !== undefined && value > rule.max) invalid(name, `${value} must be at most ${rule.max}`);
    limits[name] = value;
  }
  if (config.maxContextTokens <= config.maxOutputTokens) {
    invalid(
      "maxContextTokens",
      `${config.maxContextTokens} must be greater than maxOutputTokens (${config.maxOutputTokens})`,
    );
  }
  if (options.systemPrompt !== undefined) {
    if (typeof options.systemPrompt !== "string") invalid("systemPrompt", "it must be a string");
    config.systemPrompt = options.systemPrompt;
  }
  const hooks = options.hookServers;
  if (hooks === "*") config.hookServers = { kind: "all" };
  else if (hooks !== undefined) {
    if (!Array.isArray(hooks) || hooks.some((h) => typeof h !== "string")) {
      invalid("hookServers", 'it must be "*" or an array of server names');
    }
    config.hookServers = hooks.length === 0
      ? { kind: "none" }
      : { kind: "only", names: [...hooks] } satisfies HookServers;
  }
  if (options.stopDeclinedTwice !== undefined) {
    if (typeof options.stopDeclinedTwice !== "boolean") invalid("stopDeclinedTwice", "it must be true or false");
    config.stopDeclinedTwice = options.stopDeclinedTwice;
  }
  const permissions = options.permissions;
  if (permissions !== undefined) {
    if (typeof permissions !== "object" || permissions === null) invalid("permissions", "it must be an object");
    for (const key of ["allow", "ask", "deny"] as const) {
      const list = permissions[key];
      if (list === undefined) continue;
      if (!Array.isArray(list) || list.some((g) => typeof g !== "string" || g.trim() === "")) {
        invalid(`permissions.${key}`, "it must be an array of non-empty glob strings");
      }
      config.permissions[key] = [...list];
    }
    const fallback = permissions.default;
    if (fallback !== undefined) {
      if (!["auto", "allow", "ask", "deny"].includes(fallback)) {
        invalid("permissions.default", `${JSON.stringify(fallback)} is not one of auto, allow, ask, deny`);
      }
      config.permissions.default = fallback;
    }
  }
  const m = options.model;
  if (!isModel(m) && m.provider === "anthropic") {
    const budget = m.thinkingBudgetTokens ?? 0;
    if (!Number.isSafeInteger(budget) || budget < 0) {
      invalid("model.thinkingBudgetTokens", `${JSON.stringify(budget)} is not a whole number`);
    }
    if (budget > 0 && budget < MIN_THINKING_BUDGET_TOKENS) {
      invalid(
        "model.thinkingBudgetTokens",
        `${budget} must be 0 (off) or at least ${MIN_THINKING_BUDGET_TOKENS}, the Messages API's minimum`,
      );
    }
    if (budget >= config.maxOutputTokens) {
      invalid("model.thinkingBudgetTokens", `${budget} must be less than maxOutputTokens (${config.maxOutputTokens})`);
    }
    config.thinkingBudgetTokens = budget;
  }
  return config;
}

/**
 * `options.hooks`, checked against the servers' names: a group name a server could have, not
 * taken by a server; only hook points' names; functions only.
 */
export function inProcessHooks(options: AgentOptions, servers: readonly McpServerConfig[]): InProcessHooks {
  const hooks = options.hooks;
  if (hooks === undefined) return {};
  if (typeof hooks !== "object" || hooks === null || Array.isArray(hooks)) {
    invalid("hooks", "it must be an object of groups, {name: {_Stop: function, …}}");
  }
  for (const [name, group] of Object.entries(hooks)) {
    if (!SERVER_NAME_PATTERN.test(name) || name.includes("__")) {
      invalid(`hooks.${name}`, "a group name is 1 to 64 letters, digits, _ or -, without __");
    }
    if (servers.some((s) => s.name === name)) invalid(`hooks.${name}`, `a server is already named "${name}"`);
    if (typeof group !== "object" || group === null) invalid(`hooks.${name}`, "it must be an object of functions");
    for (const [hook, handler] of Object.entries(group)) {
      if (!Object.hasOwn(HOOK_POINTS, hook)) {
        invalid(`hooks.${name}.${hook}`, `not a hook point (${Object.keys(HOOK_POINTS).join(", ")})`);
      }
      if (typeof handler !== "function") invalid(`hooks.${name}.${hook}`, "it must be a function");
    }
  }
  return hooks;
}

export function isModel(value: ModelOptions | Model): value is Model {
  return typeof (value as Partial<Model>).complete === "function";
}

function httpUrl(option: string, raw: string | undefined, fallback: string): string {
  if (raw === undefined) return fallback;
  if (!isHttpUrl(raw)) {
    invalid(option, `${JSON.stringify(raw)} is not an http or https URL`);
  }
  return raw.trim();
}

function required(option: string, value: unknown, provider: string): string {
  if (typeof value !== "string" || value.trim() === "") {
    throw new AgentError("config", `Missing ${option}: required for provider "${provider}"`);
  }
  return value;
}

function key(option: string, value: string): string {
  const trimmed = value.trim();
  if (headerProblem("x-api-key", trimmed) !== undefined) {
    invalid(
      option,
      "it contains a line break, a control or non-Latin-1 character, which cannot be sent in an HTTP header",
    );
  }
  return trimmed;
}

/**
 * The model of `spec`, with the agent's LLM deadline. The OpenAI-compatible client is loaded
 * only for `openai` (issue 21: a start loads what its run needs).
 */
export async function modelFrom(spec: ModelOptions, config: Config, fetchFn: typeof fetch | undefined): Promise<Model> {
  const fetchOption = fetchFn === undefined ? {} : { fetch: fetchFn };
  if (spec.provider === "anthropic") {
    return createAnthropicModel({
      apiKey: key("model.apiKey", required("model.apiKey", spec.apiKey, spec.provider)),
      model: required("model.model", spec.model, spec.provider),
      baseUrl: httpUrl("model.baseUrl", spec.baseUrl, "https://api.anthropic.com"),
      apiVersion: spec.apiVersion ?? "2023-06-01",
      timeoutMs: config.llmTimeoutMs,
      thinkingBudgetTokens: config.thinkingBudgetTokens,
      ...fetchOption,
    });
  }
  if (spec.provider === "openai") {
    const { createOpenAiModel } = await import("../llm/openai.ts");
    return createOpenAiModel({
      apiKey: spec.apiKey === undefined || spec.apiKey === "" ? "" : key("model.apiKey", spec.apiKey),
      model: required("model.model", spec.model, spec.provider),
      baseUrl: httpUrl("model.baseUrl", spec.baseUrl, "https://api.openai.com/v1"),
      timeoutMs: config.llmTimeoutMs,
      ...fetchOption,
    });
  }
  if (spec.provider === "scripted") {
    const path = spec.path ?? "(in-memory script)";
    // parseScript checks the shape (and names the script); a copy, so one agent cannot change another's turns.
    return createScriptedModel(parseScript(structuredClone(spec.turns), path), { path });
  }
  return invalid(
    "model.provider",
    `${JSON.stringify((spec as { provider?: unknown }).provider)} is not one of anthropic, openai, scripted`,
  );
}

/** `options.mcpServers` as a list of server configurations. */
export function serverList(options: AgentOptions): McpServerConfig[] {
  for (const name of Object.keys(options.inProcessServers ?? {})) {
    if (!SERVER_NAME_PATTERN.test(name) || name.includes("__")) {
      invalid(
        "inProcessServers",
        `server name ${JSON.stringify(name)} must match ^[A-Za-z0-9_-]{1,64}$ and must not contain "__"`,
      );
    }
  }
  const servers = options.mcpServers;
  if (servers === undefined) return [];
  if (Array.isArray(servers)) return [...servers];
  if (typeof servers !== "object" || servers === null) {
    invalid("mcpServers", "it must be an object in the .mcp.json shape or an array of servers");
  }
  const cwd = options.cwd;
  return parseMcpConfig(JSON.stringify(servers), "options.mcpServers", {
    env: options.env ?? {},
    resolvePath: (_base, relative) => (cwd === undefined ? resolve(relative) : resolve(cwd, relative)),
  });
}
