/**
 * The tool points (SPEC 7.6–7.8) against hostile hook servers, sloppy hook authors and odd
 * embedders: what they send must neither crash a prompt nor hang it nor leave a history a
 * provider would refuse. In-process fakes (tests/helpers/fake-connection.ts) except where a
 * real terminal or the CLI is the point.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../lib/config/config.ts";
import type { AgentEvent, PromptResult } from "../lib/conversation/events.ts";
import type { HistoryItem, Model, ResultBlock, ToolCall } from "../lib/conversation/types.ts";
import { AgentSession } from "../lib/agent/loop.ts";
import { appliesTo, type InProcessHooks } from "../lib/hooks/runner.ts";
import type { PermissionAsk, PermissionOutcome } from "../lib/hooks/permission.ts";
import { createRegistry } from "../lib/mcp/registry.ts";
import { checkHooks } from "../lib/hooks/check.ts";
import type { CallToolResult } from "../lib/mcp/types.ts";
import { recordingModel } from "./helpers/recording-model.ts";
import { historyProblems } from "./helpers/history.ts";
import { fakeConnect, FakeServer, sleep, stdioConfig, text } from "./helpers/fake-connection.ts";
import { cleanEnv, fixtureCalls, fixtureConfig } from "./helpers/cli.ts";
import { repoRoot, tsCommand } from "./helpers/runtime.ts";

const schema = { type: "object", properties: { path: { type: "string" }, text: { type: "string" } } };

function fsServer(): FakeServer {
  return new FakeServer("fs", [{ name: "write", inputSchema: schema }], {
    write: (args) => text(`wrote ${JSON.stringify(args).slice(0, 100)}`),
  });
}

function typed(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value };
}

async function session(
  servers: FakeServer[],
  model: Model,
  options: { env?: Record<string, string>; hooks?: InProcessHooks; ask?: PermissionAsk } = {},
): Promise<{ session: AgentSession; close: () => Promise<void> }> {
  const { registry } = await createRegistry(servers.map((s) => stdioConfig(s.name)), {
    sessionId: "adversary",
    connect: fakeConnect(servers),
  });
  const config = loadConfig({ MCP_HOOK_SERVERS: "*", ...options.env }, () => "");
  const s = new AgentSession({
    config,
    model,
    registry,
    cwd: "/work/project",
    ...(options.hooks === undefined ? {} : { hooks: options.hooks }),
    ...(options.ask === undefined ? {} : { ask: options.ask }),
  });
  return { session: s, close: () => registry.close() };
}

/** Runs a prompt; fails (instead of hanging the suite) when it has not ended after `deadlineMs`. */
async function run(s: AgentSession, prompt: string, signal?: AbortSignal, deadlineMs = 20_000): Promise<{
  events: AgentEvent[];
  result: PromptResult;
}> {
  const handle = s.prompt(prompt, signal === undefined ? {} : { signal });
  const events: AgentEvent[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the prompt did not end within ${deadlineMs} ms`)), deadlineMs);
  });
  try {
    const collect = (async () => {
      for await (const event of handle) events.push(event);
      return await handle.result;
    })();
    return { events, result: await Promise.race([collect, deadline]) };
  } finally {
    clearTimeout(timer);
  }
}

const call = (name: string, args: Record<string, unknown>, id = "c1"): ToolCall => ({ id, name, arguments: args });
const texts = (content: readonly ResultBlock[]) => content.flatMap((b) => (b.type === "text" ? [b.text] : []));
const resultOf = (history: readonly HistoryItem[], id: string) =>
  history.find((i): i is Extract<HistoryItem, { role: "tool" }> => i.role === "tool" && i.toolCallId === id);
const warnings = (events: readonly AgentEvent[]) => events.flatMap((e) => (e.type === "warning" ? [e.message] : []));

/** Two prompts: one tool call then text, then text again; the second proves the history was valid. */
const twoPrompts = (calls: ToolCall[]) =>
  recordingModel([{ toolCalls: calls, stop: "tool_use" }, { text: "done" }, { text: "again" }]);

async function assertSecondPromptRuns(s: AgentSession): Promise<void> {
  assert.deepEqual(historyProblems(s.history), []);
  const { result } = await run(s, "and now?");
  assert.equal(result.stopReason, "end_turn");
  assert.deepEqual(historyProblems(s.history), []);
}

describe("tool globs are not regular expressions an author can abuse (SPEC 7.6)", () => {
  test("pathological globs answer at once (no catastrophic backtracking)", () => {
    // As a RegExp `^.*.*.*…a$` this took seconds per name under Node; a hook server's `_meta`
    // or an operator's --allow could freeze the agent with it, beyond any hook timeout.
    assert.equal(appliesTo(["*".repeat(40) + "a"], "b".repeat(64)), false);
    assert.equal(appliesTo(["*a".repeat(20) + "b"], "a".repeat(64)), false);
    assert.equal(appliesTo(["?*".repeat(20) + "!"], "x".repeat(64)), false);
    assert.equal(appliesTo(["*".repeat(40) + "a"], "b".repeat(63) + "a"), true);
  });

  test("the glob language: * any run, ? one character, everything else literal", () => {
    assert.ok(appliesTo(["fs__*"], "fs__write"));
    assert.ok(appliesTo(["fs__*"], "fs__"));
    assert.ok(!appliesTo(["fs__*"], "xfs__write"));
    assert.ok(appliesTo(["fs__wr?te"], "fs__write"));
    assert.ok(!appliesTo(["fs__wr?te"], "fs__wrte"));
    assert.ok(appliesTo(["*__write"], "fs__write"));
    assert.ok(appliesTo(["a*b*c"], "aXbYbZc"));
    assert.ok(!appliesTo(["a*b*c"], "aXbYbZ"));
    for (const literal of [".", "+", "(x)", "[ab]", "a|b", "^$", "\\d", "{2}"]) {
      assert.ok(appliesTo([literal], literal), literal);
    }
    assert.ok(!appliesTo(["[ab]"], "a"));
    assert.ok(!appliesTo(["\\d"], "1"));
    assert.ok(!appliesTo(["."], "x"));
    assert.ok(appliesTo([""], "") && !appliesTo([""], "x"));
    assert.ok(appliesTo(["*"], "") && appliesTo(["?"], "é") && !appliesTo(["?"], "ab"));
    assert.ok(appliesTo(["a\nb"], "a\nb") && appliesTo(["a*b"], "a\nb"));
  });
});

describe("what an in-process hook may return (SPEC 4.7, 7.7)", () => {
  for (
    const [what, updatedInput] of [
      [
        "a cycle",
        (() => {
          const o: Record<string, unknown> = { path: "a.txt" };
          o.self = o;
          return o;
        })(),
      ],
      ["a BigInt", { path: "a.txt", size: 10n }],
      ["a function", {
        path: "a.txt",
        toJSON: () => {
          throw new Error("no JSON for you");
        },
      }],
    ] as const
  ) {
    test(`updatedInput with ${what} is not JSON: ignored with a warning, the prompt and the history survive`, async () => {
      const fs = fsServer();
      const hooks: InProcessHooks = { g: { _PreToolUse: () => ({ decision: "allow", updatedInput }) } };
      const t = await session([fs], twoPrompts([call("fs__write", { path: "a.txt" })]), { hooks });
      try {
        const { result, events } = await run(t.session, "write");
        assert.equal(result.stopReason, "end_turn");
        assert.ok(warnings(events).some((w) => w.includes('"updatedInput"')), warnings(events).join("\n"));
        await assertSecondPromptRuns(t.session);
      } finally {
        await t.close();
      }
    });
  }

  test("an answer whose fields throw when read is an error (the hook failed), not a crash", async () => {
    const fs = fsServer();
    const hostile = {
      get decision(): string {
        throw new Error("gotcha");
      },
    };
    const hooks: InProcessHooks = { g: { _PreToolUse: () => hostile as never, _PostToolUse: () => hostile as never } };
    const t = await session([fs], twoPrompts([call("fs__write", { path: "a.txt" })]), { hooks });
    try {
      const { result, events } = await run(t.session, "write");
      assert.equal(result.stopReason, "end_turn");
      const outcomes = events.flatMap((e) => (e.type === "hook" ? [`${e.hook}:${e.outcome}`] : []));
      assert.deepEqual(outcomes, ["_PreToolUse:error", "_PostToolUse:error"]);
      assert.ok(warnings(events).some((w) => w.includes("gotcha")));
      await assertSecondPromptRuns(t.session);
    } finally {
      await t.close();
    }
  });

  test("a huge rewrite: the note that tells the model is cut, as hook text is (16 KiB)", async () => {
    const fs = fsServer();
    const big = "x".repeat(1_000_000);
    const hooks: InProcessHooks = { g: { _PreToolUse: () => ({ updatedInput: { path: "a.txt", text: big } }) } };
    const t = await session([fs], twoPrompts([call("fs__write", { path: "a.txt" })]), { hooks });
    try {
      await run(t.session, "write");
      assert.equal(fs.calls.find((c) => c.tool === "write")?.args.text, big, "the tool runs with the whole rewrite");
      const answer = resultOf(t.session.history, "c1");
      assert.ok(answer, "the call's result is still in the history (a 1 MB note forced a compaction)");
      const sent = texts(answer.content).join("\n");
      assert.ok(sent.length < 40_000, `the result sent to the model is ${sent.length} characters`);
      assert.match(sent, /the arguments were rewritten to/);
      await assertSecondPromptRuns(t.session);
    } finally {
      await t.close();
    }
  });
});

describe("a sloppy hook author's typed answers (SPEC 7.7)", () => {
  test('decision "block" at _PreToolUse (Claude Code\'s older word) denies, as deny does', async () => {
    const fs = fsServer();
    const guard = new FakeServer("guard", ["_PreToolUse"], {
      _PreToolUse: () => typed({ decision: "block", reason: "no writes" }),
    });
    const t = await session([fs, guard], twoPrompts([call("fs__write", { path: "a.txt" })]));
    try {
      const { events } = await run(t.session, "write");
      assert.equal(fs.calls.length, 0, "the blocked call never ran");
      assert.ok(!warnings(events).some((w) => w.includes('"decision"')), warnings(events).join("\n"));
      const result = t.session.history.find((i) => i.role === "tool");
      assert.ok(result?.role === "tool" && result.isError);
      const block = result.content[0];
      assert.deepEqual(block?.type === "text" && JSON.parse(block.text), {
        hook: "_PreToolUse",
        server: "guard",
        text: "no writes",
      });
    } finally {
      await t.close();
    }
  });

  test('decision "deny" at _Stop is not silently ignored either', async () => {
    const gate = new FakeServer("gate", ["_Stop"], { _Stop: () => typed({ decision: "deny", reason: "not done" }) });
    const t = await session([gate], recordingModel([{ text: "done" }]));
    try {
      const { events } = await run(t.session, "go");
      assert.ok(
        warnings(events).some((w) => w.includes('"decision"') && w.includes("_Stop")),
        warnings(events).join("\n"),
      );
    } finally {
      await t.close();
    }
  });
});

describe("a person who never answers (SPEC 7.8)", () => {
  test("a requestPermission that ignores the signal: a cancel still ends the prompt at once", async () => {
    const fs = fsServer();
    const controller = new AbortController();
    let asked = 0;
    const ask: PermissionAsk = () => {
      asked++;
      setTimeout(() => controller.abort(), 50);
      return new Promise<PermissionOutcome>(() => {}); // never settles, never looks at the signal
    };
    const t = await session([fs], twoPrompts([call("fs__write", { path: "a.txt" })]), {
      ask,
      env: { SPROUT_AGENT_ASK: "fs__*" },
    });
    try {
      const { result } = await run(t.session, "write", controller.signal);
      assert.equal(result.stopReason, "cancelled");
      assert.equal(asked, 1);
      assert.ok(!fs.calls.some((c) => c.tool === "write"), "the tool never ran");
      assert.deepEqual(texts(resultOf(t.session.history, "c1")!.content), ["cancelled"]);
      await assertSecondPromptRuns(t.session);
    } finally {
      await t.close();
    }
  });

  for (
    const [what, ask] of [
      [
        "throws at once",
        (() => {
          throw new Error("no terminal");
        }) as unknown as PermissionAsk,
      ],
      ["answers undefined", (() => Promise.resolve(undefined)) as unknown as PermissionAsk],
      ['answers "yes"', (() => Promise.resolve("yes")) as unknown as PermissionAsk],
    ] as const
  ) {
    test(`a requestPermission that ${what} rejects the call (fails closed), and the prompt goes on`, async () => {
      const fs = fsServer();
      const t = await session([fs], twoPrompts([call("fs__write", { path: "a.txt" })]), {
        ask,
        env: { SPROUT_AGENT_ASK: "fs__*" },
      });
      try {
        const { result } = await run(t.session, "write");
        assert.equal(result.stopReason, "end_turn");
        assert.ok(!fs.calls.some((c) => c.tool === "write"), "the tool never ran");
        const answer = resultOf(t.session.history, "c1")!;
        assert.equal(answer.isError, true);
        assert.match(texts(answer.content).join("\n"), /Permission denied: .*the person denied it/);
        await assertSecondPromptRuns(t.session);
      } finally {
        await t.close();
      }
    });
  }
});

describe("halts and cancels among parallel calls keep the history valid (SPEC 6.9, 7.7)", () => {
  test("a _PreToolUse halt on one of three parallel calls: the others run, one result each, in order", async () => {
    const fs = fsServer();
    const hooks: InProcessHooks = {
      g: {
        _PreToolUse: async (ctx) => {
          await sleep(ctx.toolCall?.id === "c2" ? 5 : 30);
          return ctx.toolCall?.id === "c2" ? { continue: false, stopReason: "enough" } : undefined;
        },
      },
    };
    const calls = ["c1", "c2", "c3"].map((id) => call("fs__write", { path: `${id}.txt` }, id));
    const model = recordingModel([{ toolCalls: calls, stop: "tool_use" }, { text: "again" }]);
    const t = await session([fs], model, { hooks });
    try {
      const { result } = await run(t.session, "write");
      assert.deepEqual(result.halt, { hook: "_PreToolUse", server: "g", reason: "enough" });
      assert.equal(model.seen.length, 1, "no model call after the halt");
      assert.deepEqual(fs.calls.filter((c) => c.tool === "write").map((c) => c.args.path).sort(), ["c1.txt", "c3.txt"]);
      assert.deepEqual(
        t.session.history.filter((i) => i.role === "tool").map((i) => (i as { toolCallId: string }).toolCallId),
        ["c1", "c2", "c3"],
      );
      await assertSecondPromptRuns(t.session);
    } finally {
      await t.close();
    }
  });

  test("a cancel during _PostToolUse: the prompt ends cancelled, every call has one result", async () => {
    const fs = fsServer();
    const controller = new AbortController();
    const hooks: InProcessHooks = {
      g: {
        _PostToolUse: async () => {
          controller.abort();
          await sleep(50);
          return { additionalContext: "late note" };
        },
      },
    };
    const calls = ["c1", "c2"].map((id) => call("fs__write", { path: `${id}.txt` }, id));
    const t = await session([fs], twoPrompts(calls), { hooks, env: { SPROUT_AGENT_MAX_PARALLEL_TOOLS: "1" } });
    try {
      const { result } = await run(t.session, "write", controller.signal);
      assert.equal(result.stopReason, "cancelled");
      assert.ok(!fs.calls.some((c) => c.args.path === "c2.txt"), "the second call never ran");
      assert.deepEqual(historyProblems(t.session.history), []);
    } finally {
      await t.close();
    }
  });
});

describe("secrets in what the CLI prints for the tool points (SPEC 11)", () => {
  test("the terminal question and a halt's reason are redacted", {
    skip: !existsSync("/usr/bin/script") && "needs script(1) for a pseudo-terminal",
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "sprout-adversary-"));
    const key = "sk-ant-adversary-0123456789abcdef";
    try {
      const script = join(dir, "script.json");
      writeFileSync(
        script,
        JSON.stringify([{ toolCalls: [{ name: "fx__echo", arguments: { text: key } }] }, { text: "ok" }]),
      );
      const log = join(dir, "fx.log");
      const cfg = fixtureConfig(dir, {
        fx: {
          FIXTURE_LOG: log,
          FX_API_TOKEN: key, // a credential-like env value of a server: a known secret (SPEC 11)
          FIXTURE_POST_TOOL: JSON.stringify({ continue: false, stopReason: `saw ${key}` }),
        },
      });
      const argv = [...tsCommand(join(repoRoot, "cli.ts")), "run", "--mcp-config", cfg, "--ask", "fx__*", "go"]
        .map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ");
      const env = cleanEnv({
        SPROUT_AGENT_PROVIDER: "scripted",
        SPROUT_AGENT_SCRIPT: script,
        MCP_HOOK_SERVERS: "fx",
      });
      const out = await new Promise<string>((resolve) => {
        const child = spawn("/usr/bin/script", ["-qec", argv, "/dev/null"], { env, cwd: dir });
        let text = "";
        const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
        child.stdout.on("data", (d) => {
          text += d;
          if (text.includes("Allow it?") && !child.stdin.writableEnded) child.stdin.end("y\n");
        });
        child.on("close", () => {
          clearTimeout(timer);
          resolve(text);
        });
      });
      assert.match(out, /\? fx__echo \{"text":"\[redacted\]"\}/, out);
      assert.match(out, /halted by _PostToolUse from fx: saw \[redacted\]/, out);
      assert.ok(!out.includes(key), out);
      assert.deepEqual(fixtureCalls(log).map((c) => c.tool).filter((t) => t === "echo"), ["echo"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a tools declaration that is not an array of globs (SPEC 7.6, 11)", () => {
  test("the dry run names it: a lone string applies to every tool, entries that are not strings to none", async () => {
    const declare = (tools: unknown) => ({
      name: "_PreToolUse",
      inputSchema: { type: "object" },
      _meta: { "sprout-agent/hook": { tools } },
    });
    const servers = [
      new FakeServer("one", [declare("fs__write_*")], { _PreToolUse: () => text("") }),
      new FakeServer("many", [declare(["fs__*", 7, null])], { _PreToolUse: () => text("") }),
      new FakeServer("fine", [declare(["fs__*"])], { _PreToolUse: () => text("") }),
    ];
    const { registry } = await createRegistry(servers.map((s) => stdioConfig(s.name)), {
      sessionId: "adversary",
      connect: fakeConnect(servers),
    });
    try {
      const report = await checkHooks(registry, {
        configured: servers.map((s) => s.name),
        failures: [],
        allow: { kind: "all" },
        timeoutMs: 2500,
        maxRejections: 3,
      });
      const problems = (server: string) => report.find((s) => s.server === server)!.hooks[0]!.problems;
      assert.match(problems("one").join("\n"), /tools.* must be an array of globs.*applies to every tool/);
      assert.match(problems("many").join("\n"), /tools.* must be an array of globs.*7, null.*ignored/);
      assert.deepEqual(problems("fine"), []);
    } finally {
      await registry.close();
    }
  });
});

describe("answers that do not count (SPEC 3.1, 7.7)", () => {
  test("a required guard whose answer does not count (whitespace, a typed answer with every field ignored) fails closed", async () => {
    for (const answer of [text("   "), typed({ decision: 42 })]) {
      const fs = fsServer();
      const guard = new FakeServer("guard", ["_PreToolUse"], { _PreToolUse: () => answer });
      const { registry } = await createRegistry(
        [{ ...stdioConfig("fs") }, { ...stdioConfig("guard"), required: true }],
        { sessionId: "unread", connect: fakeConnect([fs, guard]) },
      );
      const config = loadConfig({ MCP_HOOK_SERVERS: "*" }, () => "");
      const s = new AgentSession({ config, model: twoPrompts([call("fs__write", { path: "a" })]), registry });
      try {
        await run(s, "go");
        assert.equal(fs.calls.length, 0, JSON.stringify(answer));
        const result = s.history.find((i) => i.role === "tool");
        assert.ok(result?.role === "tool" && result.isError);
        const block = result.content[0];
        assert.match(block?.type === "text" ? JSON.parse(block.text).text : "", /^the required guard did not answer/);
      } finally {
        await registry.close();
      }
    }
  });

  test("a key another agent reads (hookSpecificOutput) is named in a warning, not silently dropped", async () => {
    const fs = fsServer();
    const guard = new FakeServer("guard", ["_PreToolUse"], {
      _PreToolUse: () => typed({ continue: true, hookSpecificOutput: { permissionDecision: "deny" } }),
    });
    const t = await session([fs, guard], twoPrompts([call("fs__write", { path: "a" })]));
    try {
      const { events } = await run(t.session, "go");
      assert.ok(
        warnings(events).some((w) => w.includes('"hookSpecificOutput" is not a field of a typed answer')),
        warnings(events).join("\n"),
      );
    } finally {
      await t.close();
    }
  });
});
