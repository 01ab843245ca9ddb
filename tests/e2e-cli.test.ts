/**
 * `cli.ts run` end to end (SPEC section 11): the agent runs as a child process under the
 * runtime running this file, against the recording fake LLM and the fixture MCP server.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeTurn, startFakeLlm } from "../lib/testing/fake-llm.ts";
import { cleanEnv, fixtureConfig, runCli as runCliIn } from "./helpers/cli.ts";
import { repoRoot, runsOnce, tsCommand } from "./helpers/runtime.ts";

const ONCE = { skip: !runsOnce && "runs once, under bun" };
import { alive } from "./helpers/processes.ts";

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "sprout-e2e-"));
});
after(() => rmSync(dir, { recursive: true, force: true }));

const baseEnv = cleanEnv;
const mcpConfig = (servers: Record<string, Record<string, string>>, extra: Record<string, unknown> = {}) =>
  fixtureConfig(dir, servers, extra);
const runCli = (
  args: string[],
  env: Record<string, string>,
  options: Omit<NonNullable<Parameters<typeof runCliIn>[2]>, "cwd"> = {},
) => runCliIn(args, env, { ...options, cwd: dir });

async function withLlm(
  responses: FakeTurn[],
  body: (env: Record<string, string>, requests: () => number) => Promise<void>,
) {
  const llm = await startFakeLlm({ responses });
  try {
    await body(
      {
        SPROUT_AGENT_PROVIDER: "anthropic",
        ANTHROPIC_API_KEY: "sk-ant-secret-key-123",
        ANTHROPIC_MODEL: "claude-test",
        ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
      },
      () => llm.requests.length,
    );
    assert.deepEqual(llm.requests.filter((r) => r.rejected).map((r) => r.rejected), []);
  } finally {
    await llm.close();
  }
}

// Each test has its own fake LLM, files and processes, and most of their time is process
// start-up: four run at once.
describe("cli.ts run", { concurrency: 4 }, () => {
  test("--json: one event per line, text streams before the response ends, result last", async () => {
    await withLlm(
      [
        { text: "Calling a tool.", toolCalls: [{ name: "fx__echo", arguments: { text: "hi" } }] },
        { text: "All done here.", pauseMs: 1500 },
      ],
      async (env) => {
        const cfg = mcpConfig({ fx: {} });
        let firstDeltaAt = 0;
        const run = await runCli(["run", "--json", "--mcp-config", cfg, "say hi"], env, {
          onLine(line) {
            if (firstDeltaAt === 0 && line.includes('"text-delta"') && line.includes("All")) firstDeltaAt = Date.now();
          },
        });
        const doneAt = Date.now();
        assert.equal(run.code, 0, run.stderr);
        for (const line of run.stdout.trim().split("\n")) assert.doesNotThrow(() => JSON.parse(line), line);
        for (const e of run.events) assert.equal(Object.keys(e)[0], "type");
        const types = run.events.map((e) => e["type"]);
        assert.deepEqual([...new Set(types)], ["round-start", "text-delta", "tool-start", "tool-end", "result"]);
        const end = run.events.find((e) => e["type"] === "tool-end")!;
        assert.equal(end["ok"], true);
        assert.equal(typeof end["durationMs"], "number");
        const result = run.events.at(-1)!;
        assert.deepEqual(Object.keys(result), [
          "type",
          "stopReason",
          "rounds",
          "toolCalls",
          "objections",
          "usage",
          "durationMs",
          "sessionId",
        ]);
        assert.match(String(result["sessionId"]), /^[0-9a-f-]{36}$/, "the saved session's id (SPEC 12.6)");
        assert.equal(result["stopReason"], "end_turn");
        assert.equal(result["rounds"], 2);
        assert.equal(result["toolCalls"], 1);
        assert.deepEqual(result["usage"], { inputTokens: 20, outputTokens: 10 });
        assert.ok(
          firstDeltaAt > 0 && doneAt - firstDeltaAt >= 1000,
          "the first delta was printed while the response was paused",
        );
        assert.doesNotMatch(run.stdout + run.stderr, /sk-ant-secret-key-123/);
      },
    );
  });

  test("people see the text on stdout, and one line per tool call, the objection and a summary on stderr", async () => {
    await withLlm(
      [{ toolCalls: [{ name: "fx__echo", arguments: { text: "hi" } }, { name: "fx__fail", arguments: {} }] }, {
        text: "Finished.",
      }, { text: "Finished again." }],
      async (env) => {
        const cfg = mcpConfig({ fx: { FIXTURE_STOP: "two todos open\nsecond line", FIXTURE_STOP_COUNT: "1" } });
        const run = await runCli(["run", "--mcp-config", cfg, "go"], { ...env, MCP_HOOK_SERVERS: "fx" });
        assert.equal(run.code, 0, run.stderr);
        // The answer alone on stdout: both texts as streamed, a blank line between the two
        // rounds' texts, one newline at the end.
        assert.equal(run.stdout, "Finished.\n\nFinished again.\n");
        assert.match(run.stderr, /^✓ fx__echo \{"text":"hi"\} \(\d+ ms\) → hi$/m);
        assert.match(run.stderr, /^✗ fx__fail \{\} \(\d+ ms\) permission denied: \/etc\/shadow$/m);
        assert.match(run.stderr, /^⟲ _Stop objection from fx: two todos open$/m);
        assert.match(run.stderr, /^ {4}second line$/m);
        assert.match(run.stderr, /^■ end_turn · 3 rounds · 2 tool calls · 1 objection · /m);
        // deno-lint-ignore no-control-regex
        assert.doesNotMatch(run.stderr, /\x1b\[/, "no colour when not a TTY");
      },
    );
  });

  test("a hook server that dies at start has its stderr printed once, as it came, not again in the warning", async () => {
    // It exits before answering the era probe, so it is started a second time (SPEC 10) and
    // writes the same lines again; with --json the lines are hidden and the warning keeps them.
    const script = "echo 'boom: cannot open config.toml' >&2; echo 'second line' >&2; exit 1";
    const cfg = join(dir, "dead.json");
    writeFileSync(cfg, JSON.stringify({ mcpServers: { dead: { command: "sh", args: ["-c", script] } } }));
    await withLlm([{ text: "done" }, { text: "done" }], async (env) => {
      const run = await runCli(["run", "--mcp-config", cfg, "go"], { ...env, MCP_HOOK_SERVERS: "dead" });
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stderr.split("boom: cannot open config.toml").length, 2, `once:\n${run.stderr}`);
      assert.equal(run.stderr.split("second line").length, 2, `once:\n${run.stderr}`);
      assert.match(run.stderr, /^\[dead\] boom: cannot open config\.toml\n\[dead\] second line$/m);
      assert.match(
        run.stderr,
        /^warning: Cannot start server "dead": server exited \(code 1\); its stderr is above$/m,
      );
      const json = await runCli(["run", "--json", "--mcp-config", cfg, "go"], { ...env, MCP_HOOK_SERVERS: "dead" });
      assert.equal(json.code, 0, json.stderr);
      assert.doesNotMatch(json.stderr, /boom/);
      const warnings = json.stdout.trim().split("\n").map((l) => JSON.parse(l)).filter((e) => e.type === "warning");
      assert.deepEqual(warnings.map((w) => w.message), [
        'Cannot start server "dead": server exited (code 1); stderr:\nboom: cannot open config.toml\nsecond line',
      ]);
    });
  });

  test("the summary counts an end of turn two hooks objected to as one objection, and says two hooks did", async () => {
    await withLlm([{ text: "Finished." }, { text: "Finished again." }], async (env) => {
      const cfg = mcpConfig({
        fx: { FIXTURE_STOP: "two todos open", FIXTURE_STOP_COUNT: "1" },
        fy: { FIXTURE_STOP: "the suite is red", FIXTURE_STOP_COUNT: "1" },
      });
      const run = await runCli(["run", "--mcp-config", cfg, "go"], { ...env, MCP_HOOK_SERVERS: "fx,fy" });
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stderr, /^⟲ _Stop objection from fx: two todos open$/m);
      assert.match(run.stderr, /^⟲ _Stop objection from fy: the suite is red$/m);
      assert.match(run.stderr, /^■ end_turn · 2 rounds · 0 tool calls · 1 objection \(2 hooks at once\) · /m);
    });
  });

  test("the prompt comes from stdin when absent or -", async () => {
    await withLlm([{ text: "a" }, { text: "b" }], async (env) => {
      for (const args of [["run", "--json"], ["run", "--json", "-"]]) {
        const run = await runCli(args, env, { stdin: "prompt from stdin\n" });
        assert.equal(run.code, 0, run.stderr);
      }
    });
  });

  test("exit 1 with an error event when the LLM keeps failing; the message has the status and provider text", async () => {
    await withLlm([{
      status: 400,
      body: { type: "error", error: { type: "invalid_request_error", message: "prompt is too long" } },
    }], async (env, requests) => {
      const run = await runCli(["run", "--json", "go"], env);
      assert.equal(run.code, 1);
      const last = run.events.at(-1)!;
      assert.equal(last["type"], "error");
      assert.match(String(last["message"]), /400/);
      assert.match(String(last["message"]), /prompt is too long/);
      assert.equal(requests(), 1, "400 is not retried");
    });
  });

  test("exit 1 naming the script when the scripted model runs out of turns", async () => {
    const script = join(dir, "short.json");
    writeFileSync(script, JSON.stringify([{ toolCalls: [{ name: "fx__echo", arguments: { text: "x" } }] }]));
    const cfg = mcpConfig({ fx: {} });
    const run = await runCli(["run", "--mcp-config", cfg, "go"], {
      SPROUT_AGENT_PROVIDER: "scripted",
      SPROUT_AGENT_SCRIPT: script,
    });
    assert.equal(run.code, 1);
    assert.match(run.stderr, /short\.json/);
    assert.match(run.stderr, /1 turn/);
  });

  // Configuration errors are lib/config/config.ts's (config.test.ts, in-process); two run through the
  // CLI under every runtime, the others once (under Bun).
  for (
    const [index, [name, env, args, pattern]] of ([
      ["an invalid number", { SPROUT_AGENT_MAX_ROUNDS: "many" }, ["run", "x"], /SPROUT_AGENT_MAX_ROUNDS/],
      ["an empty number", { SPROUT_AGENT_HOOK_TIMEOUT_MS: "" }, ["run", "x"], /SPROUT_AGENT_HOOK_TIMEOUT_MS/],
      ["a missing provider", {}, ["run", "x"], /SPROUT_AGENT_PROVIDER/],
      [
        "a missing API key",
        { SPROUT_AGENT_PROVIDER: "anthropic", ANTHROPIC_MODEL: "m" },
        ["run", "x"],
        /ANTHROPIC_API_KEY/,
      ],
      ["an unknown flag", { SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: "/dev/null" }, [
        "run",
        "--nope",
        "x",
      ], /--nope/],
      [
        "a mistyped command",
        {},
        ["rn", "x"],
        /^sprout-agent: Unknown command "rn": did you mean run\? \(see --help\)\n$/,
      ],
      ["an unreadable script file", { SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: "/nonexistent.json" }, [
        "run",
        "x",
      ], /nonexistent\.json/],
      // A valid script: it is read with the rest of the environment, before the MCP configuration.
      [
        "an unreadable .mcp.json",
        { SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: join(repoRoot, "examples/demo/script.json") },
        ["run", "--mcp-config", "/nonexistent.mcp.json", "x"],
        /nonexistent\.mcp\.json/,
      ],
    ] as Array<[string, Record<string, string>, string[], RegExp]>).entries()
  ) {
    test(`exit 2 with a message naming what is wrong: ${name}`, index < 2 ? {} : ONCE, async () => {
      const run = await runCli(args, env);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, pattern);
      assert.equal(run.stdout, "");
    });
  }

  test("exit 2 for an invalid .mcp.json, naming the file and the field", async () => {
    const file = join(dir, "bad.mcp.json");
    writeFileSync(file, JSON.stringify({ mcpServers: { ok: { command: "x", args: "not-an-array" } } }));
    const script = join(dir, "s.json");
    writeFileSync(script, "[]");
    const run = await runCli(["run", "--mcp-config", file, "x"], {
      SPROUT_AGENT_PROVIDER: "scripted",
      SPROUT_AGENT_SCRIPT: script,
    });
    assert.equal(run.code, 2);
    assert.match(run.stderr, /bad\.mcp\.json/);
    assert.match(run.stderr, /mcpServers\.ok\.args/);
  });

  test(
    "exit 2 for VS Code's mcp.json shape and for an unset ${VAR} in a url, naming the key and the variable",
    ONCE,
    async () => {
      const vscode = join(dir, "vscode.mcp.json");
      writeFileSync(vscode, JSON.stringify({ servers: { fs: { type: "stdio", command: "npx" } } }));
      const unset = join(dir, "unset.mcp.json");
      writeFileSync(unset, JSON.stringify({ mcpServers: { remote: { type: "http", url: "${SPROUT_TEST_API_URL}" } } }));
      const env = {
        SPROUT_AGENT_PROVIDER: "scripted",
        SPROUT_AGENT_SCRIPT: join(repoRoot, "examples/demo/script.json"),
      };
      const [shape, variable] = await Promise.all([
        runCli(["run", "--mcp-config", vscode, "x"], env),
        runCli(["run", "--mcp-config", unset, "x"], env),
      ]);
      assert.equal(shape.code, 2, shape.stderr);
      assert.match(
        shape.stderr,
        /vscode\.mcp\.json": it has "servers" but no "mcpServers".*rename the key to "mcpServers"\n$/,
      );
      assert.equal(variable.code, 2, variable.stderr);
      assert.match(
        variable.stderr,
        /unset\.mcp\.json": mcpServers\.remote\.url uses \$\{SPROUT_TEST_API_URL\}, which is not set \(give it a value or a default: \$\{SPROUT_TEST_API_URL:-…\}\)\n$/,
      );
    },
  );

  test("a server that cannot start is a warning naming it, and the run goes on", async () => {
    await withLlm(
      [{ toolCalls: [{ name: "fx__echo", arguments: { text: "still works" } }] }, { text: "ok" }],
      async (env) => {
        const cfg = mcpConfig({ fx: {} }, { broken: { command: "definitely-not-a-command-xyz" } });
        const run = await runCli(["run", "--json", "--mcp-config", cfg, "go"], env);
        assert.equal(run.code, 0, run.stderr);
        const warning = run.events.find((e) => e["type"] === "warning");
        assert.match(String(warning?.["message"]), /broken/);
        assert.equal(run.events.find((e) => e["type"] === "tool-end")?.["ok"], true);
      },
    );
  });

  test("API keys never reach a stdio server's environment", async () => {
    await withLlm([{ toolCalls: [{ name: "fx__env", arguments: {} }] }, { text: "ok" }], async (env) => {
      const cfg = mcpConfig({ fx: { OWN_VAR: "mine" } });
      const run = await runCli(["run", "--json", "--mcp-config", cfg, "go"], {
        ...env,
        OPENAI_COMPAT_API_KEY: "sk-openai-secret",
      });
      assert.equal(run.code, 0, run.stderr);
      const names = String(run.events.find((e) => e["type"] === "tool-end")?.["output"]).split("\n");
      assert.ok(names.includes("OWN_VAR"));
      assert.ok(names.includes("PATH"));
      for (const secret of ["ANTHROPIC_API_KEY", "OPENAI_COMPAT_API_KEY", "ANTHROPIC_BASE_URL"]) {
        assert.ok(!names.includes(secret), secret);
      }
    });
  });

  for (const [sig, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
    test(`${sig} cancels the prompt: exit ${code}, stop reason cancelled, no child process left`, async () => {
      await withLlm(
        [{ toolCalls: [{ name: "fx__slow", arguments: { ms: 20_000 } }] }, { text: "unused" }],
        async (env) => {
          const pidFile = join(dir, `${sig}.pid`);
          const cfg = mcpConfig({ fx: { FIXTURE_PID_FILE: pidFile } });
          const started = Date.now();
          const run = await runCli(["run", "--json", "--mcp-config", cfg, "go"], env, {
            onLine(line, kill) {
              if (line.includes('"tool-start"')) setTimeout(() => kill(sig), 300);
            },
          });
          assert.equal(run.code, code, run.stderr);
          assert.ok(Date.now() - started < 15_000);
          assert.equal(run.events.at(-1)?.["stopReason"], "cancelled");
          const pid = Number(readFileSync(pidFile, "utf8"));
          await new Promise((r) => setTimeout(r, 500));
          assert.ok(!alive(pid), "the MCP server process is gone");
        },
      );
    });
  }

  test("no command prints usage on stderr with exit 2; acp refuses arguments; after -- even --help is the prompt", async () => {
    const none = await runCli([], {});
    assert.equal(none.code, 2);
    assert.equal(none.stdout, "");
    assert.match(none.stderr, /Usage:/);
    const acp = await runCli(["acp", "--bogus"], {});
    assert.equal(acp.code, 2);
    assert.match(acp.stderr, /--bogus/);
    await withLlm([{ text: "answered" }], async (env) => {
      const run = await runCli(["run", "--json", "--", "--help"], env);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.events.at(-1)?.["stopReason"], "end_turn");
    });
  });

  test("a compaction shows as one line, and _PostCompact output is not shown as an objection", async () => {
    await withLlm(
      [{ toolCalls: [{ name: "fx__big", arguments: { bytes: 5000 } }] }, { text: "summary of the work" }, {
        text: "finished",
      }],
      async (env) => {
        const cfg = mcpConfig({ fx: { FIXTURE_POSTCOMPACT: "# Todo List\n[ ] 1. keep going" } });
        const run = await runCli(["run", "--mcp-config", cfg, "go"], {
          ...env,
          MCP_HOOK_SERVERS: "fx",
          SPROUT_AGENT_MAX_CONTEXT_TOKENS: "6000",
          SPROUT_AGENT_MAX_OUTPUT_TOKENS: "1000",
        });
        assert.equal(run.code, 0, run.stderr);
        assert.match(
          run.stderr,
          /^⟲ context compacted: \d+k → \d+k tokens; handoff 1; repeated calls: \d+; _PostCompact: fx$/m,
        );
        assert.doesNotMatch(run.stderr, /_PostCompact objection/);
        assert.equal(run.stdout, "finished\n", "stdout holds the answer only");
      },
    );
  });

  test("a closed stdout ends the run quietly (exit 141) and leaves no server behind", async () => {
    // The answer pauses after its first delta; by then the reader is gone, so the next write fails.
    await withLlm([{ text: "a long answer that keeps streaming", pauseMs: 1500 }], async (env) => {
      const pidFile = join(dir, "epipe.pid");
      const cfg = mcpConfig({ fx: { FIXTURE_PID_FILE: pidFile } });
      const [cmd, ...pre] = tsCommand(join(repoRoot, "cli.ts"));
      const child = spawn(cmd!, [...pre, "run", "--json", "--mcp-config", cfg, "go"], { env: baseEnv(env), cwd: dir });
      let stderr = "";
      child.stderr.on("data", (d) => (stderr += d));
      child.stdout.once("data", () => {
        // Like `| head -1`: read one chunk, then close our end of the pipe.
        setTimeout(() => child.stdout.destroy(), 100);
      });
      const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
      assert.equal(code, 141, stderr);
      assert.doesNotMatch(stderr, /EPIPE|at /);
      const pid = Number(readFileSync(pidFile, "utf8"));
      await new Promise((r) => setTimeout(r, 500));
      assert.ok(!alive(pid), "the MCP server process is gone");
    });
  });

  test("colour on a terminal, none with NO_COLOR; stdout and stderr on one terminal show each line on its own", {
    skip: !existsSync("/usr/bin/script") && "needs script(1) for a pseudo-terminal",
  }, async () => {
    const script = join(dir, "colour.json");
    writeFileSync(
      script,
      JSON.stringify([{ text: "calling", toolCalls: [{ name: "fx__echo", arguments: { text: "hi" } }] }, {
        text: "done",
      }]),
    );
    const cfg = mcpConfig({ fx: {} });
    const argv = [...tsCommand(join(repoRoot, "cli.ts")), "run", "--mcp-config", cfg, "go"].map((a) =>
      `'${a.replaceAll("'", "'\\''")}'`
    ).join(" ");
    const runInTerminal = (noColor: string) =>
      new Promise<string>((resolve) => {
        const env = baseEnv({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script, NO_COLOR: noColor });
        const child = spawn("/usr/bin/script", ["-qec", argv, "/dev/null"], { env, cwd: dir });
        let out = "";
        child.stdout.on("data", (d) => (out += d));
        child.stdin.end();
        child.on("close", () => resolve(out));
      });
    const [coloured, plain] = await Promise.all([runInTerminal(""), runInTerminal("1")]);
    // deno-lint-ignore no-control-regex
    assert.match(coloured, /\x1b\[32m✓\x1b\[0m fx__echo/);
    // deno-lint-ignore no-control-regex
    assert.doesNotMatch(plain, /\x1b\[/);
    // The tool line (stderr) after "calling" (stdout, no newline) starts on a line of its own;
    // the next round's text follows a blank line.
    assert.match(plain, /(^|\n)calling\r?\n✓ fx__echo \{"text":"hi"\} \(\d+ ms\) → hi\r?\n\r?\ndone\r?\n■ end_turn /);
  });

  test("--help lists flags and variables; --version prints the version", async () => {
    const help = await runCli(["--help"], {});
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--mcp-config/);
    assert.match(help.stdout, /SPROUT_AGENT_HOOK_TIMEOUT_MS +.*\[2500\]/);
    const version = await runCli(["--version"], {});
    assert.match(version.stdout, /^sprout-agent \d+\.\d+\.\d+/);
  });
});
