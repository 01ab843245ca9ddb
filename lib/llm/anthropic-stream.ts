/**
 * Reading an Anthropic Messages API response: the SSE event stream (text and `input_json_delta`
 * assembly, usage with cache fields, stop mapping of SPEC section 6.5, error events) or a
 * non-streamed JSON message. Used by `anthropic.ts`.
 * @module
 */

import type { LlmResponse, ProviderStop, ToolCall } from "../types.ts";
import { clip, errorObjectText, parseArguments } from "./http.ts";
import { AttemptError, isRetryableStatus } from "./retry.ts";
import type { SseEvent } from "./sse.ts";

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
