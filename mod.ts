/**
 * sprout-agent: an LLM agent core whose lifecycle any MCP server can steer through hook
 * tools (`_Stop`, `_PostCompact`). Zero third-party imports: Deno imports this file by URL,
 * Bun runs it as is, Node runs it through tsx.
 *
 * @example
 * ```ts
 * import { readFileSync } from "node:fs";
 * import process from "node:process";
 * import { AgentSession, createModel, createRegistry, loadConfig } from "./mod.ts";
 *
 * const config = loadConfig(process.env, (p) => readFileSync(p, "utf8"));
 * const { registry } = await createRegistry([], { sessionId: "s1" });
 * const session = new AgentSession({ config, model: createModel(config), registry });
 * const run = session.prompt("Say hello");
 * for await (const event of run) if (event.type === "text-delta") process.stdout.write(event.text);
 * console.log((await run.result).stopReason);
 * await registry.close();
 * ```
 * @module
 */

export * from "./lib/types.ts";
export * from "./lib/events.ts";
export * from "./lib/errors.ts";
export * from "./lib/config.ts";
export * from "./lib/version.ts";
export { AgentSession, mapStop, MAX_PAUSE_CONTINUATIONS, MAX_TOOL_CALLS_PER_RESPONSE } from "./lib/loop.ts";
export type { PromptRun, SessionOptions } from "./lib/loop.ts";
export { INVALID_TOOL_NAME, prepareToolCalls, runToolCalls } from "./lib/tool-calls.ts";
export type { PreparedCalls, RunToolCallsOptions } from "./lib/tool-calls.ts";
export type { EventStream } from "./lib/stream.ts";
export { HookRunner, injectionItems } from "./lib/hooks.ts";
export type { HookMeta, HookName, HookResult, HookRunnerOptions } from "./lib/hooks.ts";
export * from "./lib/compaction.ts";
export { formatToolContent, NO_OUTPUT, truncateMiddle } from "./lib/results.ts";
export * from "./lib/mcp/types.ts";
export { expandVars, parseMcpConfig, sanitizeServerNames } from "./lib/mcp/config.ts";
export { connectMcp } from "./lib/mcp/client.ts";
export { createRegistry } from "./lib/mcp/registry.ts";
export type { ConnectFn, RegistryFailure, RegistryOptions } from "./lib/mcp/registry.ts";
export { createModel } from "./lib/llm/model.ts";
export type { CreateModelOptions } from "./lib/llm/model.ts";
export { readSse, SseParser } from "./lib/http/sse.ts";
export { BodyLimitError } from "./lib/http/body.ts";
export type { SseEvent, SseOptions } from "./lib/http/sse.ts";
export { serveAcp } from "./lib/acp.ts";
export type { AcpOptions, TextSink } from "./lib/acp.ts";
