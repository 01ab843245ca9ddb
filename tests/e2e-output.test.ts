// deno-lint-ignore-file no-explicit-any
/**
 * Output is never lost (issue 9): the real CLI, under the runtime running this file, writes
 * 300 KB of `--json` (and ACP responses over 64 KiB) into a pipe whose reader starts late, as
 * `| (sleep 2; cat)` does; every byte arrives, for exit 0, exit 1, SIGINT and SIGTERM. A reader
 * that goes away (`| head -n 1`) still ends the agent at once, with no EPIPE trace. In ACP mode
 * a library's `console.log` during a prompt goes to stderr, never into the JSON-RPC stdout.
 * Without `--json`, stdout is the answer alone (issue 21): `run "…" > answer.md` holds the
 * model's text byte for byte, and `2>&1` into one file still shows every line on its own.
 *
 * The pipelines run under `sh`: `{ agent; } | { wait for a file; cat; }`. The reader starts
 * once the agent has exited (the old bug: its queued bytes were gone by then) or after a
 * delay, whichever comes first: Node and Deno write pipes synchronously and would otherwise
 * wait on the reader forever.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { type FakeTurn, startFakeLlm } from "../lib/testing/fake-llm.ts";
import { FLUSH_TIMEOUT_MS } from "../lib/util/output.ts";
import { cleanEnv, fixtureConfig } from "./helpers/cli.ts";
import { repoRoot, tsCommand } from "./helpers/runtime.ts";

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "sprout-output-"));
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** 3,100 lines of 100 bytes: the scripted model streams it as three ~103 KB text deltas. */
const LONG_TEXT = `${"x".repeat(99)}\n`.repeat(3100);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) return false;
    await sleep(20);
  }
  return true;
}

/**
 * `{ echo $$ > pid; exec agent; echo $? > code; } | { until [ -f go ]; sleep; done; cat; }`:
 * the agent's exit status and pid land in files of `$1`; the reader reads once `go` exists.
 */
const PIPELINE = `d=$1; shift
{ sh -c 'echo $$ > "$0/pid"; exec "$@"' "$d" "$@"; echo $? > "$d/code"; } | { while [ ! -f "$d/go" ]; do sleep 0.02; done; exec cat; }`;

interface SlowRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `cli.ts ARGS` with stdout into a pipe read late: the reader starts once the agent has
 * exited or `delayMs` after `whileRunning(pid)` resolves (`whileRunning` may signal the agent).
 */
async function behindSlowReader(
  args: string[],
  env: Record<string, string>,
  options: { delayMs: number; stdin?: string; whileRunning?: (pid: number) => Promise<void> },
): Promise<SlowRun> {
  const run = mkdtempSync(join(dir, "run-"));
  const child = spawn("sh", ["-c", PIPELINE, "sh", run, ...tsCommand(join(repoRoot, "cli.ts")), ...args], {
    cwd: dir,
    env: cleanEnv(env),
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (d: string) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  child.stdin.on("error", () => {});
  child.stdin.end(options.stdin ?? "");
  const closed = new Promise<void>((resolve) => child.on("close", () => resolve()));
  const killer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  try {
    assert.ok(await until(() => existsSync(join(run, "pid")), 30_000), "the agent started");
    const pid = Number(readFileSync(join(run, "pid"), "utf8"));
    const exited = () => existsSync(join(run, "code"));
    const running = (options.whileRunning?.(pid) ?? Promise.resolve()).then(() => until(exited, options.delayMs));
    // Node and Deno block in write() on a full pipe: read after a while whatever happens.
    await Promise.race([running, sleep(Math.max(2000, options.delayMs))]);
    writeFileSync(join(run, "go"), "");
    await closed;
    await running;
    return { code: Number(readFileSync(join(run, "code"), "utf8")), stdout, stderr };
  } finally {
    clearTimeout(killer);
  }
}

function scriptFile(name: string, turns: unknown[]): string {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(turns));
  return file;
}

/** Every line parses; the text deltas add up to `LONG_TEXT` byte for byte; the last event. */
function checkJsonStream(run: SlowRun): Record<string, unknown> {
  assert.ok(run.stdout.endsWith("\n"), `stdout ends mid-line after ${run.stdout.length} bytes`);
  const events = run.stdout.trimEnd().split("\n").map((line, i) => {
    try {
      return JSON.parse(line) as Record<string, unknown>;
    } catch {
      return assert.fail(
        `line ${i + 1} of ${run.stdout.length} bytes is not JSON: ${line.slice(0, 80)}…${line.slice(-80)}`,
      );
    }
  });
  const text = events.filter((e) => e["type"] === "text-delta").map((e) => e["text"]).join("");
  assert.equal(text.length, LONG_TEXT.length, "every text byte arrived");
  assert.equal(text, LONG_TEXT);
  assert.ok(run.stdout.length > 300_000, `${run.stdout.length} bytes`);
  return events.at(-1)!;
}

describe("output is never lost behind a slow reader (cli.ts run --json)", () => {
  test("exit 0 (end_turn) and exit 1 (the scripted model runs out of turns): all 300 KB arrive, the last line is the result or the error", async () => {
    const ok = scriptFile("ok.json", [{ text: LONG_TEXT }]);
    // The unknown tool gets an error result; the second turn is missing: exit 1.
    const fails = scriptFile("fails.json", [{ text: LONG_TEXT, toolCalls: [{ name: "nope__tool" }] }]);
    const [done, failed] = await Promise.all(
      [ok, fails].map((script) =>
        behindSlowReader(["run", "--json", "go"], { SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script }, {
          delayMs: 1000,
        })
      ),
    );
    assert.equal(done!.code, 0, done!.stderr);
    const result = checkJsonStream(done!);
    assert.equal(result["type"], "result");
    assert.equal(result["stopReason"], "end_turn");
    assert.equal(failed!.code, 1, failed!.stderr);
    const error = checkJsonStream(failed!);
    assert.equal(error["type"], "error");
    assert.match(String(error["message"]), /Scripted model ran out of turns/);
  });

  test("SIGINT and SIGTERM during a tool call: exit 130 and 143, all 300 KB arrive, the last line is the cancelled result", async () => {
    const runs = await Promise.all((["SIGINT", "SIGTERM"] as const).map((signal) => {
      const log = join(dir, `${signal}.log`);
      const cfg = fixtureConfig(dir, { fx: { FIXTURE_LOG: log } });
      const script = scriptFile(`${signal}.json`, [{
        text: LONG_TEXT,
        toolCalls: [{ name: "fx__slow", arguments: { ms: 30_000 } }],
      }, { text: "unused" }]);
      return behindSlowReader(["run", "--json", "--mcp-config", cfg, "go"], {
        SPROUT_AGENT_PROVIDER: "scripted",
        SPROUT_AGENT_SCRIPT: script,
      }, {
        delayMs: 1000,
        async whileRunning(pid) {
          assert.ok(
            await until(() => existsSync(log) && readFileSync(log, "utf8").includes('"slow"'), 30_000),
            "the slow tool was called",
          );
          process.kill(pid, signal);
        },
      });
    }));
    for (const [run, code] of [[runs[0]!, 130], [runs[1]!, 143]] as const) {
      assert.equal(run.code, code, run.stderr);
      const result = checkJsonStream(run);
      assert.equal(result["type"], "result");
      assert.equal(result["stopReason"], "cancelled");
    }
  });

  test("| head -n 1: the agent ends at once with 141 when the reader goes, no EPIPE trace on stderr", async () => {
    const script = scriptFile("head.json", [{ text: LONG_TEXT }]);
    const run = mkdtempSync(join(dir, "head-"));
    const child = spawn("sh", [
      "-c",
      `d=$1; shift; { sh -c 'exec "$@"' sh "$@"; echo $? > "$d/code"; } | head -n 1`,
      "sh",
      run,
      ...tsCommand(join(repoRoot, "cli.ts")),
      "run",
      "--json",
      "go",
    ], {
      cwd: dir,
      env: cleanEnv({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    // Timed from the first line head passes on (the reader goes right after it), not from the
    // spawn: starting the agent under tsx on a loaded machine can take longer than the bound.
    let readerGone: number | undefined;
    child.stdout.on("data", (d) => {
      readerGone ??= Date.now();
      stdout += d;
    });
    child.stderr.on("data", (d) => (stderr += d));
    await new Promise((resolve) => child.on("close", resolve));
    assert.equal(Number(readFileSync(join(run, "code"), "utf8")), 141, stderr);
    assert.equal(JSON.parse(stdout.trim())["type"], "round-start");
    assert.equal(stderr, "");
    assert.ok(
      readerGone !== undefined && Date.now() - readerGone < FLUSH_TIMEOUT_MS,
      "it did not wait out the flush bound on a closed pipe",
    );
  });
});

describe("a stdout that fails is said, not silent", () => {
  test("stdout on a full device (/dev/full): exit 1 and a line on stderr naming the failure", async () => {
    const script = scriptFile("full.json", [{ text: "hello" }]);
    const child = spawn("sh", [
      "-c",
      `exec "$@" > /dev/full`,
      "sh",
      ...tsCommand(join(repoRoot, "cli.ts")),
      "run",
      "--json",
      "go",
    ], {
      cwd: dir,
      env: cleanEnv({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script }),
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    const code = await new Promise((resolve) => child.on("close", resolve));
    assert.equal(code, 1, stderr);
    assert.match(stderr, /Cannot write to stdout: .*(ENOSPC|No space left)/);
  });
});

describe("output is never lost behind a slow reader (cli.ts acp)", () => {
  test("responses over 64 KiB written just before stdin closes all arrive, byte for byte", async () => {
    // Four error responses of ~100 KB each (the unknown session id is quoted back), then EOF.
    const ids = [1, 2, 3, 4].map((n) => `ses_${String(n).repeat(100_000)}`);
    const requests = ids.map((sessionId, i) =>
      JSON.stringify({
        jsonrpc: "2.0",
        id: i + 1,
        method: "session/prompt",
        params: { sessionId, prompt: [{ type: "text", text: "hi" }] },
      })
    );
    const expected = ids.map((sessionId, i) =>
      `${
        JSON.stringify({
          jsonrpc: "2.0",
          id: i + 1,
          error: {
            code: -32602,
            message: `Invalid params for session/prompt: unknown session ${JSON.stringify(sessionId)}`,
          },
        })
      }\n`
    ).join("");
    const script = scriptFile("acp.json", [{ text: "unused" }]);
    const run = await behindSlowReader(["acp"], { SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script }, {
      delayMs: 1000,
      stdin: `${requests.join("\n")}\n`,
    });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.length, expected.length, "every byte arrived");
    assert.equal(run.stdout, expected);
  });
});

describe("acp: stdout carries JSON-RPC only", () => {
  test("a library's console.log, info, debug, dir and table during a prompt go to stderr", async () => {
    const llm = await startFakeLlm({ responses: [{ text: "Hello from the model." }] });
    const [command, ...args] = tsCommand(join(repoRoot, "tests/fixtures/output/noisy-acp.ts"));
    const child = spawn(command!, args, {
      cwd: dir,
      env: cleanEnv({
        SPROUT_AGENT_PROVIDER: "anthropic",
        ANTHROPIC_API_KEY: "sk-ant-test",
        ANTHROPIC_MODEL: "claude-test",
        ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
      }),
      stdio: ["pipe", "pipe", "pipe"],
    });
    try {
      let stdout = "";
      let stderr = "";
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", (d: string) => (stdout += d));
      child.stderr.on("data", (d) => (stderr += d));
      const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
      const lines = () =>
        stdout.split("\n").flatMap((l) => {
          try {
            return [JSON.parse(l) as { id?: number; result?: any }];
          } catch {
            return []; // a stray line: the check after the exit names it
          }
        });
      const response = async (id: number) => {
        assert.ok(
          await until(() => lines().some((m) => m.id === id), 30_000),
          `response ${id}; stdout: ${stdout.slice(0, 500)}; stderr: ${stderr}`,
        );
        return lines().find((m) => m.id === id)!;
      };
      const send = (m: Record<string, unknown>) => child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...m })}\n`);
      send({ id: 1, method: "initialize", params: { protocolVersion: 1 } });
      send({ id: 2, method: "session/new", params: { cwd: dir, mcpServers: [] } });
      const { sessionId } = (await response(2)).result;
      send({ id: 3, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "hi" }] } });
      assert.equal((await response(3)).result?.stopReason, "end_turn");
      child.stdin.end();
      assert.equal(await exited, 0, stderr);
      for (const line of stdout.split("\n").filter((l) => l !== "")) {
        let message: { jsonrpc?: string } = {};
        try {
          message = JSON.parse(line) as { jsonrpc?: string };
        } catch {
          // not JSON: the assertion below names the line
        }
        assert.equal(message.jsonrpc, "2.0", `not JSON-RPC on stdout: ${line}`);
      }
      assert.doesNotMatch(stdout, /noisy/);
      for (const word of ["log", "info", "debug"]) assert.match(stderr, new RegExp(`noisy library: ${word}`));
      assert.match(stderr, /noisy: 'dir'/);
      assert.match(stderr, /noisy: 'table'/);
      assert.equal(llm.requests.length, 1);
    } finally {
      child.kill("SIGKILL");
      await llm.close();
    }
  });
});

describe("stdout is the answer (cli.ts run without --json, issue 21)", () => {
  // Round 1 says a few words and calls a tool, round 2 thinks and answers (no final newline),
  // the _Stop hook objects once, round 3 adds a sentence. MCP_HOOK_SERVERS names a server
  // that is not configured: a warning at start.
  const turns: FakeTurn[] = [
    { text: "Let me look.", toolCalls: [{ name: "fx__echo", arguments: { text: "hi" } }] },
    { thinking: "weighing it", text: "Here is **the** answer:\n\n- one\n- two" },
    { text: " Also fixed the todos." },
  ];
  // The texts of the three rounds, each set off from the one before by a blank line.
  const ANSWER = "Let me look.\n\nHere is **the** answer:\n\n- one\n- two\n\n Also fixed the todos.";

  /** `cli.ts run go` under `sh -c` with the shell redirection `redirect` (in `$d`, the run's folder). */
  async function redirected(
    redirect: string,
    extraEnv: Record<string, string> = {},
  ): Promise<{ code: number; d: string }> {
    const llm = await startFakeLlm({ responses: turns });
    try {
      const d = mkdtempSync(join(dir, "answer-"));
      const cfg = fixtureConfig(d, { fx: { FIXTURE_STOP: "two todos open", FIXTURE_STOP_COUNT: "1" } });
      const env = cleanEnv({
        SPROUT_AGENT_PROVIDER: "anthropic",
        ANTHROPIC_API_KEY: "sk-ant-test",
        ANTHROPIC_MODEL: "claude-test",
        ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
        MCP_HOOK_SERVERS: "fx,ghost",
        ...extraEnv,
      });
      const child = spawn(
        "sh",
        [
          "-c",
          `d=$1; shift; exec "$@" ${redirect}`,
          "sh",
          d,
          ...tsCommand(join(repoRoot, "cli.ts")),
          "run",
          "--mcp-config",
          cfg,
          "go",
        ],
        { cwd: d, env, stdio: "ignore" },
      );
      const code = await new Promise<number>((resolve) => child.on("close", (c) => resolve(c ?? -1)));
      assert.deepEqual(llm.requests.filter((r) => r.rejected).map((r) => r.rejected), []);
      return { code, d };
    } finally {
      await llm.close();
    }
  }

  test('run "…" > answer.md holds the model\'s text alone; the tool line, objection, warning, thinking and summary are on stderr', async () => {
    const { code, d } = await redirected('> "$d/answer.md" 2> "$d/err.txt"');
    const err = readFileSync(join(d, "err.txt"), "utf8");
    assert.equal(code, 0, err);
    // The text exactly as the model streamed it, and one newline so a shell prompt starts on its own line.
    assert.equal(readFileSync(join(d, "answer.md"), "utf8"), `${ANSWER}\n`);
    assert.match(err, /^warning: MCP_HOOK_SERVERS names server "ghost", which is not configured/m);
    assert.match(err, /^✓ fx__echo \{"text":"hi"\} \((\d+ ms|\d+\.\d s)\) → hi$/m);
    assert.match(err, /^∴ weighing it$/m);
    assert.match(err, /^⟲ _Stop objection from fx: two todos open$/m);
    // The duration is ms under a second and seconds above (a loaded machine gets there).
    assert.match(
      err,
      /^■ end_turn · 3 rounds · 1 tool call · 1 objection · (\d+ ms|\d+(\.\d+)? s) · session [0-9a-f-]{36}$/m,
    );
    // stderr is lines of its own, none glued to another and no blank line (stdout went elsewhere).
    for (const line of err.trimEnd().split("\n")) {
      assert.match(line, /^(warning: |✓ |∴ |⟲ |■ |\[fx\] )/, `a stderr line of its own: ${JSON.stringify(line)}`);
    }
  });

  test("with 2>&1 into one file every stderr line starts on a fresh line, after text or thinking", async () => {
    const { code, d } = await redirected('> "$d/all.txt" 2>&1', { SPROUT_AGENT_SERVER_STDERR: "hide" });
    const all = readFileSync(join(d, "all.txt"), "utf8");
    assert.equal(code, 0, all);
    assert.match(
      all,
      new RegExp(
        '^warning: MCP_HOOK_SERVERS names server "ghost"[^\\n]*\\n' +
          "Let me look\\.\\n" +
          '✓ fx__echo \\{"text":"hi"\\} \\((\\d+ ms|\\d+\\.\\d s)\\) → hi\\n' +
          "∴ weighing it\\n" +
          "\\nHere is \\*\\*the\\*\\* answer:\\n\\n- one\\n- two\\n" +
          "⟲ _Stop objection from fx: two todos open\\n" +
          "\\n Also fixed the todos\\.\\n" +
          "■ end_turn · 3 rounds · 1 tool call · 1 objection · (\\d+ ms|\\d+(\\.\\d+)? s) · session [0-9a-f-]{36}\\n$",
      ),
    );
  });
});
