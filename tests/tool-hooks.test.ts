/**
 * The tool points `_PreToolUse` and `_PostToolUse` (SPEC 7.6) and typed hook answers (SPEC 7.7)
 * in-process: a real `AgentSession`, registry and hook runner; the servers are in-memory fakes
 * (tests/helpers/fake-connection.ts) and the model a recording one, so nothing is spawned.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { loadConfig } from "../lib/config/config.ts";
import type { AgentEvent, PromptResult } from "../lib/conversation/events.ts";
import type { HistoryItem, Model, ResultBlock, ToolCall } from "../lib/conversation/types.ts";
import { AgentSession } from "../lib/agent/loop.ts";
import { combinePreToolUse, parseDecision } from "../lib/hooks/decisions.ts";
import { inputProblems } from "../lib/hooks/input-check.ts";
import { appliesTo, type InProcessHooks } from "../lib/hooks/runner.ts";
import { type PermissionAsk, policyDecision } from "../lib/hooks/permission.ts";
import { createAgent } from "../lib/agent/agent.ts";
import { parseMcpConfig } from "../lib/mcp/config.ts";
import { createRegistry } from "../lib/mcp/registry.ts";
import { AgentError } from "../lib/util/errors.ts";
import type { CallToolResult } from "../lib/mcp/types.ts";
import { resultUpdates, sessionUpdates } from "../lib/acp/updates.ts";
import { recordingModel } from "./helpers/recording-model.ts";
import { fakeConnect, FakeServer, sleep, stdioConfig, text } from "./helpers/fake-connection.ts";

const writeSchema = {
  type: "object",
  properties: { path: { type: "string" }, text: { type: "string" } },
  required: ["path"],
};

/** A tool server `fs` with `write` and `read`, recording what it ran. */
function fsServer(): FakeServer {
  return new FakeServer(
    "fs",
    [{ name: "write", inputSchema: writeSchema }, { name: "read", inputSchema: writeSchema }],
    {
      write: (args) => text(`wrote ${JSON.stringify(args)}`),
      read: () => text("file contents"),
    },
  );
}

function typed(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value };
}

async function session(
  servers: FakeServer[],
  model: Model,
  options: { env?: Record<string, string>; hooks?: InProcessHooks; ask?: PermissionAsk } = {},
): Promise<{ session: AgentSession; close: () => Promise<void> }> {
  const { registry } = await createRegistry(servers.map((s) => stdioConfig(s.name)), {
    sessionId: "tool-hooks",
    connect: fakeConnect(servers),
  });
  const config = loadConfig({ MCP_HOOK_SERVERS: "*", ...options.env }, () => "");
  const s = new AgentSession({
    config,
    model,
    registry,
    cwd: "/work/project",
    ...(options.hooks === undefined ? {} : { hooks: options.hooks }),
    ...(options.ask === undefined ? {} : { ask: options.ask }),
  });
  return { session: s, close: () => registry.close() };
}

async function run(s: AgentSession, prompt: string, signal?: AbortSignal): Promise<{
  events: AgentEvent[];
  result: PromptResult;
}> {
  const handle = s.prompt(prompt, signal === undefined ? {} : { signal });
  const events: AgentEvent[] = [];
  for await (const event of handle) events.push(event);
  return { events, result: await handle.result };
}

const call = (name: string, args: Record<string, unknown>, id = "c1"): ToolCall => ({ id, name, arguments: args });

/** The tool results of `history`, by call id. */
function results(history: readonly HistoryItem[]): Map<string, { content: ResultBlock[]; isError: boolean }> {
  const out = new Map<string, { content: ResultBlock[]; isError: boolean }>();
  for (const item of history) if (item.role === "tool") out.set(item.toolCallId, item);
  return out;
}

const texts = (content: readonly ResultBlock[]) => content.flatMap((b) => (b.type === "text" ? [b.text] : []));

/** Every tool call in `history` has exactly one result, right after its assistant item's other results. */
function assertPaired(history: readonly HistoryItem[]): void {
  const open = new Set<string>();
  for (const item of history) {
    if (item.role === "assistant") {
      assert.equal(open.size, 0, `calls without results: ${[...open].join(", ")}`);
      for (const c of item.toolCalls) open.add(c.id);
    } else if (item.role === "tool") {
      assert.ok(open.delete(item.toolCallId), `a result for ${item.toolCallId} that no call asked for`);
    } else assert.equal(open.size, 0, `calls without results before a user item: ${[...open].join(", ")}`);
  }
  assert.equal(open.size, 0);
}

describe("_PreToolUse (SPEC 7.6)", () => {
  test("gets the call in _meta, arguments {}; empty output lets the call run unchanged", async () => {
    const fs = fsServer();
    const guard = new FakeServer("guard", ["_PreToolUse"], { _PreToolUse: () => text("") });
    const model = recordingModel([{ toolCalls: [call("fs__write", { path: "a.txt" })], stop: "tool_use" }, {
      text: "done",
    }]);
    const t = await session([fs, guard], model);
    try {
      const { result } = await run(t.session, "write a.txt");
      assert.equal(result.stopReason, "end_turn");
      const seen = guard.calls.find((c) => c.tool === "_PreToolUse")!;
      assert.deepEqual(seen.args, {});
      const meta = seen.meta?.["sprout-agent/hook"] as Record<string, unknown>;
      assert.equal(meta.event, "PreToolUse");
      assert.equal(meta.round, 1);
      assert.equal(meta.cwd, "/work/project");
      assert.deepEqual(meta.toolCall, {
        id: "c1",
        name: "fs__write",
        server: "fs",
        tool: "write",
        arguments: { path: "a.txt" },
      });
      assert.deepEqual(fs.calls.map((c) => [c.tool, c.args]), [["write", { path: "a.txt" }]]);
      assert.deepEqual(texts(results(t.session.history).get("c1")!.content), ['wrote {"path":"a.txt"}']);
    } finally {
      await t.close();
    }
  });

  test("non-blank text denies: the tool does not run, the model gets the text as JSON in an error result", async () => {
    const fs = fsServer();
    const guard = new FakeServer("guard", ["_PreToolUse"], {
      _PreToolUse: () => text("writes outside src/ are not allowed"),
    });
    const model = recordingModel([{ toolCalls: [call("fs__write", { path: "/etc/passwd" })], stop: "tool_use" }, {
      text: "ok, I will not",
    }]);
    const t = await session([fs, guard], model);
    try {
      const { events, result } = await run(t.session, "write");
      assert.equal(result.stopReason, "end_turn");
      assert.equal(fs.calls.length, 0, "the denied tool never reached its server");
      const r = results(t.session.history).get("c1")!;
      assert.equal(r.isError, true);
      assert.deepEqual(texts(r.content).map((x) => JSON.parse(x)), [
        { hook: "_PreToolUse", server: "guard", text: "writes outside src/ are not allowed" },
      ]);
      const end = events.find((e) => e.type === "tool-end");
      assert.equal(end?.type === "tool-end" && end.ok, false);
      const hook = events.find((e) => e.type === "hook");
      assert.ok(hook?.type === "hook" && hook.hook === "_PreToolUse" && hook.toolCallId === "c1");
      assertPaired(t.session.history);
      // The model's second request saw the denial.
      assert.equal(model.seen.length, 2);
    } finally {
      await t.close();
    }
  });

  test("a typed allow with updatedInput runs the tool with the new arguments and tells the model", async () => {
    const fs = fsServer();
    const guard = new FakeServer("guard", ["_PreToolUse"], {
      _PreToolUse: () => typed({ decision: "allow", updatedInput: { path: "src/a.txt" } }),
    });
    const model = recordingModel([{ toolCalls: [call("fs__write", { path: "a.txt" })], stop: "tool_use" }, {
      text: "done",
    }]);
    const t = await session([fs, guard], model);
    try {
      await run(t.session, "write");
      assert.deepEqual(fs.calls.map((c) => c.args), [{ path: "src/a.txt" }]);
      const [first, note] = texts(results(t.session.history).get("c1")!.content);
      assert.equal(first, 'wrote {"path":"src/a.txt"}');
      assert.deepEqual(JSON.parse(note!), {
        hook: "_PreToolUse",
        server: "guard",
        text: 'the arguments were rewritten to {"path":"src/a.txt"}',
      });
      // The model's own call stays in history as it made it.
      const assistant = t.session.history.find((i) => i.role === "assistant");
      assert.ok(assistant?.role === "assistant");
      assert.deepEqual(assistant.toolCalls[0]!.arguments, { path: "a.txt" });
    } finally {
      await t.close();
    }
  });

  test("a rewrite that breaks the tool's input schema denies the call, naming the problem", async () => {
    const fs = fsServer();
    const guard = new FakeServer("guard", ["_PreToolUse"], {
      _PreToolUse: () => typed({ updatedInput: { path: 7 } }),
    });
    const model = recordingModel([{ toolCalls: [call("fs__write", { path: "a.txt" })], stop: "tool_use" }, {
      text: "done",
    }]);
    const t = await session([fs, guard], model);
    try {
      await run(t.session, "write");
      assert.equal(fs.calls.length, 0);
      const r = results(t.session.history).get("c1")!;
      assert.equal(r.isError, true);
      assert.match(
        JSON.parse(texts(r.content)[0]!).text,
        /do not fit the tool's input schema: \$\.path must be string/,
      );
    } finally {
      await t.close();
    }
  });

  test("C34 two different rewrites are a conflict that denies the call and names both servers, whichever answers last", async () => {
    for (const [delayA, delayB] of [[5, 50], [50, 5]] as const) {
      const fs = fsServer();
      const a = new FakeServer("a", ["_PreToolUse"], {
        _PreToolUse: () => sleep(delayA).then(() => typed({ decision: "allow", updatedInput: { path: "x" } })),
      });
      const b = new FakeServer("b", ["_PreToolUse"], {
        _PreToolUse: () => sleep(delayB).then(() => typed({ decision: "allow", updatedInput: { path: "y" } })),
      });
      const model = recordingModel([{ toolCalls: [call("fs__write", { path: "a.txt" })], stop: "tool_use" }, {
        text: "done",
      }]);
      const t = await session([fs, a, b], model);
      try {
        await run(t.session, "write");
        assert.equal(fs.calls.length, 0, `delays ${delayA}/${delayB}: neither rewrite ran`);
        const denial = JSON.parse(texts(results(t.session.history).get("c1")!.content)[0]!);
        assert.deepEqual(denial, {
          hook: "_PreToolUse",
          server: "a, b",
          text: 'conflicting rewrites of the arguments from "a" and "b": the call was not run',
        });
      } finally {
        await t.close();
      }
    }
  });

  test("ask with no one to answer denies with a reason that says so; with an answer, allow runs the tool", async () => {
    for (const answer of [undefined, "allow", "deny"] as const) {
      const fs = fsServer();
      const guard = new FakeServer("guard", ["_PreToolUse"], {
        _PreToolUse: () => typed({ decision: "ask", reason: "writing a file" }),
      });
      const model = recordingModel([{ toolCalls: [call("fs__write", { path: "a.txt" })], stop: "tool_use" }, {
        text: "done",
      }]);
      const asked: unknown[] = [];
      const ask: PermissionAsk | undefined = answer === undefined ? undefined : (request) => {
        asked.push(request);
        return Promise.resolve(answer === "allow" ? "allow_once" : "reject_once");
      };
      const t = await session([fs, guard], model, ask === undefined ? {} : { ask });
      try {
        await run(t.session, "write");
        const r = results(t.session.history).get("c1")!;
        if (answer === "allow") {
          assert.equal(fs.calls.length, 1);
          assert.equal(r.isError, false);
          assert.deepEqual(asked, [{
            call: { id: "c1", name: "fs__write", server: "fs", tool: "write", arguments: { path: "a.txt" } },
            reason: "writing a file",
            servers: ["guard"],
          }]);
        } else {
          assert.equal(fs.calls.length, 0, `answer ${answer}`);
          assert.equal(r.isError, true);
          const reason = JSON.parse(texts(r.content)[0]!).text as string;
          assert.match(
            reason,
            answer === undefined
              ? /writing a file \(permission was asked for, and no one can answer/
              : /the person denied it/,
          );
        }
      } finally {
        await t.close();
      }
    }
  });

  test("deny beats ask beats allow, whatever the order of the servers", () => {
    const decisions = [
      [["allow", "ask"], "ask"],
      [["ask", "deny", "allow"], "deny"],
      [["allow", "allow"], "allow"],
      [[], "none"],
    ] as const;
    for (const [list, expected] of decisions) {
      const verdicts = list.map((d, i) => ({ server: `s${i}`, decision: { decision: d } }));
      assert.equal(combinePreToolUse(verdicts).decision, expected, list.join(","));
      assert.equal(combinePreToolUse([...verdicts].reverse()).decision, expected, `${list.join(",")} reversed`);
    }
    // Several deniers: each reason names its server.
    assert.equal(
      combinePreToolUse([
        { server: "a", decision: { decision: "deny", reason: "no" } },
        { server: "b", decision: { decision: "deny", reason: "never" } },
      ]).reason,
      "a: no; b: never",
    );
  });

  test("a hook that declares its tools is called only for those: _meta['sprout-agent/hook'].tools globs", async () => {
    const fs = fsServer();
    const guard = new FakeServer("guard", [{
      name: "_PreToolUse",
      inputSchema: { type: "object" },
      _meta: { "sprout-agent/hook": { tools: ["fs__wr?te", "shell__*"] } },
    }], { _PreToolUse: () => text("no") });
    const model = recordingModel([{
      toolCalls: [call("fs__read", { path: "a" }, "c1"), call("fs__write", { path: "a" }, "c2")],
      stop: "tool_use",
    }, { text: "done" }]);
    const t = await session([fs, guard], model);
    try {
      await run(t.session, "go");
      assert.equal(guard.calls.length, 1, "called for fs__write only");
      assert.deepEqual(fs.calls.map((c) => c.tool), ["read"]);
    } finally {
      await t.close();
    }
    assert.equal(appliesTo(undefined, "x__y"), true);
    assert.equal(appliesTo([], "x__y"), false);
    assert.equal(appliesTo(["x__*"], "x__y"), true);
    assert.equal(appliesTo(["x.y"], "xzy"), false, "a dot is a dot");
  });

  test("MCP_HOOK_SERVERS applies: a server it does not name is never called", async () => {
    const fs = fsServer();
    const guard = new FakeServer("guard", ["_PreToolUse"], { _PreToolUse: () => text("no") });
    const model = recordingModel([{ toolCalls: [call("fs__write", { path: "a" })], stop: "tool_use" }, {
      text: "done",
    }]);
    const t = await session([fs, guard], model, { env: { MCP_HOOK_SERVERS: "fs" } });
    try {
      await run(t.session, "go");
      assert.equal(guard.calls.length, 0);
      assert.equal(fs.calls.length, 1);
    } finally {
      await t.close();
    }
  });

  test("a hook that times out or fails has no opinion (advisory): the call runs, with a warning", async () => {
    const fs = fsServer();
    const slow = new FakeServer("slow", ["_PreToolUse"], {
      _PreToolUse: (_args, ctx) => sleep(5000, ctx.signal).then(() => text("too late")),
    });
    const broken = new FakeServer("broken", ["_PreToolUse"], { _PreToolUse: () => text("boom", true) });
    const model = recordingModel([{ toolCalls: [call("fs__write", { path: "a" })], stop: "tool_use" }, {
      text: "done",
    }]);
    const t = await session([fs, slow, broken], model, { env: { SPROUT_AGENT_HOOK_TIMEOUT_MS: "100" } });
    try {
      const { events } = await run(t.session, "go");
      assert.equal(fs.calls.length, 1);
      const warnings = events.filter((e) => e.type === "warning").map((e) => e.type === "warning" ? e.message : "");
      assert.ok(warnings.some((w) => /_PreToolUse" of server "slow" timed out/.test(w)), warnings.join("\n"));
      assert.ok(warnings.some((w) => /_PreToolUse" of server "broken" returned an error: boom/.test(w)));
    } finally {
      await t.close();
    }
  });

  test("a cancel while _PreToolUse runs: the tool never runs, the call is answered cancelled, the history stays valid", async () => {
    const fs = fsServer();
    const controller = new AbortController();
    const guard = new FakeServer("guard", ["_PreToolUse"], {
      _PreToolUse: async () => {
        controller.abort();
        await sleep(20);
        return text("");
      },
    });
    const model = recordingModel([
      { toolCalls: [call("fs__write", { path: "a" }, "c1"), call("fs__read", { path: "a" }, "c2")], stop: "tool_use" },
      { text: "next prompt's answer" },
    ]);
    const t = await session([fs, guard], model, { env: { SPROUT_AGENT_MAX_PARALLEL_TOOLS: "1" } });
    try {
      const { result } = await run(t.session, "go", controller.signal);
      assert.equal(result.stopReason, "cancelled");
      assert.equal(fs.calls.length, 0);
      const r = results(t.session.history);
      assert.deepEqual([...r.keys()], ["c1", "c2"]);
      assert.ok([...r.values()].every((x) => x.isError && texts(x.content)[0] === "cancelled"));
      assertPaired(t.session.history);
      const next = await run(t.session, "again");
      assert.equal(next.result.stopReason, "end_turn");
    } finally {
      await t.close();
    }
  });
});

describe("_PostToolUse (SPEC 7.6)", () => {
  test("gets the call and its result; plain text is appended for the model as JSON", async () => {
    const fs = fsServer();
    const review = new FakeServer("review", ["_PostToolUse"], {
      _PostToolUse: () => text("remember to run the tests"),
    });
    const model = recordingModel([{ toolCalls: [call("fs__read", { path: "a" })], stop: "tool_use" }, {
      text: "done",
    }]);
    const t = await session([fs, review], model);
    try {
      await run(t.session, "read");
      const meta = review.calls[0]!.meta?.["sprout-agent/hook"] as Record<string, unknown>;
      assert.equal(meta.event, "PostToolUse");
      assert.deepEqual(meta.toolResult, { text: "file contents", isError: false });
      assert.equal((meta.toolCall as { name: string }).name, "fs__read");
      const r = results(t.session.history).get("c1")!;
      assert.equal(r.isError, false);
      assert.deepEqual(texts(r.content), [
        "file contents",
        JSON.stringify({ hook: "_PostToolUse", server: "review", text: "remember to run the tests" }),
      ]);
    } finally {
      await t.close();
    }
  });

  test("updatedResult replaces the result's text; two different ones withhold the result", async () => {
    for (
      const [replies, expected] of [
        [["[redacted]"], { texts: ["[redacted]"], isError: false }],
        [["[redacted]", "[redacted]"], { texts: ["[redacted]"], isError: false }],
        [["one", "two"], {
          texts: ['[result withheld: conflicting rewrites of the result from "r0" and "r1"]'],
          isError: true,
        }],
      ] as const
    ) {
      const fs = fsServer();
      const reviewers = replies.map((reply, i) =>
        new FakeServer(`r${i}`, ["_PostToolUse"], { _PostToolUse: () => typed({ updatedResult: reply }) })
      );
      const model = recordingModel([{ toolCalls: [call("fs__read", { path: "a" })], stop: "tool_use" }, {
        text: "done",
      }]);
      const t = await session([fs, ...reviewers], model);
      try {
        await run(t.session, "read");
        const r = results(t.session.history).get("c1")!;
        assert.deepEqual({ texts: texts(r.content), isError: r.isError }, expected, replies.join(","));
      } finally {
        await t.close();
      }
    }
  });

  test("a denied call gets no _PostToolUse; an error result does", async () => {
    const fs = new FakeServer("fs", ["write", "read"], { write: () => text("disk full", true) });
    const guard = new FakeServer("guard", ["_PreToolUse", "_PostToolUse"], {
      _PreToolUse: (_a, ctx) =>
        text((ctx.meta?.["sprout-agent/hook"] as { toolCall: { tool: string } }).toolCall.tool === "read" ? "no" : ""),
      _PostToolUse: () => text(""),
    });
    const model = recordingModel([{
      toolCalls: [call("fs__read", {}, "c1"), call("fs__write", {}, "c2")],
      stop: "tool_use",
    }, { text: "done" }]);
    const t = await session([fs, guard], model);
    try {
      await run(t.session, "go");
      const post = guard.calls.filter((c) => c.tool === "_PostToolUse");
      assert.equal(post.length, 1);
      const meta = post[0]!.meta?.["sprout-agent/hook"] as { toolCall: { id: string }; toolResult: unknown };
      assert.equal(meta.toolCall.id, "c2");
      assert.deepEqual(meta.toolResult, { text: "disk full", isError: true });
    } finally {
      await t.close();
    }
  });
});

describe("typed answers at every point (SPEC 7.7)", () => {
  test("_Stop: decision block with a reason is an objection", async () => {
    const gate = new FakeServer("gate", ["_Stop"], {
      _Stop: (() => {
        let n = 0;
        return () => (n++ === 0 ? typed({ decision: "block", reason: "tests fail" }) : typed({ decision: "allow" }));
      })(),
    });
    const model = recordingModel([{ text: "done" }, { text: "fixed" }]);
    const t = await session([gate], model);
    try {
      const { result } = await run(t.session, "go");
      assert.equal(result.objections, 1);
      const injected = t.session.history.filter((i) => i.role === "tool").map((i) =>
        i.role === "tool" ? texts(i.content)[0] : ""
      );
      assert.deepEqual(injected, [JSON.stringify({ hook: "_Stop", server: "gate", text: "tests fail" })]);
    } finally {
      await t.close();
    }
  });

  test("continue: false halts the prompt at once: no further model call, the reason in the result", async () => {
    const fs = fsServer();
    const guard = new FakeServer("guard", ["_PreToolUse"], {
      _PreToolUse: () => typed({ continue: false, stopReason: "budget exceeded", systemMessage: "stopping here" }),
    });
    const model = recordingModel([{ toolCalls: [call("fs__write", { path: "a" })], stop: "tool_use" }, {
      text: "never asked",
    }, { text: "second prompt" }]);
    const t = await session([fs, guard], model);
    try {
      const { events, result } = await run(t.session, "go");
      assert.equal(result.stopReason, "end_turn");
      assert.deepEqual(result.halt, { hook: "_PreToolUse", server: "guard", reason: "budget exceeded" });
      assert.equal(model.seen.length, 1, "no model call after the halt");
      assert.equal(fs.calls.length, 0);
      const hook = events.find((e) => e.type === "hook");
      assert.equal(hook?.type === "hook" && hook.decision?.systemMessage, "stopping here");
      assertPaired(t.session.history);
      // The next prompt starts afresh and the history is valid for it.
      const next = await run(t.session, "again");
      assert.equal(next.result.stopReason, "end_turn");
      assert.equal(next.result.halt, undefined);
    } finally {
      await t.close();
    }
  });

  test("continue: false from _UserPromptSubmit ends the prompt before its first round", async () => {
    const gate = new FakeServer("gate", ["_UserPromptSubmit"], {
      _UserPromptSubmit: () => typed({ continue: false }),
    });
    const model = recordingModel([]);
    const t = await session([gate], model);
    try {
      const { result } = await run(t.session, "go");
      assert.equal(result.rounds, 0);
      assert.deepEqual(result.halt, {
        hook: "_UserPromptSubmit",
        server: "gate",
        reason: '_UserPromptSubmit of "gate" halted the prompt',
      });
      assert.equal(model.seen.length, 0);
    } finally {
      await t.close();
    }
  });

  test("additionalContext is what an injecting point injects; bad fields are ignored with a warning", async () => {
    const ctx = new FakeServer("ctx", ["_UserPromptSubmit"], {
      _UserPromptSubmit: () => typed({ additionalContext: "the repo uses pnpm", decision: 3 }),
    });
    const model = recordingModel([{ text: "ok" }]);
    const t = await session([ctx], model);
    try {
      const { events } = await run(t.session, "go");
      const injected = t.session.history.filter((i) => i.role === "tool").map((i) =>
        i.role === "tool" ? texts(i.content)[0] : ""
      );
      assert.deepEqual(injected, [
        JSON.stringify({ hook: "_UserPromptSubmit", server: "ctx", text: "the repo uses pnpm" }),
      ]);
      assert.ok(
        events.some((e) => e.type === "warning" && /ignored fields: "decision" must be one of/.test(e.message)),
      );
    } finally {
      await t.close();
    }
  });

  test("in-process hooks may return a typed answer", async () => {
    const fs = fsServer();
    const model = recordingModel([{ toolCalls: [call("fs__write", { path: "a" })], stop: "tool_use" }, {
      text: "done",
    }]);
    const seen: unknown[] = [];
    const t = await session([fs], model, {
      hooks: {
        policy: {
          _PreToolUse: (c) => {
            seen.push(c.toolCall);
            return { decision: "deny", reason: "read-only session" };
          },
        },
      },
    });
    try {
      await run(t.session, "go");
      assert.equal(fs.calls.length, 0);
      assert.deepEqual(seen, [{ id: "c1", name: "fs__write", server: "fs", tool: "write", arguments: { path: "a" } }]);
      const denial = JSON.parse(texts(results(t.session.history).get("c1")!.content)[0]!);
      assert.deepEqual(denial, { hook: "_PreToolUse", server: "policy", text: "read-only session" });
    } finally {
      await t.close();
    }
  });

  test("parseDecision: no known key is no typed answer; every field is checked", () => {
    assert.equal(parseDecision({ result: "ok" }), undefined);
    assert.equal(parseDecision("deny"), undefined);
    assert.equal(parseDecision(null), undefined);
    assert.deepEqual(parseDecision({ decision: "deny", reason: "no", continue: "x", updatedInput: [1] }), {
      decision: { decision: "deny", reason: "no" },
      problems: ['"updatedInput" must be a JSON object', '"continue" must be a boolean'],
    });
  });

  test("inputProblems reads type, required, enum, items and additionalProperties", () => {
    const schema = {
      type: "object",
      properties: {
        mode: { enum: ["r", "w"] },
        tags: { type: "array", items: { type: "string" } },
        n: { type: "integer", minimum: 0 },
      },
      required: ["mode"],
      additionalProperties: false,
    };
    assert.deepEqual(inputProblems({ mode: "r", tags: ["a"], n: 2 }, schema), []);
    assert.deepEqual(inputProblems({ tags: ["a", 2], n: -1, extra: true }, schema), [
      "$.mode is required",
      "$.tags[1] must be string, not integer",
      "$.n must be >= 0",
      "$.extra is not allowed",
    ]);
    assert.deepEqual(inputProblems({ n: 1.5 }, { properties: { n: { type: "integer" } } }), [
      "$.n must be integer, not number",
    ]);
    assert.deepEqual(inputProblems({ anything: 1 }, undefined), []);
  });
});

describe("tool points and typed answers in ACP updates", () => {
  test("a denial, a rewrite, a note and a halt each become a thought or a message for the person", () => {
    const base = { type: "hook", server: "guard", outcome: "objection", durationMs: 1, toolCallId: "c1" } as const;
    const line = (event: AgentEvent) =>
      sessionUpdates(event).updates.map((u) => (u.content as { text: string }).text.trim());
    assert.deepEqual(line({ ...base, hook: "_PreToolUse", text: "no writes" }), [
      '_PreToolUse hook "guard" denied the tool call: no writes',
    ]);
    assert.deepEqual(line({ ...base, hook: "_PreToolUse", decision: { updatedInput: { path: "x" } } }), [
      '_PreToolUse hook "guard" rewrote the arguments: {"path":"x"}',
    ]);
    assert.deepEqual(
      line({ ...base, hook: "_PostToolUse", outcome: "none", decision: { systemMessage: "looked fine" } }),
      ['_PostToolUse hook "guard" notes: looked fine'],
    );
    const halted = resultUpdates({
      stopReason: "end_turn",
      rounds: 1,
      toolCalls: 1,
      objections: 0,
      usage: { inputTokens: 0, outputTokens: 0 },
      durationMs: 1,
      halt: { hook: "_PreToolUse", server: "guard", reason: "budget exceeded" },
    });
    assert.deepEqual(halted.map((u) => (u.content as { text: string }).text.trim()), [
      'Halted by the _PreToolUse hook of "guard": budget exceeded',
    ]);
  });
});

describe("required servers fail closed (SPEC 3.1)", () => {
  /** A registry like `session` builds, with `required` set on the servers it names. */
  async function requiredSession(servers: FakeServer[], required: string[], model: Model, env = {}) {
    const { registry } = await createRegistry(
      servers.map((s) => ({ ...stdioConfig(s.name), ...(required.includes(s.name) ? { required: true } : {}) })),
      { sessionId: "required", connect: fakeConnect(servers) },
    );
    const config = loadConfig({ MCP_HOOK_SERVERS: "*", SPROUT_AGENT_HOOK_TIMEOUT_MS: "100", ...env }, () => "");
    return { session: new AgentSession({ config, model, registry }), registry, close: () => registry.close() };
  }

  test("a required _PreToolUse that times out or fails denies the call; the same hook not required lets it run", async () => {
    for (const required of [true, false]) {
      const fs = fsServer();
      const slow = new FakeServer("slow", ["_PreToolUse"], {
        _PreToolUse: (_a, ctx) => sleep(5000, ctx.signal).then(() => text("")),
      });
      const broken = new FakeServer("broken", ["_PreToolUse"], { _PreToolUse: () => text("db down", true) });
      for (const guard of [slow, broken]) {
        const model = recordingModel([{ toolCalls: [call("fs__write", { path: "a" })], stop: "tool_use" }, {
          text: "done",
        }]);
        const t = await requiredSession([fs, guard], required ? [guard.name] : [], model);
        try {
          await run(t.session, "go");
          const r = results(t.session.history).get("c1")!;
          if (!required) {
            assert.equal(r.isError, false, `${guard.name} advisory`);
            continue;
          }
          assert.equal(r.isError, true, guard.name);
          const denial = JSON.parse(texts(r.content)[0]!);
          assert.equal(denial.server, guard.name);
          assert.match(
            denial.text,
            /^the required guard did not answer, so the call was not run \(Hook "_PreToolUse" of server/,
          );
        } finally {
          await t.close();
        }
      }
      assert.equal(fs.calls.length, required ? 0 : 2);
    }
  });

  test("a required guard killed after two timeouts keeps denying: a dead guard does not pass silently", async () => {
    const fs = fsServer();
    const guard = new FakeServer("guard", ["_PreToolUse"], {
      _PreToolUse: (_a, ctx) => sleep(5000, ctx.signal).then(() => text("")),
    });
    const calls = [1, 2, 3].map((n) => call("fs__read", { path: `${n}` }, `c${n}`));
    const model = recordingModel([{ toolCalls: calls, stop: "tool_use" }, { text: "done" }]);
    const t = await requiredSession([fs, guard], ["guard"], model, { SPROUT_AGENT_MAX_PARALLEL_TOOLS: "1" });
    try {
      const { events } = await run(t.session, "go");
      assert.ok(
        events.some((e) =>
          e.type === "warning" && /"guard" timed out after .* \(2\/2\); server killed/.test(e.message)
        ),
      );
      assert.equal(fs.calls.length, 0);
      const third = JSON.parse(texts(results(t.session.history).get("c3")!.content)[0]!);
      assert.match(third.text, /required guard did not answer.*Server "guard" is not running/);
      // Its two timeouts were the only calls it got: the third was refused without a request.
      assert.equal(guard.calls.length, 2);
    } finally {
      await t.close();
    }
  });

  test("createAgent refuses to start without a required server; .mcp.json says required: true", async () => {
    const mcpServers = {
      mcpServers: {
        guard: { command: "/nonexistent/sprout-guard", required: true },
        other: { command: "/nonexistent/other" },
      },
    };
    await assert.rejects(
      createAgent({ model: recordingModel([]), mcpServers, env: {} }),
      (error: unknown) =>
        error instanceof AgentError && error.code === "mcp-connect" &&
        /^Required server "guard" could not start: /.test(error.message) && !error.message.includes('"other"'),
    );
    const agent = await createAgent({
      model: recordingModel([]),
      mcpServers: { mcpServers: { other: mcpServers.mcpServers.other } },
      env: {},
    });
    try {
      assert.deepEqual(agent.failures.map((f) => f.server), ["other"], "a server not required only warns");
    } finally {
      await agent.close();
    }
    assert.throws(
      () =>
        parseMcpConfig(JSON.stringify({ mcpServers: { g: { command: "x", required: "yes" } } }), "/x/.mcp.json", {
          env: {},
          resolvePath: (a, b) => `${a}/${b}`,
        }),
      /mcpServers\.g\.required must be true or false/,
    );
  });
});

describe("the permission policy (SPEC 7.8)", () => {
  const policy = (p: Partial<{ allow: string[]; ask: string[]; deny: string[]; default: string }>) => ({
    SPROUT_AGENT_ALLOW: (p.allow ?? []).join(","),
    SPROUT_AGENT_ASK: (p.ask ?? []).join(","),
    SPROUT_AGENT_DENY: (p.deny ?? []).join(","),
    SPROUT_AGENT_PERMISSION_DEFAULT: p.default ?? "",
  });

  test("policyDecision: deny beats ask beats allow; auto asks for destructiveHint tools only when someone can answer", () => {
    const p = { allow: ["fs__*"], ask: ["fs__write"], deny: ["fs__rm*"], default: "auto" as const };
    assert.deepEqual(policyDecision(p, "fs__rmdir", undefined, true), { decision: "deny", rule: 'deny "fs__rm*"' });
    assert.deepEqual(policyDecision(p, "fs__write", undefined, true), {
      decision: "ask",
      rule: 'ask "fs__write"',
      explicit: true,
    });
    assert.deepEqual(policyDecision(p, "fs__read", undefined, true), {
      decision: "allow",
      rule: 'allow "fs__*"',
      explicit: true,
    });
    const destructive = { annotations: { destructiveHint: true } };
    const readOnly = { annotations: { readOnlyHint: true, destructiveHint: true } };
    assert.equal(policyDecision(p, "x__drop", destructive, true).decision, "ask");
    assert.equal(policyDecision(p, "x__drop", destructive, false).decision, "allow", "headless: unchanged");
    assert.equal(policyDecision(p, "x__get", readOnly, true).decision, "allow");
    assert.equal(policyDecision(p, "x__other", {}, true).decision, "allow");
    assert.deepEqual(policyDecision({ ...p, default: "deny" }, "x__other", readOnly, true), {
      decision: "deny",
      rule: "the default deny",
    });
  });

  test("a deny rule refuses the call before any hook; the model reads which rule", async () => {
    const fs = fsServer();
    const guard = new FakeServer("guard", ["_PreToolUse"], { _PreToolUse: () => text("") });
    const model = recordingModel([{ toolCalls: [call("fs__write", { path: "a" })], stop: "tool_use" }, {
      text: "done",
    }]);
    const t = await session([fs, guard], model, { env: policy({ deny: ["fs__w*"] }) });
    try {
      await run(t.session, "go");
      assert.equal(fs.calls.length, 0);
      assert.equal(guard.calls.length, 0, "a denied call costs no hook");
      const r = results(t.session.history).get("c1")!;
      assert.equal(r.isError, true);
      assert.deepEqual(texts(r.content), [
        `Permission denied: the operator's policy (deny "fs__w*") does not allow "fs__write"`,
      ]);
    } finally {
      await t.close();
    }
  });

  test("an ask rule with no one to ask denies, naming the setting that allows the tool", async () => {
    const fs = fsServer();
    const model = recordingModel([{ toolCalls: [call("fs__write", { path: "a" })], stop: "tool_use" }, {
      text: "done",
    }]);
    const t = await session([fs], model, { env: policy({ ask: ["fs__*"] }) });
    try {
      await run(t.session, "go");
      assert.equal(fs.calls.length, 0);
      assert.deepEqual(texts(results(t.session.history).get("c1")!.content), [
        `Permission denied: the operator's policy (ask "fs__*") asks before "fs__write" runs (permission was asked for, and no one can answer in this run: allow it in advance with --allow "fs__write" or SPROUT_AGENT_ALLOW)`,
      ]);
    } finally {
      await t.close();
    }
  });

  test("allow always holds for the session; reject always too; each asks once", async () => {
    const fs = fsServer();
    const model = recordingModel([
      { toolCalls: [call("fs__write", { path: "a" }, "c1"), call("fs__read", { path: "a" }, "c2")], stop: "tool_use" },
      { text: "first" },
      { toolCalls: [call("fs__write", { path: "b" }, "c3"), call("fs__read", { path: "b" }, "c4")], stop: "tool_use" },
      { text: "second" },
    ]);
    const asked: string[] = [];
    const ask: PermissionAsk = (request) => {
      asked.push(request.call.name);
      return Promise.resolve(request.call.name === "fs__write" ? "allow_always" : "reject_always");
    };
    const t = await session([fs], model, { env: policy({ ask: ["fs__*"] }), ask });
    try {
      await run(t.session, "one");
      await run(t.session, "two");
      assert.deepEqual(asked, ["fs__write", "fs__read"], "asked once per tool");
      assert.deepEqual(fs.calls.map((c) => [c.tool, c.args]), [["write", { path: "a" }], ["write", { path: "b" }]]);
      assert.deepEqual(texts(results(t.session.history).get("c4")!.content), [
        'Permission denied: the person rejected "fs__read" for this session',
      ]);
      assertPaired(t.session.history);
    } finally {
      await t.close();
    }
  });

  test("the auto default asks for a destructiveHint tool when someone can answer, and for nothing headless", async () => {
    for (const withPerson of [true, false]) {
      const fs = new FakeServer("fs", [
        { name: "drop", inputSchema: { type: "object" }, annotations: { destructiveHint: true } },
        { name: "get", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
      ]);
      const model = recordingModel([{
        toolCalls: [call("fs__drop", {}, "c1"), call("fs__get", {}, "c2")],
        stop: "tool_use",
      }, { text: "done" }]);
      const asked: string[] = [];
      const ask: PermissionAsk = (request) => {
        asked.push(request.call.name);
        return Promise.resolve("reject_once");
      };
      const t = await session([fs], model, withPerson ? { ask } : {});
      try {
        await run(t.session, "go");
        assert.deepEqual(asked, withPerson ? ["fs__drop"] : []);
        assert.deepEqual(fs.calls.map((c) => c.tool), withPerson ? ["get"] : ["drop", "get"]);
      } finally {
        await t.close();
      }
    }
  });

  test("an explicit allow rule answers a hook's ask in advance; a hook's allow answers the default's ask, not an ask rule", async () => {
    const cases = [
      { env: policy({ allow: ["fs__write"] }), hook: { decision: "ask", reason: "check" }, runs: true },
      { env: policy({ default: "ask" }), hook: { decision: "allow" }, runs: true },
      { env: policy({ ask: ["fs__*"] }), hook: { decision: "allow" }, runs: false },
      { env: policy({}), hook: { decision: "ask", reason: "check" }, runs: false },
    ];
    for (const c of cases) {
      const fs = fsServer();
      const guard = new FakeServer("guard", ["_PreToolUse"], { _PreToolUse: () => typed(c.hook) });
      const model = recordingModel([{ toolCalls: [call("fs__write", { path: "a" })], stop: "tool_use" }, {
        text: "done",
      }]);
      const t = await session([fs, guard], model, { env: c.env });
      try {
        await run(t.session, "go");
        assert.equal(fs.calls.length, c.runs ? 1 : 0, JSON.stringify(c));
      } finally {
        await t.close();
      }
    }
  });

  test("the settings name what is wrong", async () => {
    assert.throws(
      () => loadConfig({ SPROUT_AGENT_PERMISSION_DEFAULT: "maybe" }, () => ""),
      /Invalid SPROUT_AGENT_PERMISSION_DEFAULT: "maybe" is not one of auto, allow, ask, deny/,
    );
    assert.deepEqual(loadConfig({ SPROUT_AGENT_ALLOW: " a__*, ,b__c " }, () => "").permissions, {
      allow: ["a__*", "b__c"],
      ask: [],
      deny: [],
      default: "auto",
    });
    await assert.rejects(
      createAgent({ model: recordingModel([]), permissions: { deny: [""] } }),
      /permissions\.deny/,
    );
  });
});
