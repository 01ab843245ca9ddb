/**
 * Plain data shared by the loop, the LLM wire clients and the MCP registry.
 *
 * The history is provider-neutral: each wire client (`lib/llm/*.ts`) maps it to its API's
 * message shape. SPEC section 6 lists the invariants every history must keep.
 * @module
 */

/**
 * Why a prompt ended (SPEC section 11): the ACP `stopReason` values, and the agent's own
 * `max_pause_turns` (the provider paused the turn more times in a row than the agent continues
 * it, SPEC section 6.5), which ACP, whose values are fixed, receives as `max_turn_requests`.
 * @example
 * const finished = (reason: StopReason) => reason === "end_turn";
 */
export type StopReason = "end_turn" | "cancelled" | "max_tokens" | "max_turn_requests" | "refusal" | "max_pause_turns";

/**
 * Why one LLM response ended, normalised from the provider's own field
 * (Anthropic `stop_reason`, OpenAI `finish_reason`). SPEC section 6.5 maps these to a
 * {@link StopReason}: `end_turn`, `tool_use` without calls and `other` end the turn.
 * @example
 * const more = (stop: ProviderStop, calls: number) => stop === "tool_use" && calls > 0;
 */
export type ProviderStop = "end_turn" | "tool_use" | "max_tokens" | "refusal" | "pause_turn" | "other";

/**
 * One tool call requested by the LLM (or injected by the agent for a hook).
 * @example
 * const call: ToolCall = { id: "call_1", name: "fs__read", arguments: { path: "a.txt" } };
 */
export interface ToolCall {
  /** Provider id (`toolu_…`, `call_…`) or one the agent minted: 9 letters and digits (`hook00001`, `call00001`; `lib/conversation/call-ids.ts`). */
  id: string;
  /** The name the LLM sees: qualified and mapped (SPEC section 5). */
  name: string;
  /** Always a JSON object; `null` or absent arguments become `{}`. */
  arguments: Record<string, unknown>;
}

/**
 * A content block of a tool result as it is kept in history.
 * @example
 * const block: ResultBlock = { type: "text", text: "42 files" };
 */
export type ResultBlock =
  | { type: "text"; text: string }
  | { type: "image"; mimeType: string; data: string };

/**
 * One entry of the conversation history (SPEC section 6).
 * @example
 * const history: HistoryItem[] = [{ role: "user", text: "hi" }, { role: "assistant", text: "hello", toolCalls: [] }];
 */
export type HistoryItem =
  | { role: "user"; text: string }
  | {
    role: "assistant";
    /** May be empty; wire clients never send an empty text block. */
    text: string;
    toolCalls: ToolCall[];
    /**
     * The response's content in the provider's own shape, resent unchanged so that blocks the
     * agent does not interpret survive: Anthropic `thinking` and `redacted_thinking` with their
     * signatures, `server_tool_use`, text with `citations`, any future type, and a `pause_turn`
     * response (SPEC section 6.5). `toolCalls` stays authoritative for the calls: the wire client
     * keeps the native tool-call blocks in step with it (the loop may rename an id or a name,
     * or drop calls). Only the client named in `provider` uses it; others use `text`/`toolCalls`.
     */
    native?: { provider: string; content: unknown[] };
  }
  | {
    role: "tool";
    toolCallId: string;
    /** At least one block; an empty output is `(no output)` (SPEC section 6.7). */
    content: ResultBlock[];
    isError: boolean;
  };

/**
 * A tool definition as sent to the LLM.
 * @example
 * const tool: ToolDef = { name: "fs__read", description: "Reads a file", inputSchema: { type: "object", properties: { path: { type: "string" } } } };
 */
export interface ToolDef {
  /** Matches `^[a-zA-Z0-9_-]{1,64}$`. */
  name: string;
  /** At most 1024 bytes (SPEC section 5.4). */
  description: string;
  /** Always a JSON Schema with `"type": "object"` at the top. */
  inputSchema: Record<string, unknown>;
}

/**
 * Token counts reported by the provider for one request.
 * @example
 * const usage: Usage = { inputTokens: 1200, outputTokens: 80 };
 */
export interface Usage {
  /** Input tokens including cache reads and cache writes (SPEC section 8.1). */
  inputTokens: number;
  /** Output tokens the provider reported (Anthropic `output_tokens`, OpenAI `completion_tokens`). */
  outputTokens: number;
  /**
   * Only in a prompt's summed usage ({@link PromptResult.usage}): how many of its model
   * requests (compaction summaries included) the provider reported no usage for; absent when
   * every one did. The counts cover the requests that reported, so they are a lower bound, and
   * unknown, not `0`, when no request reported (`unreported` is then every request).
   */
  unreported?: number;
}

/**
 * One LLM request, provider-neutral.
 * @example
 * const request: LlmRequest = { system: "Be brief.", history: [{ role: "user", text: "hi" }], tools: [], maxOutputTokens: 1024 };
 */
export interface LlmRequest {
  /** The system prompt (`Config.systemPrompt` for turns); not sent when blank. */
  system: string;
  /** The conversation to send, oldest first; the wire client maps it to its API's messages. */
  history: readonly HistoryItem[];
  /** LLM-visible tools; an empty list means the request defines no tools. */
  tools: readonly ToolDef[];
  /**
   * The most tokens the response may hold (Anthropic `max_tokens`, OpenAI
   * `max_completion_tokens`). Turns use `SPROUT_AGENT_MAX_OUTPUT_TOKENS`, default 32768
   * (SPEC section 9); a compaction summary request uses at most 8192 (SPEC section 8.2).
   */
  maxOutputTokens: number;
  /** Aborts the request (and any retry wait). The promise then rejects with an `AbortError`. */
  signal?: AbortSignal;
  /** Called with each text delta as it streams in. */
  onTextDelta?: (text: string) => void;
  /**
   * Called with each piece of the model's reasoning as it streams in (Anthropic
   * `thinking_delta`). Never part of the answer text.
   */
  onThinkingDelta?: (text: string) => void;
  /** Called before each retry wait with the attempt number (1-based) and the delay. */
  onRetry?: (info: { attempt: number; delayMs: number; reason: string }) => void;
  /** Marks a compaction summary request (the scripted model answers it without a turn). */
  purpose?: "turn" | "summary";
}

/**
 * One complete LLM response.
 * @example
 * const response: LlmResponse = { text: "hello", toolCalls: [], stop: "end_turn" };
 */
export interface LlmResponse {
  /** The response's text blocks concatenated; `""` when it had none. */
  text: string;
  /** The tool calls in the order the response gave them; empty when there were none. */
  toolCalls: ToolCall[];
  /** Why the response ended, normalised; the loop maps it to a {@link StopReason} (SPEC section 6.5). */
  stop: ProviderStop;
  /** Absent when the provider reported none. */
  usage?: Usage;
  /**
   * The assistant content in the provider's own shape, in order and unchanged (Anthropic:
   * every content block, `thinking` and unknown types included); see `HistoryItem.native`.
   */
  native?: { provider: string; content: unknown[] };
  /**
   * With `stop: "refusal"`: the provider's explanation for the user, when it gave one
   * (Anthropic `stop_details.explanation`, with its `category`; OpenAI the `refusal` text).
   */
  refusal?: string;
  /**
   * Tool calls whose arguments were not a valid JSON object, by call id, with the reason.
   * Such a call is still listed in `toolCalls` (arguments `{}`) so that history stays valid;
   * the loop should answer it with an error result carrying this text instead of running it.
   * Usual cause: a response cut by the length limit inside a tool call (`stop: "max_tokens"`).
   */
  argumentErrors?: Record<string, string>;
}

/**
 * A model the loop can call. `lib/llm/anthropic.ts`, `lib/llm/openai.ts` and
 * `lib/llm/scripted.ts` implement it; tests may pass their own.
 * @example
 * const echo: Model = {
 *   name: "echo",
 *   complete: (request) => Promise.resolve({ text: JSON.stringify(request.history.at(-1)), toolCalls: [], stop: "end_turn" }),
 * };
 */
export interface Model {
  /** For display, e.g. `anthropic:claude-sonnet-4-5`. */
  readonly name: string;
  /**
   * Sends one request (streaming where the API allows) and resolves with the whole response.
   * @throws {AgentError} code `llm` when the provider still fails after the retries of SPEC
   *   section 9, or the request is invalid; an `AbortError` when `signal` aborts.
   */
  complete(request: LlmRequest): Promise<LlmResponse>;
}
