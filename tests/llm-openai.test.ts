import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { AgentError } from "../lib/util/errors.ts";
import { createOpenAiModel, toChatMessages } from "../lib/llm/openai.ts";
import { type FakeLlm, type FakeTurn, startFakeLlm, validateOpenAiRequest } from "../lib/testing/fake-llm.ts";
import type { HistoryItem, LlmRequest, Model, ToolDef } from "../lib/conversation/types.ts";

const KEY = "sk-openai-test-secret-456";
const FAST = { baseDelayMs: 10, maxDelayMs: 40 };
const TOOL: ToolDef = {
  name: "fs__read",
  description: "Read a file",
  inputSchema: { type: "object", properties: { path: { type: "string" } } },
};
const hello: HistoryItem[] = [{ role: "user", text: "hello" }];

function request(history: HistoryItem[], extra: Partial<LlmRequest> = {}): LlmRequest {
  return { system: "be brief", history, tools: [TOOL], maxOutputTokens: 1000, ...extra };
}

async function withFake<T>(responses: FakeTurn[], run: (llm: FakeLlm, model: Model) => Promise<T>): Promise<T> {
  const llm = await startFakeLlm({ responses });
  try {
    return await run(
      llm,
      createOpenAiModel({ apiKey: KEY, model: "gpt-test", baseUrl: llm.openaiBaseUrl, retry: FAST }),
    );
  } finally {
    await llm.close();
  }
}

describe("Chat Completions client: request shape", () => {
  test("sends no Authorization header when no key is configured (local servers)", async () => {
    const llm = await startFakeLlm({ responses: [{ text: "hi" }], requireKey: false });
    try {
      const model = createOpenAiModel({ apiKey: "", model: "local", baseUrl: llm.openaiBaseUrl, retry: FAST });
      assert.equal((await model.complete(request(hello))).text, "hi");
      assert.equal(llm.requests[0]!.headers["authorization"], undefined);
    } finally {
      await llm.close();
    }
  });

  test("POSTs /chat/completions with a Bearer key, system first, max_completion_tokens, tools and include_usage", async () => {
    await withFake([{ text: "hi" }], async (llm, model) => {
      const reply = await model.complete(request(hello));
      assert.equal(reply.text, "hi");
      const sent = llm.requests[0]!;
      assert.equal(sent.path, "/v1/chat/completions");
      assert.equal(sent.headers["authorization"], `Bearer ${KEY}`);
      assert.deepEqual(sent.body, {
        model: "gpt-test",
        messages: [{ role: "system", content: "be brief" }, { role: "user", content: "hello" }],
        max_completion_tokens: 1000,
        stream: true,
        stream_options: { include_usage: true },
        tools: [{
          type: "function",
          function: { name: "fs__read", description: "Read a file", parameters: TOOL.inputSchema },
        }],
      });
    });
  });

  test("C21 three tool messages t1, t2, t3 directly after the assistant message; content is never null", () => {
    const messages = toChatMessages([
      { role: "user", text: "go" },
      {
        role: "assistant",
        text: "",
        toolCalls: ["t1", "t2", "t3"].map((id) => ({ id, name: "fs__read", arguments: { path: id } })),
      },
      { role: "tool", toolCallId: "t1", content: [{ type: "text", text: "one" }], isError: false },
      { role: "tool", toolCallId: "t2", content: [{ type: "text", text: "two" }], isError: false },
      { role: "tool", toolCallId: "t3", content: [{ type: "text", text: "three" }], isError: false },
    ]);
    assert.deepEqual(messages[1], {
      role: "assistant",
      content: "",
      tool_calls: ["t1", "t2", "t3"].map((id) => ({
        id,
        type: "function",
        function: { name: "fs__read", arguments: JSON.stringify({ path: id }) },
      })),
    });
    assert.deepEqual(messages.slice(2).map((m) => [m.role, (m as { tool_call_id: string }).tool_call_id]), [
      ["tool", "t1"],
      ["tool", "t2"],
      ["tool", "t3"],
    ]);
    assert.deepEqual(validateOpenAiRequest({ model: "m", messages }), []);
  });

  test("C16 an isError result is sent as a tool message prefixed Error:", () => {
    const messages = toChatMessages([
      { role: "user", text: "read" },
      { role: "assistant", text: "", toolCalls: [{ id: "x", name: "fs__read", arguments: {} }] },
      {
        role: "tool",
        toolCallId: "x",
        content: [{ type: "text", text: "permission denied: /etc/shadow" }],
        isError: true,
      },
    ]);
    assert.deepEqual(messages[2], {
      role: "tool",
      tool_call_id: "x",
      content: "Error: permission denied: /etc/shadow",
    });
  });

  test("images in tool results become a marker; empty output becomes (no output)", () => {
    const messages = toChatMessages([
      { role: "user", text: "shot" },
      {
        role: "assistant",
        text: "",
        toolCalls: [{ id: "x", name: "fs__read", arguments: {} }, { id: "y", name: "fs__read", arguments: {} }],
      },
      {
        role: "tool",
        toolCallId: "x",
        content: [{ type: "text", text: "here" }, { type: "image", mimeType: "image/png", data: "AAAAAAAA" }],
        isError: false,
      },
      { role: "tool", toolCallId: "y", content: [{ type: "text", text: "" }], isError: false },
    ]);
    assert.equal((messages[2] as { content: string }).content, "here\n[image: image/png, 6 bytes]");
    assert.equal((messages[3] as { content: string }).content, "(no output)");
  });

  test("an injected hook pair after an end_turn text is accepted, the texts merged into one assistant message", async () => {
    const hookJson = JSON.stringify({ hook: "_Stop", server: "gate", text: "tests fail" });
    const history: HistoryItem[] = [
      { role: "user", text: "fix it" },
      { role: "assistant", text: "done", toolCalls: [] },
      { role: "assistant", text: "", toolCalls: [{ id: "hook00001", name: "gate___Stop", arguments: {} }] },
      { role: "tool", toolCallId: "hook00001", content: [{ type: "text", text: hookJson }], isError: false },
    ];
    await withFake([{ text: "fixed" }], async (llm, model) => {
      await model.complete(request(history));
      const sent = llm.requests[0]!;
      assert.equal(sent.rejected, undefined);
      const messages = sent.body["messages"] as Record<string, unknown>[];
      assert.equal(messages[2]!["content"], "done");
      assert.equal((messages[2]!["tool_calls"] as unknown[]).length, 1);
      assert.deepEqual(messages[3], { role: "tool", tool_call_id: "hook00001", content: hookJson });
    });
  });
});

describe("Chat Completions client: streaming and parsing", () => {
  test("text deltas are visible before the response ends", async () => {
    await withFake([{ text: "streaming visibly now", pauseMs: 1200 }], async (_llm, model) => {
      let done = false;
      const deltas: string[] = [];
      const p = model.complete(request(hello, { onTextDelta: (t) => deltas.push(t) })).then((r) => {
        done = true;
        return r;
      });
      while (deltas.length === 0) await new Promise((r) => setTimeout(r, 10));
      assert.equal(done, false);
      assert.equal((await p).text, "streaming visibly now");
      assert.equal(deltas.join(""), "streaming visibly now");
    });
  });

  test("tool calls are assembled from argument fragments by index, split at every byte with CRLF", async () => {
    const turn: FakeTurn = {
      toolCalls: [{ name: "fs__read", arguments: { path: "ä/1" } }, { name: "fs__read", arguments: { path: "b" } }],
      splitBytes: true,
      crlf: true,
      usage: { inputTokens: 321, outputTokens: 12 },
    };
    await withFake([turn], async (_l, model) => {
      const reply = await model.complete(request(hello));
      assert.equal(reply.stop, "tool_use");
      assert.deepEqual(reply.toolCalls.map((c) => c.arguments), [{ path: "ä/1" }, { path: "b" }]);
      assert.deepEqual(reply.usage, { inputTokens: 321, outputTokens: 12 });
    });
  });

  test("finish reasons map per SPEC 6.5", async () => {
    const turns: FakeTurn[] = [{ text: "a" }, { text: "b", stop: "max_tokens" }, { text: "c", stop: "refusal" }, {
      text: "d",
      stop: "weird",
    }];
    await withFake(turns, async (_l, model) => {
      const stops = [];
      for (let i = 0; i < 4; i++) stops.push((await model.complete(request(hello))).stop);
      assert.deepEqual(stops, ["end_turn", "max_tokens", "refusal", "other"]);
    });
  });

  test("a response cut inside a tool call reports max_tokens and records the bad arguments", async () => {
    await withFake([{
      toolCalls: [{ name: "fs__read", arguments: { path: "some/long/path" } }],
      truncateInToolCall: true,
    }], async (_l, model) => {
      const reply = await model.complete(request(hello));
      assert.equal(reply.stop, "max_tokens");
      assert.deepEqual(reply.toolCalls[0]!.arguments, {});
      assert.ok(reply.argumentErrors?.[reply.toolCalls[0]!.id]);
    });
  });

  test("null or empty arguments become {}", async () => {
    await withFake(
      [{ toolCalls: [{ name: "fs__read", arguments: "" }, { name: "fs__read", arguments: "null" }] }],
      async (_l, model) => {
        const reply = await model.complete(request(hello));
        assert.deepEqual(reply.toolCalls.map((c) => c.arguments), [{}, {}]);
        assert.equal(reply.argumentErrors, undefined);
      },
    );
  });

  test("cache fields reported by a compatible endpoint are added to prompt_tokens", async () => {
    const sse = [
      { choices: [{ index: 0, delta: { content: "x" }, finish_reason: "stop" }] },
      {
        choices: [],
        usage: {
          prompt_tokens: 100,
          cache_read_input_tokens: 900,
          cache_creation_input_tokens: 50,
          completion_tokens: 3,
        },
      },
    ].map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") + "data: [DONE]\n\n";
    const fakeFetch: typeof fetch = () =>
      Promise.resolve(new Response(sse, { headers: { "content-type": "text/event-stream" } }));
    const model = createOpenAiModel({ apiKey: KEY, model: "m", fetch: fakeFetch });
    assert.deepEqual((await model.complete(request(hello))).usage, { inputTokens: 1050, outputTokens: 3 });
  });
});

describe("Chat Completions client: C24 retries", () => {
  test("C24 (1) 529 twice then 200: exactly 3 attempts", async () => {
    await withFake([{ status: 529 }, { status: 503 }, { text: "fine" }], async (llm, model) => {
      assert.equal((await model.complete(request(hello))).text, "fine");
      assert.equal(llm.requests.length, 3);
    });
  });

  test("C24 (3) 400 is not retried, the error names status and text", async () => {
    await withFake([{ status: 400 }], async (llm, model) => {
      const error = await model.complete(request(hello)).catch((e: unknown) => e);
      assert.equal(llm.requests.length, 1);
      assert.ok(error instanceof AgentError);
      assert.equal(
        error.message,
        "OpenAI-compatible request failed with status 400: invalid_request_error: Invalid request",
      );
      assert.ok(!error.message.includes(KEY));
    });
  });

  test("C24 (4) an error chunk mid-stream retries the whole request", async () => {
    await withFake([{ streamError: "server_error", text: "half " }, { text: "whole" }], async (llm, model) => {
      const reply = await model.complete(request(hello));
      assert.equal(reply.text, "whole");
      assert.equal(llm.requests.length, 2);
    });
  });

  test("a stream cut before its finish_reason is retried as a whole", async () => {
    await withFake([{ text: "cut off here", cutAfterFirstDelta: true }, { text: "complete" }], async (llm, model) => {
      assert.equal((await model.complete(request(hello))).text, "complete");
      assert.equal(llm.requests.length, 2);
    });
  });

  test("a dropped connection is retried; 4 failures give a clear error", async () => {
    await withFake([{ drop: true }, { status: 500 }, { status: 500 }, { status: 500 }], async (llm, model) => {
      const error = (await model.complete(request(hello)).catch((e: unknown) => e)) as AgentError;
      assert.equal(llm.requests.length, 4);
      assert.equal(error.status, 500);
      assert.equal(
        error.message,
        "OpenAI-compatible request failed with status 500 after 4 attempts: api_error: Internal server error",
      );
    });
  });

  test("an abort during the backoff wait rejects with an AbortError", async () => {
    await withFake([{ status: 429, retryAfter: 30 }], async (_llm, model) => {
      const controller = new AbortController();
      const p = model.complete(
        request(hello, { signal: controller.signal, onRetry: () => setTimeout(() => controller.abort(), 20) }),
      );
      await assert.rejects(p, (e: Error) => e.name === "AbortError");
    });
  });
});
