/**
 * The permission policy in the CLI (SPEC 7.8, 11): `--allow`, `--ask`, `--deny`, the terminal
 * prompt (in-process with a fake stdin, then for real on a pseudo-terminal) and the headless
 * denial that names the flag.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EventEmitter } from "node:events";
import { parseRunArgs } from "../lib/cli/args.ts";
import { answerOf, terminalAsk } from "../lib/cli/ask.ts";
import type { PermissionRequest } from "../lib/hooks/permission.ts";
import { cleanEnv, fixtureCalls, fixtureConfig, runCli } from "./helpers/cli.ts";
import { repoRoot, tsCommand } from "./helpers/runtime.ts";

/** A stdin that delivers `lines` one by one, each when the asker resumes it. */
class FakeStdin extends EventEmitter {
  resumed = 0;
  lines: string[];
  constructor(lines: string[]) {
    super();
    this.lines = lines;
  }
  resume() {
    this.resumed++;
    const next = this.lines.shift();
    queueMicrotask(() => (next === undefined ? this.emit("end") : this.emit("data", next)));
  }
  pause() {}
}

const request = (name: string): PermissionRequest => ({
  call: { id: "c1", name, server: "fs", tool: name.split("__")[1]!, arguments: { path: "a" } },
  reason: `the operator's policy (ask "fs__*") asks before "${name}" runs`,
  servers: [],
});

describe("the CLI's permission flags and prompt", () => {
  test("--allow, --ask and --deny are repeatable globs; a missing value or one near a flag is named", () => {
    const parsed = parseRunArgs(["--allow", "fs__read_*", "--ask=shell__*", "--deny", "fs__rm", "--allow=x__y", "go"]);
    assert.deepEqual(parsed.permissions, { allow: ["fs__read_*", "x__y"], ask: ["shell__*"], deny: ["fs__rm"] });
    assert.deepEqual(parsed.prompt, ["go"]);
    assert.throws(() => parseRunArgs(["--deny"]), /Missing value for --deny: give a tool name or glob/);
    assert.throws(() => parseRunArgs(["--alow", "x"]), /Unknown flag "--alow": did you mean --allow\?/);
  });

  test("answers: y once, a always, N never, anything else (or nothing) no", () => {
    assert.deepEqual(["y", "YES", "a", "always", "N", "never", "n", "", "maybe", undefined].map(answerOf), [
      "allow_once",
      "allow_once",
      "allow_always",
      "allow_always",
      "reject_always",
      "reject_always",
      "reject_once",
      "reject_once",
      "reject_once",
      "reject_once",
    ]);
  });

  test("the prompt asks one question at a time and reads one line each; a cancel answers no", async () => {
    const said: string[] = [];
    const stdin = new FakeStdin(["y\n", "a\nN\n"]);
    const ask = terminalAsk((line) => said.push(`${line}\n`), (text) => said.push(text), stdin);
    const signal = new AbortController().signal;
    const answers = await Promise.all([
      ask(request("fs__write"), signal),
      ask(request("fs__edit"), signal),
      ask(request("fs__move"), signal),
    ]);
    assert.deepEqual(answers, ["allow_once", "allow_always", "reject_always"]);
    assert.equal(stdin.resumed, 2, "the third answer was already buffered");
    assert.equal(said.filter((s) => s.startsWith("? ")).length, 3);
    assert.equal(said[0], '? fs__write {"path":"a"}\n');
    const cancelled = new AbortController();
    const pending = terminalAsk(() => {}, () => {}, new FakeStdin([]))(request("fs__write"), cancelled.signal);
    cancelled.abort();
    assert.equal(await pending, "reject_once");
  });

  test("headless, --ask denies and names --allow; --deny beats --allow; the tool never runs", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sprout-perm-"));
    try {
      const script = join(dir, "script.json");
      writeFileSync(
        script,
        JSON.stringify([{ toolCalls: [{ name: "fx__echo", arguments: { text: "hi" } }] }, { text: "ok" }]),
      );
      const log = join(dir, "fx.log");
      const cfg = fixtureConfig(dir, { fx: { FIXTURE_LOG: log } });
      const env = { SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script };
      const asked = await runCli(["run", "--mcp-config", cfg, "--json", "--ask", "fx__*", "go"], env, { cwd: dir });
      assert.equal(asked.code, 0, asked.stderr);
      const end = asked.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l)).find((e) => e.type === "tool-end");
      assert.equal(end.ok, false);
      assert.match(end.output, /no one can answer in this run: allow it in advance with --allow "fx__echo"/);
      const denied = await runCli(
        ["run", "--mcp-config", cfg, "--json", "--allow", "fx__echo", "--deny", "fx__e*", "go"],
        { ...env, SPROUT_AGENT_ALLOW: "fx__*" },
        { cwd: dir },
      );
      assert.match(denied.stdout, /Permission denied: the operator's policy \(deny \\"fx__e\*\\"\) does not allow/);
      assert.deepEqual(fixtureCalls(log), [], "the tool never ran");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("on a terminal the person is asked on stderr; y runs the tool", {
    skip: !existsSync("/usr/bin/script") && "needs script(1) for a pseudo-terminal",
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "sprout-perm-tty-"));
    try {
      const script = join(dir, "script.json");
      writeFileSync(
        script,
        JSON.stringify([{ toolCalls: [{ name: "fx__echo", arguments: { text: "hi" } }] }, { text: "ok" }]),
      );
      const log = join(dir, "fx.log");
      const cfg = fixtureConfig(dir, { fx: { FIXTURE_LOG: log } });
      const argv = [...tsCommand(join(repoRoot, "cli.ts")), "run", "--mcp-config", cfg, "--ask", "fx__*", "go"]
        .map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ");
      const env = cleanEnv({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script });
      const out = await new Promise<string>((resolve) => {
        const child = spawn("/usr/bin/script", ["-qec", argv, "/dev/null"], { env, cwd: dir });
        let text = "";
        child.stdout.on("data", (d) => {
          text += d;
          // Answer once the question is on the terminal, as a person would.
          if (text.includes("Allow it?") && !child.stdin.writableEnded) child.stdin.end("y\n");
        });
        child.on("close", () => resolve(text));
      });
      assert.match(
        out,
        /\? fx__echo \{"text":"hi"\}\r?\n {2}the operator's policy \(ask "fx__\*"\) asks before "fx__echo" runs\r?\n/,
      );
      assert.match(out, /✓ fx__echo/);
      assert.deepEqual(fixtureCalls(log).map((c) => c.tool), ["echo"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
