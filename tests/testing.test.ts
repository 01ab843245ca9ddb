import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { startFakeLlm, validateAnthropicRequest, validateOpenAiRequest } from "../lib/testing/fake-llm.ts";
import { runToExit } from "./helpers/processes.ts";
import { repoRoot } from "./helpers/runtime.ts";

const TOOLS = [{ name: "fs__read", description: "read", input_schema: { type: "object", properties: {} } }];
const user = (text: string) => ({ role: "user", content: [{ type: "text", text }] });
const use = (id: string, name = "fs__read") => ({ type: "tool_use", id, name, input: {} });
const result = (id: string, text = "ok") => ({
  type: "tool_result",
  tool_use_id: id,
  content: [{ type: "text", text }],
});

function anthropic(messages: unknown[], tools: unknown[] = TOOLS): string[] {
  return validateAnthropicRequest({ model: "m", max_tokens: 10, messages, ...(tools.length > 0 ? { tools } : {}) });
}

function expectProblem(problems: string[], pattern: RegExp): void {
  assert.ok(problems.some((p) => pattern.test(p)), `expected ${pattern} in ${JSON.stringify(problems)}`);
}

const GOOD_ANTHROPIC = [
  user("go"),
  { role: "assistant", content: [{ type: "text", text: "reading" }, use("t1"), use("t2")] },
  { role: "user", content: [result("t1"), result("t2"), { type: "text", text: "thanks" }] },
  { role: "assistant", content: [{ type: "text", text: "done" }] },
];

describe("validateAnthropicRequest", () => {
  test("accepts a valid request with parallel calls and results", () => {
    assert.deepEqual(anthropic(GOOD_ANTHROPIC), []);
  });

  test("rejects a tool_use without its tool_result", () => {
    expectProblem(
      anthropic([user("go"), { role: "assistant", content: [use("t1"), use("t2")] }, {
        role: "user",
        content: [result("t1")],
      }]),
      /^messages\.1: `tool_use` ids were found without `tool_result` blocks immediately after: t2\. Each `tool_use` block must have a corresponding `tool_result` block in the next message\.$/,
    );
  });

  test("rejects a tool_result without its tool_use", () => {
    expectProblem(
      anthropic([user("go"), { role: "assistant", content: [{ type: "text", text: "x" }] }, {
        role: "user",
        content: [result("zz")],
      }]),
      /^messages\.2\.content\.0: unexpected `tool_use_id` found in `tool_result` blocks: zz\. Each `tool_result` block must have a corresponding `tool_use` block in the previous message\.$/,
    );
  });

  test("rejects results that do not come immediately after their calls", () => {
    const problems = anthropic([
      user("go"),
      { role: "assistant", content: [use("t1")] },
      user("interrupting"),
      { role: "assistant", content: [{ type: "text", text: "hm" }] },
      { role: "user", content: [result("t1")] },
    ]);
    expectProblem(problems, /`tool_use` ids were found without `tool_result` blocks immediately after: t1/);
    expectProblem(problems, /unexpected `tool_use_id`/);
  });

  test("rejects an empty text block", () => {
    expectProblem(anthropic([user("")]), /^messages: text content blocks must be non-empty$/);
  });

  test("rejects a whitespace-only text block, also inside a tool_result", () => {
    expectProblem(anthropic([user(" \n")]), /^messages: text content blocks must contain non-whitespace text$/);
    expectProblem(
      anthropic([user("go"), { role: "assistant", content: [use("t1")] }, {
        role: "user",
        content: [result("t1", " ")],
      }]),
      /must contain non-whitespace text/,
    );
  });

  test("rejects a tool name outside ^[a-zA-Z0-9_-]{1,64}$", () => {
    expectProblem(
      anthropic([user("go")], [{ name: "svc.ping", input_schema: { type: "object" } }]),
      /^tools\.0\.custom\.name: String should match pattern '\^\[a-zA-Z0-9_-\]\{1,64\}\$'$/,
    );
    expectProblem(
      anthropic([user("go")], [{ name: "x".repeat(65), input_schema: { type: "object" } }]),
      /tools\.0\.custom\.name/,
    );
  });

  test("rejects tool_use/tool_result blocks in a request that defines no tools", () => {
    expectProblem(
      anthropic(
        [user("go"), { role: "assistant", content: [use("t1")] }, { role: "user", content: [result("t1")] }],
        [],
      ),
      /^messages\.1\.content\.0: Requests which include `tool_use` or `tool_result` blocks must define tools\.$/,
    );
  });

  test("rejects a non-object tool schema and a top-level anyOf/oneOf/allOf", () => {
    expectProblem(
      anthropic([user("go")], [{ name: "a", input_schema: { type: "string" } }]),
      /^tools\.0\.custom\.input_schema\.type: Input should be 'object'$/,
    );
    expectProblem(
      anthropic([user("go")], [{ name: "a", input_schema: { anyOf: [{ type: "object" }] } }]),
      /^tools\.0\.custom\.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level$/,
    );
    expectProblem(
      anthropic([user("go")], [{ name: "a", input_schema: { type: "object", oneOf: [] } }]),
      /does not support oneOf/,
    );
  });

  test("rejects a user message whose tool_result blocks do not come first", () => {
    expectProblem(
      anthropic([user("go"), { role: "assistant", content: [use("t1")] }, {
        role: "user",
        content: [{ type: "text", text: "first" }, result("t1")],
      }]),
      /^messages\.2: Did not find 1 `tool_result` block\(s\) at the beginning of this message\./,
    );
  });

  test("rejects a first message that is not the user's, and roles that do not alternate", () => {
    expectProblem(
      anthropic([{ role: "assistant", content: [{ type: "text", text: "hi" }] }, user("x")]),
      /^messages: first message must use the "user" role$/,
    );
    expectProblem(
      anthropic([user("a"), user("b")]),
      /roles must alternate between "user" and "assistant", but found multiple "user" roles in a row/,
    );
  });

  test("rejects duplicated tool_use ids", () => {
    expectProblem(
      anthropic([user("go"), { role: "assistant", content: [use("t1"), use("t1")] }, {
        role: "user",
        content: [result("t1")],
      }]),
      /^messages\.1\.content\.1: `tool_use` ids must be unique$/,
    );
  });
});

const GOOD_OPENAI = {
  model: "m",
  tools: [{
    type: "function",
    function: { name: "fs__read", description: "read", parameters: { type: "object", properties: {} } },
  }],
  messages: [
    { role: "system", content: "sys" },
    { role: "user", content: "go" },
    {
      role: "assistant",
      content: "",
      tool_calls: [{ id: "c1", type: "function", function: { name: "fs__read", arguments: "{}" } }, {
        id: "c2",
        type: "function",
        function: { name: "fs__read", arguments: "{}" },
      }],
    },
    { role: "tool", tool_call_id: "c1", content: "a" },
    { role: "tool", tool_call_id: "c2", content: "b" },
    { role: "assistant", content: "done" },
  ],
};

function openai(change: (body: typeof GOOD_OPENAI & Record<string, unknown>) => void): string[] {
  const body = structuredClone(GOOD_OPENAI) as typeof GOOD_OPENAI & Record<string, unknown>;
  change(body);
  return validateOpenAiRequest(body);
}

describe("validateOpenAiRequest", () => {
  test("accepts a valid request with parallel calls and tool messages", () => {
    assert.deepEqual(validateOpenAiRequest(GOOD_OPENAI), []);
  });

  test("rejects a tool call without its tool message", () => {
    expectProblem(
      openai((b) => b.messages.splice(4, 1)),
      /^An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'\. The following tool_call_ids did not have response messages: c2$/,
    );
  });

  test("rejects a tool message that does not follow an assistant message with tool_calls", () => {
    expectProblem(
      openai((b) => b.messages.push({ role: "tool", tool_call_id: "c1", content: "late" })),
      /^Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'\.$/,
    );
  });

  test("rejects results that are not immediately after their calls", () => {
    const problems = openai((b) => b.messages.splice(3, 0, { role: "user", content: "between" }));
    expectProblem(problems, /did not have response messages: c1, c2/);
    expectProblem(problems, /must be a response to a preceeding message/);
  });

  test("rejects a tool message answering an unknown id", () => {
    expectProblem(
      openai((b) => (b.messages[4]!.tool_call_id = "nope")),
      /^Invalid parameter: 'tool_call_id' of 'nope' not found in 'tool_calls' of previous message\.$/,
    );
  });

  test("rejects a tool-call id over 40 characters", () => {
    const id = "x".repeat(41);
    expectProblem(
      openai((b) => {
        b.messages[2]!.tool_calls![0]!.id = id;
        b.messages[3]!.tool_call_id = id;
      }),
      /^Invalid 'messages\[2\]\.tool_calls\[0\]\.id': string too long\. Expected a string with maximum length 40, but got a string with length 41 instead\.$/,
    );
  });

  test("rejects a tool name outside the pattern, in tools and in tool calls", () => {
    expectProblem(
      openai((b) => (b.tools[0]!.function.name = "svc.ping")),
      /^Invalid 'tools\[0\]\.function\.name': string does not match pattern\. Expected a string that matches the pattern '\^\[a-zA-Z0-9_-\]\+\$'\.$/,
    );
    expectProblem(
      openai((b) => (b.tools[0]!.function.name = "a".repeat(65))),
      /string too long\. Expected a string with maximum length 64/,
    );
    expectProblem(
      openai((b) => (b.messages[2]!.tool_calls![0]!.function.name = "a/b")),
      /messages\[2\]\.tool_calls\[0\]\.function\.name/,
    );
  });

  test("rejects a non-object tool schema and a top-level anyOf", () => {
    expectProblem(
      openai((b) => ((b.tools[0]!.function as Record<string, unknown>)["parameters"] = { type: "string" })),
      /^Invalid schema for function 'fs__read': schema must be a JSON Schema of 'type: "object"', got 'type: "string"'\.$/,
    );
    expectProblem(
      openai((b) => ((b.tools[0]!.function as Record<string, unknown>)["parameters"] = { anyOf: [] })),
      /'anyOf' is not supported at the top level/,
    );
  });

  test("rejects null content on an assistant message without tool calls", () => {
    expectProblem(
      openai((b) => ((b.messages[5] as Record<string, unknown>)["content"] = null)),
      /^Invalid value for 'content': expected a string, got null\.$/,
    );
  });

  test("rejects arguments that are not a string", () => {
    expectProblem(
      openai((b) => ((b.messages[2]!.tool_calls![0]!.function as Record<string, unknown>)["arguments"] = {})),
      /messages\[2\]\.tool_calls\[0\]\.function\.arguments': expected a string/,
    );
  });
});

describe("fake LLM server", () => {
  test("answers an invalid request with 400 and an API-style body, records why, and keeps the turn", async () => {
    const llm = await startFakeLlm({ responses: [{ text: "kept" }] });
    try {
      const bad = await fetch(`${llm.url}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": "k", "content-type": "application/json" },
        body: JSON.stringify({ model: "m", max_tokens: 5, messages: [user("")] }),
      });
      assert.equal(bad.status, 400);
      assert.deepEqual(await bad.json(), {
        type: "error",
        error: { type: "invalid_request_error", message: "messages: text content blocks must be non-empty" },
        request_id: "req_fake",
      });
      const good = await fetch(`${llm.openaiBaseUrl}/chat/completions`, {
        method: "POST",
        headers: { authorization: "Bearer k", "content-type": "application/json" },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
      });
      const json = (await good.json()) as { choices: { message: { content: string }; finish_reason: string }[] };
      assert.equal(json.choices[0]!.message.content, "kept");
      assert.equal(json.choices[0]!.finish_reason, "stop");
      assert.equal(llm.requests.length, 2);
      assert.equal(llm.requests[0]!.rejected, "messages: text content blocks must be non-empty");
      assert.equal(llm.requests[1]!.rejected, undefined);
    } finally {
      await llm.close();
    }
  });

  test("a request without an API key gets 401", async () => {
    const llm = await startFakeLlm({ responses: [{ text: "x" }] });
    try {
      const res = await fetch(`${llm.url}/v1/messages`, {
        method: "POST",
        body: JSON.stringify({ model: "m", max_tokens: 5, messages: [user("hi")] }),
      });
      assert.equal(res.status, 401);
      await res.body?.cancel();
    } finally {
      await llm.close();
    }
  });

  test("running out of responses gives 500 with a clear message, and the request is recorded", async () => {
    const llm = await startFakeLlm({ responses: [] });
    try {
      const res = await fetch(`${llm.openaiBaseUrl}/chat/completions`, {
        method: "POST",
        headers: { authorization: "Bearer k" },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
      });
      assert.equal(res.status, 500);
      const body = (await res.json()) as { error: { message: string } };
      assert.match(body.error.message, /no response left: the fake was given 0 responses/);
      assert.equal(llm.requests.length, 1);
    } finally {
      await llm.close();
    }
  });

  test("a function of the request chooses the answer", async () => {
    const llm = await startFakeLlm({ responses: (r, i) => ({ text: `${r.wire} #${i}` }) });
    try {
      const res = await fetch(`${llm.url}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": "k" },
        body: JSON.stringify({ model: "m", max_tokens: 5, messages: [user("hi")] }),
      });
      const json = (await res.json()) as { content: { text: string }[] };
      assert.equal(json.content[0]!.text, "anthropic #0");
    } finally {
      await llm.close();
    }
  });

  test("streams SSE when asked, with the OpenAI usage chunk and [DONE]", async () => {
    const llm = await startFakeLlm({ responses: [{ text: "abc", usage: { inputTokens: 3, outputTokens: 4 } }] });
    try {
      const res = await fetch(`${llm.openaiBaseUrl}/chat/completions`, {
        method: "POST",
        headers: { authorization: "Bearer k" },
        body: JSON.stringify({
          model: "m",
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: "user", content: "hi" }],
        }),
      });
      assert.match(res.headers.get("content-type") ?? "", /text\/event-stream/);
      const text = await res.text();
      assert.match(text, /"usage":\{"prompt_tokens":3,"completion_tokens":4/);
      assert.ok(text.trimEnd().endsWith("data: [DONE]"));
    } finally {
      await llm.close();
    }
  });
});

describe("startFakeLlm close()", () => {
  test("ends a reply's pause: a process that closed the fake mid-pause exits at once", async () => {
    const run = await runToExit(`${repoRoot}tests/fixtures/fake-llm-close.ts`);
    assert.equal(run.code, 0);
    assert.equal(run.stdout.trim(), "closed");
    // The pause is 60 s; 15 s leaves room for a slow start on a loaded machine.
    assert.ok(run.ms < 15_000, `exited after ${run.ms} ms`);
  });
});
