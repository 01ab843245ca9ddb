import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { AgentError } from "../lib/util/errors.ts";
import { createAnthropicModel, toAnthropicMessages } from "../lib/llm/anthropic.ts";
import { type FakeLlm, type FakeTurn, startFakeLlm, validateAnthropicRequest } from "../lib/testing/fake-llm.ts";
import type { HistoryItem, LlmRequest, Model, ToolDef } from "../lib/conversation/types.ts";

const KEY = "sk-ant-test-secret-123";
const FAST = { baseDelayMs: 10, maxDelayMs: 40 };
const TOOL: ToolDef = {
  name: "fs__read",
  description: "Read a file",
  inputSchema: { type: "object", properties: { path: { type: "string" } } },
};

function request(history: HistoryItem[], extra: Partial<LlmRequest> = {}): LlmRequest {
  return { system: "be brief", history, tools: [TOOL], maxOutputTokens: 1000, ...extra };
}

async function withFake<T>(
  responses: FakeTurn[],
  run: (llm: FakeLlm, model: Model) => Promise<T>,
  retry = FAST,
): Promise<T> {
  const llm = await startFakeLlm({ responses });
  try {
    const model = createAnthropicModel({
      apiKey: KEY,
      model: "claude-test",
      baseUrl: llm.anthropicBaseUrl,
      apiVersion: "2023-06-01",
      retry,
    });
    return await run(llm, model);
  } finally {
    await llm.close();
  }
}

const hello: HistoryItem[] = [{ role: "user", text: "hello" }];

describe("Anthropic client: request shape", () => {
  test("POSTs /v1/messages with x-api-key, anthropic-version, max_tokens, system, tools and stream", async () => {
    await withFake([{ text: "hi" }], async (llm, model) => {
      const reply = await model.complete(request(hello));
      assert.equal(reply.text, "hi");
      assert.equal(reply.stop, "end_turn");
      const sent = llm.requests[0]!;
      assert.equal(sent.path, "/v1/messages");
      assert.equal(sent.headers["x-api-key"], KEY);
      assert.equal(sent.headers["anthropic-version"], "2023-06-01");
      assert.deepEqual(sent.body, {
        model: "claude-test",
        max_tokens: 1000,
        stream: true,
        system: "be brief",
        messages: [{ role: "user", content: [{ type: "text", text: "hello" }] }],
        tools: [{ name: "fs__read", description: "Read a file", input_schema: TOOL.inputSchema }],
      });
      assert.equal(sent.rejected, undefined);
    });
  });

  test("C21 three results of parallel calls go in one user message in call order, user text after them", () => {
    const history: HistoryItem[] = [
      { role: "user", text: "go" },
      {
        role: "assistant",
        text: "",
        toolCalls: ["t1", "t2", "t3"].map((id) => ({ id, name: "fs__read", arguments: { path: id } })),
      },
      { role: "tool", toolCallId: "t1", content: [{ type: "text", text: "one" }], isError: false },
      { role: "tool", toolCallId: "t2", content: [{ type: "text", text: "two" }], isError: false },
      { role: "tool", toolCallId: "t3", content: [{ type: "text", text: "three" }], isError: false },
      { role: "user", text: "and now?" },
    ];
    const messages = toAnthropicMessages(history, true);
    assert.equal(messages.length, 3);
    const results = messages[2]!;
    assert.equal(results.role, "user");
    assert.deepEqual(results.content.map((b) => b["tool_use_id"] ?? b["text"]), ["t1", "t2", "t3", "and now?"]);
    assert.deepEqual(messages[1]!.content.map((b) => b["type"]), ["tool_use", "tool_use", "tool_use"]);
    assert.deepEqual(
      validateAnthropicRequest({
        model: "m",
        max_tokens: 1,
        tools: [{ name: "fs__read", input_schema: { type: "object" } }],
        messages,
      }),
      [],
    );
  });

  test("C23 no empty or whitespace-only text block is ever sent", async () => {
    const history: HistoryItem[] = [
      { role: "user", text: "go" },
      {
        role: "assistant",
        text: "",
        toolCalls: [{ id: "a", name: "fs__read", arguments: {} }, { id: "b", name: "fs__read", arguments: {} }],
      },
      { role: "tool", toolCallId: "a", content: [{ type: "text", text: "" }], isError: false },
      {
        role: "tool",
        toolCallId: "b",
        content: [{ type: "text", text: "  " }, { type: "text", text: "" }],
        isError: false,
      },
      { role: "assistant", text: "  \n", toolCalls: [] },
      { role: "user", text: " " },
      { role: "user", text: "continue" },
    ];
    await withFake([{ text: "ok" }], async (llm, model) => {
      await model.complete(request(history));
      const sent = llm.requests[0]!;
      assert.equal(sent.rejected, undefined);
      const text = JSON.stringify(sent.body["messages"]);
      assert.ok(!text.includes('"text":""') && !/"text":"\s+"/.test(text), text);
      assert.match(text, /\(no output\)/);
    });
  });

  test("C16 an isError result is sent with is_error true and exactly its text", () => {
    const messages = toAnthropicMessages([
      { role: "user", text: "read" },
      { role: "assistant", text: "", toolCalls: [{ id: "x", name: "fs__read", arguments: { path: "/etc/shadow" } }] },
      {
        role: "tool",
        toolCallId: "x",
        content: [{ type: "text", text: "permission denied: /etc/shadow" }],
        isError: true,
      },
    ], true);
    assert.deepEqual(messages[2]!.content, [{
      type: "tool_result",
      tool_use_id: "x",
      content: [{ type: "text", text: "permission denied: /etc/shadow" }],
      is_error: true,
    }]);
  });

  test("images in tool results are sent as image blocks", () => {
    const messages = toAnthropicMessages([
      { role: "user", text: "shot" },
      { role: "assistant", text: "", toolCalls: [{ id: "x", name: "fs__read", arguments: {} }] },
      {
        role: "tool",
        toolCallId: "x",
        content: [{ type: "image", mimeType: "image/png", data: "iVBORw0K" }],
        isError: false,
      },
    ], true);
    assert.deepEqual((messages[2]!.content[0]!["content"] as unknown[])[0], {
      type: "image",
      source: { type: "base64", media_type: "image/png", data: "iVBORw0K" },
    });
  });

  test("a hooks-only request without tools sends tool pairs as text and the API accepts it (SPEC 7)", async () => {
    const hookJson = JSON.stringify({ hook: "_Stop", server: "gate", text: "tests fail" });
    const history: HistoryItem[] = [
      { role: "user", text: "fix it" },
      { role: "assistant", text: "done", toolCalls: [] },
      {
        role: "assistant",
        text: "",
        toolCalls: [{ id: "sprout_hook__Stop_gate_1", name: "gate___Stop", arguments: {} }],
      },
      {
        role: "tool",
        toolCallId: "sprout_hook__Stop_gate_1",
        content: [{ type: "text", text: hookJson }],
        isError: false,
      },
    ];
    await withFake([{ text: "fixed" }], async (llm, model) => {
      await model.complete(request(history, { tools: [] }));
      const sent = llm.requests[0]!;
      assert.equal(sent.rejected, undefined);
      assert.equal(sent.body["tools"], undefined);
      assert.deepEqual(sent.body["messages"], [
        { role: "user", content: [{ type: "text", text: "fix it" }] },
        {
          role: "assistant",
          content: [{ type: "text", text: "done" }, { type: "text", text: "[tool call gate___Stop {}]" }],
        },
        { role: "user", content: [{ type: "text", text: hookJson }] },
      ]);
    });
  });

  test("with tools, the end_turn text and an injected hook call share one assistant message", () => {
    const messages = toAnthropicMessages([
      { role: "user", text: "fix it" },
      { role: "assistant", text: "done", toolCalls: [] },
      { role: "assistant", text: "", toolCalls: [{ id: "h1", name: "gate___Stop", arguments: {} }] },
      { role: "tool", toolCallId: "h1", content: [{ type: "text", text: "{}" }], isError: false },
    ], true);
    assert.equal(messages.length, 3);
    assert.deepEqual(messages[1]!.content.map((b) => b["type"]), ["text", "tool_use"]);
  });

  test("a history starting with an assistant message gets a user message first", () => {
    const messages = toAnthropicMessages([{ role: "assistant", text: "hi", toolCalls: [] }, {
      role: "user",
      text: "x",
    }], true);
    assert.equal(messages[0]!.role, "user");
  });
});

describe("Anthropic client: streaming and parsing", () => {
  test("text deltas are visible before the response ends", async () => {
    await withFake([{ text: "streaming visibly now", pauseMs: 1200 }], async (_llm, model) => {
      let done = false;
      let deltasBeforeEnd = 0;
      const deltas: string[] = [];
      const p = model.complete(request(hello, {
        onTextDelta: (t) => {
          deltas.push(t);
          if (!done) deltasBeforeEnd++;
        },
      })).then((r) => {
        done = true;
        return r;
      });
      while (deltas.length === 0) await new Promise((r) => setTimeout(r, 10));
      assert.equal(done, false, "first delta arrived while the response was still open");
      const reply = await p;
      assert.equal(deltas.join(""), "streaming visibly now");
      assert.equal(reply.text, "streaming visibly now");
      assert.ok(deltasBeforeEnd >= 1);
    });
  });

  test("usage input counts input + cache read + cache creation (100 + 900 + 50 = 1050)", async () => {
    await withFake([{
      text: "x",
      usage: { inputTokens: 100, cacheReadTokens: 900, cacheCreationTokens: 50, outputTokens: 7 },
    }], async (_l, model) => {
      const reply = await model.complete(request(hello));
      assert.deepEqual(reply.usage, { inputTokens: 1050, outputTokens: 7 });
    });
  });

  test("tool calls are assembled from input_json_delta, also split at every byte with CRLF", async () => {
    const turn: FakeTurn = {
      text: "reading ✓",
      toolCalls: [{ name: "fs__read", arguments: { path: "a/ü.txt" } }, { name: "fs__read", arguments: { path: "b" } }],
      splitBytes: true,
      crlf: true,
    };
    await withFake([turn], async (_l, model) => {
      const reply = await model.complete(request(hello));
      assert.equal(reply.stop, "tool_use");
      assert.equal(reply.text, "reading ✓");
      assert.deepEqual(reply.toolCalls.map((c) => c.arguments), [{ path: "a/ü.txt" }, { path: "b" }]);
      assert.ok(reply.toolCalls.every((c) => c.id.startsWith("toolu_")));
    });
  });

  test("a response cut by the length limit inside a tool call reports max_tokens and records the bad arguments", async () => {
    await withFake([{
      text: "t",
      toolCalls: [{ name: "fs__read", arguments: { path: "long/path/name" } }],
      truncateInToolCall: true,
    }], async (_l, model) => {
      const reply = await model.complete(request(hello));
      assert.equal(reply.stop, "max_tokens");
      assert.equal(reply.toolCalls.length, 1);
      assert.deepEqual(reply.toolCalls[0]!.arguments, {});
      assert.match(reply.argumentErrors?.[reply.toolCalls[0]!.id] ?? "", /invalid JSON arguments/);
    });
  });

  test("stop reasons map per SPEC 6.5; pause_turn keeps native content, which is resent unchanged", async () => {
    const turns: FakeTurn[] = [
      { text: "a", stop: "stop_sequence" },
      { text: "b", stop: "model_context_window_exceeded" },
      { text: "c", stop: "refusal" },
      { text: "d", stop: "something_new" },
      { text: "e", stop: "pause_turn" },
      { text: "f" },
    ];
    await withFake(turns, async (llm, model) => {
      const stops = [];
      for (let i = 0; i < 4; i++) stops.push((await model.complete(request(hello))).stop);
      assert.deepEqual(stops, ["end_turn", "max_tokens", "refusal", "other"]);
      const paused = await model.complete(request(hello));
      assert.equal(paused.stop, "pause_turn");
      assert.deepEqual(paused.native, { provider: "anthropic", content: [{ type: "text", text: "e" }] });
      await model.complete(
        request([...hello, { role: "assistant", text: "e", toolCalls: [], native: paused.native! }]),
      );
      const last = llm.requests.at(-1)!.body["messages"] as { role: string; content: unknown }[];
      assert.deepEqual(last.at(-1), { role: "assistant", content: [{ type: "text", text: "e" }] });
    });
  });

  test("a JSON (non-streamed) answer is read too", async () => {
    const llm = await startFakeLlm({
      responses: [{ text: "plain", toolCalls: [{ name: "fs__read", arguments: { path: "p" } }] }],
    });
    try {
      const fetchNoStream: typeof fetch = (url, init) => {
        const body = JSON.parse(String(init?.body));
        body.stream = false;
        return fetch(url, { ...init, body: JSON.stringify(body) });
      };
      const model = createAnthropicModel({ apiKey: KEY, model: "m", baseUrl: llm.url, fetch: fetchNoStream });
      const deltas: string[] = [];
      const reply = await model.complete(request(hello, { onTextDelta: (t) => deltas.push(t) }));
      assert.equal(reply.text, "plain");
      assert.deepEqual(deltas, ["plain"]);
      assert.deepEqual(reply.toolCalls[0]!.arguments, { path: "p" });
    } finally {
      await llm.close();
    }
  });
});

describe("Anthropic client: C24 retries", () => {
  test("C24 (1) 529 overloaded twice then 200 succeeds after exactly 3 attempts", async () => {
    await withFake([{ status: 529 }, { status: 529 }, { text: "fine" }], async (llm, model) => {
      const retries: number[] = [];
      const reply = await model.complete(request(hello, { onRetry: (i) => retries.push(i.attempt) }));
      assert.equal(reply.text, "fine");
      assert.equal(llm.requests.length, 3);
      assert.deepEqual(retries, [1, 2]);
    });
  });

  test("C24 (2) 429 with retry-after: 2 waits at least 2 s before retrying", async () => {
    await withFake([{ status: 429, retryAfter: 2 }, { text: "later" }], async (llm, model) => {
      const reply = await model.complete(request(hello));
      assert.equal(reply.text, "later");
      assert.equal(llm.requests.length, 2);
      const waited = llm.requests[1]!.at - llm.requests[0]!.at;
      assert.ok(waited >= 1950, `waited ${waited} ms`);
    });
  });

  test("C24 (3) 400 invalid_request_error is not retried and the error is shown", async () => {
    await withFake([{
      status: 400,
      body: { type: "error", error: { type: "invalid_request_error", message: "prompt is too long" } },
    }], async (llm, model) => {
      const error = await model.complete(request(hello)).catch((e: unknown) => e);
      assert.equal(llm.requests.length, 1);
      assert.ok(error instanceof AgentError);
      assert.equal(error.code, "llm");
      assert.equal(error.status, 400);
      assert.equal(
        error.message,
        "Anthropic request failed with status 400: invalid_request_error: prompt is too long",
      );
    });
  });

  test("401, 403 and 404 are not retried either, and the API key never appears in the error", async () => {
    for (const status of [401, 403, 404]) {
      await withFake([{ status }], async (llm, model) => {
        const error = (await model.complete(request(hello)).catch((e: unknown) => e)) as AgentError;
        assert.equal(llm.requests.length, 1);
        assert.equal(error.status, status);
        assert.ok(!error.message.includes(KEY));
      });
    }
  });

  test("C24 (4) an overloaded_error event mid-stream retries the whole request", async () => {
    await withFake(
      [{ streamError: "overloaded_error", text: "half " }, { text: "whole answer" }],
      async (llm, model) => {
        const deltas: string[] = [];
        const reply = await model.complete(request(hello, { onTextDelta: (t) => deltas.push(t) }));
        assert.equal(llm.requests.length, 2);
        assert.equal(reply.text, "whole answer");
        // Deltas of the failed attempt were already shown; the retry streams the whole answer again.
        assert.equal(deltas.join(""), "half whole answer");
      },
    );
  });

  test("a dropped connection is retried", async () => {
    await withFake([{ drop: true }, { text: "back" }], async (llm, model) => {
      const reply = await model.complete(request(hello));
      assert.equal(reply.text, "back");
      assert.equal(llm.requests.length, 2);
    });
  });

  test("a stream cut before message_stop is retried as a whole", async () => {
    await withFake([{ text: "cut off here", cutAfterFirstDelta: true }, { text: "complete" }], async (llm, model) => {
      const reply = await model.complete(request(hello));
      assert.equal(reply.text, "complete");
      assert.equal(llm.requests.length, 2);
    });
  });

  test("attempts are capped at 4, then a clear error names the status and the provider's text", async () => {
    await withFake(
      [{ status: 529 }, { status: 529 }, { status: 529 }, { status: 529 }, { text: "never" }],
      async (llm, model) => {
        const error = await model.complete(request(hello)).catch((e: unknown) => e);
        assert.equal(llm.requests.length, 4);
        assert.ok(error instanceof AgentError);
        assert.equal(error.status, 529);
        assert.equal(
          error.message,
          "Anthropic request failed with status 529 after 4 attempts: overloaded_error: Overloaded",
        );
      },
    );
  });

  test("an abort during the backoff wait rejects with an AbortError", async () => {
    await withFake([{ status: 429, retryAfter: 30 }, { text: "never" }], async (llm, model) => {
      const controller = new AbortController();
      const started = Date.now();
      const p = model.complete(
        request(hello, { signal: controller.signal, onRetry: () => setTimeout(() => controller.abort(), 20) }),
      );
      await assert.rejects(p, (e: Error) => e.name === "AbortError");
      assert.ok(Date.now() - started < 10_000);
      assert.equal(llm.requests.length, 1);
    });
  });

  test("an abort mid-stream rejects with an AbortError", async () => {
    await withFake([{ text: "slow stream here", pauseMs: 3000 }], async (_llm, model) => {
      const controller = new AbortController();
      const p = model.complete(request(hello, { signal: controller.signal, onTextDelta: () => controller.abort() }));
      await assert.rejects(p, (e: Error) => e.name === "AbortError");
    });
  });

  test("the per-attempt timeout fails a stalled request", async () => {
    const llm = await startFakeLlm({ responses: [{ text: "too slow here", pauseMs: 3000 }] });
    try {
      const model = createAnthropicModel({
        apiKey: KEY,
        model: "m",
        baseUrl: llm.url,
        timeoutMs: 300,
        retry: { maxAttempts: 1 },
      });
      await assert.rejects(model.complete(request(hello)), /Anthropic request failed: timed out after 300 ms/);
    } finally {
      await llm.close();
    }
  });
});
