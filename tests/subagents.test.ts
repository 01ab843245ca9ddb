/**
 * Subagents in-process (SPEC 13): a parent hands tasks to two children in one response, they
 * run concurrently with their own history, instructions, tools and hooks; the hook points
 * fire on the right agent only (an SDK hook server counts its calls per agent through
 * `_meta["sprout-agent/agent"]`); the parent gets each report whole (CASES C39, C40); a cancel
 * reaches the children; depth, tools and limits bound them.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { createAgent } from "../lib/agent/agent.ts";
import type { AgentEvent } from "../lib/conversation/events.ts";
import type { InProcessTransport } from "../lib/mcp/in-process.ts";
import { memorySessionStore } from "../lib/sessions/memory-store.ts";
import { restoreSession } from "../lib/sessions/records.ts";
import { replayUpdates } from "../lib/acp/replay.ts";
import { SubagentProgress } from "../lib/acp/updates.ts";
import { createSubagentHookServer, type HookRecord } from "./fixtures/subagent-hooks.ts";
import { delegatingModel, REVIEW_REPORT, REVIEWER, TEST_REPORT, TESTER } from "./helpers/delegating-model.ts";

const serve = (log: HookRecord[]) => (transport: InProcessTransport) =>
  serveStdio(() => createSubagentHookServer((r) => log.push(r)), { transport });

/** `{hook: {agent: count}}` of the log. */
function counts(log: readonly HookRecord[]): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const r of log) {
    out[r.hook] ??= {};
    out[r.hook]![r.agent] = (out[r.hook]![r.agent] ?? 0) + 1;
  }
  return out;
}

async function delegate(options: { model?: ReturnType<typeof delegatingModel>; extra?: Record<string, unknown> } = {}) {
  const log: HookRecord[] = [];
  const model = options.model ?? delegatingModel();
  const store = memorySessionStore();
  const agent = await createAgent({
    model,
    systemPrompt: "PARENT",
    inProcessServers: { fx: serve(log) },
    hookServers: ["fx"],
    subagents: [REVIEWER, TESTER],
    sessionStore: store,
    ...options.extra,
  });
  return { agent, log, model, store };
}

describe("subagents", () => {
  test("C39 C40 a parent delegates to two subagents concurrently: each report reaches it whole, hooks fire on the right agent only", async () => {
    const { agent, log, model, store } = await delegate();
    try {
      const run = agent.prompt("review and test");
      const events: AgentEvent[] = [];
      for await (const event of run) events.push(event);
      const result = await run.result;
      assert.equal(result.stopReason, "end_turn");
      assert.equal(result.toolCalls, 2, "the parent's own calls only");
      // The children waited for each other (the model's barrier): they ran concurrently.
      const firstChild = model.requests.findIndex((r) => r.system !== "PARENT");
      assert.ok(firstChild > 0);
      // The reviewer was objected to once and answered "OK.": its report keeps what came before.
      const results = agent.history.filter((i) => i.role === "tool" && i.toolCallId.startsWith("toolu_"));
      const text = (i: (typeof results)[number]) =>
        i.role === "tool" ? i.content.map((b) => b.type === "text" ? b.text : "").join("") : "";
      assert.equal(text(results[0]!), `${REVIEW_REPORT}\n\nOK.`);
      assert.equal(text(results[1]!), `${TEST_REPORT}\n\nStill all pass.`);
      assert.deepEqual(counts(log), {
        _UserPromptSubmit: { main: 1 },
        _SubagentStart: { reviewer: 1, tester: 1 },
        _PreToolUse: { main: 2, reviewer: 1 },
        _SubagentStop: { reviewer: 1, tester: 1 }, // the objection; the answer after it is final (SPEC 7.1)
        _Stop: { main: 1 },
      });
      // _SubagentStart's input: the name and the task; the child's meta names its parent session.
      const start = log.find((r) => r.hook === "_SubagentStart" && r.agent === "reviewer")!;
      assert.deepEqual(start.meta["subagent"], { name: "reviewer", task: "review a.ts" });
      assert.equal(start.meta["event"], "SubagentStart");
      assert.equal(start.id?.startsWith(`${agent.sessionId}/`), true);
      // The children's _SubagentStop budget is their own: the parent's is untouched.
      const parentStop = log.find((r) => r.hook === "_Stop")!;
      assert.equal(parentStop.meta["rejectionsUsed"], 0);
      // A child's request: its instructions, a fresh history (its task, the injected context), its tools.
      const reviewerFirst = model.requests.find((r) => r.system === "You review code.")!;
      assert.equal(reviewerFirst.history[0]?.role === "user" && reviewerFirst.history[0].text, "review a.ts");
      assert.match(JSON.stringify(reviewerFirst.history), /Context for reviewer: review a.ts/);
      assert.doesNotMatch(JSON.stringify(reviewerFirst.history), /review and test/);
      assert.deepEqual(reviewerFirst.tools, ["fx__read", "fx__wait"], "no subagent tools at depth 1");
      // The parent's request lists the subagent tools after the servers'.
      assert.deepEqual(model.requests[0]!.tools, ["fx__read", "fx__wait", "subagent_reviewer", "subagent_tester"]);
      // Progress: the child's events come wrapped with the parent's call id and the child's id.
      const wrapped = events.filter((e) => e.type === "subagent");
      const read = wrapped.find((e) => e.type === "subagent" && e.event.type === "tool-end");
      assert.ok(read?.type === "subagent" && read.toolCallId === "toolu_r" && read.name === "reviewer");
      assert.ok(read.event.type === "tool-end" && read.event.output === "contents of a.ts");
      const answer = events.map((e) => (e.type === "text-delta" ? e.text : "")).join("");
      assert.equal(
        answer,
        `Summary: ${REVIEW_REPORT}\n\nOK. | ${TEST_REPORT}\n\nStill all pass.`,
        "a child's text is not the parent's",
      );
      // The transcript keeps each child's history with the parent's session; restore leaves it out.
      const records = (await store.read(agent.sessionId))!.records;
      const children = records.filter((r) => r.type === "subagent");
      assert.deepEqual(children.map((r) => r.type === "subagent" && [r.toolCallId, r.agent.name]).sort(), [
        ["toolu_r", "reviewer"],
        ["toolu_t", "tester"],
      ]);
      const restored = restoreSession(records);
      assert.doesNotMatch(JSON.stringify(restored.history), /contents of a\.ts/);
      assert.deepEqual(restored.warnings, []);
      // session/load replays the child's activity as an update of the parent's tool call.
      const replay = replayUpdates(records);
      const progress = replay.find((u) =>
        u.sessionUpdate === "tool_call_update" && u["toolCallId"] === "toolu_r" && u["status"] === undefined
      );
      assert.match(JSON.stringify(progress), /✓ fx__read → contents of a\.ts/);
      assert.match(JSON.stringify(progress), /sprout-agent\/subagent/);
      // ACP live progress: the same, from the events.
      const acp = new SubagentProgress();
      const updates = events.flatMap((e) => acp.updates(e));
      assert.ok(updates.some((u) => JSON.stringify(u).includes("✓ fx__read → contents of a.ts")));
      assert.ok(updates.every((u) => u.sessionUpdate === "tool_call_update"));
    } finally {
      await agent.close();
    }
  });

  test("a cancel of the parent cancels its children; the history stays valid", async () => {
    const model = delegatingModel({ waitForAbort: ["reviewer", "tester"] });
    const { agent } = await delegate({ model });
    try {
      const controller = new AbortController();
      const run = agent.prompt("review and test", { signal: controller.signal });
      const seen: AgentEvent[] = [];
      for await (const event of run) {
        seen.push(event);
        if (
          event.type === "subagent" && event.event.type === "round-start" &&
          seen.filter((e) => e.type === "subagent" && e.event.type === "round-start").length === 2
        ) {
          controller.abort();
        }
      }
      const result = await run.result;
      assert.equal(result.stopReason, "cancelled");
      assert.deepEqual([...model.aborted].sort(), ["reviewer", "tester"]);
      const tools = agent.history.filter((i) => i.role === "tool");
      assert.equal(tools.length, 2);
      assert.ok(
        tools.every((t) =>
          t.role === "tool" && t.isError && t.content[0]?.type === "text" && t.content[0].text === "cancelled"
        ),
      );
    } finally {
      await agent.close();
    }
  });

  test("depth: children see no subagent tools by default; with maxSubagentDepth 2 they do; 0 turns subagents off", async () => {
    for (
      const [depth, parentTools, childTools] of [
        [2, ["fx__read", "fx__wait", "subagent_reviewer", "subagent_tester"], [
          "fx__read",
          "fx__wait",
          "subagent_reviewer",
          "subagent_tester",
        ]],
        [0, ["fx__read", "fx__wait"], undefined],
      ] as const
    ) {
      const { agent, model } = await delegate({ extra: { maxSubagentDepth: depth } });
      try {
        const run = agent.prompt("go");
        for await (const _ of run) { /* drain */ }
        await run.result;
        assert.deepEqual(model.requests[0]!.tools, parentTools);
        const child = model.requests.find((r) => r.system === "You review code.");
        assert.deepEqual(child?.tools, childTools);
      } finally {
        await agent.close();
      }
    }
  });

  test("depth 2: a child hands a task on; the grandchild's events come wrapped twice, its hooks say depth 2", async () => {
    const log: HookRecord[] = [];
    const seen: Array<{ system: string; tools: string[] }> = [];
    const model: import("../lib/conversation/types.ts").Model = {
      name: "nested",
      complete(request) {
        seen.push({ system: request.system, tools: request.tools.map((t) => t.name) });
        const results = request.history.filter((i) => i.role === "tool" && i.toolCallId.startsWith("toolu_"));
        const reply = (r: Partial<import("../lib/conversation/types.ts").LlmResponse>) =>
          Promise.resolve({ text: "", toolCalls: [], stop: "end_turn" as const, ...r });
        if (request.system === "You test code.") return reply({ text: "grandchild report" });
        const call = request.system === "PARENT"
          ? { id: "toolu_p", name: "subagent_reviewer", arguments: { task: "review" } }
          : { id: "toolu_c", name: "subagent_tester", arguments: { task: "test" } };
        if (results.length === 0) return reply({ stop: "tool_use", toolCalls: [call] });
        return reply({ text: `${request.system === "PARENT" ? "parent" : "child"} got: ${JSON.stringify(results)}` });
      },
    };
    const agent = await createAgent({
      model,
      systemPrompt: "PARENT",
      inProcessServers: { fx: serve(log) },
      hookServers: ["fx"],
      subagents: [REVIEWER, TESTER],
      maxSubagentDepth: 2,
      stopMaxRejections: 0,
      sessionStore: false,
    });
    try {
      const run = agent.prompt("go");
      const events: AgentEvent[] = [];
      for await (const event of run) events.push(event);
      assert.equal((await run.result).stopReason, "end_turn");
      const nested = events.find((e) =>
        e.type === "subagent" && e.event.type === "subagent" && e.event.event.type === "round-start"
      );
      assert.ok(nested?.type === "subagent" && nested.event.type === "subagent");
      assert.equal(nested.name, "reviewer");
      assert.equal(nested.event.name, "tester");
      assert.equal(nested.event.toolCallId, "toolu_c");
      assert.notEqual(nested.agentId, nested.event.agentId);
      const start = log.find((r) => r.hook === "_SubagentStart" && r.agent === "tester");
      assert.ok(start !== undefined);
      assert.deepEqual(
        seen.find((r) => r.system === "You test code.")?.tools,
        ["fx__read", "fx__wait"],
        "depth 2 is the bound",
      );
      assert.match(JSON.stringify(agent.history), /grandchild report/);
    } finally {
      await agent.close();
    }
  });

  test("tools: a child sees only what its patterns allow of the parent's tools; an entry that matches none is a warning", async () => {
    const warnings: string[] = [];
    const { agent, model } = await delegate({
      extra: {
        subagents: [{ ...REVIEWER, tools: ["fx__read", "shell"] }, { ...TESTER, tools: ["fx"] }],
        onWarning: (w: string) => warnings.push(w),
      },
    });
    try {
      assert.deepEqual(warnings, [
        'Subagent "reviewer": its tools entry "shell" matches no tool of this agent (entries are globs over qualified names such as fs__read_file, or server names)',
      ]);
      const run = agent.prompt("go");
      for await (const _ of run) { /* drain */ }
      await run.result;
      assert.deepEqual(model.requests.find((r) => r.system === "You review code.")?.tools, ["fx__read"]);
      assert.deepEqual(model.requests.find((r) => r.system === "You test code.")?.tools, ["fx__read", "fx__wait"]);
    } finally {
      await agent.close();
    }
  });

  test("limits: a subagent out of rounds or tokens reports what it has, with a note naming the bound", async () => {
    const { agent } = await delegate({
      model: delegatingModel({ barrier: false }),
      extra: { subagents: [{ ...REVIEWER, maxRounds: 1 }, { ...TESTER, maxTokens: 10 }] },
    });
    try {
      const run = agent.prompt("go");
      for await (const _ of run) { /* drain */ }
      await run.result;
      const texts = agent.history.filter((i) => i.role === "tool" && i.toolCallId.startsWith("toolu_")).map((i) =>
        i.role === "tool" ? [i.isError, i.content.map((b) => (b.type === "text" ? b.text : "")).join("")] : []
      );
      assert.deepEqual(texts[0], [true, '[subagent "reviewer" stopped before it finished: it used its 1 rounds]']);
      assert.deepEqual(texts[1], [
        false,
        `${TEST_REPORT}\n\n[subagent "tester" stopped before it finished: The subagent used 15 tokens of its maxTokens bound (10) and stopped]`,
      ]);
    } finally {
      await agent.close();
    }
  });

  test("limits: a subagent whose provider pauses its turn past the cap says so (max_pause_turns, SPEC 6.5)", async () => {
    const base = delegatingModel({ barrier: false });
    const model = {
      ...base,
      complete: (request: Parameters<typeof base.complete>[0]) =>
        request.system === TESTER.instructions
          ? Promise.resolve({
            text: "",
            toolCalls: [],
            stop: "pause_turn" as const,
            usage: { inputTokens: 1, outputTokens: 1 },
          })
          : base.complete(request),
    };
    const { agent } = await delegate({ model });
    try {
      const run = agent.prompt("go");
      for await (const _ of run) { /* drain */ }
      await run.result;
      const tester = agent.history.find((i) => i.role === "tool" && i.toolCallId === "toolu_t");
      const text = tester?.role === "tool" ? tester.content.map((b) => (b.type === "text" ? b.text : "")).join("") : "";
      assert.equal(
        text,
        '[subagent "tester" stopped before it finished: the provider paused its turn more times in a row than the agent continues it]',
      );
    } finally {
      await agent.close();
    }
  });

  test("limits: a subagent out of time stops with a note; the parent's prompt goes on", async () => {
    const { agent } = await delegate({
      model: delegatingModel({ barrier: false, waitForAbort: ["tester"] }),
      extra: { subagents: [REVIEWER, { ...TESTER, timeoutMs: 100 }] },
    });
    try {
      const run = agent.prompt("go");
      for await (const _ of run) { /* drain */ }
      assert.equal((await run.result).stopReason, "end_turn");
      const tester = agent.history.find((i) => i.role === "tool" && i.toolCallId === "toolu_t");
      assert.deepEqual(tester?.role === "tool" && [tester.isError, tester.content], [true, [{
        type: "text",
        text: '[subagent "tester" stopped: its time limit of 0.1 s ran out]',
      }]]);
    } finally {
      await agent.close();
    }
  });

  test("the permission policy applies to subagent tools and to the children's calls", async () => {
    const { agent, model } = await delegate({
      model: delegatingModel({ barrier: false }),
      extra: { permissions: { deny: ["subagent_tester", "fx__read"] } },
    });
    try {
      const run = agent.prompt("go");
      for await (const _ of run) { /* drain */ }
      await run.result;
      const results = agent.history.filter((i) => i.role === "tool" && i.toolCallId.startsWith("toolu_"));
      assert.match(
        JSON.stringify(results[1]),
        /Permission denied: the operator's policy \(deny \\"subagent_tester\\"\)/,
      );
      const reviewer = model.requests.filter((r) => r.system === "You review code.");
      assert.match(
        JSON.stringify(reviewer[1]?.history),
        /Permission denied: the operator's policy \(deny \\"fx__read\\"\)/,
      );
      assert.equal(model.requests.some((r) => r.system === "You test code."), false);
    } finally {
      await agent.close();
    }
  });

  test("in-process hooks see agent on a child's calls, a typed block objects; a subagent with a bad field is refused naming it", async () => {
    const seen: Array<[string, string]> = [];
    const agent = await createAgent({
      model: delegatingModel({ barrier: false }),
      systemPrompt: "PARENT",
      inProcessServers: { fx: serve([]) },
      subagents: [REVIEWER, TESTER],
      sessionStore: false,
      hooks: {
        policy: {
          // A typed block (SPEC 7.7) objects at _SubagentStop as at _Stop.
          _SubagentStop: (ctx) => {
            seen.push(["_SubagentStop", ctx.agent?.name ?? "main"]);
            return ctx.agent?.name === "reviewer" ? { decision: "block", reason: "Name the lines" } : "";
          },
          _Stop: (ctx) => {
            seen.push(["_Stop", ctx.agent?.name ?? "main"]);
            return "";
          },
        },
      },
    });
    try {
      const run = agent.prompt("go");
      for await (const _ of run) { /* drain */ }
      await run.result;
      assert.deepEqual(seen.sort(), [["_Stop", "main"], ["_SubagentStop", "reviewer"], ["_SubagentStop", "tester"]]);
      const reviewer = agent.history.find((i) => i.role === "tool" && i.toolCallId === "toolu_r");
      assert.deepEqual(reviewer?.role === "tool" && reviewer.content, [{
        type: "text",
        text: `${REVIEW_REPORT}\n\nOK.`,
      }]);
    } finally {
      await agent.close();
    }
    await assert.rejects(
      createAgent({ model: delegatingModel(), subagents: [{ ...REVIEWER, name: "Bad Name" }], sessionStore: false }),
      /Invalid subagents\[0\]\.name: "Bad Name" must be 1 to 48 lower-case letters/,
    );
    await assert.rejects(
      createAgent({ model: delegatingModel(), subagents: [REVIEWER, { ...REVIEWER }], sessionStore: false }),
      /Invalid subagents\[1\]\.name: "reviewer" is given twice/,
    );
    await assert.rejects(
      createAgent({
        model: delegatingModel(),
        subagents: [{ ...REVIEWER, model: "claude-haiku-4-5" }],
        sessionStore: false,
      }),
      /Invalid subagents\[0\]\.model: "claude-haiku-4-5" needs the parent's model options/,
    );
  });
});
