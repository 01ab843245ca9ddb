/**
 * sprout-agent's fakes, for hook authors and embedders testing against the real agent
 * (fakes, not mocks): a recording fake LLM HTTP server that speaks the Anthropic Messages
 * API and the Chat Completions API, streams SSE like the real ones and answers 400 to every
 * request the real API would refuse; the validators it uses; and the scripted model, which
 * replays fixed turns without a network. Runs under Node, Bun and Deno.
 *
 * @example
 * ```ts
 * import { createAgent } from "./mod.ts";
 * import { startFakeLlm } from "./testing.ts";
 *
 * const llm = await startFakeLlm({ responses: [{ text: "hello" }] });
 * const agent = await createAgent({ model: { provider: "anthropic", model: "m", apiKey: "k", baseUrl: llm.anthropicBaseUrl } });
 * const run = agent.prompt("hi");
 * for await (const _ of run);
 * console.log((await run.result).stopReason, llm.requests.length); // "end_turn" 1
 * await agent.close();
 * await llm.close();
 * ```
 * @module
 */

export { startFakeLlm } from "./lib/testing/fake-llm.ts";
export type {
  FakeHttpError,
  FakeLlm,
  FakeLlmOptions,
  FakeReply,
  FakeStreamError,
  FakeTurn,
  RecordedRequest,
  StreamShape,
} from "./lib/testing/fake-llm.ts";
export { strictTemplateProblems, validateAnthropicRequest, validateOpenAiRequest } from "./lib/testing/validate.ts";
export type { OpenAiValidateOptions } from "./lib/testing/validate.ts";
export { createScriptedModel } from "./lib/llm/scripted.ts";
export { linkedTransports } from "./lib/mcp/in-process.ts";
export type { InProcessServer, InProcessTransport } from "./lib/mcp/in-process.ts";
export type { ScriptedOptions, ScriptTurn } from "./lib/llm/scripted.ts";
export type {
  HistoryItem,
  LlmRequest,
  LlmResponse,
  Model,
  ProviderStop,
  ResultBlock,
  ToolCall,
  ToolDef,
  Usage,
} from "./lib/conversation/types.ts";
