// deno-lint-ignore-file no-explicit-any
/**
 * Permission in ACP (SPEC 7.8, issue 22) and the operator's servers (AcpOptions.mcpServers),
 * with `serveAcp` in this process: the test is the client, reading the agent's stdout as
 * JSON-RPC lines and answering its `session/request_permission` requests (or not), with the
 * scripted model and the fixture servers over stdio.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import { type AcpOptions, serveAcp } from "../lib/acp/server.ts";
import { permissionAnswer, permissionParams } from "../lib/acp/permission.ts";
import type { McpServerConfig } from "../lib/mcp/types.ts";
import { parseAcpArgs } from "../lib/cli/acp.ts";
import { AgentError } from "../lib/util/errors.ts";
import { fixtureFile, type Message, readLog, tempDir } from "./helpers/acp.ts";
import { repoRoot, tsCommand } from "./helpers/runtime.ts";

/** The ACP fixture (tests/fixtures/acp/server.ts) over stdio, as an operator's server. */
function acpFixture(name: string, env: Record<string, string>): McpServerConfig {
  const [command, ...args] = tsCommand(fixtureFile);
  return { name, transport: { type: "stdio", command: command!, args, env } };
}

/** tests/fixtures/agent-server.ts over stdio (FIXTURE_LOG logs every tools/call). */
function agentFixture(name: string, env: Record<string, string>): McpServerConfig {
  const [command, ...args] = tsCommand(`${repoRoot}tests/fixtures/agent-server.ts`);
  return { name, transport: { type: "stdio", command: command!, args, env } };
}

/** A client's answer to a permission request: a response to send, or none (never answers). */
type Answer = { result: unknown } | { error: unknown } | undefined;

/** serveAcp in this process, spoken to as a client. */
function startAcp(env: Record<string, string>, options: Partial<AcpOptions> = {}) {
  const queue: string[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  const stdin: AsyncIterable<string> = {
    async *[Symbol.asyncIterator]() {
      while (true) {
        if (queue.length > 0) yield queue.shift()!;
        else if (ended) return;
        else await new Promise<void>((resolve) => (wake = resolve));
      }
    },
  };
  const push = (line: string) => {
    queue.push(`${line}\n`);
    wake?.();
  };
  const messages: Message[] = [];
  const waiters = new Set<() => void>();
  let stderr = "";
  let pending = "";
  /** How the client answers each permission request; default: never. */
  let answer: (request: Message) => Answer = () => undefined;
  const send = (message: Record<string, unknown>) => push(JSON.stringify(message));
  const stdout = {
    write(chunk: string) {
      pending += chunk;
      let nl: number;
      while ((nl = pending.indexOf("\n")) !== -1) {
        const message = JSON.parse(pending.slice(0, nl)) as Message;
        pending = pending.slice(nl + 1);
        messages.push(message);
        if (message.method === "session/request_permission" && message.id !== undefined) {
          const reply = answer(message);
          if (reply !== undefined) send({ jsonrpc: "2.0", id: message.id, ...reply });
        }
        for (const w of [...waiters]) w();
      }
    },
  };
  const done = serveAcp({
    env: { ...process.env, ...env },
    stdin,
    stdout,
    stderr: { write: (chunk: string) => (stderr += chunk) },
    handleSignals: false,
    ...options,
  });
  let nextId = 1;
  const waitFor = (match: (m: Message) => boolean, from = 0, timeoutMs = 30_000) =>
    new Promise<Message>((resolve, reject) => {
      const check = () => {
        const found = messages.slice(from).find(match);
        if (found === undefined) return;
        waiters.delete(check);
        clearTimeout(timer);
        resolve(found);
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(
          new Error(
            `No matching message in ${timeoutMs} ms: ${JSON.stringify(messages.slice(from)).slice(-3000)}\n${stderr}`,
          ),
        );
      }, timeoutMs);
      waiters.add(check);
      check();
    });
  const request = (method: string, params: unknown) => {
    const id = nextId++;
    const from = messages.length;
    send({ jsonrpc: "2.0", id, method, params });
    return waitFor((m) => m.id === id && m.method === undefined, from, 60_000);
  };
  return {
    messages,
    send,
    request,
    waitFor,
    stderr: () => stderr,
    answerWith(fn: (request: Message) => Answer) {
      answer = fn;
    },
    async newSession(cwd: string, mcpServers: unknown[] = []): Promise<string> {
      const reply = await request("session/new", { cwd, mcpServers });
      assert.ok(reply.result?.sessionId, JSON.stringify(reply) + stderr);
      return reply.result.sessionId;
    },
    /** Sends a prompt; resolves with its stop reason and every message sent while it ran. */
    async prompt(sessionId: string, text: string) {
      const from = messages.length;
      const reply = await request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
      const during = messages.slice(from);
      return { reply, stopReason: reply.result?.stopReason as string | undefined, during };
    },
    async close(): Promise<number> {
      ended = true;
      wake?.();
      return await done;
    },
  };
}

type Acp = ReturnType<typeof startAcp>;

/** The `tools/call`s of `tool` that tests/fixtures/agent-server.ts logged to `file` (not its hooks' calls, whose `_meta` names the tool too). */
const toolCalls = (file: string, tool: string): { tool: string; args: unknown }[] =>
  readLog(file).map((l) => JSON.parse(l)).filter((e) => e.tool === tool);

const updatesOf = (during: Message[], id?: string) =>
  during.filter((m) => m.method === "session/update").map((m) => m.params.update).filter((u: any) =>
    id === undefined || u.toolCallId === id
  );
const statuses = (during: Message[], id: string) =>
  updatesOf(during, id).filter((u: any) => u.sessionUpdate === "tool_call_update").map((u: any) => u.status);
const asks = (during: Message[]) => during.filter((m) => m.method === "session/request_permission");
const selected = (optionId: string): Answer => ({ result: { outcome: { outcome: "selected", optionId } } });
const finalText = (during: Message[], id: string) => {
  const end = updatesOf(during, id).find((u: any) => u.status === "completed" || u.status === "failed");
  return end?.content?.[0]?.content?.text as string | undefined;
};

describe("acp permission: the four options over one session", () => {
  const dir = tempDir();
  const log = `${dir.path}/fx.log`;
  // Each prompt: one tool call, then an answer.
  const call = (name: string, args: Record<string, unknown>) => [{ toolCalls: [{ name, arguments: args }] }, {
    text: "ok",
  }];
  const script = dir.file(
    "script.json",
    JSON.stringify([
      ...call("fx__echo", { text: "one" }),
      ...call("fx__echo", { text: "two" }),
      ...call("fx__echo", { text: "three" }),
      ...call("fx__echo", { text: "four" }),
      ...call("fx__slow", { ms: 1 }),
      ...call("fx__slow", { ms: 2 }),
    ]),
  );
  let acp: Acp;
  let session: string;
  before(async () => {
    acp = startAcp({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script }, {
      mcpServers: [agentFixture("fx", { FIXTURE_LOG: log })],
      permissions: { ask: ["fx__*"] },
    });
    session = await acp.newSession(dir.path);
  });
  after(async () => {
    assert.equal(await acp.close(), 0, acp.stderr());
    dir.cleanup();
  });
  const ran = () => readLog(log).map((l) => JSON.parse(l)).filter((e) => !e.tool.startsWith("_")).map((e) => e.args);

  test("an ask of the policy is a session/request_permission: the call, pending, and the four options", async () => {
    acp.answerWith(() => selected("allow_once"));
    const { stopReason, during } = await acp.prompt(session, "one");
    assert.equal(stopReason, "end_turn");
    const [ask, ...more] = asks(during);
    assert.equal(more.length, 0);
    assert.equal(typeof ask!.id, "number");
    const params = ask!.params;
    assert.equal(params.sessionId, session);
    const id = params.toolCall.toolCallId as string;
    assert.deepEqual(
      { ...params.toolCall, content: undefined },
      {
        toolCallId: id,
        title: "fx__echo",
        kind: "other",
        status: "pending",
        rawInput: { text: "one" },
        content: undefined,
      },
    );
    assert.match(
      params.toolCall.content[0].content.text,
      /^Permission asked: the operator's policy \(ask "fx__\*"\) asks before "fx__echo" runs$/,
    );
    assert.deepEqual(params.options.map((o: any) => [o.optionId, o.kind]), [
      ["allow_once", "allow_once"],
      ["allow_always", "allow_always"],
      ["reject_once", "reject_once"],
      ["reject_always", "reject_always"],
    ]);
    assert.ok(params.options.every((o: any) => typeof o.name === "string" && o.name !== ""));
    // The client knows the call before it is asked, and sees it pending while it is.
    const at = (m: Message) => during.indexOf(m);
    const toolCall = during.find((m) => m.params?.update?.sessionUpdate === "tool_call")!;
    const pendingUpdate = during.find((m) =>
      m.params?.update?.sessionUpdate === "tool_call_update" && m.params.update.status === "pending"
    )!;
    assert.ok(
      at(toolCall) < at(pendingUpdate) && at(pendingUpdate) < at(ask!),
      "tool_call, then pending, then the ask",
    );
    assert.deepEqual(statuses(during, id), ["in_progress", "pending", "in_progress", "completed"]);
    assert.deepEqual(ran(), [{ text: "one" }]);
  });

  test("reject_once: the tool does not run, the model is told, and the turn goes on", async () => {
    acp.answerWith(() => selected("reject_once"));
    const { stopReason, during } = await acp.prompt(session, "two");
    assert.equal(stopReason, "end_turn");
    assert.equal(asks(during).length, 1);
    const id = asks(during)[0]!.params.toolCall.toolCallId;
    assert.deepEqual(statuses(during, id), ["in_progress", "pending", "failed"]);
    assert.match(finalText(during, id)!, /^Permission denied: .*\(the person denied it\)$/);
    assert.ok(updatesOf(during).some((u: any) => u.sessionUpdate === "agent_message_chunk"), "the turn went on");
    assert.deepEqual(ran(), [{ text: "one" }]);
  });

  test("a reject_once holds for that call only; allow_always holds for the session", async () => {
    acp.answerWith(() => selected("allow_always"));
    const third = await acp.prompt(session, "three");
    assert.equal(asks(third.during).length, 1, "asked again after reject_once");
    acp.answerWith(() => {
      throw new Error("must not be asked");
    });
    const fourth = await acp.prompt(session, "four");
    assert.equal(fourth.stopReason, "end_turn");
    assert.equal(asks(fourth.during).length, 0, "allow_always: not asked again");
    const id = updatesOf(fourth.during).find((u: any) => u.sessionUpdate === "tool_call").toolCallId;
    assert.deepEqual(statuses(fourth.during, id), ["in_progress", "completed"]);
    assert.deepEqual(ran(), [{ text: "one" }, { text: "three" }, { text: "four" }]);
  });

  test("reject_always holds for the session: the next call is denied without asking", async () => {
    acp.answerWith(() => selected("reject_always"));
    const fifth = await acp.prompt(session, "five");
    assert.equal(asks(fifth.during).length, 1);
    acp.answerWith(() => {
      throw new Error("must not be asked");
    });
    const sixth = await acp.prompt(session, "six");
    assert.equal(sixth.stopReason, "end_turn");
    assert.equal(asks(sixth.during).length, 0);
    const id = updatesOf(sixth.during).find((u: any) => u.sessionUpdate === "tool_call").toolCallId;
    assert.deepEqual(statuses(sixth.during, id), ["in_progress", "failed"]);
    assert.match(finalText(sixth.during, id)!, /rejected "fx__slow" for this session/);
    assert.equal(ran().length, 3, "no slow call ran");
  });
});

describe("acp permission: a cancel withdraws pending requests", () => {
  const dir = tempDir();
  const log = `${dir.path}/fx.log`;
  const script = dir.file(
    "script.json",
    JSON.stringify([
      { toolCalls: [{ name: "fx__echo", arguments: { text: "a" } }, { name: "fx__echo", arguments: { text: "b" } }] },
      { text: "back after the cancel" },
    ]),
  );
  let acp: Acp;
  let session: string;
  before(() => {
    acp = startAcp({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script }, {
      mcpServers: [agentFixture("fx", { FIXTURE_LOG: log })],
      permissions: { ask: ["fx__echo"] },
    });
  });
  after(async () => {
    assert.equal(await acp.close(), 0, acp.stderr());
    dir.cleanup();
  });

  test("session/cancel while two questions are open: both withdrawn, nothing runs, each call ends once, cancelled", async () => {
    session = await acp.newSession(dir.path);
    acp.answerWith(() => undefined); // the person never answers
    const from = acp.messages.length;
    const done = acp.request("session/prompt", { sessionId: session, prompt: [{ type: "text", text: "go" }] });
    await acp.waitFor(
      (m) => m.method === "session/request_permission" && m.params.toolCall.rawInput.text === "a",
      from,
    );
    await acp.waitFor(
      (m) => m.method === "session/request_permission" && m.params.toolCall.rawInput.text === "b",
      from,
    );
    const cancelAt = acp.messages.length;
    const started = Date.now();
    acp.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: session } });
    const reply = await done;
    // At once: no timer in the way (a generous margin for a loaded machine).
    assert.ok(Date.now() - started < 10_000, `answered in ${Date.now() - started} ms`);
    assert.equal(reply.result.stopReason, "cancelled");
    const during = acp.messages.slice(from);
    const after = acp.messages.slice(cancelAt);
    const ids = asks(during).map((m) => m.id);
    assert.equal(ids.length, 2);
    const withdrawn = after.filter((m) => m.method === "$/cancel_request").map((m) => m.params.requestId);
    assert.deepEqual([...withdrawn].sort(), [...ids].sort(), "each open request is withdrawn with $/cancel_request");
    for (const ask of asks(during)) {
      const id = ask.params.toolCall.toolCallId;
      const terminal = updatesOf(during, id).filter((u: any) => u.status === "completed" || u.status === "failed");
      assert.equal(terminal.length, 1, `exactly one terminal update for ${id}`);
      assert.equal(terminal[0].status, "failed");
      assert.equal(terminal[0].content[0].content.text, "cancelled");
      // The withdrawal comes before the call's end, which comes before the prompt's answer.
      const end = acp.messages.indexOf(acp.messages.find((m) => m.params?.update === terminal[0])!);
      const withdrawal = acp.messages.findIndex((m) =>
        m.method === "$/cancel_request" && m.params.requestId === ask.id
      );
      assert.ok(withdrawal < end && end < acp.messages.indexOf(reply));
    }
    assert.deepEqual(toolCalls(log, "echo"), [], "no tool of that response ran");
    // The client answers cancelled afterwards, as ACP asks: the late answers are ignored.
    for (const id of ids) acp.send({ jsonrpc: "2.0", id, result: { outcome: { outcome: "cancelled" } } });
  });

  test("the history stays valid: the session's next prompt runs", async () => {
    const { stopReason, during } = await acp.prompt(session, "again");
    assert.equal(stopReason, "end_turn");
    const text = updatesOf(during).filter((u: any) => u.sessionUpdate === "agent_message_chunk").map((u: any) =>
      u.content.text
    ).join("");
    assert.equal(text, "back after the cancel");
    assert.equal(asks(during).length, 0);
  });
});

describe("acp permission: clients that answer badly, hooks that ask, destructiveHint", () => {
  const dir = tempDir();
  const log = `${dir.path}/fx.log`;
  const guardLog = `${dir.path}/guard.log`;
  const script = dir.file(
    "script.json",
    JSON.stringify([
      { toolCalls: [{ name: "fx__echo", arguments: { text: "error" } }] },
      { text: "ok" },
      { toolCalls: [{ name: "fx__echo", arguments: { text: "malformed" } }] },
      { text: "ok" },
      { toolCalls: [{ name: "fx__echo", arguments: { text: "unknown option" } }] },
      { text: "ok" },
    ]),
  );
  let acp: Acp;
  let session: string;
  before(async () => {
    acp = startAcp({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script }, {
      mcpServers: [agentFixture("fx", { FIXTURE_LOG: log })],
      permissions: { ask: ["fx__echo"] },
    });
    session = await acp.newSession(dir.path);
  });
  after(async () => {
    assert.equal(await acp.close(), 0, acp.stderr());
    dir.cleanup();
  });

  for (
    const [what, answer, logged] of [
      [
        "an error response",
        { error: { code: -32603, message: "the UI crashed" } },
        /answered with an error -32603: the UI crashed; the call is rejected/,
      ],
      [
        "a malformed result",
        { result: { outcome: "yes" } },
        /the result has no outcome object: \{"outcome":"yes"\}; the call is rejected/,
      ],
      [
        "an option that was not offered",
        selected("allow_forever"),
        /optionId "allow_forever" is not one of the options offered; the call is rejected/,
      ],
    ] as const
  ) {
    test(`${what} rejects the call, with a log line, and the turn goes on`, async () => {
      acp.answerWith(() => answer as Answer);
      const { stopReason, during } = await acp.prompt(session, what);
      assert.equal(stopReason, "end_turn");
      const id = asks(during)[0]!.params.toolCall.toolCallId;
      assert.deepEqual(statuses(during, id), ["in_progress", "pending", "failed"]);
      assert.match(finalText(during, id)!, /\(the person denied it\)$/);
      assert.match(acp.stderr(), logged);
      assert.match(acp.stderr(), new RegExp(`\\[${session}\\] session/request_permission for "fx__echo"`));
    });
  }
  test("none of those calls ran", () => {
    assert.deepEqual(toolCalls(log, "echo"), []);
  });

  test("a _PreToolUse hook's ask goes to the client with its reason and server; destructiveHint asks by default", async () => {
    const script2 = dir.file(
      "script2.json",
      JSON.stringify([
        { toolCalls: [{ name: "guard__echo", arguments: { text: "guarded" } }] },
        {
          toolCalls: [{ name: "files__remove", arguments: { path: "a.txt" } }, {
            name: "files__echo",
            arguments: { text: "plain" },
          }],
        },
        { text: "done" },
      ]),
    );
    const acp2 = startAcp({
      SPROUT_AGENT_PROVIDER: "scripted",
      SPROUT_AGENT_SCRIPT: script2,
      MCP_HOOK_SERVERS: "guard",
    }, {
      mcpServers: [
        agentFixture("guard", {
          FIXTURE_LOG: guardLog,
          FIXTURE_PRE_TOOL: JSON.stringify({ decision: "ask", reason: "echo needs a person" }),
          FIXTURE_TOOL_HOOK_TOOLS: "guard__*",
        }),
        acpFixture("files", { ACP_FIXTURE_LOG: log, ACP_FIXTURE_DESTRUCTIVE: "1", FIXTURE_LABEL: "files" }),
      ],
    });
    try {
      const s = await acp2.newSession(dir.path);
      acp2.answerWith((m) => selected(m.params.toolCall.title === "guard__echo" ? "allow_once" : "reject_once"));
      const { stopReason, during } = await acp2.prompt(s, "go");
      assert.equal(stopReason, "end_turn");
      const titles = asks(during).map((m) => m.params.toolCall.title);
      assert.deepEqual(titles, ["guard__echo", "files__remove"], "files__echo (no annotation) is not asked");
      assert.equal(
        asks(during)[0]!.params.toolCall.content[0].content.text,
        'Permission asked: echo needs a person (hook server "guard")',
      );
      assert.match(asks(during)[1]!.params.toolCall.content[0].content.text, /destructiveHint/);
      assert.ok(toolCalls(guardLog, "echo").length > 0, "the allowed call ran");
      assert.ok(!readLog(log).some((l) => l.startsWith("removed")), "the rejected remove did not run");
      const echo = updatesOf(during).find((u: any) => u.sessionUpdate === "tool_call" && u.title === "files__echo");
      assert.deepEqual(statuses(during, echo.toolCallId), ["in_progress", "completed"]);
    } finally {
      assert.equal(await acp2.close(), 0, acp2.stderr());
    }
  });
});

describe("acp: the operator's servers join every session's", () => {
  const dir = tempDir();
  const opLog = `${dir.path}/op.log`;
  const clLog = `${dir.path}/cl.log`;
  const script = dir.file("script.json", JSON.stringify([{ text: "first" }, { text: "second" }]));
  const [command, ...args] = tsCommand(fixtureFile);
  const clientServer = (name: string, env: Record<string, string>) => ({
    name,
    command,
    args,
    env: Object.entries(env).map(([k, v]) => ({ name: k, value: v })),
  });
  let acp: Acp;
  before(() => {
    acp = startAcp({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script, MCP_HOOK_SERVERS: "*" }, {
      mcpServers: [acpFixture("op", { ACP_FIXTURE_LOG: opLog, FIXTURE_LABEL: "op" })],
      mcpServersSource: "/etc/sprout/.mcp.json",
    });
  });
  after(async () => {
    assert.equal(await acp.close(), 0, acp.stderr());
    dir.cleanup();
  });

  test("operator servers come first, then the client's; MCP_HOOK_SERVERS enables both", async () => {
    const session = await acp.newSession(dir.path, [
      clientServer("cl", { ACP_FIXTURE_LOG: clLog, FIXTURE_LABEL: "cl" }),
    ]);
    const { stopReason, during } = await acp.prompt(session, "hi");
    assert.equal(stopReason, "end_turn");
    const thoughts = updatesOf(during).filter((u: any) => u.sessionUpdate === "agent_thought_chunk").map((u: any) =>
      u.content.text
    ).join("").trim().split("\n");
    assert.deepEqual(thoughts, [
      '_Stop hook "op" objected: op: finish the checklist first (objection 1)',
      '_Stop hook "cl" objected: cl: finish the checklist first (objection 1)',
    ]);
    // With no client servers (what acpx sends), the operator's still join.
    const bare = await acp.newSession(dir.path, []);
    assert.ok(
      readLog(opLog).filter((l) => l.startsWith("pid ")).length >= 2,
      "the operator's server started for each session",
    );
    assert.ok(bare.startsWith("ses_"));
  });

  test("a client server with an operator server's name fails session/new naming both", async () => {
    const reply = await acp.request("session/new", { cwd: dir.path, mcpServers: [clientServer("op", {})] });
    assert.equal(reply.error?.code, -32602);
    assert.equal(
      reply.error.message,
      'Invalid params for session/new: the client\'s server mcpServers[0] "op" and the operator\'s server "op" (from /etc/sprout/.mcp.json) have the same name: rename one of them',
    );
  });

  test("an operator's required server that cannot start fails session/new", async () => {
    const acp2 = startAcp({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script }, {
      mcpServers: [{
        name: "guard",
        required: true,
        transport: { type: "stdio", command: `${dir.path}/no-such-guard`, args: [], env: {} },
      }],
    });
    try {
      const reply = await acp2.request("session/new", { cwd: dir.path, mcpServers: [] });
      assert.equal(reply.error?.code, -32000);
      assert.match(reply.error.message, /^Required server "guard" could not start: /);
      assert.match(acp2.stderr(), /\[ses_[0-9a-f]+\] Required server "guard" could not start/);
    } finally {
      assert.equal(await acp2.close(), 0, acp2.stderr());
    }
  });
});

describe("acp: arguments and the permission wire format", () => {
  test("parseAcpArgs takes --mcp-config and --allow/--ask/--deny, and nothing else", () => {
    assert.deepEqual(parseAcpArgs(["--mcp-config", "a.json", "--allow=fs__read", "--ask", "shell__*", "--deny", "x"]), {
      mcpConfig: "a.json",
      permissions: { allow: ["fs__read"], ask: ["shell__*"], deny: ["x"] },
    });
    const usage = (args: string[]) => {
      try {
        parseAcpArgs(args);
      } catch (error) {
        assert.ok(error instanceof AgentError && error.code === "usage");
        return error.message;
      }
      assert.fail("no error");
    };
    assert.equal(
      usage(["--mcp-confg", "x"]),
      'Unknown flag "--mcp-confg" for acp: did you mean --mcp-config? (see --help)',
    );
    assert.match(usage(["--json"]), /Unknown flag "--json" for acp/);
    assert.match(usage(["hello"]), /acp takes no prompt/);
    assert.match(usage(["--mcp-config"]), /Missing value for --mcp-config/);
    assert.match(usage(["--ask"]), /Missing value for --ask/);
  });

  test("permissionAnswer reads ACP's two outcomes and refuses the rest", () => {
    assert.deepEqual(permissionAnswer(selected("reject_always") as { result: unknown }), { outcome: "reject_always" });
    assert.deepEqual(permissionAnswer({ result: { outcome: { outcome: "cancelled" } } }), { outcome: "cancelled" });
    assert.match((permissionAnswer({ result: null }) as { problem: string }).problem, /no outcome object/);
    assert.match(
      (permissionAnswer({ result: { outcome: { outcome: "maybe" } } }) as { problem: string }).problem,
      /"maybe" is not selected or cancelled/,
    );
    const params = permissionParams("ses_1", {
      call: { id: "call_1", name: "fs__rm", server: "fs", tool: "rm", arguments: { path: "/" } },
      reason: "it deletes",
      servers: ["guard", "audit"],
    });
    assert.equal(
      (params["toolCall"] as any).content[0].content.text,
      'Permission asked: it deletes (hook servers "guard", "audit")',
    );
  });
});
