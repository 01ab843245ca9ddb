/**
 * The hook points of issue 12 in-process (SPEC sections 2.3, 7.1 and 7.5): the context every
 * hook gets in `_meta["sprout-agent/hook"]`, `_SessionStart`, `_UserPromptSubmit` and
 * `_SessionEnd` with their injection rules, and the "model declined" policy switch. Real
 * `AgentSession` and registry; the servers are in-memory fakes (tests/helpers/fake-connection.ts)
 * and the model a recording one, so nothing is spawned.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { loadConfig } from "../lib/config/config.ts";
import type { AgentEvent } from "../lib/conversation/events.ts";
import { MAX_HOOK_CONTEXT_TEXT_BYTES } from "../lib/hooks/points.ts";
import { GUIDANCE_HEADING } from "../lib/context/compaction.ts";
import { HOOK_POINTS } from "../lib/hooks/points.ts";
import { hookAnswerWords } from "../lib/hooks/decisions.ts";
import { sessionUpdates } from "../lib/acp/updates.ts";
import { AgentSession } from "../lib/agent/loop.ts";
import { createRegistry } from "../lib/mcp/registry.ts";
import type { HistoryItem, Model } from "../lib/conversation/types.ts";
import { recordingModel } from "./helpers/recording-model.ts";
import { fakeConnect, FakeServer, sleep, stdioConfig, text } from "./helpers/fake-connection.ts";

async function session(
  servers: FakeServer[],
  model: Model,
  env: Record<string, string> = {},
): Promise<{ session: AgentSession; close: () => Promise<void> }> {
  const { registry } = await createRegistry(servers.map((s) => stdioConfig(s.name)), {
    sessionId: "ctx-test",
    connect: fakeConnect(servers),
  });
  const config = loadConfig({ MCP_HOOK_SERVERS: "*", ...env }, () => "");
  const s = new AgentSession({ config, model, registry, cwd: "/work/project" });
  return { session: s, close: () => registry.close() };
}

async function run(s: AgentSession, prompt: string): Promise<AgentEvent[]> {
  const handle = s.prompt(prompt);
  const events: AgentEvent[] = [];
  for await (const event of handle) events.push(event);
  await handle.result;
  return events;
}

type HookMetaSeen = Record<string, unknown>;
const hookMetaOf = (server: FakeServer, tool: string): HookMetaSeen[] =>
  server.calls.filter((c) => c.tool === tool).map((c) => c.meta?.["sprout-agent/hook"] as HookMetaSeen);

/** The `{hook, server, text}` JSON of every injected tool result in `history`. */
function injected(history: readonly HistoryItem[]): Array<{ hook: string; server: string; text: string }> {
  return history.flatMap((item) => {
    if (item.role !== "tool") return [];
    const block = item.content[0];
    if (block?.type !== "text" || !block.text.startsWith('{"hook"')) return [];
    return [JSON.parse(block.text) as { hook: string; server: string; text: string }];
  });
}

describe("hook context in _meta (SPEC 2.3)", () => {
  test("_Stop gets cwd, the last assistant text, afterObjection and the prompt number", async () => {
    const srv = new FakeServer("todo", ["_Stop"], { _Stop: () => text("") });
    const model = recordingModel([{ text: "first answer" }, { text: "second answer" }]);
    const t = await session([srv], model);
    try {
      await run(t.session, "one");
      await run(t.session, "two");
      assert.deepEqual(hookMetaOf(srv, "_Stop"), [
        {
          event: "Stop",
          round: 1,
          rejectionsUsed: 0,
          rejectionsLeft: 3,
          cwd: "/work/project",
          lastAssistantText: "first answer",
          afterObjection: false,
          prompt: 1,
        },
        {
          event: "Stop",
          round: 1,
          rejectionsUsed: 0,
          rejectionsLeft: 3,
          cwd: "/work/project",
          lastAssistantText: "second answer",
          afterObjection: false,
          prompt: 2,
        },
      ]);
    } finally {
      await t.close();
    }
  });

  test("lastAssistantText is cut to 4 KiB of UTF-8 with a marker, never splitting a character", async () => {
    const srv = new FakeServer("todo", ["_Stop"], { _Stop: () => text("") });
    const long = "é".repeat(5000); // 10000 bytes
    const t = await session([srv], recordingModel([{ text: long }]));
    try {
      await run(t.session, "go");
      const seen = hookMetaOf(srv, "_Stop")[0]!["lastAssistantText"] as string;
      const bytes = new TextEncoder().encode(seen).length;
      assert.equal(MAX_HOOK_CONTEXT_TEXT_BYTES, 4096);
      assert.ok(bytes <= 4096 && bytes > 4000, `${bytes} bytes`);
      assert.match(seen, /^é+\n\[truncated\]$/);
    } finally {
      await t.close();
    }
  });
  test("_PostCompact gets the same context, read when it fires: the prompt, cwd and the last assistant text", async () => {
    const srv = new FakeServer("todo", ["_PostCompact"], { _PostCompact: () => text("") });
    const long = "x".repeat(6000); // over the 4500-token threshold of a 6000-token context
    const model = recordingModel([{ text: long }, { text: "a short summary" }, { text: "done" }]);
    const t = await session([srv], model, {
      SPROUT_AGENT_MAX_CONTEXT_TOKENS: "6000",
      SPROUT_AGENT_MAX_OUTPUT_TOKENS: "1000",
    });
    try {
      await run(t.session, "one");
      const events = await run(t.session, "two");
      assert.ok(events.some((e) => e.type === "compaction" && e.mode === "summary"), "a summary compaction ran");
      const [meta] = hookMetaOf(srv, "_PostCompact");
      assert.ok(meta !== undefined, "_PostCompact was called");
      assert.equal(meta["event"], "PostCompact");
      assert.equal(meta["prompt"], 2);
      assert.equal(meta["cwd"], "/work/project");
      assert.equal(meta["afterObjection"], false);
      assert.match(meta["lastAssistantText"] as string, /^x+\n\[truncated\]$/);
    } finally {
      await t.close();
    }
  });
});

describe('the "model declined" rule (SPEC 7.1)', () => {
  const stopsAfterTwoEnds = async (env: Record<string, string>) => {
    const srv = new FakeServer("todo", ["_Stop"], { _Stop: () => text("keep going") });
    const model = recordingModel([{ text: "done" }, { text: "still done" }, { text: "really done" }]);
    const t = await session([srv], model, { SPROUT_AGENT_STOP_MAX_REJECTIONS: "2", ...env });
    try {
      const handle = t.session.prompt("go");
      for await (const _ of handle) { /* drain */ }
      return { result: await handle.result, metas: hookMetaOf(srv, "_Stop"), requests: model.seen.length };
    } finally {
      await t.close();
    }
  };

  test("on by default: an end of turn right after an objection is final, _Stop is not called again", async () => {
    const { result, metas, requests } = await stopsAfterTwoEnds({});
    assert.equal(result.stopReason, "end_turn");
    assert.equal(result.objections, 1);
    assert.equal(metas.length, 1);
    assert.equal(requests, 2);
  });

  test("SPROUT_AGENT_STOP_DECLINED_TWICE=off: _Stop is called again with afterObjection, only the budget ends the loop", async () => {
    const { result, metas, requests } = await stopsAfterTwoEnds({ SPROUT_AGENT_STOP_DECLINED_TWICE: "off" });
    assert.equal(result.stopReason, "end_turn");
    assert.equal(result.objections, 2);
    assert.deepEqual(metas.map((m) => [m["afterObjection"], m["rejectionsLeft"]]), [[false, 2], [true, 1]]);
    assert.equal(requests, 3, "the third end of turn meets an exhausted budget");
  });

  test("a bad value stops the configuration naming the variable; on and off in any case are accepted", () => {
    assert.throws(
      () => loadConfig({ SPROUT_AGENT_STOP_DECLINED_TWICE: "maybe" }, () => ""),
      /^AgentError: Invalid SPROUT_AGENT_STOP_DECLINED_TWICE: "maybe" is not one of on, off$/,
    );
    assert.throws(() => loadConfig({ SPROUT_AGENT_STOP_DECLINED_TWICE: "" }, () => ""), /STOP_DECLINED_TWICE/);
    assert.equal(loadConfig({}, () => "").stopDeclinedTwice, true);
    assert.equal(loadConfig({ SPROUT_AGENT_STOP_DECLINED_TWICE: " OFF " }, () => "").stopDeclinedTwice, false);
    assert.equal(loadConfig({ SPROUT_AGENT_STOP_DECLINED_TWICE: "On" }, () => "").stopDeclinedTwice, true);
  });
});

describe("_SessionStart, _UserPromptSubmit, _SessionEnd (SPEC 7.5)", () => {
  test("_SessionStart's text follows the first prompt's user item, before _UserPromptSubmit's; once per session", async () => {
    const srv = new FakeServer("todo", ["_SessionStart", "_UserPromptSubmit"], {
      _SessionStart: () => text("restored: 1. write tests"),
      _UserPromptSubmit: (_args, ctx) =>
        text(`prompt ${(ctx.meta?.["sprout-agent/hook"] as { prompt: number }).prompt} context`),
    });
    const model = recordingModel([{ text: "ok" }, { text: "ok again" }]);
    const t = await session([srv], model);
    try {
      const startEvents: AgentEvent[] = [];
      await t.session.start((e) => startEvents.push(e));
      await t.session.start(); // a second call fires nothing
      assert.deepEqual(startEvents.map((e) => e.type === "hook" ? [e.hook, e.outcome, e.text] : e.type), [
        ["_SessionStart", "objection", "restored: 1. write tests"],
      ]);
      assert.equal(t.session.history.length, 0, "nothing is added before the first prompt");
      const events = await run(t.session, "first");
      assert.deepEqual(events.filter((e) => e.type === "hook").map((e) => e.type === "hook" && e.hook), [
        "_UserPromptSubmit",
      ]);
      const first = model.seen[0]!;
      assert.deepEqual(first[0], { role: "user", text: "first" });
      assert.deepEqual(injected(first), [
        { hook: "_SessionStart", server: "todo", text: "restored: 1. write tests" },
        { hook: "_UserPromptSubmit", server: "todo", text: "prompt 1 context" },
      ]);
      assert.deepEqual(first.map((i) => i.role), ["user", "assistant", "tool", "assistant", "tool"]);
      await run(t.session, "second");
      const second = model.seen[1]!;
      assert.deepEqual(injected(second).map((i) => i.text), [
        "restored: 1. write tests",
        "prompt 1 context",
        "prompt 2 context",
      ]);
      assert.equal(srv.calls.filter((c) => c.tool === "_SessionStart").length, 1);
      assert.deepEqual(hookMetaOf(srv, "_SessionStart")[0], {
        event: "SessionStart",
        round: 0,
        rejectionsUsed: 0,
        rejectionsLeft: 3,
        cwd: "/work/project",
        lastAssistantText: "",
        afterObjection: false,
        prompt: 0,
        source: "startup",
      });
      assert.deepEqual(hookMetaOf(srv, "_UserPromptSubmit").map((m) => [m["event"], m["round"], m["prompt"]]), [
        ["UserPromptSubmit", 1, 1],
        ["UserPromptSubmit", 1, 2],
      ]);
    } finally {
      await t.close();
    }
  });

  test("without start(), the first prompt fires _SessionStart itself and its events are in the prompt's stream", async () => {
    const srv = new FakeServer("todo", ["_SessionStart"], { _SessionStart: () => text("hello") });
    const model = recordingModel([{ text: "ok" }]);
    const t = await session([srv], model);
    try {
      const events = await run(t.session, "go");
      assert.equal(events[0]?.type, "hook");
      assert.deepEqual(injected(model.seen[0]!).map((i) => i.hook), ["_SessionStart"]);
    } finally {
      await t.close();
    }
  });

  test("_SessionEnd's text is only reported: a hook event, nothing added to history", async () => {
    const srv = new FakeServer("todo", ["_SessionEnd"], { _SessionEnd: () => text("2 items still open") });
    const t = await session([srv], recordingModel([{ text: "bye" }]));
    try {
      await run(t.session, "go");
      const before = t.session.history.length;
      const events: AgentEvent[] = [];
      await t.session.end((e) => events.push(e));
      assert.equal(t.session.history.length, before);
      assert.deepEqual(events, [{
        type: "hook",
        hook: "_SessionEnd",
        server: "todo",
        outcome: "objection",
        durationMs: (events[0] as { durationMs: number }).durationMs,
        text: "2 items still open",
      }]);
      const meta = hookMetaOf(srv, "_SessionEnd")[0]!;
      assert.deepEqual([meta["event"], meta["round"], meta["prompt"], meta["lastAssistantText"]], [
        "SessionEnd",
        0,
        1,
        "bye",
      ]);
    } finally {
      await t.close();
    }
  });

  test("two _UserPromptSubmit timeouts in a row kill the server, as for any hook (SPEC 4.4)", async () => {
    const srv = new FakeServer("slow", ["_UserPromptSubmit"], {
      _UserPromptSubmit: (_args, ctx) => sleep(10_000, ctx.signal).then(() => text("late")),
    });
    const model = recordingModel([{ text: "a" }, { text: "b" }, { text: "c" }]);
    const t = await session([srv], model, { SPROUT_AGENT_HOOK_TIMEOUT_MS: "100" });
    try {
      const first = await run(t.session, "one");
      const second = await run(t.session, "two");
      await run(t.session, "three");
      const outcomes = [...first, ...second].flatMap((e) => e.type === "hook" ? [e.outcome] : []);
      assert.deepEqual(outcomes, ["timeout", "timeout"]);
      assert.ok(second.some((e) => e.type === "warning" && /\(2\/2\); server killed$/.test(e.message)));
      assert.equal(srv.calls.filter((c) => c.tool === "_UserPromptSubmit").length, 2, "a killed server is not called");
      assert.equal(srv.live, undefined);
    } finally {
      await t.close();
    }
  });

  test("the new points follow the allowlist and fail open: a server not named is not called, an error injects nothing", async () => {
    const named = new FakeServer("a", ["_UserPromptSubmit"], { _UserPromptSubmit: () => text("boom", true) });
    const other = new FakeServer("b", ["_UserPromptSubmit"], { _UserPromptSubmit: () => text("never") });
    const model = recordingModel([{ text: "ok" }]);
    const t = await session([named, other], model, { MCP_HOOK_SERVERS: "a" });
    try {
      const events = await run(t.session, "go");
      assert.equal(other.calls.length, 0);
      assert.deepEqual(model.seen[0], [{ role: "user", text: "go" }]);
      assert.ok(
        events.some((e) =>
          e.type === "warning" && e.message === 'Hook "_UserPromptSubmit" of server "a" returned an error: boom'
        ),
      );
    } finally {
      await t.close();
    }
  });
});

describe("_PreCompact (SPEC 8.2)", () => {
  // A 6000-token context compacts at 4500: a 6000-byte answer puts the second prompt over it.
  const small = { SPROUT_AGENT_MAX_CONTEXT_TOKENS: "6000", SPROUT_AGENT_MAX_OUTPUT_TOKENS: "1000" };
  const long = "x".repeat(6000);
  /** The one-message history of the summary request among the model's requests. */
  const summaryText = (seen: HistoryItem[][]): string => {
    const request = seen.find((h) => h.length === 1 && h[0]!.role === "user" && h[0]!.text.startsWith("[Internal"));
    assert.ok(request !== undefined, "a summary request was sent");
    return (request[0] as { text: string }).text;
  };

  test("its text, plain or typed, reaches the summariser as JSON lines, and is never injected", async () => {
    const plain = new FakeServer("notes", ["_PreCompact"], { _PreCompact: () => text('keep "the plan"\nline two') });
    const model = recordingModel([{ text: long }, { text: "a short summary" }, { text: "done" }]);
    const systems: string[] = [];
    const complete = model.complete.bind(model);
    model.complete = (request) => (systems.push(request.system ?? ""), complete(request));
    const { registry } = await createRegistry([stdioConfig("notes")], {
      sessionId: "pre",
      connect: fakeConnect([plain]),
    });
    const config = loadConfig({ MCP_HOOK_SERVERS: "*", ...small }, () => "");
    const s = new AgentSession({
      config,
      model,
      registry,
      cwd: "/work/project",
      hooks: { typed: { _PreCompact: () => ({ additionalContext: "mention the failing test" }) } },
    });
    try {
      await run(s, "one");
      const events = await run(s, "two");
      assert.ok(events.some((e) => e.type === "compaction" && e.mode === "summary"), "a summary compaction ran");
      const [meta] = hookMetaOf(plain, "_PreCompact");
      assert.equal(meta?.["event"], "PreCompact");
      assert.equal(meta?.["prompt"], 2);
      assert.equal(meta?.["round"], 1);
      const prompt = summaryText(model.seen);
      const section = prompt.split(GUIDANCE_HEADING)[1];
      assert.ok(section !== undefined, "the guidance section is in the summary prompt");
      const lines = section.split("\n\n# Instructions")[0]!.split("\n");
      assert.deepEqual(lines.map((l) => JSON.parse(l)), [
        { hook: "_PreCompact", server: "notes", text: 'keep "the plan"\nline two' },
        { hook: "_PreCompact", server: "typed", text: "mention the failing test" },
      ]);
      assert.ok(systems.every((x) => !x.includes("the plan") && !x.includes("failing test")), "never system text");
      // Nothing of it is in the conversation: the fresh context holds the summary and the prompt.
      const last = model.seen.at(-1)!;
      assert.deepEqual(last, [{ role: "user", text: "[Context Handoff]\na short summary" }, {
        role: "user",
        text: "two",
      }]);
      const hooks = events.filter((e) => e.type === "hook" && e.hook === "_PreCompact");
      assert.deepEqual(hooks.map((e) => e.type === "hook" && [e.server, e.outcome]), [
        ["notes", "objection"],
        ["typed", "objection"],
      ]);
    } finally {
      await registry.close();
    }
  });

  test("ACP says what it did in the words of its effect; the CLI and ACP share them", () => {
    const event = {
      type: "hook",
      hook: "_PreCompact",
      server: "notes",
      outcome: "objection",
      durationMs: 1,
      text: "keep the plan\nmore",
    } as const;
    assert.deepEqual(sessionUpdates(event).updates.map((u) => (u.content as { text: string }).text), [
      '_PreCompact hook "notes" guided the summary: keep the plan\n',
    ]);
    assert.deepEqual(hookAnswerWords(HOOK_POINTS._PreCompact.effect, "x", undefined), ["guided the summary", "x"]);
  });

  test("not called before a truncation (no summaries left); a silent hook adds no guidance section", async () => {
    const srv = new FakeServer("notes", ["_PreCompact"], { _PreCompact: () => text("") });
    const model = recordingModel([{ text: long }, { text: "done" }, { text: "a summary" }, { text: "ok" }]);
    const t = await session([srv], model, { ...small, SPROUT_AGENT_MAX_HANDOFFS: "0" });
    try {
      await run(t.session, "one");
      const events = await run(t.session, "two");
      assert.ok(events.some((e) => e.type === "compaction" && e.mode === "truncation"), "a truncation ran");
      assert.equal(hookMetaOf(srv, "_PreCompact").length, 0);
    } finally {
      await t.close();
    }
    const quiet = new FakeServer("notes", ["_PreCompact"], { _PreCompact: () => text("   ") });
    const model2 = recordingModel([{ text: long }, { text: "a short summary" }, { text: "done" }]);
    const t2 = await session([quiet], model2, small);
    try {
      await run(t2.session, "one");
      await run(t2.session, "two");
      assert.equal(hookMetaOf(quiet, "_PreCompact").length, 1);
      assert.ok(!summaryText(model2.seen).includes(GUIDANCE_HEADING), "no guidance section without guidance");
    } finally {
      await t2.close();
    }
  });

  test("the allowlist, fail-open and the timeout hold: an error or a timeout guides nothing, the summary still runs", async () => {
    const broken = new FakeServer("broken", ["_PreCompact"], { _PreCompact: () => text("boom", true) });
    const slow = new FakeServer("slow", ["_PreCompact"], { _PreCompact: () => sleep(300).then(() => text("late")) });
    const hidden = new FakeServer("hidden", ["_PreCompact"], { _PreCompact: () => text("never") });
    const model = recordingModel([{ text: long }, { text: "a short summary" }, { text: "done" }]);
    const t = await session([broken, slow, hidden], model, {
      ...small,
      MCP_HOOK_SERVERS: "broken,slow",
      SPROUT_AGENT_HOOK_TIMEOUT_MS: "50",
    });
    try {
      await run(t.session, "one");
      const events = await run(t.session, "two");
      assert.ok(events.some((e) => e.type === "compaction" && e.mode === "summary"), "the summary still ran");
      assert.equal(hidden.calls.length, 0);
      assert.ok(!summaryText(model.seen).includes(GUIDANCE_HEADING));
      assert.ok(
        events.some((e) =>
          e.type === "warning" && /"_PreCompact" of server "broken" returned an error/.test(e.message)
        ),
      );
      assert.ok(
        events.some((e) =>
          e.type === "warning" && /"_PreCompact" of server "slow" timed out .*\(1\/2\)/.test(e.message)
        ),
      );
    } finally {
      await t.close();
    }
  });

  test("continue: false halts the prompt before the summary request: nothing compacted, no further model call", async () => {
    const model = recordingModel([{ text: long }, { text: "never sent" }]);
    const { registry } = await createRegistry([], { sessionId: "halt", connect: fakeConnect([]) });
    const config = loadConfig(small, () => "");
    const s = new AgentSession({
      config,
      model,
      registry,
      hooks: { guard: { _PreCompact: () => ({ continue: false, stopReason: "save first" }) } },
    });
    try {
      await run(s, "one");
      const handle = s.prompt("two");
      const events: AgentEvent[] = [];
      for await (const e of handle) events.push(e);
      const result = await handle.result;
      assert.equal(result.stopReason, "end_turn");
      assert.deepEqual(result.halt, { hook: "_PreCompact", server: "guard", reason: "save first" });
      assert.equal(model.seen.length, 1, "neither a summary nor a round was requested");
      assert.equal(events.filter((e) => e.type === "compaction").length, 0);
      assert.deepEqual(s.history.at(-1), { role: "user", text: "two" });
    } finally {
      await registry.close();
    }
  });
});
