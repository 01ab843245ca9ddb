/**
 * Reading an Anthropic Messages API response: the SSE event stream (every content block
 * assembled from its deltas and kept in order, usage with cache fields, stop mapping of SPEC
 * section 6.5, the refusal's `stop_details`, error events) or a non-streamed JSON message.
 * Used by `anthropic.ts`.
 * @module
 */

import type { LlmResponse, ProviderStop, ToolCall } from "../conversation/types.ts";
import { clip, errorObjectText, parseArguments } from "./http.ts";
import { AttemptError, isRetryableStatus } from "./retry.ts";
import type { SseEvent } from "../http/sse.ts";

type Block = Record<string, unknown>;

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

/** Callbacks of {@link readAnthropicStream}. */
export interface AnthropicStreamHandlers {
  /** Called with each answer text delta. */
  onTextDelta?: ((text: string) => void) | undefined;
  /** Called with each `thinking_delta` (the model's reasoning, never answer text). */
  onThinkingDelta?: ((text: string) => void) | undefined;
}

/**
 * Reads a Messages API event stream into a response, calling the handlers as text and
 * thinking arrive. Every content block is assembled from its `content_block_start` and its
 * deltas (`text_delta`, `input_json_delta` for `tool_use` and server tool blocks,
 * `thinking_delta`, `signature_delta`, `citations_delta`) and kept in order in
 * `native`, so that `thinking`, `redacted_thinking` and types the agent does not know are
 * resent unchanged.
 * @param handlers the handlers, or just `onTextDelta`
 * @throws {AttemptError} for an `error` event (retryable when it is an overload, rate-limit or
 *   server error) and for a stream that ends before `message_stop` (retryable)
 */
export async function readAnthropicStream(
  events: AsyncIterable<SseEvent>,
  handlers?: ((text: string) => void) | AnthropicStreamHandlers,
): Promise<LlmResponse> {
  const { onTextDelta, onThinkingDelta } = typeof handlers === "function"
    ? { onTextDelta: handlers, onThinkingDelta: undefined }
    : handlers ?? {};
  const blocks = new Map<number, Assembling>();
  let usage: { input: number; output: number; seen: boolean } = { input: 0, output: 0, seen: false };
  let stopReason: unknown;
  let stopDetails: unknown;
  let stopped = false;
  let model: unknown;
  for await (const event of events) {
    if (event.event === "ping" || event.data === "") continue;
    let data: Record<string, unknown>;
    try {
      data = JSON.parse(event.data) as Record<string, unknown>;
    } catch {
      throw new AttemptError(`invalid JSON in stream event "${event.event}": ${clip(event.data, 200)}`, {
        retryable: true,
      });
    }
    const type = typeof data["type"] === "string" ? data["type"] : event.event;
    if (type === "error") throw streamError(data);
    if (type === "message_start") {
      const message = data["message"] as { usage?: Record<string, unknown>; model?: unknown } | undefined;
      usage = readUsage(message?.usage, usage);
      model = message?.model;
    } else if (type === "content_block_start") {
      const index = Number(data["index"]);
      const block = { ...(data["content_block"] as Block) };
      blocks.set(index, {
        block,
        text: typeof block["text"] === "string" ? block["text"] : "",
        json: "",
        hasJson: false,
      });
      if (block["type"] === "text" && typeof block["text"] === "string" && block["text"] !== "") {
        onTextDelta?.(block["text"]);
      }
      if (block["type"] === "thinking" && typeof block["thinking"] === "string" && block["thinking"] !== "") {
        onThinkingDelta?.(block["thinking"]);
      }
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
        if (delta["thinking"] !== "") onThinkingDelta?.(delta["thinking"]);
      } else if (delta["type"] === "signature_delta" && typeof delta["signature"] === "string") {
        current.block["signature"] = String(current.block["signature"] ?? "") + delta["signature"];
      } else if (delta["type"] === "citations_delta" && delta["citation"] !== undefined) {
        const prior = Array.isArray(current.block["citations"]) ? current.block["citations"] as unknown[] : [];
        current.block["citations"] = [...prior, delta["citation"]];
      }
    } else if (type === "message_delta") {
      const delta = data["delta"] as Record<string, unknown> | undefined;
      if (delta !== undefined && "stop_reason" in delta) stopReason = delta["stop_reason"];
      // The docs put stop_details "on the message_delta event alongside stop_reason".
      stopDetails = delta?.["stop_details"] ?? data["stop_details"] ?? stopDetails;
      usage = readUsage(data["usage"] as Record<string, unknown> | undefined, usage);
    } else if (type === "message_stop") {
      stopped = true;
      break;
    }
  }
  if (!stopped) throw new AttemptError("stream ended before message_stop", { retryable: true });
  return assemble(
    [...blocks.entries()].sort((a, b) => a[0] - b[0]).map(([, b]) => b),
    stopReason,
    usage,
    stopDetails,
    model,
  );
}

function assemble(
  parts: Assembling[],
  stopReason: unknown,
  usage: { input: number; output: number; seen: boolean },
  stopDetails: unknown,
  model: unknown,
): LlmResponse {
  const stop = mapAnthropicStop(stopReason);
  const toolCalls: ToolCall[] = [];
  const argumentErrors: Record<string, string> = {};
  const native: Block[] = [];
  let text = "";
  for (const part of parts) {
    const block = part.block;
    if (block["type"] === "text") {
      text += part.text;
      // The API refuses blank text blocks on the way back in.
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
    } else if (part.hasJson) {
      // A server tool call (`server_tool_use`, `mcp_tool_use`…) streams its input like tool_use.
      const parsed = parseArguments(part.json);
      native.push({ ...block, input: parsed.ok ? parsed.value : block["input"] ?? {} });
    } else native.push(block);
  }
  const response: LlmResponse = { text, toolCalls, stop, native: { provider: "anthropic", content: native } };
  if (usage.seen) response.usage = { inputTokens: usage.input, outputTokens: usage.output };
  if (typeof model === "string" && model !== "") response.model = model;
  if (Object.keys(argumentErrors).length > 0) response.argumentErrors = argumentErrors;
  if (stop === "refusal") {
    const refusal = refusalText(stopDetails);
    if (refusal !== undefined) response.refusal = refusal;
  }
  return response;
}

/**
 * The user-facing text of Anthropic `stop_details` (`{type: "refusal", category, explanation}`,
 * either of the last two may be null): the explanation, with the category after it.
 */
function refusalText(details: unknown): string | undefined {
  if (typeof details !== "object" || details === null) return undefined;
  const d = details as Record<string, unknown>;
  const explanation = typeof d["explanation"] === "string" && d["explanation"].trim() !== ""
    ? d["explanation"].trim()
    : undefined;
  const category = typeof d["category"] === "string" && d["category"] !== "" ? d["category"] : undefined;
  if (explanation === undefined) return category === undefined ? undefined : `declined (category: ${category})`;
  return category === undefined ? explanation : `${explanation} (category: ${category})`;
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
  const message = json as {
    content?: unknown;
    stop_reason?: unknown;
    stop_details?: unknown;
    usage?: Record<string, unknown>;
    model?: unknown;
  };
  if (!Array.isArray(message.content)) {
    throw new AttemptError(`unexpected response: ${clip(JSON.stringify(json), 200)}`, { retryable: false });
  }
  const parts: Assembling[] = (message.content as Block[]).map((block) => ({
    block,
    text: typeof block["text"] === "string" ? block["text"] : "",
    json: "",
    hasJson: false,
  }));
  return assemble(
    parts,
    message.stop_reason,
    readUsage(message.usage, { input: 0, output: 0, seen: false }),
    message.stop_details,
    message.model,
  );
}
