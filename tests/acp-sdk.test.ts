// deno-lint-ignore-file require-await
/**
 * `cli.ts acp` driven by the official ACP client (`@agentclientprotocol/sdk`, its `client()`
 * app over the agent's stdio: the SDK's replacement of `ClientSideConnection`), with the
 * scripted model and real MCP servers (the ACP fixture over stdio and over Streamable HTTP).
 */
import { realpathSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import * as acp from "@agentclientprotocol/sdk";
import { eventually, fixtureFile, readLog, startHttpFixture, stdioFixture, tempDir } from "./helpers/acp.ts";
import { startAcpClient } from "./helpers/acp-client.ts";
import { repoRoot, runtime, tsCommand } from "./helpers/runtime.ts";

type Update = acp.SessionUpdate;

/** The `tools/call`s of `tool` that tests/fixtures/agent-server.ts logged to `file` (not its hooks' calls, whose `_meta` names the tool too). */
const toolCalls = (file: string, tool: string): { tool: string; args: unknown }[] =>
  readLog(file).map((l) => JSON.parse(l)).filter((e) => e.tool === tool);

/** The agent as a child process (`cli.ts acp ARGS…`), connected to an SDK client (`setup` adds its handlers). */
const startAgent = startAcpClient;

/** Reads a session's updates until its prompt stops. */
async function collect(session: acp.ActiveSession, onUpdate?: (u: Update) => void | Promise<void>) {
  const updates: Update[] = [];
  while (true) {
    const message = await session.nextUpdate();
    if (message.kind === "stop") return { updates, stopReason: message.stopReason };
    updates.push(message.update);
    await onUpdate?.(message.update);
  }
}

const texts = (updates: Update[], kind: "agent_message_chunk" | "agent_thought_chunk") =>
  updates.filter((u) => u.sessionUpdate === kind).map((u) => (u as { content: { text: string } }).content.text).join(
    "",
  );

describe("acp with the SDK client: a session with stdio and HTTP MCP servers", () => {
  const dir = tempDir();
  const localLog = `${dir.path}/local.log`;
  const remoteLog = `${dir.path}/remote.log`;
  const script = dir.file(
    "script.json",
    JSON.stringify([
      {
        text: "Let me check.",
        toolCalls: [{ name: "local_files__echo", arguments: { text: "hi" } }, {
          name: "local_files__nope",
          arguments: {},
        }],
      },
      { text: "All done." },
      { text: "Finished after the objection." },
      { toolCalls: [{ name: "remote__slow", arguments: { ms: 30000 } }] },
      { text: "Back after the cancel." },
    ]),
  );
  let http: Awaited<ReturnType<typeof startHttpFixture>>;
  let agent: Awaited<ReturnType<typeof startAgent>>;
  let session: acp.ActiveSession;

  before(async () => {
    http = await startHttpFixture({ ACP_FIXTURE_LOG: remoteLog, FIXTURE_LABEL: "remote", STOP_OBJECTIONS: "1" });
    agent = await startAgent({
      SPROUT_AGENT_PROVIDER: "scripted",
      SPROUT_AGENT_SCRIPT: script,
      MCP_HOOK_SERVERS: "local_files, remote",
    });
  });
  after(async () => {
    try {
      if (agent !== undefined) assert.equal(await agent.stop(), 0, agent.stderr());
    } finally {
      await http?.stop();
      dir.cleanup();
    }
  });

  test("initialize negotiates version 1 and advertises HTTP MCP servers", async () => {
    const init = await agent.agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {},
    });
    assert.equal(init.protocolVersion, 1);
    assert.equal(init.agentInfo?.name, "sprout-agent");
    assert.deepEqual(init.agentCapabilities?.mcpCapabilities, { http: true, sse: false });
    assert.equal(init.agentCapabilities?.loadSession, true);
  });

  test("session/new connects a stdio server (name sanitised, run in the session cwd) and an HTTP server", async () => {
    session = await agent.agent
      .buildSession({
        cwd: dir.path,
        mcpServers: [
          stdioFixture("local files", {
            ACP_FIXTURE_LOG: localLog,
            FIXTURE_LABEL: "local",
            STOP_OBJECTIONS: "1",
          }) as acp.McpServer,
          { type: "http", name: "remote", url: http.url, headers: [] },
        ],
      })
      .start();
    assert.match(session.sessionId, /^ses_[0-9a-f]{16}$/);
    const started = readLog(localLog).find((l) => l.startsWith("pid "));
    assert.ok(started !== undefined, "the stdio server was started");
    assert.ok(
      started.endsWith(`cwd=${realpathSync(dir.path)}`),
      `the stdio server runs in the session's cwd: ${started}`,
    );
  });

  test("a prompt streams text, tool calls and a one-line _Stop objection, then ends the turn", async () => {
    const done = session.prompt("Check things, then stop.");
    const { updates, stopReason } = await collect(session);
    assert.equal(stopReason, "end_turn");
    assert.equal((await done).stopReason, "end_turn");
    const kinds = updates.map((u) => u.sessionUpdate);
    // Tool calls: pending, then in_progress, then completed / failed; never a hook.
    const calls = updates.filter((u) => u.sessionUpdate === "tool_call");
    assert.deepEqual(calls.map((c) => c.title), ["local_files__echo", "local_files__nope"]);
    const echo = calls[0]!;
    assert.equal(echo.kind, "other");
    assert.equal(echo.status, "pending");
    assert.deepEqual(echo.rawInput, { text: "hi" });
    const statuses = (id: string) =>
      updates.filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === id).map((u) =>
        (u as { status?: string }).status
      );
    assert.deepEqual(statuses(echo.toolCallId), ["in_progress", "completed"]);
    assert.deepEqual(statuses(calls[1]!.toolCallId), ["in_progress", "failed"]);
    const completed = updates.find((u) =>
      u.sessionUpdate === "tool_call_update" && u.toolCallId === echo.toolCallId && u.status === "completed"
    );
    assert.deepEqual((completed as { content: unknown }).content, [{
      type: "content",
      content: { type: "text", text: "local echo: hi" },
    }]);
    const failed = updates.find((u) => u.sessionUpdate === "tool_call_update" && u.status === "failed") as {
      content: { content: { text: string } }[];
    };
    assert.match(failed.content[0]!.content.text, /unknown tool/);
    // Text, in order: before the tools, the stop the hooks objected to, the answer after it.
    assert.equal(texts(updates, "agent_message_chunk"), "Let me check.All done.Finished after the objection.");
    assert.ok(kinds.indexOf("tool_call") > kinds.indexOf("agent_message_chunk"));
    // Both servers objected in one round: one thought line each, in configuration order.
    const thoughts = texts(updates, "agent_thought_chunk").trim().split("\n");
    assert.deepEqual(thoughts, [
      '_Stop hook "local_files" objected: local: finish the checklist first (objection 1)',
      '_Stop hook "remote" objected: remote: finish the checklist first (objection 1)',
    ]);
    assert.ok(
      !updates.some((u) => /"hook[a-zA-Z0-9]{5}"|___Stop/.test(JSON.stringify(u))),
      "hook calls are not shown as tool calls",
    );
  });

  test("session/cancel mid-tool resolves cancelled and cancels the MCP call", async () => {
    const done = session.prompt("Wait a while.");
    let cancelled = false;
    const { updates, stopReason } = await collect(session, async (u) => {
      if (!cancelled && u.sessionUpdate === "tool_call_update" && u.status === "in_progress") {
        cancelled = true;
        assert.ok(await eventually(() => readLog(remoteLog).includes("started slow"), 10_000));
        await agent.agent.notify(acp.methods.agent.session.cancel, { sessionId: session.sessionId });
      }
    });
    assert.equal(stopReason, "cancelled");
    assert.equal((await done).stopReason, "cancelled");
    assert.ok(updates.some((u) => u.sessionUpdate === "tool_call" && u.title === "remote__slow"));
    assert.ok(
      await eventually(() => readLog(remoteLog).includes("cancelled slow"), 5000),
      readLog(remoteLog).join("\n"),
    );
  });

  test("a prompt after the cancel runs on the same, still valid, history", async () => {
    const done = session.prompt("Go on.");
    const { updates, stopReason } = await collect(session);
    assert.equal(stopReason, "end_turn");
    assert.equal((await done).stopReason, "end_turn");
    assert.equal(texts(updates, "agent_message_chunk"), "Back after the cancel.");
    assert.equal(texts(updates, "agent_thought_chunk"), "", "both _Stop counters are used up: no objection");
  });
});

describe("acp with the SDK client: concurrent sessions", () => {
  const dir = tempDir();
  const remoteLog = `${dir.path}/remote.log`;
  const script = dir.file(
    "script.json",
    JSON.stringify([{ text: "first answer" }, { text: "second answer" }, { text: "third answer" }]),
  );
  let http: Awaited<ReturnType<typeof startHttpFixture>>;
  let agent: Awaited<ReturnType<typeof startAgent>>;

  before(async () => {
    http = await startHttpFixture({ ACP_FIXTURE_LOG: remoteLog, FIXTURE_LABEL: "remote", STOP_OBJECTIONS: "100" });
    agent = await startAgent({
      SPROUT_AGENT_PROVIDER: "scripted",
      SPROUT_AGENT_SCRIPT: script,
      MCP_HOOK_SERVERS: "remote",
      SPROUT_AGENT_STOP_MAX_REJECTIONS: "1",
    });
  });
  after(async () => {
    try {
      if (agent !== undefined) assert.equal(await agent.stop(), 0, agent.stderr());
    } finally {
      await http?.stop();
      dir.cleanup();
    }
  });

  test("time from initialize to the first agent_message_chunk (scripted model, no servers)", async () => {
    // The first answer waits for the runtime to start; the measured span starts at a second
    // initialize, sent to the running agent, as an editor's would be.
    await agent.agent.request(acp.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
    const ready = Date.now();
    const started = Date.now();
    await agent.agent.request(acp.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
    const session = await agent.agent.buildSession(dir.path).start();
    const done = session.prompt("hello");
    let first = 0;
    await collect(session, (u) => {
      if (first === 0 && u.sessionUpdate === "agent_message_chunk") first = Date.now();
    });
    await done;
    assert.ok(first > 0);
    console.log(
      `[acp timing, ${runtime()}] spawn → initialize answered: ${ready - agent.spawned} ms; ` +
        `initialize sent → session/new → session/prompt → first agent_message_chunk: ${first - started} ms`,
    );
    session.dispose();
  });

  test("two sessions run prompts concurrently, each with its own _Stop budget", async () => {
    const remote = { type: "http" as const, name: "remote", url: http.url, headers: [] };
    const [a, b] = await Promise.all([
      agent.agent.buildSession({ cwd: dir.path, mcpServers: [remote] }).start(),
      agent.agent.buildSession({ cwd: dir.path, mcpServers: [remote] }).start(),
    ]);
    assert.notEqual(a.sessionId, b.sessionId);
    const round = async (s: acp.ActiveSession, text: string) => {
      const done = s.prompt(text);
      const result = await collect(s);
      assert.equal((await done).stopReason, result.stopReason);
      return result;
    };
    // First prompt: each session's _Stop objects once (its budget of 1), then the stop is accepted.
    const [ra, rb] = await Promise.all([round(a, "go"), round(b, "go")]);
    for (const r of [ra, rb]) {
      assert.equal(r.stopReason, "end_turn");
      assert.equal(texts(r.updates, "agent_message_chunk"), "first answersecond answer");
      assert.match(
        texts(r.updates, "agent_thought_chunk"),
        /^_Stop hook "remote" objected: remote: finish the checklist first \(objection 1\)\n$/,
      );
    }
    // Second prompt: each budget is spent, so _Stop is not called again.
    const [ra2, rb2] = await Promise.all([round(a, "again"), round(b, "again")]);
    for (const r of [ra2, rb2]) {
      assert.equal(r.stopReason, "end_turn");
      assert.equal(texts(r.updates, "agent_message_chunk"), "third answer");
      assert.equal(texts(r.updates, "agent_thought_chunk"), "");
    }
    const stopCalls = readLog(remoteLog).filter((l) => l.startsWith("_Stop "));
    assert.equal(stopCalls.filter((l) => l.includes(a.sessionId)).length, 1, stopCalls.join("\n"));
    assert.equal(stopCalls.filter((l) => l.includes(b.sessionId)).length, 1, stopCalls.join("\n"));
    a.dispose();
    b.dispose();
  });
});

describe("acp with the SDK client: cli.ts acp --mcp-config, a _PreToolUse that asks, requestPermission", () => {
  const dir = tempDir();
  const guardLog = `${dir.path}/guard.log`;
  const filesLog = `${dir.path}/files.log`;
  const [fixture, ...fixtureArgs] = tsCommand(`${repoRoot}tests/fixtures/agent-server.ts`);
  const [acpFixture, ...acpFixtureArgs] = tsCommand(fixtureFile);
  // The operator's file: a guard whose _PreToolUse asks before guard__echo, and a server with a destructiveHint tool.
  const config = dir.file(
    "operator.mcp.json",
    JSON.stringify({
      mcpServers: {
        guard: {
          command: fixture,
          args: fixtureArgs,
          env: {
            FIXTURE_LOG: guardLog,
            FIXTURE_PRE_TOOL: JSON.stringify({ decision: "ask", reason: "echo needs a person" }),
            FIXTURE_TOOL_HOOK_TOOLS: "guard__echo",
          },
        },
        files: {
          command: acpFixture,
          args: acpFixtureArgs,
          env: { ACP_FIXTURE_LOG: filesLog, ACP_FIXTURE_DESTRUCTIVE: "1" },
        },
      },
    }),
  );
  const script = dir.file(
    "script.json",
    JSON.stringify([
      {
        toolCalls: [
          { name: "guard__echo", arguments: { text: "hi" } },
          { name: "guard__slow", arguments: { ms: 1 } },
          { name: "files__remove", arguments: { path: "a.txt" } },
        ],
      },
      { text: "first done" },
      { toolCalls: [{ name: "guard__echo", arguments: { text: "cancel me" } }] },
      { text: "after the cancel" },
    ]),
  );
  const asked: acp.RequestPermissionRequest[] = [];
  /** How the handler answers; set per test. */
  let answer: (request: acp.RequestPermissionRequest, signal: AbortSignal) => Promise<acp.RequestPermissionResponse> =
    async () => ({ outcome: { outcome: "cancelled" } });
  let agent: Awaited<ReturnType<typeof startAgent>>;
  let session: acp.ActiveSession;

  before(async () => {
    agent = await startAgent(
      { SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script, MCP_HOOK_SERVERS: "guard" },
      {
        args: ["--mcp-config", config, "--deny", "guard__slow"],
        setup: (app) =>
          app.onRequest(acp.methods.client.session.requestPermission, (ctx) => {
            asked.push(ctx.params);
            return answer(ctx.params, ctx.signal);
          }),
      },
    );
    // Like acpx: no servers from the client; the operator's join anyway.
    session = await agent.agent.buildSession({ cwd: dir.path, mcpServers: [] }).start();
  });
  after(async () => {
    try {
      if (agent !== undefined) assert.equal(await agent.stop(), 0, agent.stderr());
    } finally {
      dir.cleanup();
    }
  });

  test("the hook's ask and the destructiveHint reach requestPermission; --deny refuses without asking", async () => {
    answer = async (request) => ({
      outcome: {
        outcome: "selected",
        optionId: request.toolCall.title === "guard__echo" ? "allow_once" : "reject_always",
      },
    });
    const done = session.prompt("Do three things.");
    const { updates, stopReason } = await collect(session);
    assert.equal(stopReason, "end_turn");
    assert.equal((await done).stopReason, "end_turn");
    assert.deepEqual(asked.map((r) => r.toolCall.title).sort(), ["files__remove", "guard__echo"]);
    const echoAsk = asked.find((r) => r.toolCall.title === "guard__echo")!;
    assert.equal(echoAsk.sessionId, session.sessionId);
    assert.equal(echoAsk.toolCall.status, "pending");
    assert.deepEqual(echoAsk.toolCall.rawInput, { text: "hi" });
    assert.deepEqual(echoAsk.options.map((o) => o.kind), [
      "allow_once",
      "allow_always",
      "reject_once",
      "reject_always",
    ]);
    assert.deepEqual(echoAsk.toolCall.content, [{
      type: "content",
      content: { type: "text", text: 'Permission asked: echo needs a person (hook server "guard")' },
    }]);
    const calls = updates.filter((u) => u.sessionUpdate === "tool_call");
    const end = (title: string) => {
      const id = calls.find((c) => c.title === title)!.toolCallId;
      const last = updates.filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === id).at(-1) as {
        status: string;
        content: { content: { text: string } }[];
      };
      return { status: last.status, text: last.content[0]!.content.text };
    };
    assert.deepEqual(end("guard__echo").status, "completed");
    assert.match(end("guard__slow").text, /^Permission denied: the operator's policy \(deny "guard__slow"\)/);
    assert.match(end("files__remove").text, /\(the person denied it\)$/);
    assert.ok(toolCalls(guardLog, "echo").length > 0, "the allowed echo ran");
    assert.equal(toolCalls(guardLog, "slow").length, 0, "the denied slow did not run");
    assert.ok(!readLog(filesLog).some((l) => l.startsWith("removed")), "the rejected remove did not run");
  });

  test("session/cancel while the client is asked: the question is withdrawn and the prompt ends cancelled", async () => {
    asked.length = 0;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let withdrawn = false;
    answer = async (_request, signal) => {
      // The person is thinking; the agent's $/cancel_request aborts this handler's signal.
      signal.addEventListener("abort", () => (withdrawn = true), { once: true });
      await released;
      return { outcome: { outcome: "cancelled" } };
    };
    const done = session.prompt("Echo, then be cancelled.");
    const { updates, stopReason } = await collect(session, async (u) => {
      if (u.sessionUpdate === "tool_call_update" && u.status === "pending") {
        assert.ok(await eventually(() => asked.length === 1, 10_000), "the client was asked");
        await agent.agent.notify(acp.methods.agent.session.cancel, { sessionId: session.sessionId });
      }
    });
    release();
    assert.equal(stopReason, "cancelled");
    assert.equal((await done).stopReason, "cancelled");
    assert.ok(await eventually(() => withdrawn, 5000), "the SDK saw $/cancel_request");
    const id = asked[0]!.toolCall.toolCallId;
    const ends = updates.filter((u) =>
      u.sessionUpdate === "tool_call_update" && u.toolCallId === id &&
      (u.status === "completed" || u.status === "failed")
    );
    assert.equal(ends.length, 1);
    assert.equal(toolCalls(guardLog, "echo").length, 1, "only the first echo ran");
    // The next prompt runs on a valid history.
    const next = session.prompt("Go on.");
    const after = await collect(session);
    assert.equal(after.stopReason, "end_turn");
    assert.equal((await next).stopReason, "end_turn");
    assert.equal(texts(after.updates, "agent_message_chunk"), "after the cancel");
  });
});

describe("acp with the SDK client: a session the agent saved comes back (SPEC 12.7)", () => {
  const dir = tempDir();
  after(() => dir.cleanup());
  const sessions = `${dir.path}/sessions`;
  const log = `${dir.path}/fixture.log`;
  // Each agent process replays the script from its start: the first answers the first prompt,
  // the second (after the load) answers from its first turn again.
  const script = dir.file(
    "script.json",
    JSON.stringify([
      { text: "Checking.", toolCalls: [{ name: "fx__echo", arguments: { text: "saved" } }] },
      { text: "Checked." },
      { text: "Checked, really." },
    ]),
  );
  const env = {
    SPROUT_AGENT_PROVIDER: "scripted",
    SPROUT_AGENT_SCRIPT: script,
    SPROUT_AGENT_SESSION_DIR: sessions,
    MCP_HOOK_SERVERS: "fx",
  };
  const servers = () => [stdioFixture("fx", { ACP_FIXTURE_LOG: log, STOP_OBJECTIONS: "1" }) as acp.McpServer];

  test("after a SIGKILL, load replays before its response, list finds it, resume goes on; the SDK accepts every message", async () => {
    const first = await startAgent(env);
    let id: string;
    try {
      const session = await first.agent.buildSession({ cwd: dir.path, mcpServers: servers() }).start();
      id = session.sessionId;
      const done = session.prompt("Check the thing.");
      const { stopReason } = await collect(session);
      assert.equal(stopReason, "end_turn");
      await done;
    } finally {
      // Killed, not stopped: no _SessionEnd, no close, nothing flushed on the way out.
      await first.kill();
    }

    const replayed: Update[] = [];
    let responded = false;
    let lateUpdates = 0;
    const second = await startAgent(env, {
      setup: (app) =>
        app.onNotification(acp.methods.client.session.update, async ({ params }) => {
          if (responded) lateUpdates++;
          else replayed.push(params.update);
        }),
    });
    try {
      const init = await second.agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {},
      });
      assert.equal(init.agentCapabilities?.loadSession, true);
      assert.deepEqual(init.agentCapabilities?.sessionCapabilities, { close: {}, list: {}, resume: {} });
      const listed = await second.agent.request(acp.methods.agent.session.list, { cwd: dir.path });
      assert.deepEqual(listed.sessions.map((s) => [s.sessionId, s.title]), [[id!, "Check the thing."]]);
      assert.match(listed.sessions[0]!.updatedAt ?? "", /^\d{4}-\d\d-\d\dT/);
      const loaded = await second.agent.request(acp.methods.agent.session.load, {
        sessionId: id!,
        cwd: dir.path,
        mcpServers: servers(),
      });
      responded = true;
      assert.deepEqual(loaded, {});
      assert.deepEqual(replayed.map((u) => u.sessionUpdate), [
        "user_message_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
        "agent_message_chunk",
      ]);
      assert.deepEqual(
        replayed.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) =>
          (u as { content: { text: string } }).content.text
        ),
        ["Checking.", "Checked.", "Checked, really."],
      );
      const update = replayed[3] as { status?: string; content?: unknown };
      assert.equal(update.status, "completed");
      assert.deepEqual(update.content, [{ type: "content", content: { type: "text", text: "fixture echo: saved" } }]);
      assert.ok(!JSON.stringify(replayed).includes("finish the checklist"), "the _Stop objection is not replayed");
      assert.equal(lateUpdates, 0);
      // A loaded session is open: its next prompt runs in it (the script starts over here).
      const closed = await second.agent.request(acp.methods.agent.session.close, { sessionId: id! });
      assert.deepEqual(closed, {});
      const resumed = await second.agent.request(acp.methods.agent.session.resume, {
        sessionId: id!,
        cwd: dir.path,
        mcpServers: servers(),
      });
      assert.deepEqual(resumed, {});
      assert.equal(lateUpdates, 0, "resume replays nothing");
      const next = await second.agent.request(acp.methods.agent.session.prompt, {
        sessionId: id!,
        prompt: [{ type: "text", text: "Once more." }],
      });
      assert.equal(next.stopReason, "end_turn");
      assert.ok(lateUpdates > 0, "the resumed session's prompt streams its updates");
    } finally {
      assert.equal(await second.stop(), 0, second.stderr());
    }
  });
});
