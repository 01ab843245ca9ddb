/**
 * Compaction that holds over hours (SPEC section 8.6, issue 23): a request over the window is
 * never sent, each summary carries the previous one and the `_PostCompact` text forward, and
 * repeated identical tool calls end the prompt. In process: the real wire client against the
 * validating fake LLM, and an in-memory MCP server (tests/helpers/fake-connection.ts).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { loadConfig } from "../lib/config/config.ts";
import { createModel } from "../lib/llm/model.ts";
import { AgentSession } from "../lib/agent/loop.ts";
import { canonicalJson, RepeatedCalls } from "../lib/agent/repeated-calls.ts";
import { agentOptionsFromEnv } from "../lib/agent/from-env.ts";
import { createAgent } from "../lib/agent/agent.ts";
import { createRegistry } from "../lib/mcp/registry.ts";
import { windowLimit } from "../lib/context/compaction.ts";
import { type FakeTurn, type RecordedRequest, startFakeLlm } from "../lib/testing/fake-llm.ts";
import type { AgentEvent } from "../lib/conversation/events.ts";
import { fakeConnect, FakeServer, stdioConfig, text } from "./helpers/fake-connection.ts";
import { historyProblems } from "./helpers/history.ts";

const utf8 = (s: string) => new TextEncoder().encode(s).length;
/** The fake's tokenizer: 3 bytes of the request body a token, as a real one roughly is. */
const tokensOf = (r: RecordedRequest) => Math.ceil(utf8(JSON.stringify(r.body)) / 3);
const isSummary = (r: RecordedRequest) =>
  r.body["tools"] === undefined && JSON.stringify(r.body).includes("Internal handoff");
const summaryPrompt = (r: RecordedRequest): string => {
  const messages = r.body["messages"] as { content: { text: string }[] }[];
  return messages[0]!.content[0]!.text;
};

/** Six tools of ~2 KB in all, a `read` tool whose result never changes, and `_PostCompact`. */
async function setup(env: Record<string, string>, responses: (r: RecordedRequest) => FakeTurn) {
  const llm = await startFakeLlm({
    responses: (r) => ({ usage: { inputTokens: tokensOf(r), outputTokens: 5 }, ...responses(r) }),
  });
  const config = loadConfig({
    SPROUT_AGENT_PROVIDER: "anthropic",
    ANTHROPIC_API_KEY: "k",
    ANTHROPIC_MODEL: "claude-test",
    ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
    MCP_HOOK_SERVERS: "fx",
    ...env,
  }, () => "");
  let ticks = 0;
  const server = new FakeServer("fx", [
    ...Array.from({ length: 6 }, (_, i) => ({
      name: `tool${i}`,
      description: `Tool number ${i}. ${"It does a careful, well-documented thing. ".repeat(5)}`,
      inputSchema: { type: "object" },
    })),
    { name: "read", inputSchema: { type: "object" } },
    { name: "tick", inputSchema: { type: "object" } },
    "_PostCompact",
  ], {
    read: () => text(`the same file, unchanged: ${"x".repeat(600)}`),
    tick: () => text(`tick ${++ticks}`),
    _PostCompact: () => text("open todos: ship the loop guard"),
  });
  const { registry } = await createRegistry([stdioConfig("fx")], {
    sessionId: "bounds-test",
    connect: fakeConnect([server]),
  });
  const session = new AgentSession({ config, model: createModel(config), registry, id: "bounds-test" });
  return {
    llm,
    server,
    session,
    config,
    async run(prompt: string) {
      const run = session.prompt(prompt);
      const events: AgentEvent[] = [];
      for await (const e of run) events.push(e);
      return { events, result: await run.result };
    },
    async close() {
      await registry.close();
      await llm.close();
    },
  };
}

const readSame = { toolCalls: [{ name: "fx__read", arguments: { path: "src/loop.ts" } }] };

describe("a looping model across compactions (issue 23)", () => {
  test("8.6 a model that repeats the same read-only call ends with max_tokens and its reason, and no request over the window is ever sent", async () => {
    // ctx 8000, out 1000: threshold 6000, window limit 7000 tokens. MAX_ROUNDS is only a
    // backstop: without the window guard the loop runs to it, its requests past the window.
    let summaries = 0;
    const t = await setup({
      SPROUT_AGENT_MAX_CONTEXT_TOKENS: "8000",
      SPROUT_AGENT_MAX_OUTPUT_TOKENS: "1000",
      SPROUT_AGENT_MAX_REPEATED_CALLS: "0",
      SPROUT_AGENT_MAX_ROUNDS: "400",
    }, (r) => isSummary(r) ? { text: `SUMMARY ${++summaries}: conclusion-${summaries} reached.` } : readSame);
    try {
      const { events, result } = await t.run("Find the bug in src/loop.ts.");
      assert.equal(result.stopReason, "max_tokens", JSON.stringify(result));
      assert.equal(result.limit?.kind, "context-window");
      assert.ok(result.limit?.kind === "context-window");
      assert.equal(result.limit.limitTokens, windowLimit(8000, 1000));
      assert.ok(result.limit.estimateTokens > result.limit.limitTokens);
      assert.equal(result.limit.handoffs, 5, "the summaries were used up first");
      assert.match(result.limit.reason, /SPROUT_AGENT_MAX_CONTEXT_TOKENS=8000/);
      assert.match(result.limit.reason, /5 of 5 summaries/);
      // Every request the fake received fits the window with its output.
      assert.ok(t.llm.requests.length > 20, `${t.llm.requests.length} requests`);
      for (const [i, r] of t.llm.requests.entries()) {
        assert.equal(r.rejected, undefined, `request ${i}: ${r.rejected}`);
        assert.ok(tokensOf(r) <= 7000, `request ${i}: ${tokensOf(r)} tokens, over the 7000 a request may have`);
      }
      const compactions = events.filter((e) => e.type === "compaction");
      assert.deepEqual(
        compactions.filter((c) => c.type === "compaction" && c.mode === "summary").map((c) =>
          c.type === "compaction" && c.handoffs
        ),
        [1, 2, 3, 4, 5],
        "the event counts the handoffs",
      );
      assert.ok(compactions.every((c) => c.type === "compaction" && c.repeatedCalls > 1));
      // The history is valid for the next prompt, which a summary-free truncation makes fit.
      assert.deepEqual(historyProblems(t.session.history), []);
    } finally {
      await t.close();
    }
  });

  test("8.2 each summary after the first carries the previous summary and the _PostCompact text, however long the history since", async () => {
    let summaries = 0;
    const t = await setup({
      SPROUT_AGENT_MAX_CONTEXT_TOKENS: "20000",
      SPROUT_AGENT_MAX_OUTPUT_TOKENS: "1000",
      SPROUT_AGENT_MAX_REPEATED_CALLS: "0",
      SPROUT_AGENT_MAX_HANDOFFS: "3",
    }, (r) => {
      if (isSummary(r)) return { text: `SUMMARY ${++summaries}: conclusion-${summaries} reached.` };
      return summaries < 3 ? readSame : { text: "done" };
    });
    try {
      const { result } = await t.run("Find the bug in src/loop.ts.");
      assert.equal(result.stopReason, "end_turn");
      const prompts = t.llm.requests.filter(isSummary).map(summaryPrompt);
      assert.equal(prompts.length, 3);
      assert.doesNotMatch(prompts[0]!, /# Carried Forward/);
      for (let k = 1; k < prompts.length; k++) {
        const p = prompts[k]!;
        const carried = p.indexOf("# Carried Forward");
        const recent = p.indexOf("# Recent History");
        assert.ok(carried > 0 && carried < recent, `summary ${k + 1}: its own section, before the history`);
        const section = p.slice(carried, recent);
        assert.match(section, new RegExp(`conclusion-${k} reached`), `summary ${k + 1} carries summary ${k}`);
        assert.match(section, /open todos: ship the loop guard/, `summary ${k + 1} carries the _PostCompact text`);
        // The history since was long enough to push the oldest items out of the history section.
        assert.match(p.slice(recent), /older items omitted/);
        assert.doesNotMatch(p.slice(recent), /conclusion-/, "not repeated in the history section");
      }
    } finally {
      await t.close();
    }
  });
});

describe("repeated identical tool calls (SPROUT_AGENT_MAX_REPEATED_CALLS)", () => {
  test("8.6 the same call with the same arguments (in any key order) and the same result ends the prompt at the bound, its result in history", async () => {
    let n = 0;
    const t = await setup({ SPROUT_AGENT_MAX_REPEATED_CALLS: "4" }, () => ({
      toolCalls: [{
        name: "fx__read",
        arguments: n++ % 2 === 0 ? { path: "a.ts", opts: { b: 1, a: 2 } } : { opts: { a: 2, b: 1 }, path: "a.ts" },
      }],
    }));
    try {
      const { result } = await t.run("Read a.ts.");
      assert.equal(result.stopReason, "max_turn_requests");
      assert.ok(result.limit?.kind === "repeated-call", JSON.stringify(result));
      assert.equal(result.limit.tool, "fx__read");
      assert.equal(result.limit.count, 4);
      assert.match(result.limit.reason, /SPROUT_AGENT_MAX_REPEATED_CALLS=4/);
      assert.equal(result.rounds, 4);
      assert.equal(t.server.calls.filter((c) => c.tool === "read").length, 4);
      assert.deepEqual(historyProblems(t.session.history), [], "every call has its result");
      // The next prompt starts counting afresh and sends a valid history.
      n = 0;
      const next = await t.run("Now read it once more.");
      assert.equal(next.result.stopReason, "max_turn_requests");
      assert.equal(next.result.rounds, 4, "counted again from 1");
      assert.ok(t.llm.requests.every((r) => r.rejected === undefined));
    } finally {
      await t.close();
    }
  });

  test("8.6 a call whose result changes is progress, not a repeat; 0 turns the bound off", async () => {
    let n = 0;
    const t = await setup(
      { SPROUT_AGENT_MAX_REPEATED_CALLS: "3" },
      () => n++ < 6 ? { toolCalls: [{ name: "fx__tick", arguments: {} }] } : { text: "done" },
    );
    try {
      const { result } = await t.run("Tick six times.");
      assert.equal(result.stopReason, "end_turn");
      assert.equal(result.limit, undefined);
    } finally {
      await t.close();
    }
    n = 0;
    const off = await setup({ SPROUT_AGENT_MAX_REPEATED_CALLS: "0" }, () => n++ < 12 ? readSame : { text: "done" });
    try {
      const { result } = await off.run("Read it twelve times.");
      assert.equal(result.stopReason, "end_turn");
      assert.equal(result.toolCalls, 12);
    } finally {
      await off.close();
    }
  });

  test("8.6 the count survives compaction: a loop across summaries still ends at the bound", async () => {
    const t = await setup({
      SPROUT_AGENT_MAX_CONTEXT_TOKENS: "5000",
      SPROUT_AGENT_MAX_OUTPUT_TOKENS: "1000",
      SPROUT_AGENT_MAX_REPEATED_CALLS: "30",
    }, (r) => isSummary(r) ? { text: "SUMMARY: reading src/loop.ts again." } : readSame);
    try {
      const { events, result } = await t.run("Find the bug.");
      const compactions = events.filter((e) => e.type === "compaction");
      assert.ok(compactions.length >= 1, "compacted before the bound");
      assert.equal(result.stopReason, "max_turn_requests");
      assert.ok(result.limit?.kind === "repeated-call" && result.limit.count === 30, JSON.stringify(result.limit));
      assert.equal(t.server.calls.filter((c) => c.tool === "read").length, 30);
    } finally {
      await t.close();
    }
  });

  test("canonical JSON sorts keys at every depth; a different result starts the count again", () => {
    assert.equal(canonicalJson({ b: 1, a: [{ d: 2, c: 3 }] }), '{"a":[{"c":3,"d":2}],"b":1}');
    assert.notEqual(canonicalJson({ a: [1, 2] }), canonicalJson({ a: [2, 1] }));
    const r = new RepeatedCalls();
    const same = [{ type: "text" as const, text: "x" }];
    assert.equal(r.record("s__t", { a: 1, b: 2 }, same, false), 1);
    assert.equal(r.record("s__t", { b: 2, a: 1 }, same, false), 2);
    assert.equal(r.record("s__t", { b: 2, a: 1 }, same, true), 1, "an error result is another result");
    assert.equal(r.record("s__u", { b: 2, a: 1 }, same, true), 1, "another tool");
    assert.equal(r.record("s__t", { a: 1, b: 2 }, [{ type: "text", text: "y" }], false), 1);
    assert.equal(r.max, 2);
  });
});

describe("SPROUT_AGENT_MAX_REPEATED_CALLS configuration", () => {
  test("default 10; a bad value stops with a message naming the variable; createAgent checks maxRepeatedCalls", async () => {
    assert.equal(loadConfig({}, () => "").maxRepeatedCalls, 10);
    assert.equal(loadConfig({ SPROUT_AGENT_MAX_REPEATED_CALLS: " 0 " }, () => "").maxRepeatedCalls, 0);
    for (const bad of ["", "-1", "many", "1.5"]) {
      assert.throws(
        () => loadConfig({ SPROUT_AGENT_MAX_REPEATED_CALLS: bad }, () => ""),
        /^AgentError: Invalid SPROUT_AGENT_MAX_REPEATED_CALLS: /,
        JSON.stringify(bad),
      );
    }
    const options = agentOptionsFromEnv({
      SPROUT_AGENT_PROVIDER: "scripted",
      SPROUT_AGENT_SCRIPT: "s.json",
      SPROUT_AGENT_MAX_REPEATED_CALLS: "7",
    }, { readFile: () => "[]" });
    assert.equal(options.maxRepeatedCalls, 7);
    await assert.rejects(
      createAgent({ model: { provider: "scripted", turns: [] }, maxRepeatedCalls: -1 }),
      /^AgentError: Invalid maxRepeatedCalls: -1 must be at least 0$/,
    );
  });
});
