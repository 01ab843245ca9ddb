/**
 * Private to `lib/testing/fake-llm.ts`: the fake LLM's answers encoded in each wire format (Anthropic
 * Messages events and JSON, Chat Completions chunks and JSON), as the real APIs send them.
 * @module
 */

import { fakeRedactedThinkingData, fakeThinkingSignature } from "./validate.ts";

/**
 * How one normal response streams.
 * @example
 * const llm = await startFakeLlm({ responses: [{ text: "slow answer" }], stream: { splitBytes: true, pauseMs: 20 } });
 */
export interface StreamShape {
  /** Write every byte of the stream separately. */
  splitBytes?: boolean;
  /** End SSE lines with CRLF instead of LF. */
  crlf?: boolean;
  /** Wait this long (ms) after the first text delta before sending the rest. */
  pauseMs?: number;
  /** Destroy the connection right after the first text delta (a stream cut mid-way). */
  cutAfterFirstDelta?: boolean;
}

/**
 * A normal response. `stop` is `end_turn` | `tool_use` | `max_tokens` | `refusal` | `pause_turn`, or a raw wire value.
 * @example
 * const reply: FakeReply = { text: "reading it", toolCalls: [{ name: "fs__read", arguments: { path: "a" } }] };
 */
export interface FakeReply extends StreamShape {
  /** The assistant's text, streamed as about three deltas; absent or `""` sends no text at all. */
  text?: string;
  /** `arguments` may be a raw string (sent as is, for invalid-JSON tests). `id` defaults to a generated one. */
  toolCalls?: { name: string; arguments?: Record<string, unknown> | string; id?: string }[];
  /** Default `tool_use` with tool calls, else `end_turn`. */
  stop?: string;
  /**
   * Default `{inputTokens: 10, outputTokens: 5}`. The cache fields are sent by the Anthropic wire only.
   * `null` (Chat Completions only) sends no usage at all, as endpoints that ignore
   * `stream_options.include_usage` do.
   */
  usage?: { inputTokens: number; outputTokens: number; cacheReadTokens?: number; cacheCreationTokens?: number } | null;
  /** Cut the stream by the length limit in the middle of the last tool call's arguments. */
  truncateInToolCall?: boolean;
  /**
   * How the Chat Completions wire streams tool calls. `openai` (default): the id and name in
   * the first delta of each `index`, then argument fragments. `ollama`: each call whole in its
   * own chunk, every one with `index: 0`, ids `call_<8 random>`, in Ollama's chunk envelope
   * (`system_fingerprint: "fp_ollama"`, `role` and `content: ""` in every delta; ollama/ollama
   * `openai/openai.go` ToChunk, issue #15457). `ollama-no-index`: the same without `index`
   * (Ollama before 0.4.7, issue #7881).
   */
  toolCallStream?: "openai" | "ollama" | "ollama-no-index";
  /** On the Chat Completions wire, streamed or not, send each tool call's `arguments` as a JSON object instead of a string. */
  argumentsAsObject?: boolean;
  /**
   * Anthropic only: a `thinking` block first, streamed as `thinking_delta` pieces and one
   * `signature_delta` (the signature the validator checks), as the API does with thinking on.
   */
  thinking?: string;
  /** Anthropic only: a `redacted_thinking` block (after `thinking`) whose `data` is made from this seed. */
  redactedThinking?: string;
  /**
   * Anthropic only: content blocks sent as they are, after the thinking and before the text:
   * blocks with an `input` stream it as `input_json_delta` (`server_tool_use`), text blocks
   * stream their `citations` as `citations_delta` then their text; others arrive whole
   * (`web_search_tool_result`, any future type).
   */
  blocks?: Record<string, unknown>[];
  /** Anthropic only, with `stop: "refusal"`: the `stop_details` sent (`type: "refusal"` added). */
  stopDetails?: { category?: string | null; explanation?: string | null };
}

/** Wire options of the whole fake. */
export interface WireOptions {
  /** Mint tool-call ids of exactly 9 letters and digits, as servers of Mistral-family models do. */
  mistralIds?: boolean;
}

/**
 * An error event in the middle of the stream, after `text` (default `"partial "`) was sent.
 * @example
 * const broken: FakeStreamError = { streamError: "overloaded_error", message: "Overloaded", text: "half an ans" };
 */
export interface FakeStreamError {
  /**
   * The error's `type`, sent as is on both wires: an Anthropic error type such as
   * `overloaded_error` or `invalid_request_error`; it decides whether the agent retries (SPEC section 9).
   */
  streamError: string;
  /** The error's message; default `Overloaded` for `overloaded_error`, else `Internal server error`. */
  message?: string;
  /** The text sent before the error; default `"partial "`. */
  text?: string;
}

/** One piece of a stream: an SSE event, or a pause. */
export type Piece = { event?: string; data: unknown } | { pause: true };

function pieces(text: string, n = 3): string[] {
  if (text === "") return [];
  const chars = [...text];
  const size = Math.max(1, Math.ceil(chars.length / n));
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(""));
  return out;
}

function callsOf(
  turn: FakeReply,
  idBase: number,
  prefix: string,
  wire: WireOptions = {},
): { id: string; name: string; json: string }[] {
  return (turn.toolCalls ?? []).map((c, i) => ({
    id: c.id ??
      (wire.mistralIds === true
        ? `Fk${String(idBase % 10_000).padStart(4, "0")}${String((i + 1) % 1000).padStart(3, "0")}`
        : turn.toolCallStream?.startsWith("ollama") === true
        ? `call_${(idBase * 1000 + i + 1).toString(36).padStart(8, "0").slice(-8)}`
        : `${prefix}${idBase}_${i + 1}`),
    name: c.name,
    json: typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments ?? {}),
  }));
}

function stopOf(turn: FakeReply, wire: "anthropic" | "openai"): string {
  const neutral = turn.truncateInToolCall === true
    ? "max_tokens"
    : turn.stop ?? ((turn.toolCalls?.length ?? 0) > 0 ? "tool_use" : "end_turn");
  const table: Record<string, [string, string]> = {
    end_turn: ["end_turn", "stop"],
    tool_use: ["tool_use", "tool_calls"],
    max_tokens: ["max_tokens", "length"],
    refusal: ["refusal", "content_filter"],
    pause_turn: ["pause_turn", "stop"],
  };
  const row = table[neutral];
  return row === undefined ? neutral : wire === "anthropic" ? row[0] : row[1];
}

function anthropicUsage(turn: FakeReply): Record<string, number> {
  const u = turn.usage ?? { inputTokens: 10, outputTokens: 5 };
  const usage: Record<string, number> = { input_tokens: u.inputTokens, output_tokens: u.outputTokens };
  if (u.cacheReadTokens !== undefined) usage["cache_read_input_tokens"] = u.cacheReadTokens;
  if (u.cacheCreationTokens !== undefined) usage["cache_creation_input_tokens"] = u.cacheCreationTokens;
  return usage;
}

/** A Messages API event stream for `turn`: message_start, ping, text and tool_use blocks (deltas in pieces), message_delta, message_stop. */
export function anthropicEvents(turn: FakeReply, body: Record<string, unknown>, idBase: number): Piece[] {
  const usage = anthropicUsage(turn);
  const out: Piece[] = [{
    event: "message_start",
    data: {
      type: "message_start",
      message: {
        id: `msg_fake_${idBase}`,
        type: "message",
        role: "assistant",
        model: body["model"],
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 },
      },
    },
  }, { event: "ping", data: { type: "ping" } }];
  let index = 0;
  let paused = false;
  const delta = (d: Record<string, unknown>) => ({
    event: "content_block_delta",
    data: { type: "content_block_delta", index, delta: d },
  });
  const stop = () => out.push({ event: "content_block_stop", data: { type: "content_block_stop", index: index++ } });
  if (turn.thinking !== undefined) {
    out.push({
      event: "content_block_start",
      data: { type: "content_block_start", index, content_block: { type: "thinking", thinking: "", signature: "" } },
    });
    for (const piece of pieces(turn.thinking)) out.push(delta({ type: "thinking_delta", thinking: piece }));
    out.push(delta({ type: "signature_delta", signature: fakeThinkingSignature(turn.thinking) }));
    stop();
  }
  if (turn.redactedThinking !== undefined) {
    const block = { type: "redacted_thinking", data: fakeRedactedThinkingData(turn.redactedThinking) };
    out.push({ event: "content_block_start", data: { type: "content_block_start", index, content_block: block } });
    stop();
  }
  for (const raw of turn.blocks ?? []) {
    const hasInput = typeof raw["input"] === "object" && raw["input"] !== null;
    const start = raw["type"] === "text" ? { type: "text", text: "" } : hasInput ? { ...raw, input: {} } : raw;
    out.push({ event: "content_block_start", data: { type: "content_block_start", index, content_block: start } });
    if (raw["type"] === "text") {
      for (const citation of Array.isArray(raw["citations"]) ? raw["citations"] : []) {
        out.push(delta({ type: "citations_delta", citation }));
      }
      for (const piece of pieces(String(raw["text"] ?? ""))) out.push(delta({ type: "text_delta", text: piece }));
    } else if (hasInput) {
      for (const piece of pieces(JSON.stringify(raw["input"]))) {
        out.push(delta({ type: "input_json_delta", partial_json: piece }));
      }
    }
    stop();
  }
  if ((turn.text ?? "") !== "") {
    out.push({
      event: "content_block_start",
      data: { type: "content_block_start", index, content_block: { type: "text", text: "" } },
    });
    for (const piece of pieces(turn.text ?? "")) {
      out.push({
        event: "content_block_delta",
        data: { type: "content_block_delta", index, delta: { type: "text_delta", text: piece } },
      });
      if (!paused) out.push({ pause: true });
      paused = true;
    }
    out.push({ event: "content_block_stop", data: { type: "content_block_stop", index } });
    index++;
  }
  const calls = callsOf(turn, idBase, "toolu_fake_");
  calls.forEach((call, i) => {
    const last = i === calls.length - 1;
    const json = last && turn.truncateInToolCall === true
      ? call.json.slice(0, Math.max(1, Math.floor(call.json.length / 2)))
      : call.json;
    out.push({
      event: "content_block_start",
      data: {
        type: "content_block_start",
        index,
        content_block: { type: "tool_use", id: call.id, name: call.name, input: {} },
      },
    });
    for (const piece of pieces(json)) {
      out.push({
        event: "content_block_delta",
        data: { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: piece } },
      });
    }
    out.push({ event: "content_block_stop", data: { type: "content_block_stop", index } });
    index++;
  });
  const messageDelta: Record<string, unknown> = { stop_reason: stopOf(turn, "anthropic"), stop_sequence: null };
  if (turn.stopDetails !== undefined) messageDelta["stop_details"] = { type: "refusal", ...turn.stopDetails };
  out.push({
    event: "message_delta",
    data: { type: "message_delta", delta: messageDelta, usage: { output_tokens: usage["output_tokens"] } },
  });
  out.push({ event: "message_stop", data: { type: "message_stop" } });
  return out;
}

/** A non-streamed Messages API response for `turn`. */
export function anthropicJson(turn: FakeReply, body: Record<string, unknown>, idBase: number): Record<string, unknown> {
  const content: unknown[] = [];
  if (turn.thinking !== undefined) {
    content.push({ type: "thinking", thinking: turn.thinking, signature: fakeThinkingSignature(turn.thinking) });
  }
  if (turn.redactedThinking !== undefined) {
    content.push({ type: "redacted_thinking", data: fakeRedactedThinkingData(turn.redactedThinking) });
  }
  content.push(...(turn.blocks ?? []));
  if ((turn.text ?? "") !== "") content.push({ type: "text", text: turn.text });
  for (const call of callsOf(turn, idBase, "toolu_fake_")) {
    let input: unknown = {};
    try {
      input = JSON.parse(call.json);
    } catch { /* sent as {} */ }
    content.push({ type: "tool_use", id: call.id, name: call.name, input });
  }
  return {
    id: `msg_fake_${idBase}`,
    type: "message",
    role: "assistant",
    model: body["model"],
    content,
    stop_reason: stopOf(turn, "anthropic"),
    stop_sequence: null,
    ...(turn.stopDetails === undefined ? {} : { stop_details: { type: "refusal", ...turn.stopDetails } }),
    usage: anthropicUsage(turn),
  };
}

function openAiUsage(turn: FakeReply): Record<string, number> {
  const u = turn.usage ?? { inputTokens: 10, outputTokens: 5 };
  return {
    prompt_tokens: u.inputTokens,
    completion_tokens: u.outputTokens,
    total_tokens: u.inputTokens + u.outputTokens,
  };
}

/** Chat Completions chunks for `turn`: content and tool-call argument fragments, the finish chunk, the usage chunk when asked, `[DONE]`. */
export function openAiEvents(
  turn: FakeReply,
  body: Record<string, unknown>,
  idBase: number,
  wire: WireOptions = {},
): Piece[] {
  const ollama = turn.toolCallStream === "ollama" || turn.toolCallStream === "ollama-no-index";
  const base = ollama
    ? {
      id: `chatcmpl-${idBase}`,
      object: "chat.completion.chunk",
      created: 1721830176,
      model: body["model"],
      system_fingerprint: "fp_ollama",
    }
    : { id: `chatcmpl-fake${idBase}`, object: "chat.completion.chunk", created: 0, model: body["model"] };
  const chunk = (delta: unknown, finish: string | null = null) => ({
    data: { ...base, choices: [{ index: 0, delta, finish_reason: finish }] },
  });
  const out: Piece[] = [chunk({ role: "assistant", content: "" })];
  let paused = false;
  for (const piece of pieces(turn.text ?? "")) {
    out.push(chunk(ollama ? { role: "assistant", content: piece } : { content: piece }));
    if (!paused) out.push({ pause: true });
    paused = true;
  }
  const calls = callsOf(turn, idBase, "call_fake_", wire);
  const args = (json: string): unknown => {
    if (turn.argumentsAsObject !== true) return json;
    try {
      return JSON.parse(json);
    } catch {
      return json;
    }
  };
  calls.forEach((call, i) => {
    const last = i === calls.length - 1;
    const json = last && turn.truncateInToolCall === true
      ? call.json.slice(0, Math.max(1, Math.floor(call.json.length / 2)))
      : call.json;
    if (ollama) {
      // Go's encoding/json field order: id, index, type, function{name, arguments}.
      const whole = turn.toolCallStream === "ollama"
        ? { id: call.id, index: 0, type: "function", function: { name: call.name, arguments: args(json) } }
        : { id: call.id, type: "function", function: { name: call.name, arguments: args(json) } };
      out.push(chunk({ role: "assistant", content: "", tool_calls: [whole] }));
      return;
    }
    if (turn.argumentsAsObject === true) {
      out.push(
        chunk({
          tool_calls: [{
            index: i,
            id: call.id,
            type: "function",
            function: { name: call.name, arguments: args(json) },
          }],
        }),
      );
      return;
    }
    out.push(
      chunk({
        tool_calls: [{ index: i, id: call.id, type: "function", function: { name: call.name, arguments: "" } }],
      }),
    );
    for (const piece of pieces(json)) out.push(chunk({ tool_calls: [{ index: i, function: { arguments: piece } }] }));
  });
  out.push(chunk(ollama ? { role: "assistant", content: "" } : {}, stopOf(turn, "openai")));
  const includeUsage = (body["stream_options"] as { include_usage?: unknown } | undefined)?.include_usage === true;
  if (includeUsage && turn.usage !== null) out.push({ data: { ...base, choices: [], usage: openAiUsage(turn) } });
  out.push({ data: "[DONE]" });
  return out;
}

/** A non-streamed Chat Completions response for `turn`. */
export function openAiJson(
  turn: FakeReply,
  body: Record<string, unknown>,
  idBase: number,
  wire: WireOptions = {},
): Record<string, unknown> {
  const calls = callsOf(turn, idBase, "call_fake_", wire);
  const message: Record<string, unknown> = { role: "assistant", content: turn.text ?? null };
  if (calls.length > 0) {
    message["tool_calls"] = calls.map((c) => ({
      id: c.id,
      type: "function",
      function: { name: c.name, arguments: turn.argumentsAsObject === true ? JSON.parse(c.json) as unknown : c.json },
    }));
  }
  return {
    id: `chatcmpl-fake${idBase}`,
    object: "chat.completion",
    created: 0,
    model: body["model"],
    choices: [{ index: 0, message, finish_reason: stopOf(turn, "openai") }],
    ...(turn.usage === null ? {} : { usage: openAiUsage(turn) }),
  };
}

/** A stream that sends some text, then an error event (Anthropic) or an error chunk (Chat Completions), then ends. */
export function streamErrorEvents(wire: "anthropic" | "openai", turn: FakeStreamError, model: string): Piece[] {
  const text = turn.text ?? "partial ";
  const message = turn.message ?? (turn.streamError === "overloaded_error" ? "Overloaded" : "Internal server error");
  if (wire === "anthropic") {
    return [
      {
        event: "message_start",
        data: {
          type: "message_start",
          message: {
            id: "msg_fake_err",
            type: "message",
            role: "assistant",
            model,
            content: [],
            stop_reason: null,
            usage: { input_tokens: 10, output_tokens: 1 },
          },
        },
      },
      {
        event: "content_block_start",
        data: { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
      },
      {
        event: "content_block_delta",
        data: { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } },
      },
      { event: "error", data: { type: "error", error: { type: turn.streamError, message } } },
    ];
  }
  const base = { id: "chatcmpl-fakeerr", object: "chat.completion.chunk", created: 0, model };
  return [
    { data: { ...base, choices: [{ index: 0, delta: { role: "assistant", content: text }, finish_reason: null }] } },
    { data: { error: { message, type: turn.streamError, param: null, code: null } } },
  ];
}
