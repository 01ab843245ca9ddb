/**
 * `cli.ts acp` at the protocol level (SPEC section 11, issue 5): the agent runs as a child
 * process under the current runtime and is spoken to in raw JSON-RPC lines, so every error
 * path can be sent exactly as written.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import { alive, eventually, type RawAgent, readLog, spawnAgent, stdioFixture, tempDir, within } from "./helpers/acp.ts";

const isError = (code: number) => (m: { error?: { code?: number } }) => m.error?.code === code;

describe("acp: protocol errors and session rules", () => {
  const dir = tempDir();
  const log = `${dir.path}/fixture.log`;
  let agent: RawAgent;
  // Each session replays the script from its start: a slow tool call, then an answer.
  const script = dir.file(
    "script.json",
    JSON.stringify([{ toolCalls: [{ name: "fx__slow", arguments: { ms: 20000 } }] }, { text: "done" }]),
  );

  before(() => {
    agent = spawnAgent({
      SPROUT_AGENT_PROVIDER: "scripted",
      SPROUT_AGENT_SCRIPT: script,
      SPROUT_AGENT_MAX_LINE_BYTES: "1024",
    });
  });
  after(async () => {
    const code = await agent.close();
    assert.equal(code, 0, agent.stderr());
    dir.cleanup();
  });

  test("malformed JSON is answered -32700 with id null", async () => {
    const from = agent.messages.length;
    agent.sendLine('{"jsonrpc": "2.0", "id": 1, "method": ');
    const reply = await agent.waitFor(isError(-32700), from);
    assert.equal(reply.id, null);
  });

  test("a request whose jsonrpc is not 2.0 is answered -32600", async () => {
    const from = agent.messages.length;
    agent.send({ jsonrpc: "1.0", id: 7, method: "initialize", params: { protocolVersion: 1 } });
    const reply = await agent.waitFor((m) => m.id === 7, from);
    assert.equal(reply.error.code, -32600);
    assert.match(reply.error.message, /jsonrpc/);
  });

  test("a request without a method is answered -32600", async () => {
    const from = agent.messages.length;
    agent.send({ jsonrpc: "2.0", id: 8, params: {} });
    const reply = await agent.waitFor((m) => m.id === 8, from);
    assert.equal(reply.error.code, -32600);
    assert.match(reply.error.message, /method/);
  });

  test("an unknown method is answered -32601 naming it", async () => {
    const reply = await agent.request("session/fly", {});
    assert.equal(reply.error.code, -32601);
    assert.match(reply.error.message, /session\/fly/);
  });

  test("responses from the client are ignored", async () => {
    const from = agent.messages.length;
    agent.send({ jsonrpc: "2.0", id: 424242, result: { ok: true } });
    agent.send({ jsonrpc: "2.0", id: 424243, error: { code: 1, message: "x" } });
    const reply = await agent.request("initialize", { protocolVersion: 1 });
    assert.equal(reply.result.protocolVersion, 1);
    assert.equal(agent.messages.slice(from).filter((m) => m.id === 424242 || m.id === 424243).length, 0);
  });

  test("initialize answers version 1 and truthful capabilities", async () => {
    const reply = await agent.request("initialize", { protocolVersion: 99, clientCapabilities: {} });
    assert.equal(reply.result.protocolVersion, 1);
    assert.deepEqual(reply.result.agentCapabilities, {
      loadSession: true,
      promptCapabilities: { image: false, audio: false, embeddedContext: false },
      mcpCapabilities: { http: true, sse: false },
      sessionCapabilities: { close: {}, list: {}, resume: {} },
    });
    assert.equal(reply.result.agentInfo.name, "sprout-agent");
    assert.match(reply.result.agentInfo.version, /^\d+\.\d+\.\d+/);
    assert.deepEqual(reply.result.authMethods, []);
  });

  test("initialize without a protocolVersion is answered -32602 naming it", async () => {
    const reply = await agent.request("initialize", {});
    assert.equal(reply.error.code, -32602);
    assert.match(reply.error.message, /protocolVersion/);
  });

  test("session/new with a relative cwd is answered -32602 naming cwd", async () => {
    const reply = await agent.request("session/new", { cwd: "relative/dir", mcpServers: [] });
    assert.equal(reply.error.code, -32602);
    assert.match(reply.error.message, /cwd/);
    assert.match(reply.error.message, /absolute/);
  });

  test("session/new with an sse server is answered -32602 saying sse is unsupported", async () => {
    const reply = await agent.request("session/new", {
      cwd: dir.path,
      mcpServers: [{ type: "sse", name: "old", url: "http://127.0.0.1:9/sse", headers: [] }],
    });
    assert.equal(reply.error.code, -32602);
    assert.match(reply.error.message, /sse/);
    assert.match(reply.error.message, /not support/);
  });

  test("session/new with malformed mcpServers is answered -32602 naming the field", async () => {
    const reply = await agent.request("session/new", { cwd: dir.path, mcpServers: [{ name: "x", args: [] }] });
    assert.equal(reply.error.code, -32602);
    assert.match(reply.error.message, /command/);
  });

  test("session/new fails with an error naming a server that cannot start, also written to stderr", async () => {
    const reply = await agent.request("session/new", {
      cwd: dir.path,
      mcpServers: [{ name: "GitHub MCP", command: "/nonexistent/sprout-missing-server", args: [], env: [] }],
    });
    assert.equal(reply.error.code, -32000);
    assert.match(reply.error.message, /"GitHub MCP"/);
    assert.ok(await eventually(() => agent.stderr().includes(reply.error.message)), `stderr: ${agent.stderr()}`);
  });

  test("session/prompt on an unknown session is answered -32602 unknown session", async () => {
    const reply = await agent.request("session/prompt", {
      sessionId: "ses_nope",
      prompt: [{ type: "text", text: "hi" }],
    });
    assert.equal(reply.error.code, -32602);
    assert.match(reply.error.message, /unknown session/);
  });

  test("an unsupported content block is answered -32602 naming its type", async () => {
    const created = await agent.request("session/new", { cwd: dir.path, mcpServers: [] });
    const reply = await agent.request("session/prompt", {
      sessionId: created.result.sessionId,
      prompt: [{ type: "text", text: "look" }, { type: "image", data: "AAAA", mimeType: "image/png" }],
    });
    assert.equal(reply.error.code, -32602);
    assert.match(reply.error.message, /"image"/);
  });

  test("an oversize line is answered -32600 with id null and the agent goes on", async () => {
    const from = agent.messages.length;
    const big = JSON.stringify({
      jsonrpc: "2.0",
      id: 55,
      method: "initialize",
      params: { pad: "x".repeat(10_000), protocolVersion: 1 },
    });
    assert.ok(big.length > 10_000);
    agent.sendLine(big);
    const reply = await agent.waitFor(isError(-32600), from);
    assert.equal(reply.id, null);
    assert.match(reply.error.message, /1024/);
    const next = await agent.request("initialize", { protocolVersion: 1 });
    assert.equal(next.result.protocolVersion, 1);
    assert.equal(agent.messages.slice(from).some((m) => m.id === 55), false);
  });

  test("a second prompt while one is in flight is refused; cancel as a request answers null", async () => {
    const created = await agent.request("session/new", {
      cwd: dir.path,
      mcpServers: [stdioFixture("fx", { ACP_FIXTURE_LOG: log })],
    });
    const sessionId = created.result.sessionId as string;
    const from = agent.messages.length;
    const first = agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "go slow" }] });
    await agent.waitFor(
      (m) => m.params?.update?.sessionUpdate === "tool_call_update" && m.params.update.status === "in_progress",
      from,
    );
    const second = await agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "again" }] });
    assert.equal(second.error.code, -32602);
    assert.match(second.error.message, /prompt already in flight/);
    // Cancel once the server runs the tool (a cancel that overtakes the call may be ignored by it).
    assert.ok(await eventually(() => readLog(log).includes("started slow")));
    const cancel = await agent.request("session/cancel", { sessionId });
    assert.equal(cancel.result, null);
    assert.equal((await first).result.stopReason, "cancelled");
    // The history stayed valid: the next prompt runs (the script goes on with its answer).
    const third = await agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "now finish" }] });
    assert.equal(third.result.stopReason, "end_turn");
    assert.ok(await eventually(() => readLog(log).includes("cancelled slow")), readLog(log).join("\n"));
  });

  test("an LLM failure is answered -32000 llm: and the session stays usable", async () => {
    const created = await agent.request("session/new", { cwd: dir.path, mcpServers: [] });
    const sessionId = created.result.sessionId as string;
    // fx__slow is unknown here (no server): an error result, then "done".
    const one = await agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "one" }] });
    assert.equal(one.result.stopReason, "end_turn");
    const two = await agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "two" }] });
    assert.equal(two.error.code, -32000);
    assert.match(two.error.message, /^llm: /);
    const three = await agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "resource_link", uri: "file:///a.txt", name: "a" }],
    });
    assert.equal(three.error.code, -32000, "not 'prompt already in flight': the failed prompt released the session");
  });

  test("stdout carries only JSON-RPC 2.0 messages", () => {
    assert.ok(agent.messages.length > 10);
    for (const m of agent.messages) assert.equal(m["jsonrpc"], "2.0");
  });
});

describe("acp: start-up and shutdown", () => {
  test("a bad configuration exits 2 with a message naming the variable, before reading stdin", async () => {
    const agent = spawnAgent({
      SPROUT_AGENT_PROVIDER: "scripted",
      SPROUT_AGENT_SCRIPT: "/x.json",
      SPROUT_AGENT_MAX_ROUNDS: "lots",
    });
    const code = await within(agent.exited, 30_000);
    if (code === "timeout") await agent.close(0);
    assert.equal(code, 2);
    assert.match(agent.stderr(), /SPROUT_AGENT_MAX_ROUNDS/);
    assert.equal(agent.messages.length, 0);
  });

  for (const how of ["stdin EOF", "SIGTERM"] as const) {
    test(`${how} cancels the running prompt, closes every MCP server and exits 0`, async () => {
      const dir = tempDir();
      const log = `${dir.path}/fixture.log`;
      const script = dir.file(
        "script.json",
        JSON.stringify([{ toolCalls: [{ name: "fx__slow", arguments: { ms: 60000 } }] }, { text: "x" }]),
      );
      const agent = spawnAgent({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script });
      try {
        const created = await agent.request("session/new", {
          cwd: dir.path,
          mcpServers: [stdioFixture("fx", { ACP_FIXTURE_LOG: log })],
        });
        const sessionId = created.result.sessionId as string;
        const from = agent.messages.length;
        agent.send({
          jsonrpc: "2.0",
          id: 1,
          method: "session/prompt",
          params: { sessionId, prompt: [{ type: "text", text: "wait" }] },
        });
        await agent.waitFor((m) => m.params?.update?.status === "in_progress", from);
        const pids = readLog(log).filter((l) => l.startsWith("pid ")).map((l) => Number(l.split(" ")[1]));
        assert.ok(pids.length > 0);
        const started = Date.now();
        // process.kill, not child.kill: Deno's ChildProcess.kill("SIGTERM") ends the child
        // without running its SIGTERM handler.
        if (how === "SIGTERM") process.kill(agent.child.pid!, "SIGTERM");
        else agent.child.stdin.end();
        const code = await within(agent.exited, 20_000);
        assert.equal(code, 0, agent.stderr());
        assert.ok(Date.now() - started < 15_000);
        for (const pid of pids) assert.equal(alive(pid), false, `fixture pid ${pid} left behind`);
        if (how === "stdin EOF") {
          const answer = agent.messages.find((m) => m.id === 1);
          assert.equal(answer?.result?.stopReason, "cancelled");
        }
      } finally {
        agent.child.kill("SIGKILL");
        dir.cleanup();
      }
    });
  }
});

describe("acp: compaction", () => {
  test("a session compacts its context and says so in one thought line", async () => {
    const dir = tempDir();
    const script = dir.file(
      "script.json",
      JSON.stringify([
        {
          text: "Looking.",
          // A result the summary can replace: a compaction never makes the context larger.
          toolCalls: [{ name: "fx__echo", arguments: { text: "hi ".repeat(1000) } }],
          usage: { inputTokens: 1900, outputTokens: 10 },
        },
        { text: "Done after the handoff." },
      ]),
    );
    const agent = spawnAgent({
      SPROUT_AGENT_PROVIDER: "scripted",
      SPROUT_AGENT_SCRIPT: script,
      SPROUT_AGENT_MAX_CONTEXT_TOKENS: "2000",
      SPROUT_AGENT_MAX_OUTPUT_TOKENS: "500",
    });
    try {
      const created = await agent.request("session/new", { cwd: dir.path, mcpServers: [stdioFixture("fx")] });
      const sessionId = created.result.sessionId as string;
      const from = agent.messages.length;
      const reply = await agent.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: "Echo something." }],
      });
      assert.equal(reply.result.stopReason, "end_turn", JSON.stringify(reply));
      const updates = agent.messages.slice(from).filter((m) => m.method === "session/update").map((m) =>
        m.params.update
      );
      const thoughts = updates.filter((u) => u.sessionUpdate === "agent_thought_chunk").map((u) => u.content.text);
      assert.equal(thoughts.length, 1, JSON.stringify(updates));
      assert.match(thoughts[0], /^Context compacted \(summary\)/);
      const text = updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");
      assert.equal(text, "Looking.Done after the handoff.");
    } finally {
      assert.equal(await agent.close(), 0, agent.stderr());
      dir.cleanup();
    }
  });
});
