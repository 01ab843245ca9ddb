/**
 * `cli.ts hooks` and the hook author's aids of `cli.ts run`, end to end under the runtime
 * running the tests: the dry run against servers/hello-hook and a server that breaks the
 * contract (exit 0, 1, 2; `--json`), the start-up warnings about `MCP_HOOK_SERVERS`, and
 * stdio servers' stderr as `[name] line` (SPROUT_AGENT_SERVER_STDERR). Also the line splitting
 * of lib/mcp/stdio.ts behind it.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { spawnStdio, STDERR_LINE_CHARS } from "../lib/mcp/stdio.ts";
import { spawnAgent } from "./helpers/acp.ts";
import { runCli } from "./helpers/cli.ts";
import { repoRoot, runsOnce, tsCommand } from "./helpers/runtime.ts";

const ONCE = { skip: !runsOnce && "runs once, under bun" };

const dir = mkdtempSync(join(tmpdir(), "cli-hooks-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function server(file: string, ...extra: string[]): { command: string; args: string[] } {
  const [command = "", ...args] = tsCommand(join(repoRoot, file));
  return { command, args: [...args, ...extra] };
}
const config = join(dir, "mcp.json");
writeFileSync(
  config,
  JSON.stringify({
    mcpServers: {
      hello: server("servers/hello-hook/hello-hook.ts", "--stdio"),
      bad: server("tests/fixtures/hooks/bad-hook.ts"),
    },
  }),
);
const script = join(dir, "script.json");
writeFileSync(script, JSON.stringify([{ text: "finished" }]));
const scripted = { SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script };

describe("cli.ts hooks", () => {
  test("lists each server's hooks, calls the enabled ones once, exit 0 when they keep the contract", async () => {
    const ran = await runCli(["hooks", "--mcp-config", config], { MCP_HOOK_SERVERS: "hello" }, { cwd: dir });
    assert.equal(ran.code, 0, ran.stderr);
    const lines = ran.stdout.trim().split("\n").map((l) => l.replace(/ in [\d.]+ m?s/, " in N ms"));
    assert.deepEqual(lines, [
      "hello (hooks enabled)",
      "  ✓ _Stop no objection in N ms",
      "bad (hooks not enabled: MCP_HOOK_SERVERS does not name it)",
      "  · _Stop not called (not enabled)",
      "  · _Oops not a hook point this agent calls (never called)",
      "■ 1 hook call (dry run) · 0 problems",
    ]);
    assert.match(
      ran.stderr,
      /warning: Hooks not enabled: server "bad" \(_Stop\); MCP_HOOK_SERVERS \(now "hello"\) must name it/,
    );
    assert.doesNotMatch(ran.stderr, /_Stop was called/, "a hook that is not enabled is not called");
  });

  // The report's logic is lib/hooks/check.ts, tested in-process (hook-check.test.ts); the first
  // test runs the command under every runtime, these two once.
  test("a hook that answers isError is a problem: exit 1, and --json says which", ONCE, async () => {
    writeFileSync(join(dir, "NOT_DONE.md"), "- one more thing");
    try {
      const ran = await runCli(["hooks", "--json", "--mcp-config", config], { MCP_HOOK_SERVERS: "*" }, { cwd: dir });
      assert.equal(ran.code, 1, ran.stderr);
      assert.equal(ran.events.length, 1);
      const report = ran.events[0] as {
        type: string;
        ok: boolean;
        warnings: string[];
        servers: Array<
          { server: string; hooks: Array<{ name: string; outcome?: string; text?: string; problems: string[] }> }
        >;
      };
      assert.equal(report.type, "hooks");
      assert.equal(report.ok, false);
      assert.deepEqual(report.warnings, []);
      const hooks = report.servers.map((s) => [s.server, s.hooks.map((h) => [h.name, h.outcome, h.problems])]);
      assert.deepEqual(hooks, [
        ["hello", [["_Stop", "objection", []]]],
        ["bad", [["_Stop", "error", ["returned an error: boom"]], ["_Oops", undefined, []]]],
      ]);
      assert.match(report.servers[0]!.hooks[0]!.text!, /^NOT_DONE\.md still exists.*\n- one more thing/);
      assert.equal(ran.stderr, "", "--json hides the servers' stderr");
    } finally {
      rmSync(join(dir, "NOT_DONE.md"));
    }
  });

  test("usage and configuration errors exit 2 naming what is wrong", ONCE, async () => {
    const [extra, bad] = await Promise.all([
      runCli(["hooks", "now"], {}, { cwd: dir }),
      runCli(["hooks", "--mcp-config", config], { SPROUT_AGENT_SERVER_STDERR: "loud" }, { cwd: dir }),
    ]);
    assert.equal(extra.code, 2);
    assert.match(extra.stderr, /Unexpected argument "now": hooks takes only --mcp-config FILE and --json/);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /Invalid SPROUT_AGENT_SERVER_STDERR: "loud" must be show or hide/);
  });
});

// The runs are independent (no hook that reads the directory is enabled): they run at the same time.
describe("cli.ts run: aids for hook authors", { concurrency: true }, () => {
  test("a misspelt MCP_HOOK_SERVERS name is one warning at start, naming the configured servers", async () => {
    const ran = await runCli(["run", "--mcp-config", config, "hi"], { ...scripted, MCP_HOOK_SERVERS: "helo" }, {
      cwd: dir,
    });
    assert.equal(ran.code, 0, ran.stderr);
    const warnings = ran.stderr.split("\n").filter((l) => l.startsWith("warning: "));
    assert.deepEqual(warnings, [
      'warning: MCP_HOOK_SERVERS names server "helo", which is not configured (configured: "hello", "bad")',
      'warning: Hooks not enabled: servers "hello" (_Stop), "bad" (_Stop); MCP_HOOK_SERVERS (now "helo") must name them for the hooks to run',
    ]);
  });

  test("stdio servers' stderr is shown as [name] line on stderr, and hidden with --json unless asked", async () => {
    const env = { ...scripted, MCP_HOOK_SERVERS: "bad" };
    const [human, json, shown, hidden] = await Promise.all([
      runCli(["run", "--mcp-config", config, "hi"], env, { cwd: dir }),
      runCli(["run", "--json", "--mcp-config", config, "hi"], env, { cwd: dir }),
      runCli(["run", "--json", "--mcp-config", config, "hi"], { ...env, SPROUT_AGENT_SERVER_STDERR: "show" }, {
        cwd: dir,
      }),
      runCli(["run", "--mcp-config", config, "hi"], { ...env, SPROUT_AGENT_SERVER_STDERR: "hide" }, { cwd: dir }),
    ]);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stderr, /^\[bad\] bad-hook: ready$/m);
    assert.match(human.stderr, /^\[bad\] bad-hook: _Stop was called$/m);
    assert.doesNotMatch(human.stdout, /bad-hook:/);

    assert.equal(json.code, 0, json.stderr);
    assert.doesNotMatch(json.stderr + json.stdout, /bad-hook:/);

    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stderr, /^\[bad\] bad-hook: ready$/m);
    assert.ok(shown.stdout.split("\n").every((l) => l === "" || l.startsWith("{")), "stdout stays JSON lines");

    assert.doesNotMatch(hidden.stderr, /bad-hook:/);
  });

  test("a server's stderr line reaches the terminal without its control characters (no escape sequences)", async () => {
    // OSC 0 sets the terminal's title, CSI colours; both shown in caret notation instead.
    const escConfig = join(dir, "esc.json");
    writeFileSync(
      escConfig,
      JSON.stringify({
        mcpServers: {
          esc: { command: "sh", args: ["-c", "printf 'plain \\033]0;title\\007 \\033[31mred\\r\\n' >&2; exit 3"] },
        },
      }),
    );
    const run = await runCli(["run", "--mcp-config", escConfig, "hi"], scripted, { cwd: dir });
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stderr.split("\n").filter((l) => l.startsWith("[esc] "));
    assert.ok(lines.length > 0, run.stderr);
    for (const line of lines) assert.equal(line, "[esc] plain ^[]0;title^G ^[[31mred");
  });
});

describe("lib/mcp/stdio.ts: stderr line by line", () => {
  test("lines come without their line ends, an over-long line in pieces, the unfinished last one at exit", async () => {
    const lines: string[] = [];
    const long = "x".repeat(STDERR_LINE_CHARS + 10);
    const proc = await spawnStdio(
      { type: "stdio", command: "sh", args: ["-c", `printf 'a\\nb\\r\\n${long}\\nlast' >&2`], env: {} },
      {
        name: "sh",
        cwd: dir,
        env: { PATH: process.env.PATH },
        maxLineBytes: 1024,
        onMessage: () => {},
        onWarning: () => {},
        onExit: () => {},
        onStderrLine: (line) => lines.push(line),
      },
    );
    const info = await proc.exited;
    // Lengths for the long line, so that a failure prints no 16 KiB strings.
    assert.deepEqual(lines.map((l) => (l.startsWith("x") ? l.length : l)), ["a", "b", STDERR_LINE_CHARS, 10, "last"]);
    assert.ok(lines.slice(2, 4).every((l) => /^x+$/.test(l)));
    assert.equal(info.stderrTail, `a\nb\r\n${long}\nlast`, "the tail is kept as it came");
  });
});

describe("cli.ts acp: aids for hook authors", { concurrency: true }, () => {
  for (const shown of [false, true]) {
    test(`stdio servers' stderr is ${shown ? "logged as [session] [name] line when asked" : "not logged by default"}; the start-up warning is`, async () => {
      const bad = server("tests/fixtures/hooks/bad-hook.ts");
      const agent = spawnAgent({
        ...scripted,
        MCP_HOOK_SERVERS: "bda",
        ...(shown ? { SPROUT_AGENT_SERVER_STDERR: "show" } : {}),
      });
      try {
        await agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
        const reply = await agent.request("session/new", {
          cwd: dir,
          mcpServers: [{ name: "bad", command: bad.command, args: bad.args, env: [] }],
        });
        const session = reply.result?.sessionId as string;
        assert.match(session, /^ses_/);
        await agent.close();
        const log = agent.stderr();
        assert.match(
          log,
          new RegExp(`\\[${session}\\] warning: MCP_HOOK_SERVERS names server "bda", which is not configured`),
        );
        if (shown) assert.match(log, new RegExp(`^sprout-agent acp: \\[${session}\\] \\[bad\\] bad-hook: ready$`, "m"));
        else assert.doesNotMatch(log, /bad-hook: ready/);
      } finally {
        agent.child.kill("SIGKILL");
      }
    });
  }
});
