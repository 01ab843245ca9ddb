/**
 * sprout-agent: an LLM agent core whose lifecycle any MCP server can steer through hook
 * tools (`_Stop`, `_PostCompact`). Zero third-party imports: Deno imports this file by URL,
 * Bun runs it as is, Node runs it through tsx. Fakes for tests (a recording fake LLM server,
 * the request validators, the scripted model) are in `./testing.ts`.
 *
 * @example
 * ```ts
 * import { createAgent } from "./mod.ts";
 *
 * const agent = await createAgent({
 *   model: { provider: "scripted", turns: [{ text: "Hello!" }] },
 *   mcpServers: { mcpServers: {} },
 *   maxRounds: 10,
 * });
 * try {
 *   const run = agent.prompt("Say hello");
 *   for await (const event of run) if (event.type === "text-delta") console.log(event.text);
 *   console.log((await run.result).stopReason); // "end_turn"
 * } finally {
 *   await agent.close();
 * }
 * ```
 * @module
 */

export { createAgent } from "./lib/agent/agent.ts";
export type { Agent } from "./lib/agent/agent.ts";
export type { AgentLimits, AgentOptions, ModelOptions } from "./lib/agent/options.ts";
export { agentOptionsFromEnv } from "./lib/agent/from-env.ts";
export type {
  AgentEvent,
  AgentObserver,
  HookDecision,
  HookHalt,
  HookOutcome,
  PromptLimit,
  PromptResult,
  SpanIds,
  TraceEvent,
} from "./lib/conversation/events.ts";
export type { PromptOptions, PromptRun } from "./lib/agent/loop.ts";
export type { TraceParent } from "./lib/util/trace.ts";
export type { EventStream } from "./lib/util/stream.ts";
export type { RegistryFailure } from "./lib/mcp/registry.ts";
export type { HttpServerConfig, McpEra, McpServerConfig, StdioServerConfig } from "./lib/mcp/types.ts";
export type {
  ElicitationRequest,
  ElicitationResult,
  InputContext,
  InputHandler,
  SamplingResult,
} from "./lib/mcp/input-requests.ts";
export { createAnthropicModel } from "./lib/llm/anthropic.ts";
export type { AnthropicOptions } from "./lib/llm/anthropic.ts";
export type { RetryOptions } from "./lib/llm/retry.ts";
export { createOpenAiModel } from "./lib/llm/openai.ts";
export type { OpenAiOptions } from "./lib/llm/openai.ts";
export { createScriptedModel } from "./lib/llm/scripted.ts";
export type { ScriptedOptions, ScriptTurn } from "./lib/llm/scripted.ts";
export type {
  HistoryItem,
  LlmRequest,
  LlmResponse,
  Model,
  ProviderStop,
  ResultBlock,
  StopReason,
  ToolCall,
  ToolDef,
  Usage,
} from "./lib/conversation/types.ts";
export { AgentError } from "./lib/util/errors.ts";
export type { AgentErrorCode } from "./lib/util/errors.ts";
export type { HookCall, HookContext, HookHandler, HookMeta, HookName, InProcessHooks } from "./lib/hooks/runner.ts";
export type { HookAgent, HookToolCall } from "./lib/hooks/points.ts";
export { subagentFromFile } from "./lib/subagents/definitions.ts";
export type { SubagentDefinition } from "./lib/subagents/definitions.ts";
export { loadSubagentFiles } from "./lib/subagents/files.ts";
export type { LoadSubagentFilesOptions } from "./lib/subagents/files.ts";
export type { PermissionAsk, PermissionDefault, PermissionOutcome, PermissionRequest } from "./lib/hooks/permission.ts";
export { defaultSessionDir, fileSessionStore } from "./lib/sessions/file-store.ts";
export type { FileSessionStoreOptions } from "./lib/sessions/file-store.ts";
export { memorySessionStore } from "./lib/sessions/memory-store.ts";
export {
  describeSession,
  parseRecords,
  recordLine,
  restoreSession,
  SESSION_ID_PATTERN,
} from "./lib/sessions/records.ts";
export type {
  RestoredSession,
  SessionCounters,
  SessionInfo,
  SessionRead,
  SessionRecord,
  SessionStore,
  SessionWriter,
} from "./lib/sessions/records.ts";
export { serveAcp } from "./lib/acp/server.ts";
export type { AcpOptions, TextSink } from "./lib/acp/server.ts";
export { VERSION } from "./lib/util/version.ts";
