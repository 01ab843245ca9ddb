/**
 * Input requests and tasks (SPEC section 10, issue 25): the `input_required` rounds of
 * 2026-07-28 and a legacy server's own `elicitation/create`, `sampling/createMessage` and
 * `roots/list`, through one {@link InputHandler}; task-based tool calls in the tasks extension's
 * shape and the 2025-11-25 one. In-process first (the JSON-RPC peer, the rounds, the task
 * poller against scripted answers), then against real servers: the official SDK 2.x
 * (`tests/fixtures/mcp/sdk2-input.ts`, both eras), the SDK 1.x task tools
 * (`sdk1-tasks.ts`) and a byte-exact tasks-extension server (`modern-tasks.mjs`; the SDK 2.x in
 * node_modules has no task runtime).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { connectMcp } from "../lib/mcp/client.ts";
import {
  answerInputRequest,
  clientCapabilities,
  type InputContext,
  type InputHandler,
  MAX_INPUT_ROUNDS,
  runInputRounds,
} from "../lib/mcp/input-requests.ts";
import { type JsonRpcMessage, JsonRpcPeer } from "../lib/mcp/jsonrpc.ts";
import { awaitTask, pollInterval, taskOf } from "../lib/mcp/tasks.ts";
import { createRegistry } from "../lib/mcp/registry.ts";
import type { McpServerConfig } from "../lib/mcp/types.ts";
import { fixtures, startHttpFixture, tsServer } from "./fixtures/mcp/helpers.ts";

const context = (signal = new AbortController().signal): InputContext => ({ server: "s", tool: "t", signal });
const text = (r: { content: unknown[] }) => (r.content[0] as { text: string }).text;

const person: InputHandler = {
  elicit: (request) =>
    Promise.resolve(
      request.mode === "form" ? { action: "accept", content: { name: "Ada", age: 36 } } : { action: "accept" },
    ),
  sample: () =>
    Promise.resolve({ role: "assistant", content: { type: "text", text: "Paris" }, model: "m", stopReason: "endTurn" }),
  roots: [{ uri: "file:///work/project", name: "project" }],
};

describe("input requests, in-process", () => {
  test("the capabilities declare what the handler can answer, and the tasks extension in the modern era", () => {
    assert.deepEqual(clientCapabilities(undefined, false), {});
    assert.deepEqual(clientCapabilities(undefined, true), { extensions: { "io.modelcontextprotocol/tasks": {} } });
    assert.deepEqual(clientCapabilities(person, false), {
      elicitation: { form: {}, url: {} },
      sampling: {},
      roots: {},
    });
    assert.deepEqual(clientCapabilities({ elicit: person.elicit, elicitationModes: ["form"] }, false), {
      elicitation: { form: {} },
    });
  });

  test("each method is answered or refused with its MCP meaning", async () => {
    assert.deepEqual(await answerInputRequest("roots/list", {}, person, context()), {
      roots: [{ uri: "file:///work/project", name: "project" }],
    });
    // Nobody to ask, or a mode not declared: a decline, never a hang.
    const form = { mode: "form", message: "m", requestedSchema: { type: "object", properties: {} } };
    assert.deepEqual(await answerInputRequest("elicitation/create", form, {}, context()), { action: "decline" });
    const url = { mode: "url", message: "m", url: "https://example.com/a", elicitationId: "e" };
    assert.deepEqual(
      await answerInputRequest(
        "elicitation/create",
        url,
        { elicit: person.elicit, elicitationModes: ["form"] },
        context(),
      ),
      { action: "decline" },
    );
    assert.deepEqual(await answerInputRequest("elicitation/create", url, person, context()), { action: "accept" });
    // An answer that is not one of MCP's is a cancel.
    const odd = { elicit: () => Promise.resolve({ action: "maybe" } as never) };
    assert.deepEqual(await answerInputRequest("elicitation/create", form, odd, context()), { action: "cancel" });
    await assert.rejects(
      answerInputRequest("sampling/createMessage", { messages: [] }, {}, context()),
      (e: Error & { rpcCode?: number }) =>
        e.rpcCode === -32601 && /sampling\/createMessage, which is off: .*SPROUT_AGENT_SAMPLING=on/.test(e.message),
    );
    await assert.rejects(
      answerInputRequest(
        "elicitation/create",
        { mode: "url", message: "m", url: "javascript:alert(1)" },
        person,
        context(),
      ),
      (e: Error & { rpcCode?: number }) => e.rpcCode === -32602 && /not http\(s\)/.test(e.message),
    );
    await assert.rejects(answerInputRequest("roots/list", {}, {}, context()), /roots\/list, which is not declared/);
  });

  test("rounds: every request answered, requestState echoed byte for byte on each retry, at most 10 rounds", async () => {
    const sent: Record<string, unknown>[] = [];
    const first = {
      resultType: "input_required",
      inputRequests: {
        github_login: {
          method: "elicitation/create",
          params: {
            mode: "form",
            message: "Please provide your GitHub username",
            requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
          },
        },
        capital_of_france: {
          method: "sampling/createMessage",
          params: { messages: [{ role: "user", content: { type: "text", text: "?" } }], maxTokens: 100 },
        },
      },
      requestState: "AEAD-protected blob \u00e9\u0000",
    };
    const done = await runInputRounds(first, {
      context: context(),
      method: "tools/call",
      input: person,
      retry: (extra) => {
        sent.push(extra);
        return Promise.resolve(
          sent.length === 1
            ? { resultType: "input_required", requestState: "only state" }
            : { resultType: "complete", content: [] },
        );
      },
      pause: () => Promise.resolve(),
    });
    assert.deepEqual(done, { resultType: "complete", content: [] });
    assert.deepEqual(sent, [
      {
        inputResponses: {
          github_login: { action: "accept", content: { name: "Ada", age: 36 } },
          capital_of_france: {
            role: "assistant",
            content: { type: "text", text: "Paris" },
            model: "m",
            stopReason: "endTurn",
          },
        },
        requestState: "AEAD-protected blob \u00e9\u0000",
      },
      // A round of state alone: no inputResponses.
      { requestState: "only state" },
    ]);
    let retries = 0;
    await assert.rejects(
      runInputRounds({ resultType: "input_required", requestState: "x" }, {
        context: context(),
        method: "tools/call",
        input: person,
        retry: () => (retries++, Promise.resolve({ resultType: "input_required", requestState: "x" })),
        pause: () => Promise.resolve(),
      }),
      /Request "tools\/call" to server "s" still required input after 10 rounds/,
    );
    assert.equal(retries, MAX_INPUT_ROUNDS);
  });

  test("a legacy server's own requests are answered by the peer; one it cancels gets no answer and its handler stops", async () => {
    const out: JsonRpcMessage[] = [];
    let aborted = false;
    const peer = new JsonRpcPeer({
      label: 'server "s"',
      send: (m) => (out.push(m), Promise.resolve()),
      onRequest: (method, params, signal) => {
        if (method === "roots/list") return answerInputRequest(method, params, person, { server: "s", signal });
        if (method === "elicitation/create") {
          return new Promise((resolve) => signal.addEventListener("abort", () => (aborted = true, resolve({}))));
        }
        return undefined;
      },
    });
    peer.receive({ jsonrpc: "2.0", id: 7, method: "roots/list", params: {} });
    peer.receive({ jsonrpc: "2.0", id: "e", method: "elicitation/create", params: {} });
    peer.receive({ jsonrpc: "2.0", id: 8, method: "other/thing", params: {} });
    await new Promise((r) => setTimeout(r, 10));
    peer.receive({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "e" } });
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(aborted, true);
    assert.deepEqual(out.map((m) => [m.id, m.result ?? m.error?.code]), [
      [8, -32601],
      [7, { roots: [{ uri: "file:///work/project", name: "project" }] }],
    ]);
  });
});

describe("tasks, in-process", () => {
  test("the handle of each shape is recognised; a result with content is not a task", () => {
    assert.equal(taskOf({ resultType: "task", taskId: "a", status: "working" })?.taskId, "a");
    assert.equal(taskOf({ task: { taskId: "b", status: "working" } })?.taskId, "b");
    assert.equal(taskOf({ content: [], task: { taskId: "c" } }), undefined);
    assert.equal(taskOf({ resultType: "complete", content: [] }), undefined);
    assert.equal(pollInterval({ pollIntervalMs: 5000 }, true), 5000);
    assert.equal(pollInterval({ pollInterval: 0 }, false), 10);
    assert.equal(pollInterval({ pollInterval: 1e9 }, false), 30_000);
    assert.equal(pollInterval({}, true), 500);
  });

  test("a modern task that needs input: each request is answered once though polls repeat it, then tasks/update", async () => {
    const requests: [string, Record<string, unknown>][] = [];
    const ask = {
      name: {
        method: "elicitation/create",
        params: { mode: "form", message: "Name?", requestedSchema: { type: "object", properties: {} } },
      },
    };
    const answers = [
      { status: "input_required", inputRequests: ask },
      { status: "input_required", inputRequests: ask },
      { status: "working", statusMessage: "thinking" },
      { status: "completed", result: { content: [{ type: "text", text: "Hello" }], isError: false } },
    ];
    let elicited = 0;
    const progress: string[] = [];
    const result = await awaitTask({ taskId: "t1", task: { taskId: "t1", status: "working", pollIntervalMs: 1 } }, {
      modern: true,
      context: context(),
      deadline: Date.now() + 10_000,
      timeoutMs: 10_000,
      input: { elicit: () => (elicited++, Promise.resolve({ action: "accept", content: { name: "L" } })) },
      request: (method, params) => {
        requests.push([method, params]);
        if (method === "tasks/update") return Promise.resolve({ resultType: "complete" });
        return Promise.resolve({ resultType: "complete", taskId: "t1", pollIntervalMs: 1, ...answers.shift() });
      },
      onProgress: (m) => progress.push(m),
      sleep: () => Promise.resolve(),
    });
    assert.deepEqual(result, { content: [{ type: "text", text: "Hello" }], isError: false });
    assert.equal(elicited, 1);
    assert.deepEqual(requests.map(([m]) => m), ["tasks/get", "tasks/update", "tasks/get", "tasks/get", "tasks/get"]);
    assert.deepEqual(requests[1]![1], {
      taskId: "t1",
      inputResponses: { name: { action: "accept", content: { name: "L" } } },
    });
    assert.deepEqual(progress, ["task working", "task input_required", "task working: thinking", "task completed"]);
  });

  test("a cancel sends tasks/cancel and rejects with an AbortError; the deadline cancels too, with a message of its own", async () => {
    const controller = new AbortController();
    const sent: string[] = [];
    const pending = awaitTask({ taskId: "t2", task: { taskId: "t2", status: "working" } }, {
      modern: false,
      context: context(controller.signal),
      deadline: Date.now() + 10_000,
      timeoutMs: 10_000,
      input: undefined,
      request: (method) => (sent.push(method), Promise.resolve({ taskId: "t2", status: "working" })),
    });
    setTimeout(() => controller.abort(), 30);
    await assert.rejects(pending, (e: Error) => e.name === "AbortError");
    assert.equal(sent.at(-1), "tasks/cancel");
    const late: string[] = [];
    await assert.rejects(
      awaitTask({ taskId: "t3", task: { taskId: "t3", status: "working", pollInterval: 10 } }, {
        modern: false,
        context: context(),
        deadline: Date.now() + 60,
        timeoutMs: 60,
        input: undefined,
        request: (
          method,
        ) => (late.push(method), Promise.resolve({ taskId: "t3", status: "working", pollInterval: 10 })),
      }),
      (e: Error & { code?: string; serverAnswered?: boolean }) =>
        e.code === "timeout" && e.serverAnswered === true &&
        /^Tool "t" timed out after [\d.]+ s waiting for task "t3" \(status "working"\); the task was cancelled$/.test(
          e.message,
        ),
    );
    assert.equal(late.at(-1), "tasks/cancel");
  });
});

/** The SDK 2.x input fixture over stdio, pinned to `era`. */
const inputServer = (era: "modern" | "legacy"): McpServerConfig => ({
  ...tsServer("in", "sdk2-input.ts", "bun"),
  protocol: era,
});

describe("roots of a stdio server that has a cwd of its own", () => {
  test("it is told its own folder as its one root; a server without a cwd gets the session's", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sprout-roots-"));
    try {
      const own = { ...inputServer("legacy"), name: "own" };
      own.transport = { ...(own.transport as Extract<McpServerConfig["transport"], { type: "stdio" }>), cwd: dir };
      for (
        const [config, expected] of [[own, pathToFileURL(dir).href], [
          inputServer("legacy"),
          "file:///work/project",
        ]] as const
      ) {
        const conn = await connectMcp(config, { sessionId: "s1", input: person });
        try {
          assert.equal(text(await conn.callTool("where", {}, { timeoutMs: 20_000 })), `roots: ${expected}`);
        } finally {
          await conn.close();
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

for (const era of ["modern", "legacy"] as const) {
  describe(`input requests against the official SDK 2.x server (${era} era)`, () => {
    test("a form and a URL elicitation, a sampling request and roots/list each reach the handler and come back", async () => {
      const seen: string[] = [];
      const conn = await connectMcp(inputServer(era), {
        sessionId: "s1",
        input: {
          ...person,
          elicit: (request, ctx) => {
            seen.push(`${request.mode} ${ctx.tool} ${request.mode === "url" ? request.url : request.message}`);
            return person.elicit!(request, ctx);
          },
        },
      });
      try {
        assert.equal(conn.era, era);
        const call = (name: string) => conn.callTool(name, {}, { timeoutMs: 20_000 }).then(text);
        assert.equal(await call("greet"), 'Hello, Ada! {"name":"Ada","age":36}');
        assert.equal(await call("signin"), "sign-in accept");
        assert.equal(await call("capital"), "model m said: Paris (endTurn)");
        assert.equal(await call("where"), "roots: file:///work/project");
        // Tied to the call (legacy: the one call in flight).
        assert.deepEqual(seen, ["form greet Who are you?", "url signin https://example.com/login?session=abc"]);
        // The round cap: ours in the modern era; the SDK's legacy shim's own in the legacy one.
        if (era === "modern") {
          await assert.rejects(
            conn.callTool("pester", {}, { timeoutMs: 20_000 }),
            /still required input after 10 rounds/,
          );
        } else {
          const r = await conn.callTool("pester", {}, { timeoutMs: 20_000 });
          assert.equal(r.isError, true);
          assert.match(text(r), /still required input after \d+ rounds/);
        }
      } finally {
        await conn.close();
      }
    });

    test("a person who does not answer within the tool timeout: the call times out waiting for them; the server, not at fault, keeps running", async () => {
      let asked = 0;
      const { registry } = await createRegistry([inputServer(era)], {
        sessionId: "s1",
        input: {
          ...person,
          // Waits until the question is withdrawn, as a person away from the keyboard would.
          elicit: (_r, ctx) =>
            new Promise((
              resolve,
            ) => (asked++, ctx.signal.addEventListener("abort", () => resolve({ action: "cancel" })))),
        },
      });
      try {
        await registry.listTools();
        // 5 s: the server's question must arrive within the tool timeout for the timeout to be
        // the person's; 2 s was too short once for a loaded machine (three runners on two cores).
        const out = await registry.callTool("in__greet", {}, { timeoutMs: 5000 });
        assert.equal(asked, 1);
        assert.equal(out.isError, true);
        assert.equal(text(out), `Tool "greet" timed out after 5 s waiting for an answer to server "in"'s question`);
        assert.equal(
          text(await registry.callTool("in__where", {}, { timeoutMs: 20_000 })),
          "roots: file:///work/project",
        );
      } finally {
        await registry.close();
      }
    });

    test("a decline and a cancel keep their meanings; sampling off is refused with the setting's name", async () => {
      let action: "decline" | "cancel" = "decline";
      const conn = await connectMcp(inputServer(era), {
        sessionId: "s1",
        input: { elicit: () => Promise.resolve({ action }) },
      });
      try {
        const call = (name: string) => conn.callTool(name, {}, { timeoutMs: 20_000 });
        assert.equal(text(await call("greet")), "elicitation decline");
        action = "cancel";
        assert.equal(text(await call("greet")), "elicitation cancel");
        if (era === "modern") {
          // Not declared, so the SDK server refuses to ask; asked anyway, it would be refused naming the setting.
          await assert.rejects(call("capital"), /sampling|capabilit/i);
        } else {
          const r = await call("capital");
          assert.equal(r.isError, true);
          assert.match(text(r), /sampling/i);
        }
      } finally {
        await conn.close();
      }
    });
  });
}

describe("tasks against real servers", () => {
  test('SDK 1.x (2025-11-25): a "required" tool is offered and called as a task, its steps reported; "optional" stays a plain call', async () => {
    const dir = mkdtempSync(join(tmpdir(), "sprout-tasks-"));
    const log = join(dir, "in.log");
    const inner = tsServer("t", "sdk1-tasks.ts", "bun").transport as { command: string; args: string[] };
    const argv = [inner.command, ...inner.args].map((a) => `'${a}'`).join(" ");
    const warnings: string[] = [];
    const { registry } = await createRegistry([{
      name: "t",
      transport: { type: "stdio", command: "sh", args: ["-c", `tee -a '${log}' | exec ${argv}`], env: {} },
    }], { sessionId: "s1", onWarning: (m) => warnings.push(m) });
    try {
      const names = (await registry.listTools()).map((t) => t.name);
      assert.deepEqual(names, ["t__echo", "t__render", "t__convert", "t__steps", "t__forever"]);
      assert.deepEqual(warnings, []);
      const progress: string[] = [];
      const out = await registry.callTool("t__steps", { text: "a" }, {
        timeoutMs: 20_000,
        onProgress: (m) => progress.push(m),
      });
      assert.deepEqual(out, { content: [{ type: "text", text: "steps: a" }], isError: false });
      for (const step of ["step 1 of 3", "step 2 of 3", "step 3 of 3"]) {
        assert.ok(progress.includes(`task working: ${step}`), progress.join(" | "));
      }
      assert.equal(text(await registry.callTool("t__convert", { text: "b" }, { timeoutMs: 20_000 })), "convert: b");
      // The tool timeout bounds the wait; the task is cancelled and the server, which answered throughout, keeps running.
      const slow = await registry.callTool("t__forever", { text: "c" }, { timeoutMs: 1500 });
      assert.equal(slow.isError, true);
      assert.match(
        text(slow),
        /^Tool "forever" timed out after 1\.5 s waiting for task ".+" \(status "working"\); the task was cancelled$/,
      );
      assert.equal(text(await registry.callTool("t__echo", { text: "d" }, { timeoutMs: 20_000 })), "echo: d");
      const sent = readFileSync(log, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
      const calls = sent.filter((m) => m.method === "tools/call");
      assert.deepEqual(calls.map((m) => [m.params.name, m.params.task]), [
        ["steps", { ttl: 20_000 }],
        ["convert", undefined],
        ["forever", { ttl: 1500 }],
        ["echo", undefined],
      ]);
      assert.ok(sent.some((m) => m.method === "tasks/get"));
      assert.ok(sent.some((m) => m.method === "tasks/result"));
      assert.equal(sent.filter((m) => m.method === "tasks/cancel").length, 1);
    } finally {
      await registry.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the tasks extension (2026-07-28, the specification's shapes): input mid-task, progress, failure, cancel", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sprout-mtasks-"));
    const log = join(dir, "in.log");
    const conn = await connectMcp(
      {
        name: "mt",
        transport: { type: "stdio", command: "node", args: [`${fixtures}modern-tasks.mjs`, "--log", log], env: {} },
      },
      { sessionId: "s1", input: { elicit: () => Promise.resolve({ action: "accept", content: { name: "Luca" } }) } },
    );
    try {
      assert.equal(conn.era, "modern");
      const progress: string[] = [];
      const hello = await conn.callTool("hello_world", {}, { timeoutMs: 20_000, onProgress: (m) => progress.push(m) });
      assert.deepEqual(hello, { content: [{ type: "text", text: "Hello, Luca!" }], isError: false });
      assert.deepEqual(progress, ["task working", "task input_required", "task working", "task completed"]);
      progress.length = 0;
      assert.equal(
        text(await conn.callTool("slow", {}, { timeoutMs: 20_000, onProgress: (m) => progress.push(m) })),
        "done",
      );
      assert.deepEqual(progress, ["task working", "task working: 1 of 2", "task working: 2 of 2", "task completed"]);
      await assert.rejects(
        conn.callTool("fails", {}, { timeoutMs: 20_000 }),
        (e: Error & { rpcCode?: number }) => e.rpcCode === -32603 && /API rate limit exceeded/.test(e.message),
      );
      // Cancelled once the task exists (its first status).
      const controller = new AbortController();
      await assert.rejects(
        conn.callTool("forever", {}, {
          timeoutMs: 20_000,
          signal: controller.signal,
          onProgress: () => controller.abort(),
        }),
        (e: Error) => e.name === "AbortError",
      );
      await new Promise((r) => setTimeout(r, 100));
      const sent = readFileSync(log, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
      const caps = sent.find((m) => m.method === "tools/call")?.params
        ._meta["io.modelcontextprotocol/clientCapabilities"];
      assert.deepEqual(caps, {
        elicitation: { form: {}, url: {} },
        extensions: { "io.modelcontextprotocol/tasks": {} },
      });
      const update = sent.find((m) => m.method === "tasks/update");
      assert.deepEqual(update.params.inputResponses, { name: { action: "accept", content: { name: "Luca" } } });
      assert.equal(sent.filter((m) => m.method === "tasks/cancel").length, 1);
    } finally {
      await conn.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("input requests over Streamable HTTP", () => {
  const answer: InputHandler = { elicit: () => Promise.resolve({ action: "accept", content: { name: "Ada" } }) };
  test("SDK 2.x (2026-07-28): the input_required round is a second POST with the answers", async () => {
    const fixture = await startHttpFixture("sdk2-http.ts", "bun");
    try {
      const conn = await connectMcp({ name: "h", transport: { type: "http", url: fixture.url, headers: {} } }, {
        sessionId: "s1",
        input: answer,
      });
      assert.equal(conn.era, "modern");
      assert.equal(
        text(await conn.callTool("ask", {}, { timeoutMs: 20_000 })),
        '{"kind":"elicit","action":"accept","content":{"name":"Ada"}}',
      );
      await conn.close();
    } finally {
      await fixture.stop();
    }
  });

  test("SDK 1.x (legacy, with a session): the server's own elicitation/create on the call's stream is answered by a POST", async () => {
    const fixture = await startHttpFixture("sdk1-http.ts", "bun");
    try {
      const conn = await connectMcp({ name: "h", transport: { type: "http", url: fixture.url, headers: {} } }, {
        sessionId: "s1",
        input: answer,
      });
      assert.equal(conn.era, "legacy");
      assert.equal(
        text(await conn.callTool("ask", {}, { timeoutMs: 20_000 })),
        '{"action":"accept","content":{"name":"Ada"}}',
      );
      await conn.close();
    } finally {
      await fixture.stop();
    }
  });
});
