/**
 * Issue 9, Anthropic: extended thinking, `thinking`/`redacted_thinking` and unknown content
 * blocks kept byte-identical in history and resent, thinking never shown as answer text, and
 * a refusal's explanation shown to the user. The fake LLM streams thinking the way the API
 * does (`thinking_delta` pieces, one `signature_delta`) and enforces the API's thinking rules
 * (lib/testing/validate.ts), signatures included.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import { loadConfig } from "../lib/config/config.ts";
import { resultUpdates, sessionUpdates } from "../lib/acp/updates.ts";
import {
  anthropicBody,
  createAnthropicModel,
  fromAnthropicMessage,
  toAnthropicMessages,
} from "../lib/llm/anthropic.ts";
import { fakeRedactedThinkingData, fakeThinkingSignature } from "../lib/testing/validate.ts";
import { type FakeTurn, startFakeLlm, validateAnthropicRequest } from "../lib/testing/fake-llm.ts";
import type { HistoryItem, LlmRequest, LlmResponse, Model, ToolDef } from "../lib/conversation/types.ts";
import { AgentSession } from "../lib/agent/loop.ts";
import { createRegistry } from "../lib/mcp/registry.ts";
import { messagesOf, runPrompt, withSession } from "./helpers/session.ts";
import { runCli } from "./helpers/cli.ts";
import { spawnAgent } from "./helpers/acp.ts";

const TOOL: ToolDef = {
  name: "fs__read",
  description: "Read a file",
  inputSchema: { type: "object", properties: { path: { type: "string" } } },
};
type Block = Record<string, unknown>;

const thinkingBlock = (text: string): Block => ({
  type: "thinking",
  thinking: text,
  signature: fakeThinkingSignature(text),
});
const assistantContents = (body: Record<string, unknown>): Block[][] =>
  messagesOf(body).filter((m) => m["role"] === "assistant").map((m) => m["content"] as Block[]);
const thinkingOf = (body: Record<string, unknown>): string[] =>
  assistantContents(body).flat().filter((b) => b["type"] === "thinking" || b["type"] === "redacted_thinking").map((b) =>
    JSON.stringify(b)
  );

// Blocks as the API sends them: a web search (server tool), its result, text with citations.
const SERVER_BLOCKS: Block[] = [
  {
    type: "server_tool_use",
    id: "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE",
    name: "web_search",
    input: { query: "claude shannon birth date" },
  },
  {
    type: "web_search_tool_result",
    tool_use_id: "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE",
    content: [{
      type: "web_search_result",
      title: "Claude Shannon - Wikipedia",
      url: "https://en.wikipedia.org/wiki/Claude_Shannon",
      encrypted_content: "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y",
      page_age: "April 30, 2025",
    }],
  },
  {
    type: "text",
    text: "Claude Shannon was born on April 30, 1916",
    citations: [{
      type: "web_search_result_location",
      url: "https://en.wikipedia.org/wiki/Claude_Shannon",
      title: "Claude Shannon - Wikipedia",
      encrypted_index: "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm",
      cited_text: "Claude Elwood Shannon (April 30, 1916 – February 24, 2001)",
    }],
  },
  { type: "future_block_type", payload: { nested: [1, "two", null] } },
];

describe("Anthropic client: thinking and unknown blocks", () => {
  test("thinking, redacted_thinking and unknown blocks are kept in order and resent byte-identical; thinking is not answer text", async () => {
    const turns: FakeTurn[] = [
      {
        thinking: "The user wants a file. Let me read it.",
        redactedThinking: "hidden",
        blocks: SERVER_BLOCKS,
        text: "Reading.",
        toolCalls: [{ name: "fs__read", arguments: { path: "a" }, id: "toolu_01A" }],
      },
      { text: "done" },
    ];
    const llm = await startFakeLlm({ responses: turns });
    try {
      // Thinking is off: an Anthropic-compatible endpoint returns the blocks unasked.
      const model = createAnthropicModel({ apiKey: "k", model: "claude-test", baseUrl: llm.anthropicBaseUrl });
      const texts: string[] = [];
      const thoughts: string[] = [];
      const request = (history: HistoryItem[]): LlmRequest => ({
        system: "",
        history,
        tools: [TOOL],
        maxOutputTokens: 4096,
        onTextDelta: (t) => texts.push(t),
        onThinkingDelta: (t) => thoughts.push(t),
      });
      const history: HistoryItem[] = [{ role: "user", text: "read a" }];
      const reply = await model.complete(request(history));
      assert.equal(thoughts.join(""), "The user wants a file. Let me read it.");
      assert.ok(thoughts.length > 1, "thinking streams in pieces");
      assert.equal(reply.text, "Claude Shannon was born on April 30, 1916Reading.");
      assert.ok(!texts.join("").includes("Let me read it"));
      const expected = [
        thinkingBlock("The user wants a file. Let me read it."),
        { type: "redacted_thinking", data: fakeRedactedThinkingData("hidden") },
        ...SERVER_BLOCKS,
        { type: "text", text: "Reading." },
        { type: "tool_use", id: "toolu_01A", name: "fs__read", input: { path: "a" } },
      ];
      assert.equal(JSON.stringify(reply.native?.content), JSON.stringify(expected));
      history.push({
        role: "assistant",
        text: reply.text,
        toolCalls: reply.toolCalls,
        ...(reply.native ? { native: reply.native } : {}),
      });
      history.push({
        role: "tool",
        toolCallId: "toolu_01A",
        content: [{ type: "text", text: "contents" }],
        isError: false,
      });
      await model.complete(request(history));
      const resent = assistantContents(llm.requests[1]!.body)[0]!;
      assert.equal(JSON.stringify(resent), JSON.stringify(expected), "the assistant message goes back block for block");
      assert.deepEqual(llm.requests.map((r) => r.rejected), [undefined, undefined]);
    } finally {
      await llm.close();
    }
  });

  test("a non-streamed answer keeps its blocks the same way and reads the refusal's stop_details", () => {
    const content = [thinkingBlock("t"), ...SERVER_BLOCKS, { type: "text", text: "Hello.." }];
    const reply = fromAnthropicMessage({
      content,
      stop_reason: "refusal",
      stop_details: { type: "refusal", category: null, explanation: "Declined for safety." },
      usage: { input_tokens: 1, output_tokens: 1 },
    });
    assert.equal(JSON.stringify(reply.native?.content), JSON.stringify(content));
    assert.equal(reply.stop, "refusal");
    assert.equal(reply.refusal, "Declined for safety.");
    assert.equal(
      fromAnthropicMessage({
        content: [],
        stop_reason: "refusal",
        stop_details: { type: "refusal", category: "cyber", explanation: null },
      }).refusal,
      "declined (category: cyber)",
    );
  });

  test("native tool_use blocks follow toolCalls: renamed ids and names applied, dropped calls removed, other blocks untouched", () => {
    const call = (id: string, name = "fs__read") => ({ type: "tool_use", id, name, input: { path: id } });
    const native = [
      thinkingBlock("t"),
      call("a b"),
      { type: "future", x: 1 },
      call("b", "bad.name"),
      call("c"),
      call("d"),
    ];
    const history: HistoryItem[] = [
      { role: "user", text: "go" },
      {
        role: "assistant",
        text: "",
        // What the loop kept: "a b" renamed, the bad name mapped, "c" and "d" dropped (past the limit).
        toolCalls: [{ id: "call00001", name: "fs__read", arguments: { path: "a b" } }, {
          id: "b",
          name: "invalid_tool_name",
          arguments: { path: "b" },
        }],
        native: { provider: "anthropic", content: native },
      },
    ];
    const [, assistant] = toAnthropicMessages(history, true);
    assert.equal(
      JSON.stringify(assistant!.content),
      JSON.stringify([
        thinkingBlock("t"),
        { type: "tool_use", id: "call00001", name: "fs__read", input: { path: "a b" } },
        { type: "future", x: 1 },
        { type: "tool_use", id: "b", name: "invalid_tool_name", input: { path: "b" } },
      ]),
    );
    // Without tools the calls become text; thinking and unknown blocks stay.
    const [, bare] = toAnthropicMessages(history, false);
    assert.deepEqual(bare!.content.map((b) => b["type"]), ["thinking", "text", "future", "text"]);
    // A thinking block without a signature (cut off) or ending a message is left out.
    const cut: HistoryItem[] = [
      { role: "user", text: "go" },
      {
        role: "assistant",
        text: "x",
        toolCalls: [],
        native: {
          provider: "anthropic",
          content: [thinkingBlock("t"), { type: "text", text: "x" }, {
            type: "thinking",
            thinking: "half",
            signature: "",
          }],
        },
      },
      {
        role: "assistant",
        text: "",
        toolCalls: [],
        native: { provider: "anthropic", content: [thinkingBlock("only")] },
      },
      { role: "user", text: "next" },
    ];
    assert.deepEqual(toAnthropicMessages(cut, true).map((m) => m.content.map((b) => b["type"])), [["text"], [
      "thinking",
      "text",
    ], ["text"]]);
  });

  test("the budget is sent as thinking {type: enabled, budget_tokens} on turns, never on a compaction summary", () => {
    const base: LlmRequest = { system: "", history: [{ role: "user", text: "hi" }], tools: [], maxOutputTokens: 4096 };
    assert.deepEqual(anthropicBody(base, "m", { thinkingBudgetTokens: 2048 })["thinking"], {
      type: "enabled",
      budget_tokens: 2048,
    });
    assert.equal(anthropicBody(base, "m")["thinking"], undefined, "off by default");
    assert.equal(
      anthropicBody({ ...base, purpose: "summary" }, "m", { thinkingBudgetTokens: 2048 })["thinking"],
      undefined,
    );
    assert.equal(
      anthropicBody({ ...base, maxOutputTokens: 2048 }, "m", { thinkingBudgetTokens: 2048 })["thinking"],
      undefined,
    );
  });

  test("a turn that opened without thinking (then a _Stop injection) is sent without thinking, so the API accepts it", () => {
    const injected = (native?: Block[]): HistoryItem[] => [
      { role: "user", text: "go" },
      {
        role: "assistant",
        text: "Done.",
        toolCalls: [],
        ...(native === undefined ? {} : { native: { provider: "anthropic", content: native } }),
      },
      { role: "assistant", text: "", toolCalls: [{ id: "sprout_hook__Stop_fx_0", name: "fx___Stop", arguments: {} }] },
      {
        role: "tool",
        toolCallId: "sprout_hook__Stop_fx_0",
        content: [{ type: "text", text: '{"hook":"_Stop","server":"fx","text":"no"}' }],
        isError: false,
      },
    ];
    const body = (history: HistoryItem[]) =>
      anthropicBody({ system: "", history, tools: [TOOL], maxOutputTokens: 4096 }, "m", { thinkingBudgetTokens: 2048 });
    const bare = body(injected([{ type: "text", text: "Done." }]));
    assert.equal(bare["thinking"], undefined);
    assert.deepEqual(validateAnthropicRequest(bare), []);
    const thought = body(injected([thinkingBlock("ok"), { type: "text", text: "Done." }]));
    assert.deepEqual(thought["thinking"], { type: "enabled", budget_tokens: 2048 });
    assert.deepEqual(validateAnthropicRequest(thought), []);
    // A paused turn that thought unasked, sent back with thinking off: its thinking is left out.
    const paused = anthropicBody({
      system: "",
      history: [{ role: "user", text: "go" }, {
        role: "assistant",
        text: "Sear",
        toolCalls: [],
        native: { provider: "anthropic", content: [thinkingBlock("p"), { type: "text", text: "Sear" }] },
      }],
      tools: [TOOL],
      maxOutputTokens: 4096,
    }, "m");
    assert.deepEqual(validateAnthropicRequest(paused), []);
    assert.deepEqual(assistantContents(paused), [[{ type: "text", text: "Sear" }]]);
    // Forced on, the turn without thinking is what the API refuses.
    assert.match(
      validateAnthropicRequest({ ...bare, thinking: { type: "enabled", budget_tokens: 2048 } })[0]!,
      /Expected `thinking` or `redacted_thinking`, but found `text`/,
    );
  });

  test("SPROUT_AGENT_THINKING_BUDGET_TOKENS: unset or 0 is off; below 1024 or not below the output limit is refused naming it", () => {
    const load = (value: string | undefined, extra: Record<string, string> = {}) =>
      loadConfig(
        { ...(value === undefined ? {} : { SPROUT_AGENT_THINKING_BUDGET_TOKENS: value }), ...extra },
        () => "",
      );
    assert.equal(load(undefined).thinkingBudgetTokens, 0);
    assert.equal(load("0").thinkingBudgetTokens, 0);
    assert.equal(load(" 4096 ").thinkingBudgetTokens, 4096);
    assert.throws(
      () => load("1023"),
      /^AgentError: Invalid SPROUT_AGENT_THINKING_BUDGET_TOKENS: 1023 must be 0 \(off\) or at least 1024/,
    );
    assert.throws(
      () => load("32768"),
      /Invalid SPROUT_AGENT_THINKING_BUDGET_TOKENS: 32768 must be less than SPROUT_AGENT_MAX_OUTPUT_TOKENS \(32768\)/,
    );
    assert.throws(
      () => load("2048", { SPROUT_AGENT_MAX_OUTPUT_TOKENS: "2048" }),
      /must be less than SPROUT_AGENT_MAX_OUTPUT_TOKENS \(2048\)/,
    );
    assert.throws(() => load("lots"), /Invalid SPROUT_AGENT_THINKING_BUDGET_TOKENS: "lots" is not a whole number/);
    assert.throws(() => load(""), /Invalid SPROUT_AGENT_THINKING_BUDGET_TOKENS/);
  });

  test("the fake refuses what the API refuses with thinking, quoting its errors", () => {
    const user = (text: string) => ({ role: "user", content: [{ type: "text", text }] });
    const tool = (id: string) => ({ role: "user", content: [{ type: "tool_result", tool_use_id: id, content: "ok" }] });
    const call = (id: string) => ({ type: "tool_use", id, name: "fs__read", input: {} });
    const body = (messages: unknown[], extra: Record<string, unknown> = {}) => ({
      model: "m",
      max_tokens: 4096,
      thinking: { type: "enabled", budget_tokens: 2048 },
      tools: [{ name: "fs__read", description: "", input_schema: { type: "object" } }],
      messages,
      ...extra,
    });
    const good = [user("go"), { role: "assistant", content: [thinkingBlock("plan"), call("t1")] }, tool("t1")];
    assert.deepEqual(validateAnthropicRequest(body(good)), []);
    assert.deepEqual(validateAnthropicRequest(body(good, { thinking: { type: "enabled", budget_tokens: 500 } })), [
      "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
    ]);
    assert.match(
      validateAnthropicRequest(body(good, { max_tokens: 2048 }))[0]!,
      /^`max_tokens` must be greater than `thinking.budget_tokens`/,
    );
    const edited = [user("go"), {
      role: "assistant",
      content: [{ ...thinkingBlock("plan"), thinking: "plan!" }, call("t1")],
    }, tool("t1")];
    assert.deepEqual(validateAnthropicRequest(body(edited)), [
      "messages.1.content.0: Invalid `signature` in `thinking` block",
    ]);
    const dropped = [
      user("go"),
      { role: "assistant", content: [{ type: "text", text: "hm" }, call("t1")] },
      tool("t1"),
    ];
    assert.match(
      validateAnthropicRequest(body(dropped))[0]!,
      /^messages\.1\.content\.0\.type: Expected `thinking` or `redacted_thinking`, but found `text`\. When `thinking` is enabled, a final `assistant` message must start with a thinking block/,
    );
    // A tool loop is one assistant turn: a later assistant message of it may lack thinking.
    const loop = [...good, { role: "assistant", content: [call("t2")] }, tool("t2")];
    assert.deepEqual(validateAnthropicRequest(body(loop)), []);
    const last = [
      user("go"),
      { role: "assistant", content: [{ type: "text", text: "a" }, thinkingBlock("p")] },
      user("more"),
    ];
    assert.deepEqual(validateAnthropicRequest(body(last)), [
      "messages.1.content.0: If an assistant message contains any thinking blocks, the first block must be thinking or redacted_thinking. Found text.",
      "messages.1: The final block in an assistant message cannot be `thinking`.",
    ]);
    const offFinal = [user("go"), { role: "assistant", content: [thinkingBlock("p"), { type: "text", text: "a" }] }];
    assert.match(
      validateAnthropicRequest(body(offFinal, { thinking: undefined }))[0]!,
      /When thinking is disabled, an `assistant` message in the final position cannot contain `thinking`/,
    );
  });
});

const hooksOn = { MCP_HOOK_SERVERS: "*" };

describe("the loop with thinking: history keeps every block, hook injection stays valid", () => {
  test("thinking on: a _Stop objection, a tool call, then every request is valid and each thinking block is resent byte-identical", async () => {
    await withSession(
      {
        inProcess: true,
        wire: "anthropic",
        env: { ...hooksOn, SPROUT_AGENT_THINKING_BUDGET_TOKENS: "2048" },
        servers: [{ name: "fx", env: { FIXTURE_STOP: "run the tests first", FIXTURE_STOP_COUNT: "1" } }],
        responses: [
          { thinking: "Simple question, answer at once.", text: "Done." },
          {
            thinking: "The hook wants tests. Run echo.",
            redactedThinking: "r1",
            toolCalls: [{ name: "fx__echo", arguments: { text: "test" } }],
          },
          { thinking: "Tests pass.", text: "All tests pass." },
        ],
      },
      async (t) => {
        const { events, result } = await runPrompt(t.session, "is it done?");
        assert.equal(result.stopReason, "end_turn");
        assert.equal(result.objections, 1);
        const [, second, third] = t.llm.requests;
        for (const r of t.llm.requests) assert.deepEqual(r.body["thinking"], { type: "enabled", budget_tokens: 2048 });
        // The end_turn message and the injected _Stop call are one assistant message, thinking first.
        const injected = assistantContents(second!.body)[0]!;
        assert.deepEqual(injected.map((b) => b["type"]), ["thinking", "text", "tool_use"]);
        assert.equal(JSON.stringify(injected[0]), JSON.stringify(thinkingBlock("Simple question, answer at once.")));
        assert.deepEqual(thinkingOf(third!.body), [
          JSON.stringify(thinkingBlock("Simple question, answer at once.")),
          JSON.stringify(thinkingBlock("The hook wants tests. Run echo.")),
          JSON.stringify({ type: "redacted_thinking", data: fakeRedactedThinkingData("r1") }),
        ]);
        const thought = events.filter((e) => e.type === "thinking-delta").map((e) =>
          e.type === "thinking-delta" ? e.text : ""
        ).join("");
        assert.equal(thought, "Simple question, answer at once.The hook wants tests. Run echo.Tests pass.");
        const text = events.filter((e) => e.type === "text-delta").map((e) => e.type === "text-delta" ? e.text : "")
          .join("");
        assert.equal(text, "Done.All tests pass.");
      },
    );
  });

  test("tool_use blocks follow the calls the loop kept: an illegal id renamed, a cut-off response's call dropped; thinking untouched", async () => {
    await withSession(
      {
        inProcess: true,
        wire: "anthropic",
        env: { SPROUT_AGENT_THINKING_BUDGET_TOKENS: "1024" },
        responses: [
          {
            thinking: "Echo twice.",
            blocks: SERVER_BLOCKS,
            toolCalls: [{ name: "fx__echo", arguments: { text: "1" }, id: "bad id!" }, {
              name: "fx__echo",
              arguments: { text: "2" },
              id: "toolu_ok",
            }],
          },
          {
            thinking: "Now a long one.",
            text: "Writing",
            toolCalls: [{ name: "fx__echo", arguments: { text: "x".repeat(40) } }],
            truncateInToolCall: true,
          },
          { thinking: "Next prompt.", text: "fine" },
        ],
      },
      async (t) => {
        assert.equal((await runPrompt(t.session, "echo")).result.stopReason, "max_tokens");
        assert.equal((await runPrompt(t.session, "again")).result.stopReason, "end_turn");
        const first = assistantContents(t.llm.requests[1]!.body)[0]!;
        assert.equal(JSON.stringify(first[0]), JSON.stringify(thinkingBlock("Echo twice.")));
        assert.equal(
          JSON.stringify(first.slice(1, 1 + SERVER_BLOCKS.length)),
          JSON.stringify(SERVER_BLOCKS),
          "unknown blocks resent as they came",
        );
        const ids = first.filter((b) => b["type"] === "tool_use").map((b) => b["id"]);
        assert.match(String(ids[0]), /^call[a-zA-Z0-9]{5}$/, "a minted id (lib/conversation/call-ids.ts)");
        assert.equal(ids[1], "toolu_ok");
        const results = messagesOf(t.llm.requests[1]!.body)[2]!["content"] as Block[];
        assert.deepEqual(results.map((b) => b["tool_use_id"]), ids);
        const cut = assistantContents(t.llm.requests[2]!.body)[1]!;
        assert.equal(
          JSON.stringify(cut),
          JSON.stringify([thinkingBlock("Now a long one."), { type: "text", text: "Writing" }]),
        );
      },
    );
  });

  test("hooks only (no tools) and a compaction summary with thinking in history: pairs become text, thinking stays, requests valid", async () => {
    await withSession(
      {
        inProcess: true,
        wire: "anthropic",
        env: {
          ...hooksOn,
          SPROUT_AGENT_THINKING_BUDGET_TOKENS: "1024",
          SPROUT_AGENT_MAX_OUTPUT_TOKENS: "2000",
          SPROUT_AGENT_MAX_CONTEXT_TOKENS: "3000",
        },
        servers: [{ name: "fx", env: { FIXTURE_NO_TOOLS: "1", FIXTURE_STOP: "check again", FIXTURE_STOP_COUNT: "1" } }],
        responses: [
          { thinking: "Nothing to do.", text: "Done." },
          { thinking: "Checked.", text: "Still done.", usage: { inputTokens: 990, outputTokens: 5 } },
          { text: "Summary: the user asked; it is done." },
          { thinking: "After the handoff.", text: "Yes." },
        ],
      },
      async (t) => {
        await runPrompt(t.session, "go");
        const { events } = await runPrompt(t.session, "more?");
        assert.ok(events.some((e) => e.type === "compaction" && e.mode === "summary"));
        const [, objected, summary, after] = t.llm.requests;
        assert.equal(objected!.body["tools"], undefined);
        const contents = assistantContents(objected!.body)[0]!;
        assert.deepEqual(contents.map((b) => b["type"]), ["thinking", "text", "text"]);
        assert.match(String(contents[2]!["text"]), /^\[tool call fx___Stop \{\}\]$/);
        assert.equal(summary!.body["thinking"], undefined, "no thinking on the summary request");
        assert.match(
          JSON.stringify(summary!.body),
          /Still done/,
          "the summary request sees the history that held thinking",
        );
        assert.deepEqual(thinkingOf(summary!.body), []);
        assert.deepEqual(after!.body["thinking"], { type: "enabled", budget_tokens: 1024 });
      },
    );
  });
});

describe("refusals show their explanation", () => {
  const refusal: FakeTurn = {
    thinking: "secret plan",
    text: "Hello..",
    stop: "refusal",
    stopDetails: { category: "cyber", explanation: "This request was declined because it could enable cyber harm." },
  };
  const explanation = "This request was declined because it could enable cyber harm. (category: cyber)";

  test("stop_details.explanation reaches the prompt result (without one a fixed text says so); the refused prompt leaves history", async () => {
    await withSession(
      { inProcess: true, wire: "anthropic", servers: [], responses: [refusal, { text: "x", stop: "refusal" }] },
      async (t) => {
        assert.deepEqual((await runPrompt(t.session, "hack")).result.refusal, explanation);
        const second = (await runPrompt(t.session, "again")).result;
        assert.equal(second.stopReason, "refusal");
        assert.equal(second.refusal, "the model declined the request and gave no explanation");
        // ACP: "the user prompt and everything that comes after it won't be included in the next prompt".
        assert.deepEqual(messagesOf(t.llm.requests[1]!.body), [{
          role: "user",
          content: [{ type: "text", text: "again" }],
        }]);
        assert.deepEqual(t.session.history, []);
      },
    );
  });

  test("a refusal text the user never saw streamed (OpenAI's refusal field) is the explanation", async () => {
    const config = loadConfig({}, () => "");
    const { registry } = await createRegistry([], { sessionId: "s", initTimeoutMs: 1000, maxLineBytes: 1 << 20 });
    const replies: LlmResponse[] = [
      { text: "I can't help with that.", toolCalls: [], stop: "refusal" },
      { text: "Partial answ", toolCalls: [], stop: "refusal" },
    ];
    let n = 0;
    const model: Model = {
      name: "test",
      complete: (request) => {
        const reply = replies[n++]!;
        if (n === 2) request.onTextDelta?.(reply.text); // streamed: partial output, not an explanation
        return Promise.resolve(reply);
      },
    };
    try {
      const session = new AgentSession({ config, model, registry });
      assert.equal((await runPrompt(session, "x")).result.refusal, "I can't help with that.");
      assert.equal(
        (await runPrompt(session, "y")).result.refusal,
        "the model declined the request and gave no explanation",
      );
    } finally {
      await registry.close();
    }
  });

  test("ACP: thinking is an agent_thought_chunk; a refusal sends its explanation as agent_message_chunk", () => {
    assert.deepEqual(sessionUpdates({ type: "thinking-delta", text: "hmm" }).updates, [{
      sessionUpdate: "agent_thought_chunk",
      content: { type: "text", text: "hmm" },
    }]);
    const result = {
      stopReason: "refusal" as const,
      refusal: "no",
      rounds: 1,
      toolCalls: 0,
      objections: 0,
      usage: { inputTokens: 1, outputTokens: 1 },
      durationMs: 1,
    };
    assert.deepEqual(resultUpdates(result), [{
      sessionUpdate: "agent_message_chunk",
      content: { type: "text", text: "\n\nRefused: no\n" },
    }]);
    assert.deepEqual(resultUpdates({ ...result, stopReason: "end_turn", refusal: undefined } as never), []);
  });

  test("CLI: --json has no thinking and puts the explanation in the result; human output prints it, thinking dimmed on stderr", async () => {
    const llm = await startFakeLlm({ responses: [refusal, refusal] });
    try {
      const env = {
        SPROUT_AGENT_PROVIDER: "anthropic",
        ANTHROPIC_API_KEY: "k",
        ANTHROPIC_MODEL: "claude-test",
        ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
      };
      const json = await runCli(["run", "--json", "hack it"], env);
      assert.equal(json.code, 0, json.stderr);
      assert.ok(!json.stdout.includes("secret plan"), json.stdout);
      assert.ok(json.events.every((e) => e["type"] !== "thinking-delta"));
      const last = json.events[json.events.length - 1]!;
      assert.equal(last["type"], "result");
      assert.equal(last["stopReason"], "refusal");
      assert.equal(last["refusal"], explanation);
      const human = await runCli(["run", "hack it"], env);
      assert.equal(human.code, 0, human.stderr);
      assert.equal(human.stdout, "Hello..\n", "the answer alone, without the thinking");
      assert.match(
        human.stderr,
        /\n⊘ refused: This request was declined because it could enable cyber harm\. \(category: cyber\)\n■ refusal/,
      );
      assert.match(human.stderr, /∴ secret plan\n/);
    } finally {
      await llm.close();
    }
  });

  test("ACP: the thought, then the refusal explanation as an agent message, then stopReason refusal", async () => {
    const llm = await startFakeLlm({ responses: [refusal] });
    const agent = spawnAgent({
      SPROUT_AGENT_PROVIDER: "anthropic",
      ANTHROPIC_API_KEY: "k",
      ANTHROPIC_MODEL: "claude-test",
      ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
    });
    try {
      await agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
      const created = await agent.request("session/new", { cwd: process.cwd(), mcpServers: [] });
      const sessionId = created.result.sessionId as string;
      const from = agent.messages.length;
      const reply = await agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hack it" }] });
      assert.equal(reply.result.stopReason, "refusal");
      const updates = agent.messages.slice(from).filter((m) => m.method === "session/update").map((m) =>
        m.params.update
      );
      const text = (kind: string) =>
        updates.filter((u) => u.sessionUpdate === kind).map((u) => u.content.text).join("");
      assert.equal(text("agent_thought_chunk"), "secret plan");
      assert.equal(text("agent_message_chunk"), `Hello..\n\nRefused: ${explanation}\n`);
      assert.equal(updates[updates.length - 1].content.text, `\n\nRefused: ${explanation}\n`);
    } finally {
      await agent.close();
      await llm.close();
    }
  });
});
