/**
 * The front door: {@link createAgent} builds a ready agent (one session, its model and its MCP
 * servers) from plain options, and {@link agentOptionsFromEnv} reads those options from the
 * documented environment variables (SPEC section 9). `cli.ts` and `lib/acp.ts` are built on
 * these two functions.
 * @module
 */

import { resolve } from "node:path";
import { type Config, type HookServers, loadConfig, MAX_TIMER_MS, requireProvider } from "./config.ts";
import { abortError, AgentError } from "./errors.ts";
import { createAnthropicModel, MIN_THINKING_BUDGET_TOKENS } from "./llm/anthropic.ts";
import { createOpenAiModel } from "./llm/openai.ts";
import { createScriptedModel, loadScript, parseScript, type ScriptTurn } from "./llm/scripted.ts";
import { AgentSession, type PromptRun } from "./loop.ts";
import { headerProblem, parseMcpConfig } from "./mcp/config.ts";
import { createRegistry, type RegistryFailure } from "./mcp/registry.ts";
import type { McpEra, McpServerConfig, ToolRegistry } from "./mcp/types.ts";
import type { HistoryItem, Model } from "./types.ts";

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
  /** Servers whose hooks (`_Stop`, `_PostCompact`) run: `"*"` for every server, or names; default none, hooks off (SPEC section 3). */
  hookServers?: "*" | readonly string[] | undefined;
  /** The system prompt; default the built-in one. */
  systemPrompt?: string | undefined;
  /** The session id, sent to every server as `_meta["sprout-agent/session"]`; default a random UUID. */
  sessionId?: string | undefined;
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
   * Shares each server's detected protocol era between agents of one process, so it is detected
   * once (SPEC section 10); default a cache of this agent alone.
   */
  eraCache?: Map<string, McpEra> | undefined;
  /** Aborts creation while servers start: {@link createAgent} rejects with an `AbortError`. */
  signal?: AbortSignal | undefined;
  /** Milliseconds clock for durations; default `Date.now`. */
  now?: (() => number) | undefined;
}

/**
 * A ready agent: one conversation (history, `_Stop` budget, compaction count) with its model
 * and its connected MCP servers.
 * @example
 * const agent: Agent = await createAgent({ model: { provider: "scripted", turns: [{ text: "hi" }] } });
 * for (const f of agent.failures) console.warn(f.message);
 * const run = agent.prompt("hello");
 * for await (const event of run) console.log(event.type);
 * await agent.close();
 */
export interface Agent {
  /** The session id every server saw as `_meta["sprout-agent/session"]`. */
  readonly sessionId: string;
  /**
   * The servers that could not start, in configuration order, each with a message naming it
   * (`Cannot start server "x": …`). They stay out of the session; the CLI prints them as
   * warnings, the ACP server fails `session/new` with them.
   */
  readonly failures: readonly RegistryFailure[];
  /** The conversation so far. */
  readonly history: readonly HistoryItem[];
  /** True while a prompt runs; a second concurrent `prompt` throws. */
  readonly busy: boolean;
  /**
   * Runs one prompt: iterate the returned run for its events, await `run.result` for the stop
   * reason and counts. `signal` cancels it (stop reason `cancelled`).
   * @throws (through `result`) {AgentError} `llm` when the LLM fails after its retries
   */
  prompt(text: string, options?: { signal?: AbortSignal }): PromptRun;
  /** Closes every MCP server (stdio children end, HTTP sessions are deleted). Idempotent. */
  close(): Promise<void>;
}

/**
 * Builds an agent: validates the options, creates the model, connects every MCP server
 * concurrently (each bounded by `mcpInitTimeoutMs`) and lists its tools. Asynchronous because
 * the servers connect here, so that failures are known before the first prompt and a prompt
 * never waits for a start-up. A server that cannot start does not fail the call: see
 * {@link Agent.failures}. Close the agent when done.
 * @throws {AgentError} code `config` naming the option for an invalid value (a missing model
 *   id or key, a limit out of range, a bad `mcpServers` entry); an `AbortError` when `signal`
 *   aborts while servers start (those started are closed)
 * @example
 * ```ts
 * const agent = await createAgent({
 *   model: { provider: "anthropic", model: "claude-sonnet-4-5", apiKey: "sk-ant-…" },
 *   mcpServers: { mcpServers: { todo: { type: "http", url: "http://127.0.0.1:8787/mcp" } } },
 *   hookServers: ["todo"],
 *   maxRounds: 20,
 * });
 * try {
 *   const run = agent.prompt("Say hello");
 *   for await (const event of run) if (event.type === "text-delta") console.log(event.text);
 *   console.log((await run.result).stopReason);
 * } finally {
 *   await agent.close();
 * }
 * ```
 */
export async function createAgent(options: AgentOptions): Promise<Agent> {
  const config = agentConfig(options);
  const model = isModel(options.model) ? options.model : modelFrom(options.model, config, options.fetch);
  const servers = serverList(options);
  const sessionId = options.sessionId ?? crypto.randomUUID();
  const starting = createRegistry(servers, {
    sessionId,
    initTimeoutMs: config.mcpInitTimeoutMs,
    maxLineBytes: config.maxLineBytes,
    ...(options.eraCache === undefined ? {} : { eraCache: options.eraCache }),
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.env === undefined ? {} : { env: options.env }),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
    ...(options.onWarning === undefined ? {} : { onWarning: options.onWarning }),
  });
  const { registry, failures } = await abortable(starting, options.signal);
  const session = new AgentSession({
    config,
    model,
    registry,
    id: sessionId,
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  return new ReadyAgent(session, registry, failures);
}

class ReadyAgent implements Agent {
  readonly failures: readonly RegistryFailure[];
  readonly #session: AgentSession;
  readonly #registry: ToolRegistry;
  #closing: Promise<void> | undefined;

  constructor(session: AgentSession, registry: ToolRegistry, failures: RegistryFailure[]) {
    this.#session = session;
    this.#registry = registry;
    this.failures = failures;
  }

  get sessionId(): string {
    return this.#session.id;
  }

  get history(): readonly HistoryItem[] {
    return this.#session.history;
  }

  get busy(): boolean {
    return this.#session.busy;
  }

  prompt(text: string, options: { signal?: AbortSignal } = {}): PromptRun {
    if (this.#closing !== undefined) throw new AgentError("usage", "Cannot start a prompt: the agent is closed");
    return this.#session.prompt(text, options);
  }

  close(): Promise<void> {
    this.#closing ??= this.#registry.close().catch(() => {});
    return this.#closing;
  }
}

/**
 * Reads the documented environment variables (SPEC section 9, the README's configuration
 * table) into {@link AgentOptions}, every limit filled in with its default. The scripted
 * model's file (`SPROUT_AGENT_SCRIPT`, `${VAR}` expanded from `env`) and
 * `SPROUT_AGENT_SYSTEM_PROMPT_FILE` are read here, through `readFile`. MCP servers are not
 * read: add `mcpServers` (the CLI reads `--mcp-config` or `./.mcp.json`).
 * @param env the environment, usually `process.env`
 * @param options.readFile reads the system prompt and script files, usually `(p) => readFileSync(p, "utf8")`
 * @throws {AgentError} code `config` naming the variable for any invalid or missing value
 *   (`Missing SPROUT_AGENT_PROVIDER: …`, `Invalid SPROUT_AGENT_MAX_ROUNDS: …`); the CLI exits 2
 * @example
 * ```ts
 * const options = agentOptionsFromEnv(process.env, { readFile: (p) => readFileSync(p, "utf8") });
 * const agent = await createAgent({ ...options, mcpServers: { mcpServers: {} } });
 * ```
 */
export function agentOptionsFromEnv(
  env: Record<string, string | undefined>,
  options: { readFile: (path: string) => string },
): AgentOptions & Required<AgentLimits> & { model: ModelOptions } {
  const config = loadConfig(env, options.readFile);
  const provider = requireProvider(config);
  let model: ModelOptions;
  if (provider === "anthropic") {
    model = {
      provider,
      apiKey: config.anthropic.apiKey ?? "",
      model: config.anthropic.model ?? "",
      baseUrl: config.anthropic.baseUrl,
      apiVersion: config.anthropic.apiVersion,
      thinkingBudgetTokens: config.thinkingBudgetTokens,
    };
  } else if (provider === "openai") {
    model = { provider, model: config.openai.model ?? "", baseUrl: config.openai.baseUrl };
    if (config.openai.apiKey !== undefined) model.apiKey = config.openai.apiKey;
  } else {
    const path = config.scriptPath ?? "";
    model = { provider, turns: loadScript(path, { readFile: options.readFile, env }), path };
  }
  const hooks = config.hookServers;
  return {
    model,
    systemPrompt: config.systemPrompt,
    ...(hooks.kind === "none" ? {} : { hookServers: hooks.kind === "all" ? "*" : hooks.names }),
    maxRounds: config.maxRounds,
    maxOutputTokens: config.maxOutputTokens,
    maxContextTokens: config.maxContextTokens,
    llmTimeoutMs: config.llmTimeoutMs,
    toolTimeoutMs: config.toolTimeoutMs,
    mcpInitTimeoutMs: config.mcpInitTimeoutMs,
    maxParallelTools: config.maxParallelTools,
    maxToolResultBytes: config.maxToolResultBytes,
    maxHandoffs: config.maxHandoffs,
    hookTimeoutMs: config.hookTimeoutMs,
    stopMaxRejections: config.stopMaxRejections,
    maxLineBytes: config.maxLineBytes,
  };
}

/** The API keys of `options` (for redaction), in the shape `configSecrets` of `lib/redact.ts` takes. */
export function optionKeys(options: Pick<AgentOptions, "model">): { anthropic: { apiKey: string | undefined }; openai: { apiKey: string | undefined } } {
  const m = options.model;
  const key = (provider: string) => !isModel(m) && m.provider === provider && "apiKey" in m ? m.apiKey : undefined;
  return { anthropic: { apiKey: key("anthropic") }, openai: { apiKey: key("openai") } };
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
  hookTimeoutMs: { min: 1, max: MAX_TIMER_MS },
  stopMaxRejections: { min: 0 },
  maxLineBytes: { min: 1024 },
};

function invalid(option: string, message: string): never {
  throw new AgentError("config", `Invalid ${option}: ${message}`);
}

/** The loop's {@link Config}: SPEC defaults (those of `loadConfig`) overlaid with `options`, checked. */
function agentConfig(options: AgentOptions): Config {
  const config = loadConfig({}, () => "");
  const limits = config as unknown as Record<keyof AgentLimits, number>;
  for (const [name, rule] of Object.entries(LIMITS) as [keyof AgentLimits, { min: number; max?: number }][]) {
    const value = options[name];
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isSafeInteger(value)) invalid(name, `${JSON.stringify(value)} is not a whole number`);
    if (value < rule.min) invalid(name, `${value} must be at least ${rule.min}`);
    if (rule.max !== undefined && value > rule.max) invalid(name, `${value} must be at most ${rule.max}`);
    limits[name] = value;
  }
  if (config.maxContextTokens <= config.maxOutputTokens) {
    invalid("maxContextTokens", `${config.maxContextTokens} must be greater than maxOutputTokens (${config.maxOutputTokens})`);
  }
  if (options.systemPrompt !== undefined) {
    if (typeof options.systemPrompt !== "string") invalid("systemPrompt", "it must be a string");
    config.systemPrompt = options.systemPrompt;
  }
  const hooks = options.hookServers;
  if (hooks === "*") config.hookServers = { kind: "all" };
  else if (hooks !== undefined) {
    if (!Array.isArray(hooks) || hooks.some((h) => typeof h !== "string")) invalid("hookServers", 'it must be "*" or an array of server names');
    config.hookServers = hooks.length === 0 ? { kind: "none" } : { kind: "only", names: [...hooks] } satisfies HookServers;
  }
  const m = options.model;
  if (!isModel(m) && m.provider === "anthropic") {
    const budget = m.thinkingBudgetTokens ?? 0;
    if (!Number.isSafeInteger(budget) || budget < 0) invalid("model.thinkingBudgetTokens", `${JSON.stringify(budget)} is not a whole number`);
    if (budget > 0 && budget < MIN_THINKING_BUDGET_TOKENS) {
      invalid("model.thinkingBudgetTokens", `${budget} must be 0 (off) or at least ${MIN_THINKING_BUDGET_TOKENS}, the Messages API's minimum`);
    }
    if (budget >= config.maxOutputTokens) {
      invalid("model.thinkingBudgetTokens", `${budget} must be less than maxOutputTokens (${config.maxOutputTokens})`);
    }
    config.thinkingBudgetTokens = budget;
  }
  return config;
}

function isModel(value: ModelOptions | Model): value is Model {
  return typeof (value as Partial<Model>).complete === "function";
}

function httpUrl(option: string, raw: string | undefined, fallback: string): string {
  if (raw === undefined) return fallback;
  let url: URL | undefined;
  try {
    url = new URL(raw.trim());
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:")) invalid(option, `${JSON.stringify(raw)} is not an http or https URL`);
  return raw.trim();
}

function required(option: string, value: unknown, provider: string): string {
  if (typeof value !== "string" || value.trim() === "") throw new AgentError("config", `Missing ${option}: required for provider "${provider}"`);
  return value;
}

function key(option: string, value: string): string {
  const trimmed = value.trim();
  if (headerProblem("x-api-key", trimmed) !== undefined) {
    invalid(option, "it contains a line break, a control or non-Latin-1 character, which cannot be sent in an HTTP header");
  }
  return trimmed;
}

/** The model of `spec`, with the agent's LLM deadline. */
function modelFrom(spec: ModelOptions, config: Config, fetchFn: typeof fetch | undefined): Model {
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
  return invalid("model.provider", `${JSON.stringify((spec as { provider?: unknown }).provider)} is not one of anthropic, openai, scripted`);
}

/** `options.mcpServers` as a list of server configurations. */
function serverList(options: AgentOptions): McpServerConfig[] {
  const servers = options.mcpServers;
  if (servers === undefined) return [];
  if (Array.isArray(servers)) return [...servers];
  if (typeof servers !== "object" || servers === null) invalid("mcpServers", "it must be an object in the .mcp.json shape or an array of servers");
  const cwd = options.cwd;
  return parseMcpConfig(JSON.stringify(servers), "options.mcpServers", {
    env: options.env ?? {},
    resolvePath: (_base, relative) => (cwd === undefined ? resolve(relative) : resolve(cwd, relative)),
  });
}

/** `promise`, or an `AbortError` once `signal` aborts; what `promise` opens is then closed. */
async function abortable(
  promise: Promise<{ registry: ToolRegistry; failures: RegistryFailure[] }>,
  signal: AbortSignal | undefined,
): Promise<{ registry: ToolRegistry; failures: RegistryFailure[] }> {
  if (signal === undefined) return await promise;
  let onAbort = () => {};
  const aborted = new Promise<"aborted">((resolve) => {
    onAbort = () => resolve("aborted");
    if (signal.aborted) onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    const started = await Promise.race([promise, aborted]);
    if (started !== "aborted") return started;
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
  void promise.then(({ registry }) => registry.close()).catch(() => {});
  throw abortError("Creating the agent was aborted");
}
