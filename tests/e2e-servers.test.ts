/**
 * Issue 3 end to end: the agent CLI, as a child process under the runtime running this file,
 * with both example hook servers (todo-enforcer over Streamable HTTP, test-gate over stdio on a
 * real project) and the recording fake LLM. The todo list and the test state gate the stop;
 * with MCP_HOOK_SERVERS unset no hook is called.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeTurn, type RecordedRequest, startFakeLlm } from "../lib/testing/fake-llm.ts";
import { runCli } from "./helpers/cli.ts";
import { type StartedServer, startServer } from "./helpers/hook-servers.ts";
import { processesMatching } from "./helpers/processes.ts";
import { repoRoot, runtime, tsCommand } from "./helpers/runtime.ts";

let dir: string;
let todo: StartedServer;

const FAILING = `export const add = (a: number, b: number): number => a - b;\n`;
const PASSING = `export const add = (a: number, b: number): number => a + b;\n`;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "sprout-e2e-servers-"));
  todo = await startServer(join(repoRoot, "servers/todo-enforcer/main.ts"), ["--port", "0"], runtime());
});
after(async () => {
  await todo.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A new project directory (a failing `add.ts` and its test) and a `.mcp.json` for the two servers in it. */
function newProject(): { project: string; config: string } {
  const project = mkdtempSync(join(dir, "project-"));
  writeFileSync(join(project, "add.ts"), FAILING);
  writeFileSync(
    join(project, "add.test.ts"),
    `import { expect, test } from "bun:test";\nimport { add } from "./add.ts";\ntest("adds two numbers", () => { expect(add(2, 3)).toBe(5); });\n`,
  );
  const [command, ...args] = tsCommand(join(repoRoot, "servers/test-gate/stdio.ts"));
  const config = join(project, "..", `mcp-${Math.random().toString(16).slice(2)}.json`);
  writeFileSync(
    config,
    JSON.stringify({
      mcpServers: {
        todo: { type: "http", url: todo.url },
        tests: { command, args: [...args, "--cmd", `${repoRoot}node_modules/.bin/bun test`, "--cwd", project] },
      },
    }),
  );
  return { project, config };
}

/** The hook JSON results a recorded request carries (either wire). */
function hookResults(request: RecordedRequest): Array<{ hook: string; server: string; text: string }> {
  const found: Array<{ hook: string; server: string; text: string }> = [];
  const raw = JSON.stringify(request.body);
  for (const m of raw.matchAll(/\{\\"hook\\":\\"_Stop\\".*?\\"text\\":\\"(?:[^"\\]|\\\\.)*?\\"\}/g)) {
    found.push(JSON.parse(JSON.parse(`"${m[0]}"`)) as { hook: string; server: string; text: string });
  }
  return found;
}

const todos = (done: boolean) => ({
  toolCalls: [{ name: "todo__todo", arguments: { todos: [{ id: 1, title: "Make add() add", done }] } }],
});

// Each test has its own project, fake LLM and agent (the todo server keeps one list per agent
// session): they run at the same time.
describe("agent CLI with the example hook servers", { concurrency: true }, () => {
  for (const wire of ["anthropic", "openai"] as const) {
    test(`each server's _Stop objection arrives as the SPEC's JSON tool result and gates the stop (${wire})`, async () => {
      const { project, config } = newProject();
      const turns: FakeTurn[] = [
        todos(false),
        { text: "I think I am done." },
        { toolCalls: [{ name: "tests__run_tests", arguments: {} }] },
        todos(true),
        { text: "add() adds now and the suite passes." },
      ];
      const llm = await startFakeLlm({
        responses: (_request, i) => {
          // Between the objection and the next tool call, "fix" the project as an edit tool would.
          if (i === 2) writeFileSync(join(project, "add.ts"), PASSING);
          return turns[i] ?? { text: "unexpected extra request" };
        },
      });
      try {
        const env: Record<string, string> = wire === "anthropic"
          ? {
            SPROUT_AGENT_PROVIDER: "anthropic",
            ANTHROPIC_API_KEY: "k",
            ANTHROPIC_MODEL: "m",
            ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
          }
          : {
            SPROUT_AGENT_PROVIDER: "openai",
            OPENAI_COMPAT_API_KEY: "k",
            OPENAI_COMPAT_MODEL: "m",
            OPENAI_COMPAT_BASE_URL: llm.openaiBaseUrl,
          };
        const run = await runCli(["run", "--json", "--mcp-config", config, "Make the tests pass"], {
          ...env,
          MCP_HOOK_SERVERS: "todo,tests",
        }, { cwd: project, timeoutMs: 90_000 });
        assert.equal(run.code, 0, run.stderr);
        assert.deepEqual(llm.requests.filter((r) => r.rejected).map((r) => r.rejected), []);
        assert.equal(llm.requests.length, 5);
        const injected = hookResults(llm.requests[2]!);
        assert.deepEqual(injected.map((h) => h.server), ["todo", "tests"]);
        assert.match(injected[0]!.text, /^You have open todo items\. Keep working\.\n\n\[ \] 1\. Make add\(\) add/);
        assert.match(injected[1]!.text, /adds two numbers|running/);
        const hooks = run.events.filter((e) => e["type"] === "hook" && e["hook"] === "_Stop")
          .map((e) => [e["server"], e["outcome"]]);
        assert.deepEqual(hooks, [["todo", "objection"], ["tests", "objection"], ["todo", "none"], ["tests", "none"]]);
        const result = run.events.at(-1)!;
        assert.equal(result["stopReason"], "end_turn");
        assert.equal(result["objections"], 1);
        const runTests = run.events.find((e) => e["type"] === "tool-end" && e["name"] === "tests__run_tests");
        assert.match(String(runTests?.["output"]), /pass/i);
      } finally {
        await llm.close();
      }
    });
  }

  test("a tool timeout that kills test-gate leaves no test run behind (its run has its own process group)", async () => {
    const { project } = newProject();
    const marker = `${37 + Math.floor(Math.random() * 1000) / 1000}`;
    const [command, ...args] = tsCommand(join(repoRoot, "servers/test-gate/stdio.ts"));
    const config = join(dir, `mcp-timeout-${marker}.json`);
    writeFileSync(
      config,
      JSON.stringify({
        mcpServers: { tests: { command, args: [...args, "--cmd", `sleep ${marker}`, "--cwd", project] } },
      }),
    );
    const llm = await startFakeLlm({
      responses: [{ toolCalls: [{ name: "tests__run_tests", arguments: {} }] }, { text: "gave up" }],
    });
    try {
      const run = await runCli(
        ["run", "--json", "--mcp-config", config, "go"],
        {
          SPROUT_AGENT_PROVIDER: "anthropic",
          ANTHROPIC_API_KEY: "k",
          ANTHROPIC_MODEL: "m",
          ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
          SPROUT_AGENT_TOOL_TIMEOUT_SECS: "2",
        },
        { cwd: project, timeoutMs: 60_000 },
      );
      assert.equal(run.code, 0, run.stderr);
      const end = run.events.find((e) => e["type"] === "tool-end");
      assert.match(String(end?.["output"]), /timed out after 2 s/);
      // test-gate stops its run on SIGTERM; give it time on a loaded machine before judging.
      const deadline = Date.now() + 5000;
      while (processesMatching(`sleep ${marker}`).length > 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.deepEqual(processesMatching(`sleep ${marker}`), [], "the test run was stopped with its server");
    } finally {
      await llm.close();
    }
  });

  test("with MCP_HOOK_SERVERS unset no hook is called: open todos and a red suite do not stop the end", async () => {
    const { project, config } = newProject();
    const llm = await startFakeLlm({ responses: [todos(false), { text: "done" }] });
    try {
      const run = await runCli(
        ["run", "--json", "--mcp-config", config, "go"],
        {
          SPROUT_AGENT_PROVIDER: "anthropic",
          ANTHROPIC_API_KEY: "k",
          ANTHROPIC_MODEL: "m",
          ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
        },
        { cwd: project, timeoutMs: 60_000 },
      );
      assert.equal(run.code, 0, run.stderr);
      assert.equal(llm.requests.length, 2);
      assert.deepEqual(run.events.filter((e) => e["type"] === "hook"), []);
      assert.equal(run.events.at(-1)?.["stopReason"], "end_turn");
      const names = JSON.stringify(llm.requests[0]!.body);
      assert.match(names, /todo__todo/);
      assert.match(names, /tests__run_tests/);
      assert.doesNotMatch(names, /_Stop|_PostCompact/);
    } finally {
      await llm.close();
    }
  });
});
