/**
 * The Anthropic Messages API client (`POST {baseUrl}/v1/messages`, streaming). Maps the
 * provider-neutral history to Messages (SPEC sections 6 and 7), reads the SSE stream, and
 * retries per SPEC section 9.
 * @module
 */

import type { HistoryItem, LlmRequest, LlmResponse, Model, ProviderStop, ResultBlock, ToolCall } from "../types.ts";
import { clip, errorObjectText, parseArguments, resultText, sendAttempt, withText } from "./http.ts";
import { AttemptError, isRetryableStatus, type RetryOptions, withRetry } from "./retry.ts";
import type { SseEvent } from "./sse.ts";

/** Options of {@link createAnthropicModel}. */
export interface AnthropicOptions {
  apiKey: string;
  model: string;
  /** Default `https://api.anthropic.com`. */
  baseUrl?: string;
  /** The `anthropic-version` header; default `2023-06-01`. */
  apiVersion?: string;
  /** Per-attempt deadline in milliseconds; default 120000. */
  timeoutMs?: number;
  /** Default the global `fetch`. */
  fetch?: typeof fetch;
  /** Overrides of the retry policy (tests shorten the waits). */
  retry?: Omit<RetryOptions, "provider" | "signal" | "onRetry">;
}

type Block = Record<string, unknown>;
/** One Messages API message. */
export interface AnthropicMessage {
  role: "user" | "assistant";
  content: Block[];
}

/**
 * Creates a {@link Model} speaking the Anthropic Messages API. A failed attempt is retried
 * from the start (SPEC section 9), so text deltas of a stream that broke off (an `error` event,
 * a dropped connection) were already passed to `onTextDelta` and the retry streams the whole
 * answer again; `onRetry` marks the point where that happens.
 * @example
 * const model = createAnthropicModel({ apiKey, model: "claude-sonnet-4-5" });
 * const reply = await model.complete({ system: "", history: [{ role: "user", text: "hi" }], tools: [], maxOutputTokens: 1024 });
 */
export function createAnthropicModel(options: AnthropicOptions): Model {
  const baseUrl = (options.baseUrl ?? "https://api.anthropic.com").replace(/\/+$/, "");
  const doFetch = options.fetch ?? globalThis.fetch;
  return {
    name: `anthropic:${options.model}`,
    complete(request: LlmRequest): Promise<LlmResponse> {
      const body = anthropicBody(request, options.model);
      return withRetry(
        () =>
          sendAttempt({
            fetch: doFetch,
            url: `${baseUrl}/v1/messages`,
            headers: { "x-api-key": options.apiKey, "anthropic-version": options.apiVersion ?? "2023-06-01" },
            body,
            timeoutMs: options.timeoutMs ?? 120_000,
            ...(request.signal === undefined ? {} : { signal: request.signal }),
          }, {
            events: (events) => readAnthropicStream(events, request.onTextDelta),
            json: (json) => withText(fromAnthropicMessage(json), request.onTextDelta),
          }),
        {
          ...options.retry,
          provider: "Anthropic",
          ...(request.signal === undefined ? {} : { signal: request.signal }),
          ...(request.onRetry === undefined ? {} : { onRetry: request.onRetry }),
        },
      );
    },
  };
}

/** The request body sent for `request` (exported for tests). */
export function anthropicBody(request: LlmRequest, model: string): Record<string, unknown> {
  const hasTools = request.tools.length > 0;
  const body: Record<string, unknown> = { model, max_tokens: request.maxOutputTokens, stream: true };
  if (request.system.trim() !== "") body["system"] = request.system;
  body["messages"] = toAnthropicMessages(request.history, hasTools);
  if (hasTools) {
    body["tools"] = request.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }));
  }
  return body;
}

/**
 * Maps the history to Messages API messages. Consecutive tool results become one user message
 * with the `tool_result` blocks first (user text after them); adjacent same-role messages are
 * merged; empty or whitespace-only text is never sent; an assistant message with neither text
 * nor calls is skipped. With `hasTools` false (a request that defines no tools, SPEC section 7)
 * each tool call becomes assistant text `[tool call NAME {ARGS}]` and each result user text
 * (the result's text, for an injected hook pair its JSON), because the API rejects tool blocks
 * without tool definitions. A history that starts with an assistant message gets a user
 * message `(continued)` first, since the API requires the first message to be a user's.
 */
export function toAnthropicMessages(history: readonly HistoryItem[], hasTools: boolean): AnthropicMessage[] {
  const out: AnthropicMessage[] = [];
  const push = (role: "user" | "assistant", blocks: Block[]) => {
    if (blocks.length === 0) return;
    const last = out[out.length - 1];
    if (last !== undefined && last.role === role) {
      // Keep tool_result blocks ahead of everything else in a user message.
      const results = blocks.filter((b) => b["type"] === "tool_result");
      const others = blocks.filter((b) => b["type"] !== "tool_result");
      const firstOther = last.content.findIndex((b) => b["type"] !== "tool_result");
      if (results.length > 0 && firstOther !== -1) last.content.splice(firstOther, 0, ...results);
      else last.content.push(...results);
      last.content.push(...others);
    } else out.push({ role, content: [...blocks] });
  };
  for (const item of history) {
    if (item.role === "user") push("user", textBlocks(item.text));
    else if (item.role === "assistant") {
      if (item.native?.provider === "anthropic" && hasTools) {
        push("assistant", item.native.content as Block[]);
        continue;
      }
      const blocks = textBlocks(item.text);
      for (const call of item.toolCalls) {
        if (hasTools) blocks.push({ type: "tool_use", id: call.id, name: call.name, input: call.arguments });
        else blocks.push({ type: "text", text: `[tool call ${call.name} ${JSON.stringify(call.arguments)}]` });
      }
      push("assistant", blocks);
    } else if (hasTools) {
      push("user", [{
        type: "tool_result",
        tool_use_id: item.toolCallId,
        content: resultBlocks(item.content),
        is_error: item.isError,
      }]);
    } else {
      const text = resultText(item.content);
      push("user", textBlocks(item.isError ? `Error: ${text}` : text));
    }
  }
  if (out[0]?.role === "assistant") out.unshift({ role: "user", content: [{ type: "text", text: "(continued)" }] });
  return out;
}

function textBlocks(text: string): Block[] {
  return text.trim() === "" ? [] : [{ type: "text", text }];
}

function resultBlocks(content: readonly ResultBlock[]): Block[] {
  const blocks: Block[] = [];
  for (const b of content) {
    if (b.type === "text") blocks.push(...textBlocks(b.text));
    else blocks.push({ type: "image", source: { type: "base64", media_type: b.mimeType, data: b.data } });
  }
  return blocks.length === 0 ? [{ type: "text", text: "(no output)" }] : blocks;
}

/** Anthropic `stop_reason` → {@link ProviderStop} (SPEC section 6.5). */
export function mapAnthropicStop(reason: unknown): ProviderStop {
  switch (reason) {
    case "end_turn":
    case "stop_sequence":
      return "end_turn";
    case "tool_use":
      return "tool_use";
    case "max_tokens":
    case "model_context_window_exceeded":
      return "max_tokens";
    case "refusal":
      return "refusal";
    case "pause_turn":
      return "pause_turn";
    default:
      return "other";
  }
}

/** The status each Anthropic error type stands for (used for errors inside a stream). */
const ERROR_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

interface Assembling {
  block: Block;
  text: string;
  json: string;
  hasJson: boolean;
}

/**
 * Reads a Messages API event stream into a response, calling `onTextDelta` as text arrives.
 * @throws {AttemptError} for an `error` event (retryable when it is an overload, rate-limit or
 *   server error) and for a stream that ends before `message_stop` (retryable)
 */
export async function readAnthropicStream(
  events: AsyncIterable<SseEvent>,
  onTextDelta?: (text: string) => void,
): Promise<LlmResponse> {
  const blocks = new Map<number, Assembling>();
  let usage: { input: number; output: number; seen: boolean } = { input: 0, output: 0, seen: false };
  let stopReason: unknown;
  let stopped = false;
  for await (const event of events) {
    if (event.event === "ping" || event.data === "") continue;
    let data: Record<string, unknown>;
    try {
      data = JSON.parse(event.data) as Record<string, unknown>;
    } catch {
      throw new AttemptError(`invalid JSON in stream event "${event.event}": ${clip(event.data, 200)}`, { retryable: true });
    }
    const type = typeof data["type"] === "string" ? data["type"] : event.event;
    if (type === "error") throw streamError(data);
    if (type === "message_start") {
      const message = data["message"] as { usage?: Record<string, unknown> } | undefined;
      usage = readUsage(message?.usage, usage);
    } else if (type === "content_block_start") {
      const index = Number(data["index"]);
      const block = { ...(data["content_block"] as Block) };
      blocks.set(index, { block, text: typeof block["text"] === "string" ? block["text"] : "", json: "", hasJson: false });
      if (block["type"] === "text" && typeof block["text"] === "string" && block["text"] !== "") onTextDelta?.(block["text"]);
    } else if (type === "content_block_delta") {
      const current = blocks.get(Number(data["index"]));
      const delta = data["delta"] as Record<string, unknown> | undefined;
      if (current === undefined || delta === undefined) continue;
      if (delta["type"] === "text_delta" && typeof delta["text"] === "string") {
        current.text += delta["text"];
        if (delta["text"] !== "") onTextDelta?.(delta["text"]);
      } else if (delta["type"] === "input_json_delta" && typeof delta["partial_json"] === "string") {
        current.json += delta["partial_json"];
        current.hasJson = true;
      } else if (delta["type"] === "thinking_delta" && typeof delta["thinking"] === "string") {
        current.block["thinking"] = String(current.block["thinking"] ?? "") + delta["thinking"];
      } else if (delta["type"] === "signature_delta" && typeof delta["signature"] === "string") {
        current.block["signature"] = delta["signature"];
      }
    } else if (type === "message_delta") {
      const delta = data["delta"] as Record<string, unknown> | undefined;
      if (delta !== undefined && "stop_reason" in delta) stopReason = delta["stop_reason"];
      usage = readUsage(data["usage"] as Record<string, unknown> | undefined, usage);
    } else if (type === "message_stop") {
      stopped = true;
      break;
    }
  }
  if (!stopped) throw new AttemptError("stream ended before message_stop", { retryable: true });
  return assemble([...blocks.entries()].sort((a, b) => a[0] - b[0]).map(([, b]) => b), stopReason, usage);
}

function assemble(parts: Assembling[], stopReason: unknown, usage: { input: number; output: number; seen: boolean }): LlmResponse {
  const stop = mapAnthropicStop(stopReason);
  const toolCalls: ToolCall[] = [];
  const argumentErrors: Record<string, string> = {};
  const native: Block[] = [];
  let text = "";
  for (const part of parts) {
    const block = part.block;
    if (block["type"] === "text") {
      text += part.text;
      if (part.text.trim() !== "") native.push({ ...block, text: part.text });
    } else if (block["type"] === "tool_use") {
      const id = String(block["id"] ?? "");
      let args: Record<string, unknown> = {};
      if (part.hasJson) {
        const parsed = parseArguments(part.json);
        if (parsed.ok) args = parsed.value;
        else argumentErrors[id] = `invalid JSON arguments (${parsed.error}): ${clip(part.json, 200)}`;
      } else if (typeof block["input"] === "object" && block["input"] !== null && !Array.isArray(block["input"])) {
        args = block["input"] as Record<string, unknown>;
      }
      toolCalls.push({ id, name: String(block["name"] ?? ""), arguments: args });
      native.push({ ...block, input: args });
    } else native.push(block);
  }
  const response: LlmResponse = { text, toolCalls, stop };
  if (usage.seen) response.usage = { inputTokens: usage.input, outputTokens: usage.output };
  if (stop === "pause_turn") response.native = { provider: "anthropic", content: native };
  if (Object.keys(argumentErrors).length > 0) response.argumentErrors = argumentErrors;
  return response;
}

function readUsage(
  raw: Record<string, unknown> | undefined,
  prior: { input: number; output: number; seen: boolean },
): { input: number; output: number; seen: boolean } {
  if (raw === undefined || raw === null) return prior;
  const num = (key: string): number | undefined => typeof raw[key] === "number" ? raw[key] as number : undefined;
  const inputParts = [num("input_tokens"), num("cache_read_input_tokens"), num("cache_creation_input_tokens")];
  const hasInput = inputParts.some((v) => v !== undefined);
  const output = num("output_tokens");
  return {
    input: hasInput ? inputParts.reduce<number>((s, v) => s + (v ?? 0), 0) : prior.input,
    output: output ?? prior.output,
    seen: prior.seen || hasInput || output !== undefined,
  };
}

function streamError(data: Record<string, unknown>): AttemptError {
  const error = data["error"] as { type?: unknown } | undefined;
  const kind = typeof error?.type === "string" ? error.type : "";
  const status = ERROR_STATUS[kind];
  return new AttemptError(`${errorObjectText(data) ?? "unknown error"} (in stream)`, {
    retryable: status === undefined || isRetryableStatus(status),
    ...(status === undefined ? {} : { status }),
  });
}

/** Reads a non-streaming Messages API response (an endpoint that ignored `stream: true`). */
export function fromAnthropicMessage(json: unknown): LlmResponse {
  const message = json as { content?: unknown; stop_reason?: unknown; usage?: Record<string, unknown> };
  if (!Array.isArray(message.content)) {
    throw new AttemptError(`unexpected response: ${clip(JSON.stringify(json), 200)}`, { retryable: false });
  }
  const parts: Assembling[] = (message.content as Block[]).map((block) => ({
    block,
    text: typeof block["text"] === "string" ? block["text"] : "",
    json: "",
    hasJson: false,
  }));
  return assemble(parts, message.stop_reason, readUsage(message.usage, { input: 0, output: 0, seen: false }));
}
