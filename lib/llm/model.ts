/**
 * Picks the {@link Model} for a {@link Config} (`SPROUT_AGENT_PROVIDER`).
 * @module
 */

import { readFileSync } from "node:fs";
import type { Config } from "../config/config.ts";
import { requireProvider } from "../config/config.ts";
import type { Model } from "../conversation/types.ts";
import { createAnthropicModel } from "./anthropic.ts";
import { createOpenAiModel } from "./openai.ts";
import type { RetryOptions } from "./retry.ts";
import { createScriptedModel, loadScript } from "./scripted.ts";

/** Injected I/O of {@link createModel}. */
export interface CreateModelOptions {
  /** For the HTTP clients; default the global `fetch`. */
  fetch?: typeof fetch | undefined;
  /** Reads the script file; default `readFileSync(path, "utf8")`. */
  readFile?: ((path: string) => string) | undefined;
  /** For `${VAR}` in the script; default `process.env`. */
  env?: Record<string, string | undefined> | undefined;
  /**
   * Overrides of the HTTP clients' retry policy (SPEC section 9), for example
   * `{ baseDelayMs: 1 }` so tests do not wait the real 500 ms-based backoff; a `retry-after`
   * is honoured all the same. Default: the policy of `lib/llm/retry.ts`.
   */
  retry?: Omit<RetryOptions, "provider" | "signal" | "onRetry"> | undefined;
}

/**
 * Builds the configured model. A scripted model is new on each call and reads its script
 * from the start (each session replays the script, SPEC section 11).
 * @throws {AgentError} code `config` when the provider or its key, model or script is missing,
 *   or the script file is unreadable or invalid
 * @example
 * const model = createModel(loadConfig(process.env, (p) => readFileSync(p, "utf8")));
 */
export function createModel(config: Config, options: CreateModelOptions = {}): Model {
  const provider = requireProvider(config);
  const fetchOption = {
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
    ...(options.retry === undefined ? {} : { retry: options.retry }),
  };
  if (provider === "anthropic") {
    return createAnthropicModel({
      apiKey: config.anthropic.apiKey ?? "",
      model: config.anthropic.model ?? "",
      baseUrl: config.anthropic.baseUrl,
      apiVersion: config.anthropic.apiVersion,
      timeoutMs: config.llmTimeoutMs,
      thinkingBudgetTokens: config.thinkingBudgetTokens,
      ...fetchOption,
    });
  }
  if (provider === "openai") {
    return createOpenAiModel({
      apiKey: config.openai.apiKey ?? "",
      model: config.openai.model ?? "",
      baseUrl: config.openai.baseUrl,
      timeoutMs: config.llmTimeoutMs,
      ...fetchOption,
    });
  }
  const path = config.scriptPath ?? "";
  const turns = loadScript(path, {
    readFile: options.readFile ?? ((p) => readFileSync(p, "utf8")),
    ...(options.env === undefined ? {} : { env: options.env }),
  });
  return createScriptedModel(turns, { path });
}
