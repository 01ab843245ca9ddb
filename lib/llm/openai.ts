/**
 * The Chat Completions client (`POST {baseUrl}/chat/completions`, streaming) for OpenAI and
 * every compatible endpoint (Ollama, vLLM, LiteLLM, llama.cpp, OpenRouter…). Maps the history
 * to chat messages (SPEC section 6), reads the SSE stream, retries per SPEC section 9.
 * @module
 */

import { randomCallId } from "../conversation/call-ids.ts";
import type { HistoryItem, LlmRequest, LlmResponse, Model, ProviderStop, ToolCall } from "../conversation/types.ts";
import { clip, errorObjectText, parseArguments, resultText, sendAttempt, withText } from "./http.ts";
import { AttemptError, type RetryOptions, withRetry } from "./retry.ts";
import type { SseEvent } from "../http/sse.ts";

/**
 * Options of {@link createOpenAiModel}.
 * @example
 * const options: OpenAiOptions = { apiKey: "", model: "llama3.2", baseUrl: "http://127.0.0.1:11434/v1" };
 */
export interface OpenAiOptions {
  /** The API key, sent as `Authorization: Bearer …`; `""` sends none (local servers). */
  apiKey: string;
  /** The model id, for example `gpt-4.1`. */
  model: string;
  /** Default `https://api.openai.com/v1`. */
  baseUrl?: string;
  /** Per-attempt deadline in milliseconds; default 120000. */
  timeoutMs?: number;
  /** Default the global `fetch`. */
  fetch?: typeof fetch;
  /** Overrides of the retry policy (tests shorten the waits). */
  retry?: Omit<RetryOptions, "provider" | "signal" | "onRetry">;
}

/** One Chat Completions message as this client sends it. */
export type ChatMessage =
  | { role: "system" | "user"; content: string }
  | {
    role: "assistant";
    /** Always a string: `""`, never `null`. */
    content: string;
    tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
  }
  | { role: "tool"; tool_call_id: string; content: string };

/**
 * Creates a {@link Model} speaking the Chat Completions API. As with the Anthropic client, a
 * retried attempt streams its text again from the start (`onRetry` is called in between).
 * @example
 * const model = createOpenAiModel({ apiKey, model: "gpt-4.1", baseUrl: "http://localhost:11434/v1" });
 */
export function createOpenAiModel(options: OpenAiOptions): Model {
  const baseUrl = (options.baseUrl ?? "https://api.openai.com/v1").replace(/\/+$/, "");
  const doFetch = options.fetch ?? globalThis.fetch;
  return {
    name: `openai:${options.model}`,
    complete(request: LlmRequest): Promise<LlmResponse> {
      const body = openAiBody(request, options.model);
      return withRetry(
        () =>
          sendAttempt({
            fetch: doFetch,
            url: `${baseUrl}/chat/completions`,
            // Local servers (Ollama, llama.cpp, vLLM) often need no key: send none when none is set.
            headers: options.apiKey === "" ? {} : { authorization: `Bearer ${options.apiKey}` },
            body,
            timeoutMs: options.timeoutMs ?? 120_000,
            ...(request.signal === undefined ? {} : { signal: request.signal }),
          }, {
            events: (events) => readOpenAiStream(events, request.onTextDelta),
            json: (json) => withText(fromChatCompletion(json), request.onTextDelta),
          }),
        {
          ...options.retry,
          provider: "OpenAI-compatible",
          ...(request.signal === undefined ? {} : { signal: request.signal }),
          ...(request.onRetry === undefined ? {} : { onRetry: request.onRetry }),
        },
      );
    },
  };
}

/** The request body sent for `request` (exported for tests). */
export function openAiBody(request: LlmRequest, model: string): Record<string, unknown> {
  const messages: ChatMessage[] = [];
  if (request.system.trim() !== "") messages.push({ role: "system", content: request.system });
  messages.push(...toChatMessages(request.history));
  const body: Record<string, unknown> = {
    model,
    messages,
    max_completion_tokens: request.maxOutputTokens,
    stream: true,
    stream_options: { include_usage: true },
  };
  if (request.tools.length > 0) {
    body["tools"] = request.tools.map((t) => ({
      type: "function",
      function: { name: t.name, description: t.description, parameters: t.inputSchema },
    }));
  }
  return body;
}

/**
 * The text of the assistant turn {@link toChatMessages} adds between tool results and a user
 * message when the assistant said nothing since the previous user message.
 */
export const NO_TEXT_TURN = "(no text)";

/**
 * Maps the history to chat messages: assistant content is always a string, arguments are
 * JSON-stringified, each tool result is a `tool` message (errors prefixed `Error: `, CASES C16;
 * images replaced by a `[image: MIME, N bytes]` marker, as `tool` messages take text only).
 * Blank user text and assistant messages with neither text nor calls are skipped.
 *
 * No two user messages, and no two assistant messages, are ever sent in a row, because strict
 * chat templates refuse it (the Mistral-family templates raise "After the optional system
 * message, conversation roles must alternate user/assistant/user/assistant/..."; the Chat
 * Completions API itself accepts it): consecutive user messages (the compaction's
 * `[Context Handoff]` summary then the prompt, SPEC section 8.3) are merged into one, joined by
 * a blank line; an assistant message without calls followed by another assistant message (an
 * end_turn text then an injected hook call, SPEC section 7) is merged into it. Those templates
 * also check the alternation with tool calls and results left out, so a user message after tool
 * results with no assistant text since the previous user message (a turn that ended with no
 * text, was cancelled or hit the round limit; `_PostCompact` output between the handoff and the
 * prompt) is preceded by the assistant message {@link NO_TEXT_TURN}. Its content is not empty
 * because vLLM's Mistral mode refuses an empty assistant message ("Invalid assistant message:
 * role='assistant' content=None tool_calls=None prefix=False", vllm-project/vllm#21089), and
 * older `mistral_common` refuses a user message right after a tool message ("Unexpected role
 * 'user' after role 'tool'").
 */
export function toChatMessages(history: readonly HistoryItem[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const item of history) {
    if (item.role === "user") {
      if (item.text.trim() === "") continue;
      const last = out[out.length - 1];
      if (last?.role === "user") {
        last.content = `${last.content}\n\n${item.text}`;
        continue;
      }
      if (lastTurnRole(out) === "user") out.push({ role: "assistant", content: NO_TEXT_TURN });
      out.push({ role: "user", content: item.text });
    } else if (item.role === "assistant") {
      const text = item.text.trim() === "" ? "" : item.text;
      if (text === "" && item.toolCalls.length === 0) continue;
      const message: ChatMessage = { role: "assistant", content: text };
      if (item.toolCalls.length > 0) {
        message.tool_calls = item.toolCalls.map((c) => ({
          id: c.id,
          type: "function" as const,
          function: { name: c.name, arguments: JSON.stringify(c.arguments) },
        }));
      }
      const last = out[out.length - 1];
      if (last?.role === "assistant" && last.tool_calls === undefined) {
        last.content = [last.content, message.content].filter((t) => t !== "").join("\n\n");
        if (message.tool_calls !== undefined) last.tool_calls = message.tool_calls;
      } else out.push(message);
    } else {
      const text = resultText(item.content);
      out.push({ role: "tool", tool_call_id: item.toolCallId, content: item.isError ? `Error: ${text}` : text });
    }
  }
  return out;
}

/** The role of the last user message or assistant message without calls: what the templates' alternation check sees. */
function lastTurnRole(messages: readonly ChatMessage[]): "user" | "assistant" | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "user" || (m.role === "assistant" && m.tool_calls === undefined)) return m.role;
  }
  return undefined;
}

/** Chat Completions `finish_reason` → {@link ProviderStop} (SPEC section 6.5). */
export function mapOpenAiStop(reason: unknown): ProviderStop {
  switch (reason) {
    case "stop":
      return "end_turn";
    case "tool_calls":
    case "function_call":
      return "tool_use";
    case "length":
      return "max_tokens";
    case "content_filter":
      return "refusal";
    default:
      return "other";
  }
}

interface PartialCall {
  id: string;
  name: string;
  args: string;
}

/**
 * Reads a Chat Completions event stream, calling `onTextDelta` as text arrives. Tool calls
 * are assembled from `tool_calls[]` deltas: by `index` as OpenAI sends them (the id and name
 * in the first delta of an index, argument fragments after it), and as compatible servers
 * really send them:
 * - Ollama sends each call whole in its own chunk, every one with `index: 0`
 *   (ollama/ollama#15457): a delta with a name and an id other than the one at its index starts
 *   a new call. The new call is also found at its own position, for servers whose later
 *   fragments of such a call use it (deepseek behind a compatible endpoint, agno-agi/agno#8879).
 * - An id that changes in the middle of a call (no name with it, poolsideai/pool#9) does not
 *   split the call; the first id is kept.
 * - Deltas with no `index` at all (Ollama before 0.4.7, ollama/ollama#7881): an id seen before
 *   continues that call, a new id starts a new call, a delta without id continues the current one.
 * `arguments` sent as a JSON object instead of a string is taken as the arguments. A call
 * without an id gets 9 random letters and digits (`lib/conversation/call-ids.ts`).
 * @throws {AttemptError} for an error chunk (retryable unless it is an invalid request) and
 *   for a stream that ends before any `finish_reason` (retryable)
 */
export async function readOpenAiStream(
  events: AsyncIterable<SseEvent>,
  onTextDelta?: (text: string) => void,
): Promise<LlmResponse> {
  let text = "";
  let refusal = "";
  const calls: PartialCall[] = [];
  const byIndex = new Map<number, PartialCall>();
  let current: PartialCall | undefined;
  let finish: unknown;
  let usage: LlmResponse["usage"];
  let model: unknown;
  for await (const event of events) {
    const data = event.data.trim();
    if (data === "[DONE]") break;
    if (data === "") continue;
    let chunk: Record<string, unknown>;
    try {
      chunk = JSON.parse(data) as Record<string, unknown>;
    } catch {
      throw new AttemptError(`invalid JSON in stream: ${clip(data, 200)}`, { retryable: true });
    }
    if (chunk["error"] !== undefined && chunk["error"] !== null) throw chunkError(chunk);
    usage = readUsage(chunk["usage"]) ?? usage;
    if (typeof chunk["model"] === "string" && chunk["model"] !== "") model ??= chunk["model"];
    const choices = Array.isArray(chunk["choices"]) ? chunk["choices"] as Record<string, unknown>[] : [];
    const choice = choices[0];
    if (choice === undefined) continue;
    const delta = (choice["delta"] ?? {}) as Record<string, unknown>;
    if (typeof delta["content"] === "string" && delta["content"] !== "") {
      text += delta["content"];
      onTextDelta?.(delta["content"]);
    }
    if (typeof delta["refusal"] === "string") refusal += delta["refusal"];
    if (Array.isArray(delta["tool_calls"])) {
      for (const raw of delta["tool_calls"] as Record<string, unknown>[]) {
        const id = typeof raw["id"] === "string" && raw["id"] !== "" ? raw["id"] : undefined;
        const index = typeof raw["index"] === "number" ? raw["index"] : undefined;
        const fn = (raw["function"] ?? {}) as Record<string, unknown>;
        const named = typeof fn["name"] === "string" && fn["name"] !== "";
        let call = index === undefined
          ? (id === undefined ? current : calls.find((c) => c.id === id))
          : byIndex.get(index);
        // At a known index, a delta that brings another id and a name is another call (Ollama
        // reuses index 0); another id without a name continues the call (an unstable id).
        const collides = call !== undefined && index !== undefined && id !== undefined && call.id !== "" &&
          call.id !== id && named;
        if (call === undefined || collides) {
          call = { id: "", name: "", args: "" };
          calls.push(call);
          if (index !== undefined) byIndex.set(index, call);
          // The rest of a call that took a used index may come at its position (deepseek).
          if (collides && !byIndex.has(calls.length - 1)) byIndex.set(calls.length - 1, call);
        }
        current = call;
        if (id !== undefined && call.id === "") call.id = id;
        if (typeof fn["name"] === "string") call.name += fn["name"];
        call.args += argumentsText(fn["arguments"]);
      }
    }
    if (choice["finish_reason"] !== undefined && choice["finish_reason"] !== null) finish = choice["finish_reason"];
  }
  if (finish === undefined) throw new AttemptError("stream ended before a finish_reason", { retryable: true });
  return assemble(text, refusal, calls, finish, usage, model);
}

/**
 * One `function.arguments` value as JSON text: a string as sent (a fragment), a JSON object
 * (some servers send the arguments parsed) stringified, nothing for `null` or absent.
 */
function argumentsText(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined || value === null) return "";
  return JSON.stringify(value);
}

function assemble(
  text: string,
  refusal: string,
  calls: PartialCall[],
  finish: unknown,
  usage: LlmResponse["usage"],
  model: unknown,
): LlmResponse {
  const toolCalls: ToolCall[] = [];
  const argumentErrors: Record<string, string> = {};
  const ids = new Set(calls.map((c) => c.id));
  calls.forEach((c) => {
    let id = c.id;
    if (id === "") {
      do id = randomCallId(); while (ids.has(id));
      ids.add(id);
    }
    const parsed = parseArguments(c.args);
    if (!parsed.ok) argumentErrors[id] = `invalid JSON arguments (${parsed.error}): ${clip(c.args, 200)}`;
    toolCalls.push({ id, name: c.name, arguments: parsed.ok ? parsed.value : {} });
  });
  let stop = mapOpenAiStop(finish);
  if (refusal !== "" && text === "") {
    text = refusal;
    stop = "refusal";
  }
  const response: LlmResponse = { text, toolCalls, stop };
  if (usage !== undefined) response.usage = usage;
  if (typeof model === "string" && model !== "") response.model = model;
  if (Object.keys(argumentErrors).length > 0) response.argumentErrors = argumentErrors;
  return response;
}

/** `prompt_tokens` plus the cache fields some compatible endpoints add; `undefined` when absent. */
function readUsage(raw: unknown): LlmResponse["usage"] {
  if (typeof raw !== "object" || raw === null) return undefined;
  const u = raw as Record<string, unknown>;
  const num = (key: string) => typeof u[key] === "number" ? u[key] as number : undefined;
  const prompt = num("prompt_tokens");
  const output = num("completion_tokens");
  if (prompt === undefined && output === undefined) return undefined;
  const input = (prompt ?? 0) + (num("cache_read_input_tokens") ?? 0) + (num("cache_creation_input_tokens") ?? 0);
  return { inputTokens: input, outputTokens: output ?? 0 };
}

function chunkError(chunk: Record<string, unknown>): AttemptError {
  const error = chunk["error"] as Record<string, unknown>;
  const kind = String(error["type"] ?? error["code"] ?? "");
  const invalid = kind === "invalid_request_error" || kind === "invalid_request";
  return new AttemptError(`${errorObjectText(chunk) ?? "unknown error"} (in stream)`, { retryable: !invalid });
}

/** Reads a non-streaming Chat Completions response (an endpoint that ignored `stream: true`). */
export function fromChatCompletion(json: unknown): LlmResponse {
  const body = json as { choices?: unknown; usage?: unknown; error?: unknown; model?: unknown };
  if (body.error !== undefined) throw chunkError(body as Record<string, unknown>);
  const choice = Array.isArray(body.choices) ? body.choices[0] as Record<string, unknown> | undefined : undefined;
  if (choice === undefined) {
    throw new AttemptError(`unexpected response: ${clip(JSON.stringify(json), 200)}`, { retryable: false });
  }
  const message = (choice["message"] ?? {}) as Record<string, unknown>;
  const raw = Array.isArray(message["tool_calls"]) ? message["tool_calls"] as Record<string, unknown>[] : [];
  const calls = raw.map((c) => {
    const fn = (c["function"] ?? {}) as Record<string, unknown>;
    const args = fn["arguments"];
    return {
      id: typeof c["id"] === "string" ? c["id"] : "",
      name: typeof fn["name"] === "string" ? fn["name"] : "",
      args: argumentsText(args),
    };
  });
  const text = typeof message["content"] === "string" ? message["content"] : "";
  const refusal = typeof message["refusal"] === "string" ? message["refusal"] : "";
  return assemble(text, refusal, calls, choice["finish_reason"], readUsage(body.usage), body.model);
}
