/**
 * The Anthropic Messages API client (`POST {baseUrl}/v1/messages`, streaming). Maps the
 * provider-neutral history to Messages (SPEC sections 6 and 7), reads the SSE stream, and
 * retries per SPEC section 9.
 * @module
 */

import type { HistoryItem, LlmRequest, LlmResponse, Model, ResultBlock } from "../types.ts";
import { fromAnthropicMessage, readAnthropicStream } from "./anthropic-stream.ts";
import { resultText, sendAttempt, withText } from "./http.ts";
import { type RetryOptions, withRetry } from "./retry.ts";

export { fromAnthropicMessage, mapAnthropicStop, readAnthropicStream } from "./anthropic-stream.ts";

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
