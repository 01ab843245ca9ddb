/**
 * OpenAI-compatible servers as they really answer (issue 9): Ollama's streamed tool calls
 * (every call whole in one chunk at `index: 0`, or with no `index`), arguments sent as a JSON
 * object, calls without ids, and the Mistral-family chat templates that refuse ids other than
 * 9 alphanumerics and two user turns in a row (the fake's `strictTemplate` mode).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { toAnthropicMessages } from "../lib/llm/anthropic.ts";
import { createOpenAiModel, NO_TEXT_TURN, toChatMessages } from "../lib/llm/openai.ts";
import {
  EMPTY_ASSISTANT_ERROR,
  type RecordedRequest,
  startFakeLlm,
  strictTemplateProblems,
  TEMPLATE_ALTERNATION_ERROR,
  TEMPLATE_ID_ERROR,
  validateAnthropicRequest,
  validateOpenAiRequest,
} from "../lib/testing/fake-llm.ts";
import type { FakeTurn } from "../lib/testing/fake-llm.ts";
import type { HistoryItem, LlmRequest, ToolDef } from "../lib/conversation/types.ts";
import { closeChecked, messagesOf, runPrompt, startSession, withSession } from "./helpers/session.ts";

const TOOL: ToolDef = {
  name: "fs__read_file",
  description: "Read a file",
  inputSchema: { type: "object", properties: { path: { type: "string" } } },
};
const request = (history: HistoryItem[]): LlmRequest => ({
  system: "be brief",
  history,
  tools: [TOOL],
  maxOutputTokens: 100,
});
const hello: HistoryItem[] = [{ role: "user", text: "read a.txt and b.txt" }];

/** A model whose every request is answered with `sse` (the exact bytes), as a real server sent them. */
function replaying(sse: string) {
  const fetch: typeof globalThis.fetch = () =>
    Promise.resolve(new Response(sse, { headers: { "content-type": "text/event-stream" } }));
  return createOpenAiModel({
    apiKey: "",
    model: "qwen3:8b",
    fetch,
    retry: { baseDelayMs: 1, maxDelayMs: 1, maxAttempts: 1 },
  });
}

// Ollama 0.20 (`/v1/chat/completions`, stream: true) with two calls in one response: each call
// whole in its own chunk, both at `index: 0` (ollama/ollama#15457; openai/openai.go ToChunk,
// Go's field order). Ids are Ollama's `call_` + 8 random characters.
const OLLAMA_TWO_CALLS = [
  '{"id":"chatcmpl-466","object":"chat.completion.chunk","created":1775730000,"model":"qwen3:8b","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_e0sd0tkr","index":0,"type":"function","function":{"name":"fs__read_file","arguments":"{\\"path\\":\\"a.txt\\"}"}}]},"finish_reason":null}]}',
  '{"id":"chatcmpl-466","object":"chat.completion.chunk","created":1775730000,"model":"qwen3:8b","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_jx1d8fq2","index":0,"type":"function","function":{"name":"fs__read_file","arguments":"{\\"path\\":\\"b.txt\\"}"}}]},"finish_reason":null}]}',
  '{"id":"chatcmpl-466","object":"chat.completion.chunk","created":1775730000,"model":"qwen3:8b","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"tool_calls"}]}',
  '{"id":"chatcmpl-466","object":"chat.completion.chunk","created":1775730000,"model":"qwen3:8b","system_fingerprint":"fp_ollama","choices":[],"usage":{"prompt_tokens":187,"completion_tokens":42,"total_tokens":229}}',
  "[DONE]",
].map((d) => `data: ${d}\n\n`).join("");

describe("Chat Completions client: streamed tool calls as compatible servers send them", () => {
  test("two calls that both carry index 0 with different ids are two calls (Ollama)", async () => {
    const reply = await replaying(OLLAMA_TWO_CALLS).complete(request(hello));
    assert.deepEqual(reply.toolCalls, [
      { id: "call_e0sd0tkr", name: "fs__read_file", arguments: { path: "a.txt" } },
      { id: "call_jx1d8fq2", name: "fs__read_file", arguments: { path: "b.txt" } },
    ]);
    assert.equal(reply.stop, "tool_use");
    assert.equal(reply.argumentErrors, undefined);
  });

  test("deltas with no index: a new id starts a new call, fragments without id continue the current one", async () => {
    // Ollama before 0.4.7 (ollama/ollama#7881): no `index` field at all; then fragments as OpenAI streams them.
    const chunk = (delta: unknown) =>
      `data: ${
        JSON.stringify({
          id: "chatcmpl-9",
          object: "chat.completion.chunk",
          created: 1,
          model: "m",
          choices: [{ index: 0, delta, finish_reason: null }],
        })
      }\n\n`;
    const sse = chunk({
      role: "assistant",
      content: "",
      tool_calls: [{ id: "call_a", type: "function", function: { name: "fs__read_file", arguments: '{"path":' } }],
    }) +
      chunk({ tool_calls: [{ function: { arguments: '"a.txt"}' } }] }) +
      chunk({ tool_calls: [{ id: "call_b", type: "function", function: { name: "fs__read_file", arguments: "" } }] }) +
      chunk({ tool_calls: [{ function: { arguments: '{"path":"b.txt"}' } }] }) +
      `data: ${
        JSON.stringify({
          id: "chatcmpl-9",
          object: "chat.completion.chunk",
          created: 1,
          model: "m",
          choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }],
        })
      }\n\ndata: [DONE]\n\n`;
    const reply = await replaying(sse).complete(request(hello));
    assert.deepEqual(reply.toolCalls, [
      { id: "call_a", name: "fs__read_file", arguments: { path: "a.txt" } },
      { id: "call_b", name: "fs__read_file", arguments: { path: "b.txt" } },
    ]);
  });

  test("a second call whose head collides at index 0 and whose tail comes at index 1 is one call (deepseek, agno-agi/agno#8879)", async () => {
    // Reconstructed from the description (no bytes were published): the head delta of
    // the second call arrives with index 0, its argument tail with index 1.
    const chunk = (delta: unknown, finish: string | null = null) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const sse = chunk({
      tool_calls: [{
        index: 0,
        id: "call_00_a",
        type: "function",
        function: { name: "fs__read_file", arguments: "" },
      }],
    }) +
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"path":"a"}' } }] }) +
      chunk({
        tool_calls: [{
          index: 0,
          id: "call_01_b",
          type: "function",
          function: { name: "fs__read_file", arguments: "" },
        }],
      }) +
      chunk({ tool_calls: [{ index: 1, function: { arguments: '{"path":"b"}' } }] }) +
      chunk({}, "tool_calls") + "data: [DONE]\n\n";
    const reply = await replaying(sse).complete(request(hello));
    assert.deepEqual(reply.toolCalls.map((c) => [c.id, c.name, c.arguments]), [["call_00_a", "fs__read_file", {
      path: "a",
    }], ["call_01_b", "fs__read_file", { path: "b" }]]);
  });

  test("an id that changes after the first delta of a call does not split it (poolsideai/pool#9)", async () => {
    // Reconstructed from the description: the first chunk carries one id with the name,
    // every later chunk of the same call another id.
    const chunk = (delta: unknown, finish: string | null = null) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const sse = chunk({
      tool_calls: [{
        index: 0,
        id: "call_first",
        type: "function",
        function: { name: "fs__read_file", arguments: "" },
      }],
    }) +
      chunk({ tool_calls: [{ index: 0, id: "call_other", type: "function", function: { arguments: '{"path":' } }] }) +
      chunk({ tool_calls: [{ index: 0, id: "call_other", type: "function", function: { arguments: '"a"}' } }] }) +
      chunk({}, "tool_calls") + "data: [DONE]\n\n";
    const reply = await replaying(sse).complete(request(hello));
    assert.deepEqual(reply.toolCalls, [{ id: "call_first", name: "fs__read_file", arguments: { path: "a" } }]);
  });

  test("OpenAI's own shape (id once per index, then fragments by index) still assembles", async () => {
    const chunk = (delta: unknown) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
    const sse = chunk({
      tool_calls: [{ index: 0, id: "call_x", type: "function", function: { name: "fs__read_file", arguments: "" } }],
    }) +
      chunk({
        tool_calls: [{ index: 1, id: "call_y", type: "function", function: { name: "fs__read_file", arguments: "" } }],
      }) +
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"path":"a"}' } }] }) +
      chunk({ tool_calls: [{ index: 1, function: { arguments: '{"path":"b"}' } }] }) +
      `data: ${
        JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] })
      }\n\ndata: [DONE]\n\n`;
    const reply = await replaying(sse).complete(request(hello));
    assert.deepEqual(reply.toolCalls.map((c) => [c.id, c.arguments]), [["call_x", { path: "a" }], ["call_y", {
      path: "b",
    }]]);
  });

  test("a call without an id gets a fresh 9-character one, unique in the response", async () => {
    const chunk = (delta: unknown, finish: string | null = null) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const sse =
      chunk({ tool_calls: [{ index: 0, type: "function", function: { name: "fs__read_file", arguments: "{}" } }] }) +
      chunk({ tool_calls: [{ index: 1, type: "function", function: { name: "fs__read_file", arguments: "{}" } }] }) +
      chunk({}, "tool_calls") + "data: [DONE]\n\n";
    const reply = await replaying(sse).complete(request(hello));
    const ids = reply.toolCalls.map((c) => c.id);
    assert.equal(ids.length, 2);
    for (const id of ids) assert.match(id, /^[a-zA-Z0-9]{9}$/);
    assert.notEqual(ids[0], ids[1]);
  });

  test("arguments sent as a JSON object are the arguments, streamed and not streamed", async () => {
    const sse = `data: ${
      JSON.stringify({
        choices: [{
          index: 0,
          delta: {
            tool_calls: [{
              index: 0,
              id: "call_o",
              type: "function",
              function: { name: "fs__read_file", arguments: { path: "a.txt" } },
            }],
          },
          finish_reason: "tool_calls",
        }],
      })
    }\n\ndata: [DONE]\n\n`;
    const streamed = await replaying(sse).complete(request(hello));
    assert.deepEqual(streamed.toolCalls, [{ id: "call_o", name: "fs__read_file", arguments: { path: "a.txt" } }]);
    assert.equal(streamed.argumentErrors, undefined);
    const json = {
      id: "chatcmpl-1",
      object: "chat.completion",
      choices: [{
        index: 0,
        message: {
          role: "assistant",
          content: "",
          tool_calls: [{
            id: "call_o",
            type: "function",
            function: { name: "fs__read_file", arguments: { path: "b.txt" } },
          }],
        },
        finish_reason: "tool_calls",
      }],
    };
    const fetch: typeof globalThis.fetch = () => Promise.resolve(Response.json(json));
    const plain = await createOpenAiModel({ apiKey: "", model: "m", fetch }).complete(request(hello));
    assert.deepEqual(plain.toolCalls, [{ id: "call_o", name: "fs__read_file", arguments: { path: "b.txt" } }]);
  });
});

describe("Chat Completions client: no two turns of one role in a row", () => {
  test("consecutive user messages (the handoff summary, then the prompt) are merged into one", () => {
    const messages = toChatMessages([{ role: "user", text: "[Context Handoff]\nS" }, { role: "user", text: "P" }]);
    assert.deepEqual(messages, [{ role: "user", content: "[Context Handoff]\nS\n\nP" }]);
  });

  test("a user message after tool results with no assistant text since the last user message gets a (no text) assistant turn first", () => {
    const hook = JSON.stringify({ hook: "_PostCompact", server: "fx", text: "state" });
    const messages = toChatMessages([
      { role: "user", text: "[Context Handoff]\nS" },
      { role: "assistant", text: "", toolCalls: [{ id: "hook00001", name: "fx___PostCompact", arguments: {} }] },
      { role: "tool", toolCallId: "hook00001", content: [{ type: "text", text: hook }], isError: false },
      { role: "user", text: "P" },
    ]);
    assert.deepEqual(messages.map((m) => m.role), ["user", "assistant", "tool", "assistant", "user"]);
    assert.deepEqual(messages[3], { role: "assistant", content: NO_TEXT_TURN });
    assert.deepEqual(strictTemplateProblems({ messages }), []);
    // An empty one would pass the template but not vLLM's Mistral mode.
    assert.deepEqual(
      strictTemplateProblems({ messages: [...messages.slice(0, 3), { role: "assistant", content: "" }, messages[4]] }),
      [EMPTY_ASSISTANT_ERROR],
    );
  });

  test("an end_turn text and the injected hook call after it are one assistant message", () => {
    const messages = toChatMessages([
      { role: "user", text: "go" },
      { role: "assistant", text: "done", toolCalls: [] },
      { role: "assistant", text: "", toolCalls: [{ id: "hook00002", name: "fx___Stop", arguments: {} }] },
      { role: "tool", toolCallId: "hook00002", content: [{ type: "text", text: "{}" }], isError: false },
    ]);
    assert.deepEqual(messages.map((m) => m.role), ["user", "assistant", "tool"]);
    assert.deepEqual(strictTemplateProblems({ messages }), []);
  });

  test("the Anthropic client also merges them: handoff + prompt and end_turn text + hook call are accepted", () => {
    const history: HistoryItem[] = [
      { role: "user", text: "[Context Handoff]\nS" },
      { role: "user", text: "P" },
      { role: "assistant", text: "done", toolCalls: [] },
      { role: "assistant", text: "", toolCalls: [{ id: "hook00003", name: "fx___Stop", arguments: {} }] },
      { role: "tool", toolCallId: "hook00003", content: [{ type: "text", text: "{}" }], isError: false },
    ];
    const messages = toAnthropicMessages(history, true);
    assert.deepEqual(messages.map((m) => m.role), ["user", "assistant", "user"]);
    const body = {
      model: "m",
      max_tokens: 10,
      messages,
      tools: [{ name: "fx__echo", input_schema: { type: "object" } }],
    };
    assert.deepEqual(validateAnthropicRequest(body), []);
  });
});

describe("strict chat template (Mistral family) in the fake", () => {
  test("quotes the templates' errors for a non-9-character id and for two user turns", () => {
    const calls = (id: string) => [
      { role: "user", content: "go" },
      {
        role: "assistant",
        content: "",
        tool_calls: [{ id, type: "function", function: { name: "f", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: id, content: "ok" },
    ];
    assert.deepEqual(strictTemplateProblems({ messages: calls("sprout_hook__Stop_a_0") }), [TEMPLATE_ID_ERROR]);
    assert.deepEqual(strictTemplateProblems({ messages: calls("call_1") }), [TEMPLATE_ID_ERROR]);
    assert.deepEqual(
      strictTemplateProblems({ messages: calls("abc_12345") }),
      [TEMPLATE_ID_ERROR],
      "9 characters but not alphanumeric",
    );
    assert.deepEqual(strictTemplateProblems({ messages: calls("a1B2c3D4e") }), []);
    const twoUsers = {
      model: "m",
      messages: [{ role: "system", content: "s" }, { role: "user", content: "a" }, { role: "user", content: "b" }],
    };
    assert.deepEqual(validateOpenAiRequest(twoUsers), [], "the OpenAI API itself accepts it");
    assert.deepEqual(validateOpenAiRequest(twoUsers, { strictTemplate: true }), [TEMPLATE_ALTERNATION_ERROR]);
    assert.equal(
      TEMPLATE_ALTERNATION_ERROR,
      "After the optional system message, conversation roles must alternate user/assistant/user/assistant/...",
    );
    assert.equal(TEMPLATE_ID_ERROR, "Tool call IDs should be alphanumeric strings with length 9!");
  });

  test("answers 400 with the template's text in vLLM's error body", async () => {
    const llm = await startFakeLlm({ responses: [{ text: "never" }], strictTemplate: true });
    try {
      const res = await fetch(`${llm.openaiBaseUrl}/chat/completions`, {
        method: "POST",
        headers: { authorization: "Bearer k", "content-type": "application/json" },
        body: JSON.stringify({
          model: "m",
          messages: [{ role: "user", content: "a" }, { role: "user", content: "b" }],
        }),
      });
      assert.equal(res.status, 400);
      assert.deepEqual(await res.json(), {
        object: "error",
        message: TEMPLATE_ALTERNATION_ERROR,
        type: "BadRequestError",
        param: null,
        code: 400,
      });
      assert.equal(llm.requests[0]!.rejected, TEMPLATE_ALTERNATION_ERROR);
    } finally {
      await llm.close();
    }
  });
});

/** A summary request: no tools, and the handoff system prompt. */
const isSummary = (r: RecordedRequest) =>
  r.body["tools"] === undefined && JSON.stringify(r.body).includes("Internal handoff");
const small = { SPROUT_AGENT_MAX_CONTEXT_TOKENS: "6000", SPROUT_AGENT_MAX_OUTPUT_TOKENS: "1000" }; // threshold 4500

describe("runs against a strict chat template complete", () => {
  test("a _Stop objection: the injected call's id is accepted and the run ends end_turn", async () => {
    await withSession(
      {
        inProcess: true,
        wire: "openai",
        fake: { strictTemplate: true },
        env: { MCP_HOOK_SERVERS: "fx" },
        servers: [{ name: "fx", env: { FIXTURE_STOP: "2 todos open", FIXTURE_STOP_COUNT: "1" } }],
        responses: [{ text: "All done." }, { toolCalls: [{ name: "fx__echo", arguments: { text: "todo" } }] }, {
          text: "Now done.",
        }, { text: "Nothing left." }],
      },
      async (t) => {
        const { result } = await runPrompt(t.session, "finish the todos");
        assert.equal(result.stopReason, "end_turn");
        assert.equal(result.objections, 1);
        assert.equal(t.llm.requests.length, 3);
        const sent = messagesOf(t.llm.requests[1]!.body);
        const call = sent.find((m) => Array.isArray(m["tool_calls"]))!;
        assert.match((call["tool_calls"] as { id: string }[])[0]!.id, /^[a-zA-Z0-9]{9}$/);
        // A second prompt after the run: still accepted (closeChecked asserts no request was rejected).
        assert.equal((await runPrompt(t.session, "and now?")).result.stopReason, "end_turn");
      },
    );
  });

  test("a provider id repeated on the next turn gets a fresh id the template accepts", async () => {
    const echo = (text: string): FakeTurn => ({
      toolCalls: [{ id: "A00000001", name: "fx__echo", arguments: { text } }],
    });
    await withSession(
      {
        inProcess: true,
        wire: "openai",
        fake: { strictTemplate: true },
        responses: [echo("one"), echo("two"), { text: "done" }],
      },
      async (t) => {
        assert.equal((await runPrompt(t.session, "echo twice")).result.stopReason, "end_turn");
        const ids = messagesOf(t.llm.requests[2]!.body).filter((m) => m["role"] === "tool").map((m) =>
          m["tool_call_id"]
        );
        assert.equal(ids[0], "A00000001");
        assert.match(String(ids[1]), /^[a-zA-Z0-9]{9}$/);
        assert.notEqual(ids[1], ids[0]);
      },
    );
  });

  for (const postCompact of [false, true]) {
    test(`a summary compaction${postCompact ? " with _PostCompact output" : ""}: handoff and prompt reach the model as alternating turns`, async () => {
      const big = { toolCalls: [{ name: "fx__big", arguments: { bytes: 5000 } }] };
      const turns: FakeTurn[] = [big, big, { text: "finished" }];
      let next = 0;
      const t = await startSession({
        inProcess: true,
        wire: "openai",
        fake: { strictTemplate: true },
        env: { ...small, ...(postCompact ? { MCP_HOOK_SERVERS: "fx" } : {}) },
        servers: [{ name: "fx", env: postCompact ? { FIXTURE_POSTCOMPACT: "todo state here" } : {} }],
        responses: (r) => isSummary(r) ? { text: "SUMMARY: compacted" } : turns[next++] ?? { status: 500 },
      });
      try {
        const { events, result } = await runPrompt(t.session, "Please fill the context.");
        assert.equal(result.stopReason, "end_turn");
        assert.ok(events.some((e) => e.type === "compaction" && e.mode === "summary"));
        const i = t.llm.requests.findIndex(isSummary);
        const after = messagesOf(t.llm.requests[i + 1]!.body);
        assert.match(JSON.stringify(after[1]), /\[Context Handoff\]\\nSUMMARY: compacted/);
        assert.match(JSON.stringify(after.at(-1)), /Please fill the context\./);
      } finally {
        await closeChecked(t);
      }
    });
  }

  test("Ollama's streamed shapes end to end: two index-0 calls both run, a no-index call and object arguments run with their arguments", async () => {
    await withSession(
      {
        inProcess: true,
        wire: "openai",
        responses: [
          {
            toolCalls: [{ name: "fx__echo", arguments: { text: "one" } }, {
              name: "fx__echo",
              arguments: { text: "two" },
            }],
            toolCallStream: "ollama",
          },
          { toolCalls: [{ name: "fx__echo", arguments: { text: "three" } }], toolCallStream: "ollama-no-index" },
          { toolCalls: [{ name: "fx__echo", arguments: { text: "four" } }], argumentsAsObject: true },
          { text: "done" },
        ],
      },
      async (t) => {
        const { result } = await runPrompt(t.session, "echo");
        assert.equal(result.stopReason, "end_turn");
        assert.deepEqual(t.calls().map((c) => c.args), [{ text: "one" }, { text: "two" }, { text: "three" }, {
          text: "four",
        }]);
      },
    );
  });

  test("arguments that are not valid JSON never run the tool: the model gets the error and the next request is valid", async () => {
    const chunks: FakeTurn = {
      toolCalls: [{ name: "fx__echo", arguments: '{"text": "unterminated' }, {
        name: "fx__echo",
        arguments: { text: "fine" },
      }],
      toolCallStream: "ollama",
    };
    await withSession(
      { inProcess: true, wire: "openai", fake: { strictTemplate: true }, responses: [chunks, { text: "sorry" }] },
      async (t) => {
        const { result } = await runPrompt(t.session, "echo");
        assert.equal(result.stopReason, "end_turn");
        assert.deepEqual(t.calls().map((c) => c.args), [{ text: "fine" }], "only the valid call ran");
        const tools = messagesOf(t.llm.requests[1]!.body).filter((m) => m["role"] === "tool");
        assert.equal(tools.length, 2, "both calls answered");
        assert.match(String(tools[0]!["content"]), /^Error: Invalid tool arguments: invalid JSON arguments/);
        const assistant = messagesOf(t.llm.requests[1]!.body).find((m) => Array.isArray(m["tool_calls"]))!;
        const sentArgs = (assistant["tool_calls"] as { function: { arguments: string } }[]).map((c) =>
          c.function.arguments
        );
        assert.deepEqual(sentArgs, ["{}", '{"text":"fine"}'], "history holds valid JSON arguments");
      },
    );
  });
});
