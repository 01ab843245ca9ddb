/**
 * In-process hooks (SPEC section 4.7): functions passed to `createAgent({hooks})` run beside MCP
 * hooks under the same rules (timeout with an AbortSignal, the `_Stop` budget, fail-open,
 * JSON-encoded injection, disabled after two consecutive timeouts), and receive the same
 * context. `createAgent` with no MCP server and a recording model: nothing is spawned.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createAgent } from "../lib/agent/agent.ts";
import type { AgentEvent } from "../lib/conversation/events.ts";
import type { HookCall, InProcessHooks } from "../lib/hooks/runner.ts";
import type { HistoryItem } from "../lib/conversation/types.ts";
import { recordingModel } from "./helpers/recording-model.ts";

async function prompt(
  agent: Awaited<ReturnType<typeof createAgent>>,
  text: string,
): Promise<{ events: AgentEvent[]; stopReason: string; objections: number }> {
  const run = agent.prompt(text);
  const events: AgentEvent[] = [];
  for await (const event of run) events.push(event);
  const result = await run.result;
  return { events, stopReason: result.stopReason, objections: result.objections };
}

describe("in-process hooks (SPEC 4.7)", () => {
  test("a _Stop function objects like a server: JSON-encoded injection named after its group, the budget bounds it", async () => {
    const calls: HookCall[] = [];
    const model = recordingModel([{ text: "done" }, { text: "done again" }]);
    const agent = await createAgent({
      model,
      hooks: {
        policy: {
          _Stop: (ctx) => {
            calls.push(ctx);
            return "run the tests first";
          },
        },
      },
      stopMaxRejections: 1,
      cwd: "/repo",
    });
    try {
      const { events, stopReason, objections } = await prompt(agent, "fix it");
      assert.equal(stopReason, "end_turn");
      assert.equal(objections, 1);
      assert.deepEqual(calls, [{
        event: "Stop",
        round: 1,
        rejectionsUsed: 0,
        rejectionsLeft: 1,
        cwd: "/repo",
        lastAssistantText: "done",
        afterObjection: false,
        prompt: 1,
      }]);
      const second = model.seen[1]!;
      const call = second[2] as Extract<HistoryItem, { role: "assistant" }>;
      assert.equal(call.toolCalls[0]!.name, "policy___Stop");
      assert.deepEqual(second[3], {
        role: "tool",
        toolCallId: call.toolCalls[0]!.id,
        content: [{ type: "text", text: '{"hook":"_Stop","server":"policy","text":"run the tests first"}' }],
        isError: false,
      });
      const hook = events.find((e) => e.type === "hook");
      assert.deepEqual(hook && { ...hook, durationMs: 0 }, {
        type: "hook",
        hook: "_Stop",
        server: "policy",
        outcome: "objection",
        durationMs: 0,
        text: "run the tests first",
      });
    } finally {
      await agent.close();
    }
  });

  test("a function that never answers times out (its signal aborts), counts as no objection, and is disabled after two timeouts", async () => {
    const signals: AbortSignal[] = [];
    let calls = 0;
    const hooks: InProcessHooks = {
      slow: {
        _UserPromptSubmit: (_ctx, signal) => {
          calls++;
          signals.push(signal);
          return new Promise<string>(() => {});
        },
      },
    };
    const model = recordingModel([{ text: "a" }, { text: "b" }, { text: "c" }]);
    const agent = await createAgent({ model, hooks, hookTimeoutMs: 100 });
    try {
      const first = await prompt(agent, "one");
      const second = await prompt(agent, "two");
      await prompt(agent, "three");
      assert.equal(calls, 2, "not called once disabled");
      assert.ok(signals.every((s) => s.aborted));
      const warnings = [...first.events, ...second.events].flatMap((e) => e.type === "warning" ? [e.message] : []);
      assert.deepEqual(warnings, [
        'Hook "_UserPromptSubmit" of in-process hooks "slow" timed out after 0.1 s (1/2)',
        'Hook "_UserPromptSubmit" of in-process hooks "slow" timed out after 0.1 s (2/2); its hooks are disabled for this session',
      ]);
      assert.deepEqual(model.seen[0], [{ role: "user", text: "one" }], "a timeout injects nothing");
    } finally {
      await agent.close();
    }
  });

  test("a function that throws or returns a non-string is an error outcome: nothing injected, a warning", async () => {
    const model = recordingModel([{ text: "ok" }]);
    const agent = await createAgent({
      model,
      hooks: {
        a: { _UserPromptSubmit: () => Promise.reject(new Error("database down")) },
        b: { _UserPromptSubmit: () => 42 as unknown as string },
        c: { _UserPromptSubmit: () => undefined },
      },
    });
    try {
      const { events } = await prompt(agent, "go");
      assert.deepEqual(
        events.flatMap((e) => e.type === "hook" ? [[e.server, e.outcome, e.message]] : []),
        [
          ["a", "error", 'Hook "_UserPromptSubmit" of in-process hooks "a" failed: database down'],
          [
            "b",
            "error",
            'Hook "_UserPromptSubmit" of in-process hooks "b" returned an error: the function returned number, not a string or an object',
          ],
          ["c", "none", undefined],
        ],
      );
      assert.deepEqual(model.seen[0], [{ role: "user", text: "go" }]);
    } finally {
      await agent.close();
    }
  });

  test("_SessionStart runs in createAgent and _SessionEnd in close, their events to onEvent; the start text reaches the first request", async () => {
    const events: AgentEvent[] = [];
    const model = recordingModel([{ text: "hi" }]);
    const agent = await createAgent({
      model,
      onEvent: (e) => events.push(e),
      hooks: {
        memo: {
          _SessionStart: (ctx) => `session starts in ${ctx.cwd}`,
          _SessionEnd: (ctx) => `ran ${ctx.prompt} prompt(s), last said ${JSON.stringify(ctx.lastAssistantText)}`,
        },
      },
      cwd: "/srv",
    });
    assert.deepEqual(events.map((e) => e.type === "hook" && [e.hook, e.text]), [
      ["_SessionStart", "session starts in /srv"],
    ]);
    await prompt(agent, "hello");
    await agent.close();
    await agent.close(); // idempotent: _SessionEnd fires once
    assert.deepEqual(events.map((e) => e.type === "hook" && [e.hook, e.text]), [
      ["_SessionStart", "session starts in /srv"],
      ["_SessionEnd", 'ran 1 prompt(s), last said "hi"'],
    ]);
    const first = model.seen[0]!;
    assert.equal(first.length, 3);
    assert.match(JSON.stringify(first[2]), /\{\\"hook\\":\\"_SessionStart\\",\\"server\\":\\"memo\\"/);
  });

  test("bad hooks options are configuration errors naming the option", async () => {
    const model = recordingModel([]);
    const fails = (options: Record<string, unknown>, message: RegExp) =>
      assert.rejects(createAgent({ model, ...options }), (e: Error) => {
        assert.match(e.message, message);
        return true;
      });
    await fails({ hooks: { "bad name": { _Stop: () => "" } } }, /^Invalid hooks\.bad name: a group name/);
    await fails({ hooks: { a: { _Start: () => "" } } }, /^Invalid hooks\.a\._Start: not a hook point/);
    await fails({ hooks: { a: { _Stop: "no" } } }, /^Invalid hooks\.a\._Stop: it must be a function/);
    await fails(
      {
        hooks: { fs: { _Stop: () => "" } },
        mcpServers: [{ name: "fs", transport: { type: "stdio", command: "true", args: [], env: {} } }],
      },
      /^Invalid hooks\.fs: a server is already named "fs"/,
    );
    await fails({ stopDeclinedTwice: "off" }, /^Invalid stopDeclinedTwice: it must be true or false/);
  });

  test("stopDeclinedTwice: false lets _Stop object again right after an objection", async () => {
    const model = recordingModel([{ text: "done" }, { text: "done" }, { text: "done" }]);
    const seen: boolean[] = [];
    const agent = await createAgent({
      model,
      stopDeclinedTwice: false,
      stopMaxRejections: 2,
      hooks: {
        p: {
          _Stop: (ctx) => {
            seen.push(ctx.afterObjection);
            return "again";
          },
        },
      },
    });
    try {
      const { objections } = await prompt(agent, "go");
      assert.equal(objections, 2);
      assert.deepEqual(seen, [false, true]);
    } finally {
      await agent.close();
    }
  });
});
