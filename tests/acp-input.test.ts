/**
 * MCP input requests and tasks over ACP (SPEC section 10, docs/ACP.md, issue 25), driven by the
 * official ACP client (`@agentclientprotocol/sdk`): a client that declares
 * `clientCapabilities.elicitation` gets the servers' elicitations as `elicitation/create`,
 * tied to the session and the tool call; one that does not has them declined, with a log line;
 * a task's steps arrive as the call's `tool_call_update`s. The servers are the official SDK
 * 2.x input server and the SDK 1.x task tools, given in `session/new`.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import * as acp from "@agentclientprotocol/sdk";
import { tempDir } from "./helpers/acp.ts";
import { startAcpClient } from "./helpers/acp-client.ts";
import { tsServer } from "./fixtures/mcp/helpers.ts";

/** `cli.ts acp` as a child, connected to the SDK client (`setup` adds its handlers). */
const startAgent = (env: Record<string, string>, setup?: (app: acp.ClientApp) => acp.ClientApp) =>
  startAcpClient(env, { name: "sprout-acp-input-test", ...(setup === undefined ? {} : { setup }) });

/** An MCP server of the fixtures in ACP's `session/new` shape. */
function acpServer(name: string, file: string): acp.McpServer {
  const t = tsServer(name, file, "bun").transport as { command: string; args: string[] };
  return { name, command: t.command, args: t.args, env: [] } as acp.McpServer;
}

async function promptOnce(session: acp.ActiveSession, text: string) {
  const done = session.prompt(text);
  const updates: acp.SessionUpdate[] = [];
  while (true) {
    const message = await session.nextUpdate();
    if (message.kind === "stop") break;
    updates.push(message.update);
  }
  await done;
  return updates;
}

const results = (updates: acp.SessionUpdate[]) =>
  Object.fromEntries(
    updates.filter((u) => u.sessionUpdate === "tool_call_update" && (u.status === "completed" || u.status === "failed"))
      .map((u) => [
        (u as { toolCallId: string }).toolCallId,
        ((u as { content?: { content: { text: string } }[] }).content ?? [])[0]?.content.text,
      ]),
  );

describe("acp: MCP elicitations go to a client that declares them", () => {
  test("form and URL elicitations arrive as elicitation/create tied to the call; the answers reach the server; a task's steps are the call's updates", async () => {
    const dir = tempDir();
    const script = dir.file(
      "script.json",
      JSON.stringify([
        { toolCalls: [{ name: "in__greet", arguments: {} }] },
        { toolCalls: [{ name: "in__signin", arguments: {} }] },
        { toolCalls: [{ name: "tk__steps", arguments: { text: "x" } }] },
        { text: "done" },
      ]),
    );
    const asked: acp.CreateElicitationRequest[] = [];
    const agent = startAgent(
      { SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script, SPROUT_AGENT_SESSION_DIR: "off" },
      (app) =>
        app.onRequest(acp.methods.client.elicitation.create, (ctx) => {
          asked.push(ctx.params);
          return Promise.resolve(
            ctx.params.mode === "form"
              ? { action: "accept", content: { name: "Grace Hopper", age: 85 } }
              : { action: "decline" },
          );
        }),
    );
    try {
      await agent.agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { elicitation: { form: {}, url: {} } },
      });
      const session = await agent.agent.buildSession({
        cwd: dir.path,
        mcpServers: [acpServer("in", "sdk2-input.ts"), acpServer("tk", "sdk1-tasks.ts")],
      }).start();
      const updates = await promptOnce(session, "greet me");
      const calls = updates.filter((u) => u.sessionUpdate === "tool_call") as { toolCallId: string; title: string }[];
      assert.deepEqual(calls.map((c) => c.title), ["in__greet", "in__signin", "tk__steps"]);
      const [greet, signin, steps] = calls.map((c) => c.toolCallId);
      assert.equal(asked.length, 2);
      const [form, url] = asked as Record<string, unknown>[];
      assert.equal(form!.sessionId, session.sessionId);
      assert.equal(form!.toolCallId, greet);
      assert.equal(form!.mode, "form");
      assert.equal(form!.message, "in: Who are you?");
      assert.deepEqual(Object.keys((form!.requestedSchema as { properties: object }).properties), [
        "name",
        "age",
        "colour",
        "subscribe",
      ]);
      assert.equal(url!.toolCallId, signin);
      assert.equal(url!.mode, "url");
      assert.equal(url!.url, "https://example.com/login?session=abc");
      assert.equal(typeof url!.elicitationId, "string");
      const out = results(updates);
      assert.equal(out[greet!], 'Hello, Grace Hopper! {"name":"Grace Hopper","age":85}');
      assert.equal(out[signin!], "sign-in decline");
      assert.equal(out[steps!], "steps: x");
      const progress = updates.filter((u) =>
        u.sessionUpdate === "tool_call_update" && (u as { toolCallId: string }).toolCallId === steps &&
        u.status === "in_progress" && u.content !== undefined
      ).map((u) => (u as { content: { content: { text: string } }[] }).content[0]!.content.text);
      for (const step of [1, 2, 3]) {
        assert.ok(progress.includes(`task working: step ${step} of 3`), progress.join(" | "));
      }
      // What the person typed went to the server, never to the log.
      assert.doesNotMatch(agent.stderr(), /Grace/);
    } finally {
      assert.equal(await agent.stop(), 0, agent.stderr());
      dir.cleanup();
    }
  });

  test("session/cancel while the person is asked: the elicitation is withdrawn ($/cancel_request), the prompt ends cancelled, the next runs", async () => {
    const dir = tempDir();
    const script = dir.file(
      "script.json",
      JSON.stringify([{ toolCalls: [{ name: "in__greet", arguments: {} }] }, { text: "after" }]),
    );
    let asked = 0;
    let withdrawn = false;
    const agent = startAgent(
      { SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script, SPROUT_AGENT_SESSION_DIR: "off" },
      (app) =>
        app.onRequest(acp.methods.client.elicitation.create, (ctx) => {
          asked++;
          // The person is thinking; the agent's $/cancel_request aborts this handler's signal.
          return new Promise((resolve) =>
            ctx.signal.addEventListener("abort", () => {
              withdrawn = true;
              resolve({ action: "cancel" });
            }, { once: true })
          );
        }),
    );
    try {
      await agent.agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { elicitation: { form: {} } },
      });
      const session = await agent.agent.buildSession({ cwd: dir.path, mcpServers: [acpServer("in", "sdk2-input.ts")] })
        .start();
      const done = session.prompt("greet me");
      const started = Date.now();
      while (asked === 0 && Date.now() - started < 20_000) await new Promise((r) => setTimeout(r, 20));
      assert.equal(asked, 1, "the client was asked");
      await agent.agent.notify(acp.methods.agent.session.cancel, { sessionId: session.sessionId });
      while (true) {
        const message = await session.nextUpdate();
        if (message.kind === "stop") {
          assert.equal(message.stopReason, "cancelled");
          break;
        }
      }
      assert.equal((await done).stopReason, "cancelled");
      const until = Date.now() + 15_000;
      while (!withdrawn && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      assert.ok(withdrawn, "the SDK saw $/cancel_request");
      const next = await promptOnce(session, "again");
      assert.ok(next.some((u) => u.sessionUpdate === "agent_message_chunk"));
    } finally {
      assert.equal(await agent.stop(), 0, agent.stderr());
      dir.cleanup();
    }
  });

  test("sampling over ACP: refused by default, answered by the agent's own model with SPROUT_AGENT_SAMPLING=on", async () => {
    for (const sampling of ["off", "on"]) {
      const dir = tempDir();
      const script = dir.file(
        "script.json",
        JSON.stringify([{ toolCalls: [{ name: "in__capital", arguments: {} }] }, { text: "Paris" }, { text: "done" }]),
      );
      const agent = startAgent({
        SPROUT_AGENT_PROVIDER: "scripted",
        SPROUT_AGENT_SCRIPT: script,
        SPROUT_AGENT_SESSION_DIR: "off",
        SPROUT_AGENT_SAMPLING: sampling,
      });
      try {
        await agent.agent.request(acp.methods.agent.initialize, {
          protocolVersion: acp.PROTOCOL_VERSION,
          clientCapabilities: {},
        });
        const session = await agent.agent.buildSession({
          cwd: dir.path,
          mcpServers: [acpServer("in", "sdk2-input.ts")],
        }).start();
        const updates = await promptOnce(session, "the capital, please");
        const call = updates.find((u) => u.sessionUpdate === "tool_call") as { toolCallId: string };
        const result = String(results(updates)[call.toolCallId]);
        if (sampling === "off") assert.match(result, /sampling/i);
        else assert.match(result, /said: Paris \(endTurn\)$/);
      } finally {
        assert.equal(await agent.stop(), 0, agent.stderr());
        dir.cleanup();
      }
    }
  });

  test("a client without the capability: the elicitation is declined, with a log line naming the server and the tool", async () => {
    const dir = tempDir();
    const script = dir.file(
      "script.json",
      JSON.stringify([{ toolCalls: [{ name: "in__greet", arguments: {} }] }, { text: "done" }]),
    );
    const agent = startAgent({
      SPROUT_AGENT_PROVIDER: "scripted",
      SPROUT_AGENT_SCRIPT: script,
      SPROUT_AGENT_SESSION_DIR: "off",
    });
    try {
      await agent.agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {},
      });
      const session = await agent.agent.buildSession({ cwd: dir.path, mcpServers: [acpServer("in", "sdk2-input.ts")] })
        .start();
      const updates = await promptOnce(session, "greet me");
      const call = updates.find((u) => u.sessionUpdate === "tool_call") as { toolCallId: string };
      assert.equal(results(updates)[call.toolCallId], "elicitation decline");
      // The warning is on stderr, the result on stdout: read stderr whole, after the exit.
      assert.equal(await agent.stop(), 0, agent.stderr());
      assert.match(
        agent.stderr(),
        /warning: Declined the elicitation of server "in" \(tool "greet"\): no one can answer it in this session/,
      );
    } finally {
      assert.equal(await agent.stop(), 0, agent.stderr());
      dir.cleanup();
    }
  });
});
