/**
 * Sessions from the command line (SPEC sections 12 and 11, issue 23), end to end: `run` keeps
 * its transcript, `sessions` lists it, `run --continue` and `--resume ID` go on with it, a
 * second writer is refused, bad ids exit 2; the agent SIGKILLed at several points of a turn
 * resumes with a history the fake LLM (which refuses what the Messages API refuses) accepts;
 * and C38: the todo-enforcer's `_SessionStart` on a resume.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeTurn, type RecordedRequest, startFakeLlm } from "../lib/testing/fake-llm.ts";
import { INTERRUPTED_RESULT } from "../lib/sessions/records.ts";
import { fixtureCalls, fixtureConfig, runCli } from "./helpers/cli.ts";
import { messagesOf } from "./helpers/session.ts";
import { startServer } from "./helpers/hook-servers.ts";
import { repoRoot, runtime } from "./helpers/runtime.ts";

let root: string;
before(() => {
  root = mkdtempSync(join(tmpdir(), "sprout-sessions-cli-"));
});
after(() => rmSync(root, { recursive: true, force: true }));

/** A fresh folder for one test: its working folder and its sessions folder inside. */
function place(): { cwd: string; sessions: string } {
  const cwd = mkdtempSync(join(root, "t-"));
  return { cwd, sessions: join(cwd, "state", "sessions") };
}

async function withLlm(
  responses: FakeTurn[] | ((request: RecordedRequest, index: number) => FakeTurn),
  body: (env: Record<string, string>, requests: RecordedRequest[]) => Promise<void>,
) {
  const llm = await startFakeLlm({ responses });
  try {
    await body({
      SPROUT_AGENT_PROVIDER: "anthropic",
      ANTHROPIC_API_KEY: "sk-ant-secret-key-123",
      ANTHROPIC_MODEL: "claude-test",
      ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
    }, llm.requests);
    assert.deepEqual(llm.requests.filter((r) => r.rejected).map((r) => r.rejected), [], "every request was valid");
  } finally {
    await llm.close();
  }
}

/** The text of every block of the request's messages, in order, as `role: text`. */
function texts(request: RecordedRequest): string[] {
  return messagesOf(request.body).flatMap((m) => {
    const content = m["content"];
    if (typeof content === "string") return [`${m["role"]}: ${content}`];
    return (content as Array<Record<string, unknown>>).flatMap((b) => {
      if (b["type"] === "text") return [`${m["role"]}: ${b["text"]}`];
      if (b["type"] === "tool_use") return [`${m["role"]}: tool_use ${b["name"]}`];
      if (b["type"] === "tool_result") {
        const inner = b["content"];
        const text = typeof inner === "string"
          ? inner
          : (inner as Array<{ text?: string }>).map((c) => c.text ?? "").join("");
        return [`${m["role"]}: tool_result ${text}`];
      }
      return [];
    });
  });
}

describe("cli.ts run and sessions (SPEC 12.6)", { concurrency: 3 }, () => {
  test("run keeps its transcript; sessions lists it; --continue and --resume go on with it; bad ids exit 2", async () => {
    const { cwd, sessions } = place();
    await withLlm((_r, i) => ({ text: `answer ${i + 1}` }), async (llmEnv, requests) => {
      const env = { ...llmEnv, SPROUT_AGENT_SESSION_DIR: sessions };
      const first = await runCli(["run", "first prompt"], env, { cwd });
      assert.equal(first.code, 0, first.stderr);
      const listed = await runCli(["sessions", "--json"], env, { cwd });
      assert.equal(listed.code, 0, listed.stderr);
      assert.equal(listed.events.length, 1);
      const info = listed.events[0]!;
      assert.deepEqual([info["cwd"], info["title"]], [cwd, "first prompt"]);
      const id = String(info["id"]);
      assert.match(first.stderr, new RegExp(`session ${id}`), "the summary line names the session");
      const second = await runCli(["run", "--continue", "second prompt"], env, { cwd });
      assert.equal(second.code, 0, second.stderr);
      assert.deepEqual(texts(requests[1]!), [
        "user: first prompt",
        "assistant: answer 1",
        "user: second prompt",
      ]);
      const third = await runCli(["run", "--resume", id, "third prompt"], env, { cwd: root });
      assert.equal(third.code, 0, third.stderr);
      assert.deepEqual(texts(requests[2]!).filter((t) => t.startsWith("user")), [
        "user: first prompt",
        "user: second prompt",
        "user: third prompt",
      ]);
      const human = await runCli(["sessions"], env, { cwd });
      assert.equal(human.stdout.trim().split("\n").length, 1);
      assert.match(
        human.stdout,
        new RegExp(`^${id}  \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d .* ${cwd.replaceAll("/", "\\/")}  "first prompt"`),
      );
      assert.deepEqual(readdirSync(sessions), [`${id}.jsonl`], "one session, one transcript, no lock left");
      for (
        const [args, pattern, where] of [
          [["run", "--resume", "../x", "hi"], /Invalid session id "\.\.\/x"/, cwd],
          [["run", "--resume", "nope", "hi"], /No session "nope" in /, cwd],
          [["run", "--continue", "hi"], /No session to continue in /, root],
          [["run", "--resume"], /Missing value for --resume/, cwd],
          [["run", "--continue", "--resume", id, "hi"], /Unexpected --continue with --resume/, cwd],
        ] as const
      ) {
        const bad = await runCli([...args], env, { cwd: where });
        assert.equal(bad.code, 2, `${args.join(" ")}: ${bad.stderr}`);
        assert.match(bad.stderr, pattern);
      }
      const relative = await runCli(["sessions"], { ...env, SPROUT_AGENT_SESSION_DIR: "state" }, { cwd });
      assert.equal(relative.code, 2);
      assert.match(relative.stderr, /Invalid SPROUT_AGENT_SESSION_DIR: "state" must be an absolute folder or off/);
      const off = await runCli(["run", "not kept"], { ...env, SPROUT_AGENT_SESSION_DIR: "off" }, { cwd });
      assert.equal(off.code, 0, off.stderr);
      assert.equal(readdirSync(sessions).length, 1, "off keeps nothing");
      assert.equal(requests.length, 4);
    });
  });

  test("a second process writing the same session is refused while the first runs, with exit 2", async () => {
    const { cwd, sessions } = place();
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    await withLlm(
      (_r, i) => (i === 1 ? { text: "slow answer", pauseMs: 4000 } : { text: `answer ${i}` }),
      async (llmEnv, requests) => {
        const env = { ...llmEnv, SPROUT_AGENT_SESSION_DIR: sessions };
        assert.equal((await runCli(["run", "start"], env, { cwd })).code, 0);
        const slow = runCli(["run", "--json", "--continue", "slow one"], env, {
          cwd,
          onLine: (line) => line.includes('"round-start"') && release(),
        });
        await held;
        const second = await runCli(["run", "--continue", "meanwhile"], env, { cwd });
        assert.equal(second.code, 2, second.stderr);
        assert.match(second.stderr, /Session "[^"]+" is in use by process \d+ on /);
        assert.equal((await slow).code, 0);
        assert.equal(requests.length, 2, "the refused run sent nothing");
      },
    );
  });

  test("SIGKILL before the answer, during a tool call and after it: each resumes with a valid history", async () => {
    const { cwd, sessions } = place();
    const log = join(cwd, "calls.log");
    const cfg = fixtureConfig(cwd, { fx: { FIXTURE_LOG: log } });
    // Each killed run's own request pauses, or its tool sleeps, long enough to be killed.
    const plan: FakeTurn[] = [
      { text: "never finished", pauseMs: 30_000 }, // 1: killed while the model answers
      { text: "first resumed" },
      {
        toolCalls: [{ name: "fx__echo", arguments: { text: "quick" } }, {
          name: "fx__slow",
          arguments: { ms: 30_000 },
        }],
      }, // 3: killed in the slow call
      { text: "second resumed" },
      { toolCalls: [{ name: "fx__echo", arguments: { text: "done" } }] }, // 5
      { text: "after the tool", pauseMs: 30_000 }, // 6: killed after the tool result, while the model answers
      { text: "third resumed" },
    ];
    await withLlm(plan, async (llmEnv, requests) => {
      const env = { ...llmEnv, SPROUT_AGENT_SESSION_DIR: sessions };
      const killedWhen = (needle: string, requestsBefore: number) => ({
        cwd,
        onLine: (line: string, signal: (sig: NodeJS.Signals) => void) => {
          if (line.includes(needle) && requests.length >= requestsBefore) signal("SIGKILL");
        },
      });
      // 1. Killed while the model's answer streams.
      const one = await runCli(["run", "--json", "--mcp-config", cfg, "task one"], env, killedWhen('"text-delta"', 1));
      assert.equal(one.signal, "SIGKILL");
      const resumed1 = await runCli(["run", "--json", "--mcp-config", cfg, "--continue", "again"], env, { cwd });
      assert.equal(resumed1.code, 0, resumed1.stderr);
      assert.deepEqual(texts(requests[1]!), ["user: task one", "user: again"]);
      // 2. Killed while the second of two calls runs: the first has its result, the second is interrupted.
      const two = await runCli(["run", "--json", "--mcp-config", cfg, "--continue", "task two"], env, {
        cwd,
        onLine: (line, signal) => {
          if (line.includes('"tool-end"')) setTimeout(() => signal("SIGKILL"), 200);
        },
      });
      assert.equal(two.signal, "SIGKILL");
      const resumed2 = await runCli(["run", "--json", "--mcp-config", cfg, "--continue", "go on"], env, { cwd });
      assert.equal(resumed2.code, 0, resumed2.stderr);
      const after2 = texts(requests[3]!);
      assert.deepEqual(after2.slice(-5), [
        "assistant: tool_use fx__echo",
        "assistant: tool_use fx__slow",
        "user: tool_result quick",
        `user: tool_result ${INTERRUPTED_RESULT}`,
        "user: go on",
      ]);
      // 3. Killed after the tool's result, while the next answer streams.
      const three = await runCli(
        ["run", "--json", "--mcp-config", cfg, "--continue", "task three"],
        env,
        killedWhen('"text-delta"', 6),
      );
      assert.equal(three.signal, "SIGKILL");
      const resumed3 = await runCli(["run", "--json", "--mcp-config", cfg, "--continue", "finish"], env, { cwd });
      assert.equal(resumed3.code, 0, resumed3.stderr);
      assert.deepEqual(texts(requests[6]!).slice(-4), [
        "user: task three",
        "assistant: tool_use fx__echo",
        "user: tool_result done",
        "user: finish",
      ]);
      assert.equal(readdirSync(sessions).filter((f) => f.endsWith(".jsonl")).length, 1, "one session throughout");
      assert.deepEqual(fixtureCalls(log).map((c) => c.tool), ["echo", "slow", "echo"], "no call ran twice");
    });
  });

  test("C38: _SessionStart fires on a resume with source resume and the same id; the todo-enforcer's list comes back", async () => {
    const { cwd, sessions } = place();
    const state = join(cwd, "todo-state");
    mkdirSync(state);
    const todo = await startServer(join(repoRoot, "servers/todo-enforcer/main.ts"), [], runtime(), {
      XDG_STATE_HOME: state,
    });
    const log = join(cwd, "hooks.log");
    try {
      const cfg = join(cwd, "mcp.json");
      const fixture = JSON.parse(
        readFileSync(
          fixtureConfig(cwd, { spy: { FIXTURE_LOG: log, FIXTURE_START_HOOK: "", FIXTURE_NO_TOOLS: "1" } }),
          "utf8",
        ),
      );
      writeFileSync(
        cfg,
        JSON.stringify({ mcpServers: { todo: { type: "http", url: todo.url }, ...fixture.mcpServers } }),
      );
      const plan: FakeTurn[] = [
        { toolCalls: [{ name: "todo__todo", arguments: { todos: [{ id: 1, title: "Ship it" }] } }] },
        { text: "Later." }, // _Stop objects: 1 open
        { text: "Later, really." }, // declined twice: the turn ends
        { text: "Back on it." }, // the resumed prompt: _Stop objects again with the restored list
        { text: "Still later." },
      ];
      await withLlm(plan, async (llmEnv, requests) => {
        const env = { ...llmEnv, SPROUT_AGENT_SESSION_DIR: sessions, MCP_HOOK_SERVERS: "*" };
        const first = await runCli(["run", "--json", "--mcp-config", cfg, "plan the release"], env, { cwd });
        assert.equal(first.code, 0, first.stderr);
        const resumed = await runCli(["run", "--json", "--mcp-config", cfg, "--continue", "go on"], env, { cwd });
        assert.equal(resumed.code, 0, resumed.stderr);
        const starts = fixtureCalls(log).filter((c) => c.tool === "_SessionStart") as unknown as Array<{
          meta: Record<string, Record<string, unknown>>;
        }>;
        assert.deepEqual(starts.map((c) => c.meta["sprout-agent/hook"]!["source"]), ["startup", "resume"]);
        const ids = starts.map((c) => c.meta["sprout-agent/session"]);
        assert.equal(ids[0], ids[1], "the resumed session has the id the hook servers keyed it by");
        const sent = texts(requests[3]!);
        assert.equal(
          sent.filter((t) => t.includes("Ship it") && t.includes("_SessionStart")).length,
          1,
          sent.join("\n"),
        );
        const objections = resumed.events.filter((e) =>
          e["type"] === "hook" && e["hook"] === "_Stop" && e["outcome"] === "objection"
        );
        assert.equal(objections.length, 1);
        assert.match(String(objections[0]!["text"]), /Ship it/);
      });
    } finally {
      await todo.stop();
    }
  });
});
