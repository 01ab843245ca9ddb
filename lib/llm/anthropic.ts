/**
 * The Anthropic Messages API client (`POST {baseUrl}/v1/messages`, streaming). Maps the
 * provider-neutral history to Messages (SPEC sections 6 and 7), reads the SSE stream, and
 * retries per SPEC section 9.
 * @module
 */

import type { HistoryItem, LlmRequest, LlmResponse, Model, ResultBlock, ToolCall } from "../conversation/types.ts";
import { fromAnthropicMessage, readAnthropicStream } from "./anthropic-stream.ts";
import { resultText, sendAttempt, withText } from "./http.ts";
import { type RetryOptions, withRetry } from "./retry.ts";

export {
  type AnthropicStreamHandlers,
  fromAnthropicMessage,
  mapAnthropicStop,
  readAnthropicStream,
} from "./anthropic-stream.ts";

/** The smallest `thinking.budget_tokens` the Messages API accepts. */
export const MIN_THINKING_BUDGET_TOKENS = 1024;

/**
 * Options of {@link createAnthropicModel}.
 * @example
 * const options: AnthropicOptions = { apiKey: "sk-ant-…", model: "claude-sonnet-4-5", thinkingBudgetTokens: 4096 };
 */
export interface AnthropicOptions {
  /** The API key, sent as `x-api-key`. */
  apiKey: string;
  /** The model id, for example `claude-sonnet-4-5`. */
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
  /**
   * Extended thinking: sent as `thinking: {type: "enabled", budget_tokens}` on turn requests
   * (`SPROUT_AGENT_THINKING_BUDGET_TOKENS`). Default 0 = off. At least
   * {@link MIN_THINKING_BUDGET_TOKENS} and below the request's `max_tokens`, as the API
   * requires; a request whose `max_tokens` is not above it (a compaction summary) is sent
   * without thinking.
   */
  thinkingBudgetTokens?: number;
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
      const body = anthropicBody(request, options.model, { thinkingBudgetTokens: options.thinkingBudgetTokens ?? 0 });
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
            events: (events) =>
              readAnthropicStream(events, {
                onTextDelta: request.onTextDelta,
                onThinkingDelta: request.onThinkingDelta,
              }),
            json: (json) =>
              withThinking(withText(fromAnthropicMessage(json), request.onTextDelta), request.onThinkingDelta),
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

/**
 * The request body sent for `request` (exported for tests). `options.thinkingBudgetTokens`
 * (default 0 = off) adds `thinking: {type: "enabled", budget_tokens}` to a turn request whose
 * `max_tokens` is above the budget; never to a compaction summary (`purpose: "summary"`), nor
 * to a request whose current assistant turn opens without a thinking block (a response that
 * came without one, then a tool call or an injected `_Stop` call): with thinking on, the API
 * refuses that turn ("a final `assistant` message must start with a thinking block … To avoid
 * this requirement, disable `thinking`"), and a signed block cannot be made up. Without
 * thinking, a final assistant message (a paused turn) is sent without its thinking blocks,
 * which the API refuses there.
 */
export function anthropicBody(
  request: LlmRequest,
  model: string,
  options: { thinkingBudgetTokens?: number } = {},
): Record<string, unknown> {
  const hasTools = request.tools.length > 0;
  const body: Record<string, unknown> = { model, max_tokens: request.maxOutputTokens, stream: true };
  const budget = options.thinkingBudgetTokens ?? 0;
  const messages = toAnthropicMessages(request.history, hasTools);
  if (
    budget > 0 && request.purpose !== "summary" && budget < request.maxOutputTokens && turnOpensWithThinking(messages)
  ) {
    body["thinking"] = { type: "enabled", budget_tokens: budget };
  }
  const last = messages[messages.length - 1];
  if (body["thinking"] === undefined && last?.role === "assistant") {
    // "When thinking is disabled, an `assistant` message in the final position cannot contain
    // `thinking`" (a paused turn sent back by an endpoint that thought unasked).
    last.content = last.content.filter((b) => !isThinking(b));
    if (last.content.length === 0) messages.pop();
  }
  if (request.system.trim() !== "") body["system"] = request.system;
  body["messages"] = messages;
  if (hasTools) {
    body["tools"] = request.tools.map((t) => ({
      name: t.name,
      description: t.description,
      input_schema: t.inputSchema,
    }));
  }
  return body;
}

/**
 * Maps the history to Messages API messages. Consecutive tool results become one user message
 * with the `tool_result` blocks first (user text after them); adjacent same-role messages are
 * merged (so an end_turn message and the `_Stop` injection that follows it are one assistant
 * message, SPEC section 7); empty or whitespace-only text is never sent; an assistant message
 * with nothing to send is skipped.
 *
 * An assistant item with Anthropic `native` content is sent as that content, block for block:
 * `thinking`, `redacted_thinking` (signatures included) and blocks of any type the agent does
 * not know are never rewritten. Only its `tool_use` blocks follow `toolCalls`, in order: a
 * renamed id or name is applied, a call the loop dropped (beyond 64, or a response cut by the
 * length limit) loses its block. Two kinds of block are left out because the API refuses them
 * whatever the content: a thinking block without a signature (a response cut off while it
 * was thinking) and thinking blocks that would end a message.
 *
 * With `hasTools` false (a request that defines no tools, SPEC section 7) each tool call
 * becomes assistant text `[tool call NAME {ARGS}]` and each result user text (the result's
 * text, for an injected hook pair its JSON), because the API rejects tool blocks without tool
 * definitions; thinking and unknown blocks are still sent unchanged. A history that starts
 * with an assistant message gets a user message `(continued)` first, since the API requires
 * the first message to be a user's.
 */
export function toAnthropicMessages(history: readonly HistoryItem[], hasTools: boolean): AnthropicMessage[] {
  const merged: AnthropicMessage[] = [];
  for (const item of history) {
    if (item.role === "user") pushMerged(merged, "user", textBlocks(item.text));
    else if (item.role === "assistant") pushMerged(merged, "assistant", assistantBlocks(item, hasTools));
    else if (hasTools) {
      pushMerged(merged, "user", [{
        type: "tool_result",
        tool_use_id: item.toolCallId,
        content: resultBlocks(item.content),
        is_error: item.isError,
      }]);
    } else {
      const text = resultText(item.content);
      pushMerged(merged, "user", textBlocks(item.isError ? `Error: ${text}` : text));
    }
  }
  // "The final block in an assistant message cannot be `thinking`": drop trailing thinking
  // blocks (left by a response cut off after its reasoning), then merge again around any
  // message that became empty.
  const out: AnthropicMessage[] = [];
  for (const message of merged) {
    const content = [...message.content];
    if (message.role === "assistant") {
      while (content.length > 0 && isThinking(content[content.length - 1]!)) content.pop();
    }
    pushMerged(out, message.role, content);
  }
  if (out[0]?.role === "assistant") out.unshift({ role: "user", content: [{ type: "text", text: "(continued)" }] });
  return out;
}

/** Appends `blocks` as a message, merged into the last one when it has the same role. */
function pushMerged(out: AnthropicMessage[], role: "user" | "assistant", blocks: Block[]): void {
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
}

/** The blocks of one assistant item: its native content kept in step with its calls, or text and calls. */
function assistantBlocks(item: Extract<HistoryItem, { role: "assistant" }>, hasTools: boolean): Block[] {
  const callBlock = (call: ToolCall): Block =>
    hasTools
      ? { type: "tool_use", id: call.id, name: call.name, input: call.arguments }
      : { type: "text", text: `[tool call ${call.name} ${JSON.stringify(call.arguments)}]` };
  if (item.native?.provider !== "anthropic") return [...textBlocks(item.text), ...item.toolCalls.map(callBlock)];
  const blocks: Block[] = [];
  let next = 0;
  for (const block of item.native.content as Block[]) {
    if (block["type"] === "tool_use") {
      const call = item.toolCalls[next++];
      if (call === undefined) continue; // dropped by the loop
      blocks.push(hasTools ? { ...block, id: call.id, name: call.name, input: call.arguments } : callBlock(call));
    } else if (isThinking(block) && !isSigned(block)) continue;
    else blocks.push(block);
  }
  for (const call of item.toolCalls.slice(next)) blocks.push(callBlock(call));
  return blocks;
}

/**
 * True unless the assistant turn in progress (the messages after the last user message that
 * is not only tool results) starts with an assistant message whose first block is not thinking.
 */
function turnOpensWithThinking(messages: readonly AnthropicMessage[]): boolean {
  let start = 0;
  messages.forEach((m, i) => {
    if (m.role === "user" && m.content.some((b) => b["type"] !== "tool_result")) start = i + 1;
  });
  const opener = messages[start];
  return opener === undefined || (opener.content[0] !== undefined && isThinking(opener.content[0]));
}

function isThinking(block: Block): boolean {
  return block["type"] === "thinking" || block["type"] === "redacted_thinking";
}

/** A thinking block carries the signature (`redacted_thinking`: the data) the API checks. */
function isSigned(block: Block): boolean {
  const proof = block["type"] === "thinking" ? block["signature"] : block["data"];
  return typeof proof === "string" && proof !== "";
}

/** Passes a non-streamed response's thinking to `onThinkingDelta`, as the stream would. */
function withThinking(response: LlmResponse, onThinkingDelta?: (text: string) => void): LlmResponse {
  for (const block of (response.native?.content ?? []) as Block[]) {
    if (block["type"] === "thinking" && typeof block["thinking"] === "string" && block["thinking"] !== "") {
      onThinkingDelta?.(block["thinking"]);
    }
  }
  return response;
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
