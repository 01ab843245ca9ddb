/**
 * MCP servers in the agent's process (lib/mcp/in-process.ts): the linked in-memory channel,
 * the connection over it to official SDK v2 servers (both eras), its end, and
 * `createAgent({ inProcessServers })` running the loop, a tool and a hook without a process.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import * as z from "zod";
import { createAgent } from "../lib/agent/agent.ts";
import { AgentError } from "../lib/util/errors.ts";
import type { AgentEvent } from "../lib/conversation/events.ts";
import { inProcessMcp, type InProcessTransport, linkedTransports } from "../lib/mcp/in-process.ts";
import type { McpExitInfo } from "../lib/mcp/types.ts";

/** An SDK server with `echo {text}`, `hang` (never answers) and a `_Stop` hook answering `stops` in turn, then "". */
function createServer(stops: string[] = [], seen: string[] = []): McpServer {
  const server = new McpServer({ name: "inproc", version: "2.0.0" }, { capabilities: { tools: {} } });
  server.registerTool("echo", { description: "Echoes", inputSchema: z.object({ text: z.string() }) }, (args) => {
    seen.push(`echo ${args.text}`);
    return { content: [{ type: "text" as const, text: `echo: ${args.text}` }] };
  });
  server.registerTool("hang", { description: "Never answers", inputSchema: z.object({}) }, () => new Promise(() => {}));
  server.registerTool("_Stop", { description: "Stop hook", inputSchema: z.object({}) }, () => {
    seen.push("_Stop");
    return { content: [{ type: "text" as const, text: stops.shift() ?? "" }] };
  });
  return server;
}

const serve = (stops?: string[], seen?: string[]) => (transport: InProcessTransport) =>
  serveStdio(() => createServer(stops, seen), { transport });

describe("linkedTransports", () => {
  test("delivers JSON copies in order, never inside send, and queues until start", async () => {
    const [a, b] = linkedTransports();
    const got: unknown[] = [];
    b.onmessage = (m) => got.push(m);
    const message: Record<string, unknown> = { jsonrpc: "2.0", method: "one", params: { dropped: undefined } };
    await a.send(message);
    await a.send({ jsonrpc: "2.0", method: "two" });
    message["method"] = "changed after send";
    assert.deepEqual(got, [], "nothing is delivered before start");
    await b.start();
    await Promise.resolve();
    assert.deepEqual(got, [{ jsonrpc: "2.0", method: "one", params: {} }, { jsonrpc: "2.0", method: "two" }]);
    const sent = a.send({ jsonrpc: "2.0", method: "three" });
    assert.equal(got.length, 2, "not delivered inside send");
    await sent;
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.deepEqual(got.at(-1), { jsonrpc: "2.0", method: "three" });
  });

  test("close ends both sides once; a send after it fails", async () => {
    const [a, b] = linkedTransports();
    let closedA = 0;
    let closedB = 0;
    a.onclose = () => closedA++;
    b.onclose = () => closedB++;
    await b.close();
    await a.close();
    assert.deepEqual([closedA, closedB], [1, 1]);
    await assert.rejects(
      a.send({ jsonrpc: "2.0", method: "x" }),
      /Cannot send on an in-process MCP channel: it is closed/,
    );
  });
});

describe("inProcessMcp", () => {
  test("serveStdio on the channel: the modern era is detected; tools list and call", async () => {
    const mcp = inProcessMcp({ fx: serve() });
    assert.deepEqual(mcp.servers.map((s) => s.name), ["fx"]);
    const connection = await mcp.connect(mcp.servers[0]!, { sessionId: "s1" });
    try {
      assert.equal(connection.era, "modern");
      assert.equal(connection.pid, undefined);
      assert.deepEqual(connection.serverInfo, { name: "inproc", version: "2.0.0" });
      assert.deepEqual((await connection.listTools()).map((t) => t.name).sort(), ["_Stop", "echo", "hang"]);
      const result = await connection.callTool("echo", { text: "hi" });
      assert.deepEqual(result.content, [{ type: "text", text: "echo: hi" }]);
    } finally {
      await connection.close();
    }
    assert.equal(connection.closed, true);
  });

  test("a legacy SDK server (McpServer.connect) is spoken to in the legacy era", async () => {
    const mcp = inProcessMcp({ old: (transport) => createServer().connect(transport) });
    const connection = await mcp.connect(mcp.servers[0]!, { sessionId: "s1", initTimeoutMs: 10_000 });
    try {
      assert.equal(connection.era, "legacy");
      const result = await connection.callTool("echo", { text: "old" });
      assert.deepEqual(result.content, [{ type: "text", text: "echo: old" }]);
    } finally {
      await connection.close();
    }
  });

  test("a request times out at its timeoutMs; a server that closes its end is an exit with code 0", async () => {
    const closes: McpExitInfo[] = [];
    let serverSide: InProcessTransport | undefined;
    const mcp = inProcessMcp({
      fx: (transport) => {
        serverSide = transport;
        return serveStdio(() => createServer(), { transport });
      },
    });
    const connection = await mcp.connect(mcp.servers[0]!, { sessionId: "s1", onClose: (info) => closes.push(info) });
    await assert.rejects(
      connection.callTool("hang", {}, { timeoutMs: 50 }),
      (error: unknown) => error instanceof AgentError && error.code === "timeout",
    );
    const pending = connection.callTool("hang", {});
    await serverSide!.close();
    await assert.rejects(pending, /server exited \(code 0\)/);
    assert.deepEqual(closes, [{ code: 0, signal: null, stderrTail: "" }]);
    assert.equal(connection.closed, true);
  });

  test("a configuration it does not name goes to the real client", async () => {
    const mcp = inProcessMcp({});
    await assert.rejects(
      mcp.connect({
        name: "real",
        transport: { type: "stdio", command: "sprout-no-such-command", args: [], env: {} },
      }, { sessionId: "s1" }),
      /Cannot start server "real": command "sprout-no-such-command" not found/,
    );
  });
});

describe("createAgent inProcessServers", () => {
  test("the loop calls an in-process tool and its _Stop hook, whose objection is injected", async () => {
    const seen: string[] = [];
    const agent = await createAgent({
      model: {
        provider: "scripted",
        turns: [{ toolCalls: [{ name: "fx__echo", arguments: { text: "a" } }] }, { text: "done" }, { text: "done" }],
      },
      inProcessServers: { fx: serve(["tests are red"], seen) },
      hookServers: ["fx"],
    });
    try {
      assert.deepEqual(agent.failures, []);
      const run = agent.prompt("go");
      const events: AgentEvent[] = [];
      for await (const event of run) events.push(event);
      const result = await run.result;
      assert.equal(result.stopReason, "end_turn");
      assert.equal(result.objections, 1);
      assert.equal(result.rounds, 3);
      const end = events.find((e) => e.type === "tool-end");
      assert.ok(end?.type === "tool-end" && end.ok && end.output === "echo: a", JSON.stringify(end));
      assert.deepEqual(
        events.filter((e) => e.type === "hook").map((e) => e.type === "hook" && [e.server, e.outcome]),
        [["fx", "objection"]],
      );
      assert.match(JSON.stringify(agent.history), /tests are red/);
      // SPEC 7.1: the end_turn right after the objection is accepted without calling _Stop.
      assert.deepEqual(seen, ["echo a", "_Stop"]);
    } finally {
      await agent.close();
    }
  });

  test("a server name that breaks SPEC 5.2's rule is refused", async () => {
    await assert.rejects(
      createAgent({ model: { provider: "scripted", turns: [] }, inProcessServers: { "a__b": serve() } }),
      (error: unknown) =>
        error instanceof AgentError && error.code === "config" &&
        /Invalid inProcessServers: server name "a__b" must match/.test(error.message),
    );
  });
});
