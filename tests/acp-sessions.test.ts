/**
 * ACP sessions that outlive the agent (SPEC 12.7, issue 23, CASES C37): `session/load` replays
 * the conversation before its response, with no hook call and no model request; `session/list`
 * reads the transcripts (cursor paging, `cwd` filter); `session/resume` brings a session back
 * without a replay; each next prompt sends a history the fake Messages API accepts. The agent
 * runs as a child process spoken to in raw JSON-RPC lines (tests/helpers/acp.ts); the official
 * client's view is in tests/acp-sdk.test.ts.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeTurn, type RecordedRequest, startFakeLlm } from "../lib/testing/fake-llm.ts";
import { waitFor } from "./fixtures/mcp/helpers.ts";
import { type Message, readLog, spawnAgent, tempDir } from "./helpers/acp.ts";
import { fixtureCommand, messagesOf } from "./helpers/session.ts";

/** The agent-server fixture (tests/fixtures/agent-server-tools.ts) as an ACP `mcpServers` entry. */
function fixture(name: string, env: Record<string, string>) {
  const { command, args } = fixtureCommand();
  return { name, command, args, env: Object.entries(env).map(([k, v]) => ({ name: k, value: v })) };
}

const updatesOf = (messages: Message[], sessionId: string) =>
  messages.filter((m) => m.method === "session/update" && m.params?.sessionId === sessionId).map((m) =>
    m.params.update as Record<string, unknown>
  );

describe("acp session/load, session/list and session/resume (SPEC 12.7)", () => {
  const dir = tempDir();
  after(() => dir.cleanup());

  test("C37: load replays before its response, in order, with no hook call, no model request, no injected text", async () => {
    const sessions = join(dir.path, "c37-sessions");
    const log = join(dir.path, "c37-hooks.log");
    const responses = (request: RecordedRequest, i: number): FakeTurn => {
      void request;
      return [
        { toolCalls: [{ name: "fx__big", arguments: { bytes: 5000 } }] },
        { text: "SUMMARY-TEXT of the work so far" }, // the compaction's summary request
        { text: "All done." }, // _Stop objects once
        { text: "Really done." },
        { text: "Welcome back." }, // after the load
      ][i] ?? { text: "extra" };
    };
    const llm = await startFakeLlm({ responses });
    try {
      const env = {
        SPROUT_AGENT_PROVIDER: "anthropic",
        ANTHROPIC_API_KEY: "sk-ant-secret-key-123",
        ANTHROPIC_MODEL: "claude-test",
        ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
        SPROUT_AGENT_SESSION_DIR: sessions,
        MCP_HOOK_SERVERS: "fx",
        SPROUT_AGENT_MAX_CONTEXT_TOKENS: "6000",
        SPROUT_AGENT_MAX_OUTPUT_TOKENS: "1000",
      };
      const servers = [fixture("fx", {
        FIXTURE_LOG: log,
        FIXTURE_STOP: "OBJECTION-TEXT: one item open",
        FIXTURE_STOP_COUNT: "1",
        FIXTURE_POSTCOMPACT: "POSTCOMPACT-TEXT: the list",
      })];
      const first = spawnAgent(env);
      await first.request("initialize", { protocolVersion: 1 });
      const created = await first.request("session/new", { cwd: dir.path, mcpServers: servers });
      const id = created.result.sessionId as string;
      const prompt = await first.request("session/prompt", {
        sessionId: id,
        prompt: [{ type: "text", text: "do the task" }],
      });
      assert.equal(prompt.result?.stopReason, "end_turn", JSON.stringify(prompt));
      const lived = updatesOf(first.messages, id);
      assert.ok(lived.some((u) => JSON.stringify(u).includes("Context compacted")), "the session compacted");
      assert.ok(readLog(log).some((l) => l.includes('"_PostCompact"')), "_PostCompact ran");
      assert.equal(llm.requests.length, 4);
      first.child.kill("SIGKILL");
      await first.exited;

      const second = spawnAgent(env);
      try {
        await second.request("initialize", { protocolVersion: 1 });
        const hooksBefore = readLog(log).length;
        const from = second.messages.length;
        const loaded = await second.request("session/load", { sessionId: id, cwd: dir.path, mcpServers: servers });
        assert.deepEqual(loaded.result, {}, JSON.stringify(loaded));
        const at = second.messages.indexOf(loaded);
        const replay = updatesOf(second.messages.slice(from, at), id);
        assert.deepEqual(updatesOf(second.messages.slice(at + 1), id), [], "nothing after the response");
        assert.deepEqual(replay.map((u) => u["sessionUpdate"]), [
          "user_message_chunk",
          "tool_call",
          "tool_call_update",
          "agent_message_chunk",
          "agent_message_chunk",
        ]);
        assert.deepEqual((replay[0]!["content"] as { text: string }).text, "do the task");
        assert.deepEqual([replay[1]!["title"], replay[1]!["rawInput"]], ["fx__big", { bytes: 5000 }]);
        assert.equal(replay[2]!["status"], "completed");
        assert.equal(replay[2]!["toolCallId"], replay[1]!["toolCallId"]);
        assert.deepEqual(replay.slice(3).map((u) => (u["content"] as { text: string }).text), [
          "All done.",
          "Really done.",
        ]);
        const all = JSON.stringify(replay);
        for (const hidden of ["OBJECTION-TEXT", "POSTCOMPACT-TEXT", "SUMMARY-TEXT", "_Stop", "Context Handoff"]) {
          assert.ok(!all.includes(hidden), `the replay shows no ${hidden}`);
        }
        assert.equal(llm.requests.length, 4, "no model request during the load");
        assert.equal(readLog(log).length, hooksBefore, "no hook call during the load");

        const next = await second.request("session/prompt", {
          sessionId: id,
          prompt: [{ type: "text", text: "are you back?" }],
        });
        assert.equal(next.result?.stopReason, "end_turn", JSON.stringify(next));
        const sent = llm.requests[4]!;
        assert.equal(sent.rejected, undefined);
        const text = JSON.stringify(messagesOf(sent.body));
        assert.match(text, /SUMMARY-TEXT/, "the model's context is the compacted one");
        assert.match(text, /are you back\?/);
        assert.deepEqual(llm.requests.filter((r) => r.rejected).map((r) => r.rejected), []);
        const starts = readLog(log).slice(hooksBefore).map((l) => JSON.parse(l)).filter((c) =>
          c.tool === "_SessionStart"
        );
        assert.deepEqual(starts, [], "this fixture lists no _SessionStart; none was called during the load either");
      } finally {
        assert.equal(await second.close(), 0, second.stderr());
      }
    } finally {
      await llm.close();
    }
  });

  test("SIGKILL mid-turn, while a tool call runs: load shows the finished call completed and the running one failed as interrupted", async () => {
    const sessions = join(dir.path, "kill-sessions");
    const log = join(dir.path, "kill-fixture.log");
    const llm = await startFakeLlm({
      responses: (_r, i) =>
        i === 0
          ? {
            text: "Working on it.",
            toolCalls: [{ name: "fx__echo", arguments: { text: "first" } }, {
              name: "fx__slow",
              arguments: { ms: 60_000 },
            }],
          }
          : { text: "Picked up where I was." },
    });
    try {
      const env = {
        SPROUT_AGENT_PROVIDER: "anthropic",
        ANTHROPIC_API_KEY: "sk-ant-secret-key-123",
        ANTHROPIC_MODEL: "claude-test",
        ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
        SPROUT_AGENT_SESSION_DIR: sessions,
      };
      const servers = [fixture("fx", { FIXTURE_LOG: log })];
      const first = spawnAgent(env);
      await first.request("initialize", { protocolVersion: 1 });
      const id = (await first.request("session/new", { cwd: dir.path, mcpServers: servers })).result
        .sessionId as string;
      first.send({
        jsonrpc: "2.0",
        id: 77,
        method: "session/prompt",
        params: { sessionId: id, prompt: [{ type: "text", text: "start the work" }] },
      });
      // The echo has ended (its completed update is out) and the slow call runs: kill now.
      await first.waitFor((m) =>
        m.params?.update?.sessionUpdate === "tool_call_update" && m.params.update.status === "completed"
      );
      // Polled: the fixture may log the slow call after the last message the agent sends before
      // the kill (first.waitFor looks again only when a message arrives; it waited 30 s once).
      assert.ok(await waitFor(() => readLog(log).some((l) => l.includes('"slow"')), 20_000), "the slow call started");
      first.child.kill("SIGKILL");
      await first.exited;

      const second = spawnAgent(env);
      try {
        await second.request("initialize", { protocolVersion: 1 });
        const from = second.messages.length;
        const loaded = await second.request("session/load", { sessionId: id, cwd: dir.path, mcpServers: servers });
        assert.deepEqual(loaded.result, {}, JSON.stringify(loaded));
        const replay = updatesOf(second.messages.slice(from, second.messages.indexOf(loaded)), id);
        assert.deepEqual(replay.map((u) => [u["sessionUpdate"], u["title"] ?? u["status"] ?? ""]), [
          ["user_message_chunk", ""],
          ["agent_message_chunk", ""],
          ["tool_call", "fx__echo"],
          ["tool_call_update", "completed"],
          ["tool_call", "fx__slow"],
          ["tool_call_update", "failed"],
        ]);
        assert.match(JSON.stringify(replay[5]), /interrupted: the agent stopped before this tool call returned/);
        const next = await second.request("session/prompt", {
          sessionId: id,
          prompt: [{ type: "text", text: "go on" }],
        });
        assert.equal(next.result?.stopReason, "end_turn", JSON.stringify(next));
        assert.equal(llm.requests.length, 2);
        assert.match(JSON.stringify(messagesOf(llm.requests[1]!.body)), /first.*interrupted.*go on/);
        assert.deepEqual(llm.requests.filter((r) => r.rejected).map((r) => r.rejected), []);
      } finally {
        assert.equal(await second.close(), 0, second.stderr());
      }
    } finally {
      await llm.close();
    }
  });

  test("list pages newest first by cursor and filters by cwd; resume replays nothing; a held session is refused", async () => {
    const sessions = join(dir.path, "list-sessions");
    mkdirSync(sessions, { recursive: true });
    // Transcripts are files: 51 written here, as other processes would leave them.
    for (let i = 0; i < 51; i++) {
      const id = `ses_${String(i).padStart(4, "0")}`;
      const at = new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString();
      const records = [
        {
          type: "session",
          at,
          version: 1,
          id,
          cwd: i % 2 === 0 ? "/work/even" : "/work/odd",
          title: `task ${i}`,
          agent: "sprout-agent/x",
        },
        {
          type: "items",
          at,
          items: [{ role: "user", text: `task ${i}` }, { role: "assistant", text: `done ${i}`, toolCalls: [] }],
        },
      ];
      writeFileSync(join(sessions, `${id}.jsonl`), records.map((r) => `${JSON.stringify(r)}\n`).join(""));
    }
    const llm = await startFakeLlm({ responses: (_r, i) => ({ text: `answer ${i}` }) });
    const agent = spawnAgent({
      SPROUT_AGENT_PROVIDER: "anthropic",
      ANTHROPIC_API_KEY: "sk-ant-secret-key-123",
      ANTHROPIC_MODEL: "claude-test",
      ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
      SPROUT_AGENT_SESSION_DIR: sessions,
    });
    try {
      const init = await agent.request("initialize", { protocolVersion: 1 });
      assert.equal(init.result.agentCapabilities.loadSession, true);
      const page1 = await agent.request("session/list", {});
      assert.equal(page1.result.sessions.length, 50);
      assert.equal(typeof page1.result.nextCursor, "string");
      const page2 = await agent.request("session/list", { cursor: page1.result.nextCursor });
      assert.equal(page2.result.sessions.length, 1);
      assert.equal(page2.result.nextCursor, undefined);
      const ids = [...page1.result.sessions, ...page2.result.sessions].map((s: { sessionId: string }) => s.sessionId);
      assert.equal(new Set(ids).size, 51);
      // The files' modification times are the writes' (all within this second): order is the store's.
      assert.deepEqual(Object.keys(page1.result.sessions[0]).sort(), ["cwd", "sessionId", "title", "updatedAt"]);
      const odd = await agent.request("session/list", { cwd: "/work/odd" });
      assert.equal(odd.result.sessions.length, 25);
      assert.ok(odd.result.sessions.every((s: { cwd: string }) => s.cwd === "/work/odd"));
      const bad = await agent.request("session/list", { cursor: "not-a-cursor" });
      assert.equal(bad.error?.code, -32602);

      const from = agent.messages.length;
      const resumed = await agent.request("session/resume", {
        sessionId: "ses_0007",
        cwd: "/work/odd",
        mcpServers: [],
      });
      assert.deepEqual(resumed.result, {}, JSON.stringify(resumed));
      assert.deepEqual(updatesOf(agent.messages.slice(from), "ses_0007"), [], "resume replays nothing");
      const again = await agent.request("session/load", { sessionId: "ses_0007", cwd: "/work/odd", mcpServers: [] });
      assert.equal(again.error?.code, -32602);
      assert.match(again.error.message, /already open/);
      const prompt = await agent.request("session/prompt", {
        sessionId: "ses_0007",
        prompt: [{ type: "text", text: "and now?" }],
      });
      assert.equal(prompt.result?.stopReason, "end_turn");
      const texts = JSON.stringify(messagesOf(llm.requests.at(-1)!.body));
      assert.match(texts, /task 7.*done 7.*and now\?/);
      const unknown = await agent.request("session/load", { sessionId: "ses_nope", cwd: "/work/odd", mcpServers: [] });
      assert.equal(unknown.error?.code, -32000);
      assert.match(unknown.error.message, /No session "ses_nope" in /);

      // Another process holding a session: this one refuses to load it.
      const other = spawnAgent({
        SPROUT_AGENT_PROVIDER: "anthropic",
        ANTHROPIC_API_KEY: "sk-ant-secret-key-123",
        ANTHROPIC_MODEL: "claude-test",
        ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
        SPROUT_AGENT_SESSION_DIR: sessions,
      });
      try {
        await other.request("initialize", { protocolVersion: 1 });
        const held = await other.request("session/load", { sessionId: "ses_0007", cwd: "/work/odd", mcpServers: [] });
        assert.equal(held.error?.code, -32000);
        assert.match(held.error.message, /Session "ses_0007" is in use by process \d+/);
      } finally {
        await other.close();
      }
      assert.deepEqual(llm.requests.filter((r) => r.rejected).map((r) => r.rejected), []);
    } finally {
      assert.equal(await agent.close(), 0, agent.stderr());
      await llm.close();
    }
  });

  test("with SPROUT_AGENT_SESSION_DIR=off nothing is saved and load, list and resume are not offered", async () => {
    const agent = spawnAgent({
      SPROUT_AGENT_PROVIDER: "scripted",
      SPROUT_AGENT_SCRIPT: dir.file("empty.json", "[]"),
      SPROUT_AGENT_SESSION_DIR: "off",
    });
    try {
      const init = await agent.request("initialize", { protocolVersion: 1 });
      assert.equal(init.result?.agentCapabilities?.loadSession, false, JSON.stringify(init) + agent.stderr());
      assert.deepEqual(init.result.agentCapabilities.sessionCapabilities, { close: {} });
      for (const method of ["session/load", "session/list", "session/resume"]) {
        const reply = await agent.request(method, { sessionId: "ses_x", cwd: "/work", mcpServers: [] });
        assert.equal(reply.error?.code, -32601, method);
      }
    } finally {
      await agent.close();
    }
  });
});
