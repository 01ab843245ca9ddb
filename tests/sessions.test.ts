/**
 * Durable transcripts (SPEC section 12, issue 23), in-process: the records and their restore
 * (lib/sessions/records.ts), the file store (lib/sessions/file-store.ts) with its locks, modes,
 * damaged files and index-free list, and `createAgent({sessionStore, resume})` bringing a
 * session back with its history, counters and `_SessionStart` `source`. The CLI and ACP are
 * tested end to end in tests/sessions-cli.test.ts and tests/acp-sessions.test.ts.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import * as z from "zod";
import { createAgent } from "../lib/agent/agent.ts";
import { AgentError } from "../lib/util/errors.ts";
import type { HistoryItem } from "../lib/conversation/types.ts";
import type { InProcessTransport } from "../lib/mcp/in-process.ts";
import type { HookCall } from "../lib/hooks/runner.ts";
import { defaultSessionDir, fileSessionStore } from "../lib/sessions/file-store.ts";
import { memorySessionStore } from "../lib/sessions/memory-store.ts";
import {
  INTERRUPTED_RESULT,
  parseRecords,
  repairHistory,
  restoreSession,
  type SessionRecord,
} from "../lib/sessions/records.ts";
import { historyProblems } from "./helpers/history.ts";
import { messagesOf } from "./helpers/session.ts";
import { startFakeLlm } from "../lib/testing/fake-llm.ts";
import { recordingModel } from "./helpers/recording-model.ts";

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "sprout-sessions-"));
  dirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** An SDK server with `read {path}` (answers at once) and `hang` (answers when `release` is called). */
function toolServer(release: { fn?: () => void } = {}) {
  return (transport: InProcessTransport) =>
    serveStdio(() => {
      const server = new McpServer({ name: "fs", version: "1.0.0" }, { capabilities: { tools: {} } });
      server.registerTool(
        "read",
        { description: "Reads", inputSchema: z.object({ path: z.string() }) },
        (args) => ({ content: [{ type: "text" as const, text: `contents of ${args.path}` }] }),
      );
      server.registerTool("hang", { description: "Waits", inputSchema: z.object({}) }, () =>
        new Promise((resolve) => {
          release.fn = () => resolve({ content: [{ type: "text" as const, text: "released" }] });
        }));
      return server;
    }, { transport });
}

async function drain(run: AsyncIterable<unknown> & { result: Promise<unknown> }) {
  for await (const _ of run) { /* events */ }
  return await run.result;
}

const at = "2026-12-03T00:00:00.000Z";

describe("restoreSession and repairHistory (SPEC 12.2)", () => {
  test("items append, results land after their call in call order, context replaces, state sets the counters", () => {
    const call = (id: string) => ({ id, name: "fs__read", arguments: {} });
    const tool = (id: string, text: string): Extract<HistoryItem, { role: "tool" }> => ({
      role: "tool",
      toolCallId: id,
      content: [{ type: "text", text }],
      isError: false,
    });
    const records: SessionRecord[] = [
      { type: "session", at, version: 1, id: "s", cwd: "/p", title: "go", agent: "sprout-agent/x" },
      { type: "items", at, items: [{ role: "user", text: "go" }] },
      { type: "items", at, items: [{ role: "assistant", text: "", toolCalls: [call("a"), call("b"), call("c")] }] },
      { type: "result", at, item: tool("c", "third") },
      { type: "result", at, item: tool("a", "first") },
      {
        type: "state",
        at,
        stopRejections: 2,
        prompts: 1,
        originalTask: "go",
        handoffs: 1,
        permissions: { x: "allow" },
      },
    ];
    const back = restoreSession(records);
    assert.deepEqual(
      back.history.map((i) =>
        i.role === "tool" ? `${i.toolCallId}:${i.content[0]?.type === "text" ? i.content[0].text : ""}` : i.role
      ),
      [
        "user",
        "assistant",
        "a:first",
        `b:${INTERRUPTED_RESULT}`,
        "c:third",
      ],
    );
    assert.equal((back.history[3] as { isError: boolean }).isError, true);
    assert.deepEqual(historyProblems(back.history), []);
    assert.deepEqual(back.counters, {
      stopRejections: 2,
      prompts: 1,
      originalTask: "go",
      handoffs: 1,
      permissions: { x: "allow" },
    });
    assert.match(back.warnings.join("\n"), /1 tool call had no result: answered as interrupted/);
    const replaced = restoreSession([...records, {
      type: "context",
      at,
      reason: "compaction",
      items: [{ role: "user", text: "[Context Handoff]\nsummary" }],
    }]);
    assert.deepEqual(replaced.history, [{ role: "user", text: "[Context Handoff]\nsummary" }]);
  });

  test("a result without its call and a second result for one call are dropped", () => {
    const history: HistoryItem[] = [
      { role: "tool", toolCallId: "ghost", content: [{ type: "text", text: "x" }], isError: false },
      { role: "user", text: "go" },
      { role: "assistant", text: "", toolCalls: [{ id: "a", name: "t", arguments: {} }] },
      { role: "tool", toolCallId: "a", content: [{ type: "text", text: "one" }], isError: false },
      { role: "tool", toolCallId: "a", content: [{ type: "text", text: "two" }], isError: false },
    ];
    const { history: out, warnings } = repairHistory(history);
    assert.deepEqual(out.map((i) => i.role), ["user", "assistant", "tool"]);
    assert.deepEqual(historyProblems(out), []);
    assert.match(warnings.join("\n"), /without its call \(ghost\)/);
  });

  test("records of the wrong shape are skipped with a warning: the history stays valid, nothing throws", () => {
    const good = (text: string): SessionRecord => ({ type: "items", at, items: [{ role: "user", text }] });
    const bad = [
      { type: "items", at, items: "x" },
      { type: "items", at, items: [{ role: "weird" }] },
      { type: "items", at, items: [{ role: "assistant", text: "", toolCalls: [{ id: 1 }] }] },
      { type: "context", at, reason: "compaction", items: null },
      { type: "result", at, item: { role: "tool", toolCallId: "a", content: [], isError: false } },
      { type: "state", at, stopRejections: -1, prompts: 0, handoffs: 0, permissions: null },
      { type: "session", at, id: 5 },
      42,
    ] as unknown as SessionRecord[];
    const call = { id: "dup", name: "t", arguments: {} };
    const back = restoreSession([
      good("one"),
      ...bad,
      {
        type: "items",
        at,
        items: [{ role: "assistant", text: "", toolCalls: [call] }, { role: "assistant", text: "", toolCalls: [call] }],
      },
      { type: "items", at, items: [{ role: "assistant", text: " ", toolCalls: [] }] },
      good("two"),
    ]);
    assert.equal(back.warnings.filter((w) => w.endsWith(": skipped")).length, bad.length);
    const repaired = repairHistory([
      { role: "assistant", text: "stray", toolCalls: [] },
      { role: "user", text: "  " },
      { role: "user", text: "go" },
      {
        role: "assistant",
        text: "",
        toolCalls: [{ id: "a", name: "t", arguments: {} }, { id: "a", name: "t", arguments: {} }],
      },
    ]);
    assert.deepEqual(historyProblems(repaired.history), []);
    assert.deepEqual(repaired.history.map((i) => i.role), ["user", "assistant", "tool"]);
    assert.deepEqual(historyProblems(back.history), []);
    assert.deepEqual(back.history.map((i) => i.role), ["user", "assistant", "tool", "user"]);
    assert.deepEqual(back.counters, { stopRejections: 0, prompts: 0, handoffs: 0, permissions: {} });
  });

  test("parseRecords skips a damaged line and a cut last line, naming them, and never throws", () => {
    const good = JSON.stringify({ type: "items", at, items: [{ role: "user", text: "hi" }] });
    const cut = '{"type":"items","at":"x","items":[{"ro';
    const read = parseRecords(`${good}\n{not json\n${good}\n${cut}`, 'session "s"');
    assert.equal(read.records.length, 2);
    assert.deepEqual(read.warnings, [
      'session "s": line 2 is not a JSON record: skipped',
      `session "s": its last line was cut short (${cut.length} characters): skipped`,
    ]);
  });
});

describe("fileSessionStore (SPEC 12.1)", () => {
  test("the default folder follows XDG_STATE_HOME, then HOME; relative values are ignored", () => {
    assert.equal(defaultSessionDir({ XDG_STATE_HOME: "/s", HOME: "/h" }, "linux"), "/s/sprout-agent/sessions");
    assert.equal(
      defaultSessionDir({ XDG_STATE_HOME: "rel", HOME: "/h/" }, "linux"),
      "/h/.local/state/sprout-agent/sessions",
    );
    assert.equal(
      defaultSessionDir({ LOCALAPPDATA: "C:\\Users\\me\\AppData\\Local" }, "win32"),
      "C:\\Users\\me\\AppData\\Local\\sprout-agent\\sessions",
    );
    assert.equal(defaultSessionDir({}, "linux"), undefined);
  });

  test("a session is one file, written as it goes, owner-only, listed from itself, claimed by one writer", async () => {
    const dir = join(tempDir(), "nested", "sessions");
    const store = fileSessionStore({ dir });
    const model = recordingModel([{ toolCalls: [{ id: "toolu_1", name: "fs__read", arguments: { path: "a.txt" } }] }, {
      text: "done",
    }]);
    const agent = await createAgent({
      model,
      sessionStore: store,
      sessionId: "one",
      inProcessServers: { fs: toolServer() },
      cwd: "/work/p",
    });
    await assert.rejects(
      store.claim("one", { existing: true }),
      (e: unknown) =>
        e instanceof AgentError && e.code === "session" && /Session "one" is in use by process \d+/.test(e.message),
    );
    await drain(agent.prompt("read a.txt"));
    const text = readFileSync(join(dir, "one.jsonl"), "utf8");
    const types = text.trim().split("\n").map((l) => (JSON.parse(l) as { type: string }).type);
    assert.deepEqual(types.slice(0, 2), ["session", "items"]);
    assert.ok(types.includes("result") && types.at(-1) === "end", types.join(","));
    if (process.platform !== "win32") {
      assert.equal(statSync(join(dir, "one.jsonl")).mode & 0o777, 0o600);
      assert.equal(statSync(join(dir, "one.lock")).mode & 0o777, 0o600);
      assert.equal(statSync(dir).mode & 0o777, 0o700);
    }
    const { sessions } = await store.list();
    assert.equal(sessions.length, 1);
    assert.deepEqual({ ...sessions[0], updated: "", created: "" }, {
      id: "one",
      cwd: "/work/p",
      title: "read a.txt",
      created: "",
      updated: "",
      bytes: Buffer.byteLength(text),
    });
    await agent.close();
    assert.deepEqual(readdirSync(dir), ["one.jsonl"], "the lock is gone once the agent closes");
  });

  test("a lock left by a process that is gone is taken over; one of a live process refuses", async () => {
    const dir = tempDir();
    const store = fileSessionStore({ dir, host: "here" });
    writeFileSync(
      join(dir, "s.jsonl"),
      `${JSON.stringify({ type: "items", at, items: [{ role: "user", text: "x" }] })}\n`,
    );
    // A pid far above any pid_max: no such process.
    writeFileSync(join(dir, "s.lock"), JSON.stringify({ pid: 2 ** 30, host: "here", at }));
    const writer = await store.claim("s", { existing: true });
    await writer.close();
    writeFileSync(join(dir, "s.lock"), JSON.stringify({ pid: process.pid, host: "here", at }));
    await assert.rejects(store.claim("s", { existing: true }), /is in use by process/);
    writeFileSync(join(dir, "s.lock"), JSON.stringify({ pid: 2 ** 30, host: "elsewhere", at }));
    await assert.rejects(
      store.claim("s", { existing: true }),
      /on elsewhere/,
      "another host's lock is never judged from here",
    );
  });

  test("a resume after a cut-short last line writes on a new line: the next prompt is never swallowed", async () => {
    const dir = tempDir();
    const store = fileSessionStore({ dir });
    const first = await createAgent({ model: recordingModel([{ text: "one" }]), sessionStore: store, cwd: "/p" });
    await drain(first.prompt("first"));
    await first.close();
    const file = join(dir, `${first.sessionId}.jsonl`);
    const text = readFileSync(file, "utf8");
    writeFileSync(file, `${text}{"type":"items","at":"x","items":[{"ro`); // a kill mid-write
    for (const prompt of ["second", "third"]) {
      const model = recordingModel([{ text: "ok" }]);
      const agent = await createAgent({ model, sessionStore: store, resume: first.sessionId });
      await drain(agent.prompt(prompt));
      await agent.close();
      assert.deepEqual(historyProblems(model.seen[0]!), []);
    }
    const back = restoreSession(parseRecords(readFileSync(file, "utf8"), "t").records);
    assert.deepEqual(back.history.filter((i) => i.role === "user").map((i) => (i as { text: string }).text), [
      "first",
      "second",
      "third",
    ]);
  });

  test("a takeover in progress refuses a second one; folder failures are AgentError config naming the folder", async () => {
    const dir = tempDir();
    const store = fileSessionStore({ dir, host: "here" });
    writeFileSync(
      join(dir, "s.jsonl"),
      `${JSON.stringify({ type: "items", at, items: [{ role: "user", text: "x" }] })}\n`,
    );
    writeFileSync(join(dir, "s.lock"), JSON.stringify({ pid: 2 ** 30, host: "here", at }));
    writeFileSync(join(dir, "s.lock.takeover"), "another process is taking it over");
    await assert.rejects(
      store.claim("s", { existing: true }),
      (e: unknown) =>
        e instanceof AgentError && e.code === "session" && /being claimed by another process/.test(e.message),
    );
    rmSync(join(dir, "s.lock.takeover"));
    const writer = await store.claim("s", { existing: true });
    await writer.close();
    assert.deepEqual(readdirSync(dir).sort(), ["s.jsonl"]);
    const file = join(dir, "s.jsonl");
    const broken = fileSessionStore({ dir: join(file, "sub") });
    for (const attempt of [broken.list(), broken.claim("a", { existing: false }), broken.read("a")]) {
      await assert.rejects(
        attempt,
        (e: unknown) =>
          e instanceof AgentError && e.code === "config" && /Cannot use the sessions folder .*sub/.test(e.message),
      );
    }
  });

  test("bad ids, unknown ids and an id that has a transcript are refused with code session", async () => {
    const store = fileSessionStore({ dir: tempDir() });
    for (
      const [id, existing, pattern] of [
        ["../etc/passwd", true, /Invalid session id/],
        ["nope", true, /No session "nope" in /],
      ] as const
    ) {
      await assert.rejects(
        store.claim(id, { existing }),
        (e: unknown) => e instanceof AgentError && e.code === "session" && pattern.test(e.message),
      );
    }
    const w = await store.claim("x", { existing: false });
    await w.append([{ type: "items", at, items: [{ role: "user", text: "hi" }] }]);
    await w.close();
    await assert.rejects(store.claim("x", { existing: false }), /already has a transcript/);
  });

  test("C35: no index to lose; an unusual first record, a damaged file and a cut tail hide nothing", async () => {
    const dir = tempDir();
    const store = fileSessionStore({ dir });
    const ids: string[] = [];
    for (const prompt of ["first task", "second task", "third task"]) {
      const agent = await createAgent({
        model: recordingModel([{ text: `did ${prompt}` }]),
        sessionStore: store,
        cwd: "/work/p",
      });
      ids.push(agent.sessionId);
      await drain(agent.prompt(prompt));
      await agent.close();
    }
    // Another agent's leftovers beside the transcripts, which a lookup must not rely on.
    writeFileSync(join(dir, "index.json"), "{broken");
    // One transcript starts with a record type this version does not know, then its session record.
    const unusual = join(dir, `${ids[1]}.jsonl`);
    writeFileSync(
      unusual,
      `${JSON.stringify({ type: "x-future", at })}\n${readFileSync(unusual, "utf8")}{"type":"items","at":"${at}","ite`,
    );
    writeFileSync(join(dir, "damaged.jsonl"), "\u0000\u0001 not json at all");
    const { sessions, warnings } = await store.list();
    assert.deepEqual(warnings, []);
    assert.deepEqual(new Set(sessions.map((s) => s.id)), new Set([...ids, "damaged"]));
    const byId = new Map(sessions.map((s) => [s.id, s]));
    assert.equal(byId.get(ids[1]!)?.title, "second task");
    assert.equal(byId.get(ids[1]!)?.problem, undefined);
    assert.match(byId.get("damaged")?.problem ?? "", /not a JSON record|cut short/);
    for (const [i, id] of ids.entries()) {
      const model = recordingModel([{ text: "again" }]);
      const warned: string[] = [];
      const agent = await createAgent({ model, sessionStore: store, resume: id, onWarning: (m) => warned.push(m) });
      await drain(agent.prompt("and again"));
      await agent.close();
      const sent = model.seen[0]!;
      assert.deepEqual(sent.filter((h) => h.role === "user").map((h) => (h as { text: string }).text), [
        ["first task", "second task", "third task"][i],
        "and again",
      ]);
      assert.deepEqual(historyProblems(sent), []);
      if (i === 1) assert.match(warned.join("\n"), /its last line was cut short/);
    }
  });
});

describe("createAgent resume (SPEC 12.4, 12.5)", () => {
  test("a transcript without its session record gets one on its resume, so it lists with its folder and title", async () => {
    const dir = tempDir();
    const store = fileSessionStore({ dir });
    writeFileSync(
      join(dir, "bare.jsonl"),
      `${JSON.stringify({ type: "items", at, items: [{ role: "user", text: "old task" }] })}\n`,
    );
    assert.equal((await store.list()).sessions[0]?.cwd, "");
    const agent = await createAgent({
      model: recordingModel([{ text: "ok" }]),
      sessionStore: store,
      resume: "bare",
      cwd: "/work/p",
    });
    await drain(agent.prompt("go on"));
    await agent.close();
    const [info] = (await store.list()).sessions;
    assert.deepEqual([info?.id, info?.cwd, info?.title, info?.problem], ["bare", "/work/p", "old task", undefined]);
  });

  test("C36: run, resume and prompt, resume again and prompt: one transcript, every prompt in order", async () => {
    const store = fileSessionStore({ dir: tempDir() });
    const first = await createAgent({ model: recordingModel([{ text: "answer 1" }]), sessionStore: store });
    const id = first.sessionId;
    await drain(first.prompt("prompt 1"));
    const before = structuredClone([...first.history]);
    await first.close();
    const second = await createAgent({
      model: recordingModel([{ text: "answer 2" }]),
      sessionStore: store,
      resume: id,
    });
    assert.equal(second.sessionId, id);
    assert.deepEqual(second.history, before, "the history comes back exactly as it was");
    await drain(second.prompt("prompt 2"));
    await second.close();
    const model = recordingModel([{ text: "answer 3" }]);
    const third = await createAgent({ model, sessionStore: store, resume: id });
    await drain(third.prompt("prompt 3"));
    await third.close();
    const texts = model.seen[0]!.map((h) =>
      h.role === "user" ? `u:${h.text}` : h.role === "assistant" ? `a:${h.text}` : h.role
    );
    assert.deepEqual(texts, ["u:prompt 1", "a:answer 1", "u:prompt 2", "a:answer 2", "u:prompt 3"]);
    assert.deepEqual((await store.list()).sessions.map((s) => s.id), [id], "one session is one transcript");
  });

  test("a call still running when the process stops comes back answered as interrupted; finished ones keep their results", async () => {
    const store = memorySessionStore();
    const release: { fn?: () => void } = {};
    const model = recordingModel([{
      toolCalls: [
        { id: "toolu_a", name: "fs__read", arguments: { path: "a" } },
        { id: "toolu_b", name: "fs__hang", arguments: {} },
      ],
    }, { text: "done" }]);
    const agent = await createAgent({ model, sessionStore: store, inProcessServers: { fs: toolServer(release) } });
    const run = agent.prompt("go");
    const events: string[] = [];
    for await (const event of run) {
      events.push(event.type);
      // The read has ended and the hang runs: what the store holds is what a SIGKILL now leaves.
      if (event.type === "tool-end") break;
    }
    await new Promise((r) => setTimeout(r, 20));
    const read = (await store.read(agent.sessionId))!;
    const back = restoreSession(read.records);
    assert.deepEqual(historyProblems(back.history), []);
    const results = back.history.filter((h) => h.role === "tool") as Extract<HistoryItem, { role: "tool" }>[];
    assert.deepEqual(results.map((r) => [r.toolCallId, r.content[0]?.type === "text" ? r.content[0].text : ""]), [
      ["toolu_a", "contents of a"],
      ["toolu_b", INTERRUPTED_RESULT],
    ]);
    release.fn?.();
    await run.result;
    await agent.close();
  });

  test("the counters come back: the _Stop budget, the summaries, the always answers; _SessionStart says resume", async () => {
    const store = memorySessionStore();
    const sources: unknown[] = [];
    const hooks = {
      policy: {
        _SessionStart: (ctx: HookCall) => {
          sources.push([ctx.source, ctx.prompt]);
          return "";
        },
        _Stop: () => "not yet",
      },
    };
    const first = await createAgent({
      model: recordingModel([{ text: "a" }, { text: "b" }]),
      sessionStore: store,
      hooks,
      stopMaxRejections: 2,
    });
    await drain(first.prompt("one"));
    await first.close();
    const model = recordingModel([{ text: "c" }, { text: "d" }]);
    const events: unknown[] = [];
    const second = await createAgent({
      model,
      sessionStore: store,
      resume: first.sessionId,
      hooks,
      stopMaxRejections: 2,
      onEvent: (e) => events.push(e),
    });
    assert.deepEqual(sources, [["startup", 0]], "a resumed session calls no hook before its first prompt");
    const result = await drain(second.prompt("two")) as { objections: number };
    await second.close();
    assert.deepEqual(sources, [["startup", 0], ["resume", 1]]);
    assert.equal(result.objections, 1, "one objection was left of the budget of 2");
  });

  test("Anthropic thinking and unknown blocks come back byte-identical, signatures included, and the API accepts them", async () => {
    const llm = await startFakeLlm({
      responses: [
        {
          thinking: "Read the file first.",
          blocks: [{ type: "future_block_type", payload: { nested: [1, "two", null] } }],
          text: "Reading.",
          toolCalls: [{ id: "toolu_01A", name: "fs__read", arguments: { path: "a" } }],
        },
        { text: "It says contents of a." },
        { text: "Still the same." },
      ],
    });
    try {
      const store = fileSessionStore({ dir: tempDir() });
      const model = {
        provider: "anthropic" as const,
        apiKey: "sk-ant-k",
        model: "claude-test",
        baseUrl: llm.anthropicBaseUrl,
        thinkingBudgetTokens: 1024,
      };
      const common = { model, sessionStore: store, inProcessServers: { fs: toolServer() }, maxOutputTokens: 4096 };
      const first = await createAgent(common);
      await drain(first.prompt("read a"));
      await first.close();
      const second = await createAgent({ ...common, resume: first.sessionId });
      await drain(second.prompt("and now?"));
      await second.close();
      assert.equal(llm.requests.length, 3);
      assert.deepEqual(llm.requests.map((r) => r.rejected), [undefined, undefined, undefined]);
      const assistant = (i: number) =>
        JSON.stringify(messagesOf(llm.requests[i]!.body).filter((m) => m["role"] === "assistant")[0]);
      assert.match(assistant(1), /"signature":/);
      assert.equal(assistant(2), assistant(1), "the resumed request resends the blocks exactly");
    } finally {
      await llm.close();
    }
  });

  test("an always answer holds after a resume: the tool runs without asking again", async () => {
    const store = memorySessionStore();
    const read = { toolCalls: [{ id: "toolu_r", name: "fs__read", arguments: { path: "a" } }] };
    const asked: string[] = [];
    const first = await createAgent({
      model: recordingModel([read, { text: "read it" }]),
      sessionStore: store,
      inProcessServers: { fs: toolServer() },
      permissions: { ask: ["fs__read"] },
      requestPermission: (request) => {
        asked.push(request.call.name);
        return Promise.resolve("allow_always");
      },
    });
    await drain(first.prompt("read a"));
    await first.close();
    assert.deepEqual(asked, ["fs__read"]);
    const model = recordingModel([read, { text: "read it again" }]);
    const second = await createAgent({
      model,
      sessionStore: store,
      resume: first.sessionId,
      inProcessServers: { fs: toolServer() },
      permissions: { ask: ["fs__read"] },
      requestPermission: (request) => {
        asked.push(request.call.name);
        return Promise.resolve("reject_once");
      },
    });
    await drain(second.prompt("read a again"));
    await second.close();
    assert.deepEqual(asked, ["fs__read"], "not asked again");
    const last = model.seen[1]!.at(-1) as Extract<HistoryItem, { role: "tool" }>;
    assert.deepEqual(last.content, [{ type: "text", text: "contents of a" }]);
  });

  test("credentials the agent holds are never written: a header value from its configuration is redacted", async () => {
    const store = memorySessionStore();
    const token = "tok-5f3e9a8b7c6d";
    const agent = await createAgent({
      model: recordingModel([{ text: `the header said Bearer ${token}, and ${token} again` }]),
      sessionStore: store,
      // Never reached (nothing listens on port 9): it only gives the agent a credential to hold.
      mcpServers: [{
        name: "remote",
        transport: { type: "http", url: "http://127.0.0.1:9/mcp", headers: { Authorization: `Bearer ${token}` } },
      }],
      mcpInitTimeoutMs: 2000,
    });
    await drain(agent.prompt(`is ${token} valid?`));
    await agent.close();
    const text = JSON.stringify(await store.read(agent.sessionId));
    assert.ok(!text.includes(token), text);
    assert.match(text, /\[redacted\]/);
  });

  test("resume with another sessionId, or of an unknown id, is refused; sessionStore false writes nothing", async () => {
    const store = memorySessionStore();
    await assert.rejects(
      createAgent({ model: recordingModel([]), sessionStore: store, resume: "a", sessionId: "b" }),
      /Invalid sessionId: "b" differs from resume \("a"\)/,
    );
    await assert.rejects(
      createAgent({ model: recordingModel([]), sessionStore: store, resume: "nope" }),
      (e: unknown) => e instanceof AgentError && e.code === "session" && /No session "nope" in memory/.test(e.message),
    );
    const agent = await createAgent({ model: recordingModel([{ text: "x" }]), sessionStore: false });
    await drain(agent.prompt("hi"));
    await agent.close();
    assert.deepEqual((await store.list()).sessions, []);
  });
});
