/**
 * The documented environment variables (SPEC section 9) → the options of `createAgent`, through
 * `loadConfig`, so that every error still names the variable.
 * @module
 */

import type { AgentLimits, AgentOptions, ModelOptions } from "./options.ts";
import { isModel } from "./options.ts";
import { loadConfig, requireProvider, sessionDirSetting } from "../config/config.ts";
import { fileSessionStore } from "../sessions/file-store.ts";
import { loadScript } from "../llm/scripted.ts";

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
  const sessions = sessionDirSetting(env);
  return {
    model,
    // Unset: createAgent's default, the file store in the state folder (SPEC 12.1).
    ...(sessions === undefined
      ? {}
      : { sessionStore: sessions === "off" ? false : fileSessionStore({ dir: sessions }) }),
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
    maxRepeatedCalls: config.maxRepeatedCalls,
    hookTimeoutMs: config.hookTimeoutMs,
    stopMaxRejections: config.stopMaxRejections,
    stopDeclinedTwice: config.stopDeclinedTwice,
    maxLineBytes: config.maxLineBytes,
    permissions: config.permissions,
    ...(config.samplingMaxTokens > 0 ? { sampling: { maxTokens: config.samplingMaxTokens } } : {}),
  };
}

/** The API keys of `options` (for redaction), in the shape `configSecrets` of `lib/util/redact.ts` takes. */
export function optionKeys(
  options: Pick<AgentOptions, "model">,
): { anthropic: { apiKey: string | undefined }; openai: { apiKey: string | undefined } } {
  const m = options.model;
  const key = (provider: string) => !isModel(m) && m.provider === provider && "apiKey" in m ? m.apiKey : undefined;
  return { anthropic: { apiKey: key("anthropic") }, openai: { apiKey: key("openai") } };
}
