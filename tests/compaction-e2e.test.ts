/**
 * Compaction end to end (SPEC section 8, issue 4): the real wire clients against the
 * validating fake LLM, real fixture servers and the real todo-enforcer (CASES C27).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import type { RecordedRequest } from "../lib/testing/fake-llm.ts";
import type { FakeTurn } from "../lib/testing/fake-llm.ts";
import { closeChecked, messagesOf, runPrompt, startSession, toolNamesOf } from "./helpers/session.ts";
import { prng } from "./helpers/history.ts";
import { repoRoot, tsCommand } from "./helpers/runtime.ts";

type Wire = "anthropic" | "openai";

/** A summary request: no tools, and the handoff system prompt. */
function isSummary(request: RecordedRequest): boolean {
  const raw = JSON.stringify(request.body);
  return request.body["tools"] === undefined && raw.includes("Internal handoff");
}

/** Answers summary requests with `summary`, and other requests from `turns` in order. */
function responder(turns: FakeTurn[], summary: FakeTurn | ((r: RecordedRequest) => FakeTurn)) {
  let next = 0;
  return (request: RecordedRequest): FakeTurn => {
    if (isSummary(request)) return typeof summary === "function" ? summary(request) : summary;
    return turns[next++] ?? { status: 500, body: { error: { message: "test ran out of turns" } } };
  };
}

const small = { SPROUT_AGENT_MAX_CONTEXT_TOKENS: "6000", SPROUT_AGENT_MAX_OUTPUT_TOKENS: "1000" }; // threshold 4500

describe("compaction end to end", () => {
  for (const wire of ["anthropic", "openai"] as Wire[]) {
    test(`a long run compacts: tool-less summary, then summary + _PostCompact result + prompt (${wire})`, async () => {
      // The fake reports 10 input tokens per request, so one result must cross the threshold alone.
      const big = { toolCalls: [{ name: "fx__big", arguments: { bytes: 5000 } }] };
      const t = await startSession({
        wire,
        env: { ...small, MCP_HOOK_SERVERS: "fx" },
        servers: [{ name: "fx", env: { FIXTURE_POSTCOMPACT: "todo state here" } }],
        responses: responder([big, big, { text: "finished" }], { text: "SUMMARY: the task was to compact" }),
      });
      try {
        const { events, result } = await runPrompt(t.session, "Please fill the context.");
        assert.equal(result.stopReason, "end_turn");
        const i = t.llm.requests.findIndex(isSummary);
        assert.ok(i > 0, "a summary request was sent");
        const summary = t.llm.requests[i]!;
        assert.equal(summary.body["tools"], undefined);
        assert.doesNotMatch(JSON.stringify(summary.body), /tool_use|tool_result|"role":"tool"|tool_calls/);
        assert.match(JSON.stringify(summary.body), /Please fill the context\./);
        const after = messagesOf(t.llm.requests[i + 1]!.body);
        const texts = JSON.stringify(after);
        const first = JSON.stringify(after[wire === "openai" ? 1 : 0]);
        assert.match(first, /\[Context Handoff\]\\nSUMMARY: the task was to compact/);
        assert.ok(
          texts.includes(
            JSON.stringify(JSON.stringify({ hook: "_PostCompact", server: "fx", text: "todo state here" })),
          ),
        );
        assert.match(JSON.stringify(after.at(-1)), /Please fill the context\./);
        assert.ok(toolNamesOf(t.llm.requests[i + 1]!.body).includes("fx__big"));
        const compactions = events.filter((e) => e.type === "compaction");
        assert.ok(compactions.length >= 1);
        const c = compactions[0]!;
        assert.ok(
          c.type === "compaction" && c.mode === "summary" && c.beforeTokens >= 4500 && c.afterTokens < c.beforeTokens,
        );
        assert.deepEqual(c.type === "compaction" && c.injected, ["fx"]);
        const post = t.calls().filter((x) => x.tool === "_PostCompact").length;
        assert.equal(post, compactions.length, "_PostCompact once per compaction");
        assert.equal(t.session.handoffs, compactions.length);
        assert.equal(t.llm.requests.filter(isSummary).length, compactions.length);
      } finally {
        await closeChecked(t);
      }
    });
  }

  test("a failing summary falls back to dropping old turns, with no _PostCompact call", async () => {
    // The fake reports 10 input tokens per request, so one result must cross the threshold alone.
    const big = { toolCalls: [{ name: "fx__big", arguments: { bytes: 5000 } }] };
    const t = await startSession({
      inProcess: true,
      wire: "anthropic",
      env: { ...small, MCP_HOOK_SERVERS: "fx" },
      servers: [{ name: "fx", env: { FIXTURE_POSTCOMPACT: "todo state here" } }],
      responses: responder([{ text: "first answer" }, big, big, { text: "done" }], { status: 400 }),
    });
    try {
      await runPrompt(t.session, "First prompt.");
      const { events, result } = await runPrompt(t.session, "Second prompt.");
      const c = events.find((e) => e.type === "compaction");
      assert.ok(c?.type === "compaction" && c.mode === "truncation", events.map((e) => e.type).join(","));
      assert.ok(events.some((e) => e.type === "warning" && /summary failed/i.test(e.message)));
      assert.equal(t.calls().filter((x) => x.tool === "_PostCompact").length, 0);
      // The second big result is the current turn alone, over the window: it is never sent (SPEC 8.6).
      assert.equal(result.stopReason, "max_tokens");
      assert.equal(result.limit?.kind, "context-window");
      const last = JSON.stringify(t.llm.requests.filter((r) => !isSummary(r)).at(-1)!.body);
      assert.doesNotMatch(last, /First prompt\./, "the oldest turn was dropped");
      assert.match(last, /Second prompt\./, "the newest prompt is kept");
    } finally {
      await closeChecked(t);
    }
  });

  test("SPROUT_AGENT_MAX_HANDOFFS=0 never asks for a summary", async () => {
    // The fake reports 10 input tokens per request, so one result must cross the threshold alone.
    const big = { toolCalls: [{ name: "fx__big", arguments: { bytes: 5000 } }] };
    const t = await startSession({
      inProcess: true,
      wire: "openai",
      env: { ...small, SPROUT_AGENT_MAX_HANDOFFS: "0" },
      responses: responder([big, big, { text: "done" }], { text: "never" }),
    });
    try {
      await runPrompt(t.session, "go");
      assert.equal(t.llm.requests.filter(isSummary).length, 0);
    } finally {
      await closeChecked(t);
    }
  });

  test("C27 after compaction _Stop still objects with the open todos, which reach the fresh context", async () => {
    const [command, ...args] = tsCommand(join(repoRoot, "servers/todo-enforcer/stdio.ts"));
    const todos = (done: [boolean, boolean, boolean]) => ({
      toolCalls: [{
        name: "todo__todo",
        arguments: {
          todos: [
            { id: 1, title: "Write the parser", done: done[0] },
            { id: 2, title: "Wire the parser into the CLI", done: done[1] },
            { id: 3, title: "Document the parser flags", done: done[2] },
          ],
        },
      }],
    });
    const t = await startSession({
      inProcess: true,
      wire: "anthropic",
      env: { ...small, MCP_HOOK_SERVERS: "todo" },
      extraServers: [{ name: "todo", transport: { type: "stdio", command: command!, args, env: {} } }],
      responses: responder(
        [
          todos([false, false, false]),
          todos([true, false, false]),
          { toolCalls: [{ name: "fx__big", arguments: { bytes: 5000 } }] },
          { text: "I am done." },
          todos([true, true, true]),
          { text: "All three items are done." },
        ],
        // A summary that forgets the todos: the state must come back through _PostCompact.
        { text: "The user asked for a parser. Some work was done." },
      ),
    });
    try {
      const task = "Build the config parser and wire it into the CLI.";
      const { result, events } = await runPrompt(t.session, task);
      assert.equal(result.stopReason, "end_turn");
      const s = t.llm.requests.findIndex(isSummary);
      assert.ok(s > 0, "compaction happened");
      const first = JSON.stringify(t.llm.requests[s + 1]!.body);
      assert.ok(first.includes(task), "the task sentence is in the first request after compaction");
      assert.match(first, /Wire the parser into the CLI/);
      assert.match(first, /Document the parser flags/);
      const objection = events.find((e) => e.type === "hook" && e.hook === "_Stop" && e.outcome === "objection");
      assert.ok(objection?.type === "hook");
      assert.match(objection.text ?? "", /Wire the parser into the CLI/);
      assert.match(objection.text ?? "", /Document the parser flags/);
      assert.doesNotMatch(objection.text ?? "", /\[ \] 1\./, "the done item is not open");
      const stops = events.filter((e) => e.type === "hook" && e.hook === "_Stop");
      assert.deepEqual(stops.map((e) => e.type === "hook" && e.outcome), ["objection", "none"]);
      const c = events.find((e) => e.type === "compaction");
      assert.ok(c?.type === "compaction");
      console.log(`C27 compaction: ${c.beforeTokens} → ${c.afterTokens} estimated tokens`);
    } finally {
      await closeChecked(t);
    }
  });

  test("random tool rounds, parallel calls, objections, cancels and compactions never produce a rejected request", async () => {
    const seen = { compaction: 0, objection: 0, cancelled: 0, parallel: 0, truncated: 0 };
    for (let seed = 1; seed <= 4; seed++) {
      const random = prng(seed * 7919);
      const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)]!;
      const turn = (): FakeTurn => {
        const r = random();
        if (r < 0.35) return { text: pick(["done", "", "All good.", " "]) || "ok" };
        const n = 1 + Math.floor(random() * 3);
        if (n > 1) seen.parallel++;
        const calls = Array.from({ length: n }, () =>
          pick([
            { name: "fx__echo", arguments: { text: "x".repeat(Math.floor(random() * 1500)) } },
            { name: "fx__empty", arguments: {} },
            { name: "fx__fail", arguments: {} },
            { name: "fx__slow", arguments: { ms: 50 } },
            { name: "fx___Stop", arguments: {} },
            { name: "fx__big", arguments: { bytes: 2500 } },
          ]));
        return { text: pick(["", "working"]), toolCalls: calls, ...(random() < 0.1 ? { stop: "max_tokens" } : {}) };
      };
      const wire: Wire = seed % 2 === 0 ? "anthropic" : "openai";
      const t = await startSession({
        inProcess: true,
        wire,
        env: { ...small, MCP_HOOK_SERVERS: "*", SPROUT_AGENT_MAX_ROUNDS: "8", SPROUT_AGENT_STOP_MAX_REJECTIONS: "5" },
        servers: [{ name: "fx", env: { FIXTURE_STOP: "keep going", FIXTURE_POSTCOMPACT: "state" } }],
        responses: (request) => (isSummary(request) ? { text: "summary of the work" } : turn()),
      });
      try {
        for (let p = 0; p < 4; p++) {
          // Some prompts are cancelled at their first or second tool call.
          const controller = new AbortController();
          const cancelAt = random() < 0.4 ? 1 + Math.floor(random() * 2) : 0;
          const handle = t.session.prompt(`prompt ${p} of seed ${seed}`, { signal: controller.signal });
          const events = [];
          let starts = 0;
          for await (const e of handle) {
            events.push(e);
            if (e.type === "tool-start" && ++starts === cancelAt) controller.abort();
          }
          const result = await handle.result.catch(() => undefined);
          if (result === undefined) continue;
          const run = { events, result };
          seen.compaction += run.events.filter((e) => e.type === "compaction").length;
          seen.objection += run.result.objections;
          if (run.result.stopReason === "cancelled") seen.cancelled++;
          if (run.result.stopReason === "max_tokens") seen.truncated++;
        }
        assert.ok(t.llm.requests.length > 4);
      } finally {
        await closeChecked(t);
      }
    }
    // The sequences must really mix every kind of event, or the test proves little.
    for (const [kind, count] of Object.entries(seen)) {
      assert.ok(count > 0, `no ${kind} happened: ${JSON.stringify(seen)}`);
    }
  });
});
