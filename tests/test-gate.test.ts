/**
 * servers/test-gate: output parsing, the file fingerprint, running with a timeout, the gate's
 * decisions on a real tiny project, the app in-process, and the server over a real port and
 * over stdio under each runtime.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { createApp } from "../servers/test-gate/app.ts";
import { fingerprintFiles, listProjectFiles } from "../servers/test-gate/fingerprint.ts";
import { Gates } from "../servers/test-gate/gates.ts";
import { gateOptions } from "../servers/test-gate/options.ts";
import { TestGate } from "../servers/test-gate/gate.ts";
import { parseTestOutput } from "../servers/test-gate/results.ts";
import { runCommand } from "../servers/test-gate/run.ts";
import {
  appFetch,
  httpClient,
  postJsonRpc,
  resultText,
  runServerToExit,
  serverRuntimes,
  startServer,
  stdioClient,
} from "./helpers/hook-servers.ts";
import { repoRoot } from "./helpers/runtime.ts";
import { alive, runToExit } from "./helpers/processes.ts";

const MAIN = `${repoRoot}servers/test-gate/main.ts`;
const STDIO = `${repoRoot}servers/test-gate/stdio.ts`;
const BUN_TEST = `${repoRoot}node_modules/.bin/bun test`;
const RUNNING = /is running on the current files\. Call the run_tests tool/;
/** "Within 1 s", checked generously: the machine is shared and slow at times. */
const STOP_LIMIT_MS = 1500;

const temps: string[] = [];
after(() => {
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "test-gate-"));
  temps.push(dir);
  return dir;
}

/** A tiny project whose `bun test` fails until `fix()` corrects its one bug. */
function tinyProject(): { dir: string; fix(): void } {
  const dir = tempDir();
  writeFileSync(join(dir, "math.ts"), "export const add = (a: number, b: number) => a - b;\n");
  writeFileSync(
    join(dir, "math.test.ts"),
    [
      'import { test } from "node:test";',
      'import assert from "node:assert/strict";',
      'import { add } from "./math.ts";',
      'test("adds two numbers", () => { assert.equal(add(2, 2), 4); });',
      'test("adds zero", () => { assert.equal(add(1, 0), 1); });',
      "",
    ].join("\n"),
  );
  return {
    dir,
    fix: () => writeFileSync(join(dir, "math.ts"), "export const add = (a: number, b: number): number => a + b;\n"),
  };
}

/** Calls `stop` until it stops saying "running" (each answer must come fast), up to 60 s. */
async function settledStop(stop: () => Promise<string>): Promise<string> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const started = performance.now();
    const text = await stop();
    assert.ok(performance.now() - started < STOP_LIMIT_MS, "_Stop answers within 1 s");
    if (!RUNNING.test(text) || Date.now() > deadline) return text;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe("options", () => {
  test("flags win over the environment; defaults are bun test, the current folder and 600 s", () => {
    assert.deepEqual(gateOptions({}, {}), {
      command: "bun test",
      cwd: process.cwd(),
      timeoutMs: 600_000,
      followAgentCwd: true,
    });
    const o = gateOptions({ cmd: "deno test -A", timeout: "1.5" }, { TEST_GATE_CMD: "x", TEST_GATE_TIMEOUT_SECS: "9" });
    assert.deepEqual([o.command, o.timeoutMs], ["deno test -A", 1500]);
    assert.equal(gateOptions({}, { TEST_GATE_TIMEOUT_SECS: "7" }).timeoutMs, 7000);
  });
  test("a timeout that is not positive, or too long for a timer, is an error naming the value", () => {
    for (const bad of ["0", "-1", "abc", "3000000"]) {
      assert.throws(() => gateOptions({ timeout: bad }, {}), new RegExp(`"${bad}"`));
    }
  });
});

describe("test output parsing", () => {
  test("bun test: counts and failing names", () => {
    const out =
      "a.test.ts:\n(pass) math > adds [0.90ms]\nerror: boom\n(fail) math > subtracts wrong [1.53ms]\n(fail) top level fails [0.13ms]\n\n 1 pass\n 2 fail\nRan 3 tests across 1 file. [35.00ms]\n";
    assert.deepEqual(parseTestOutput(out), {
      runner: "bun",
      passed: 1,
      failed: 2,
      failing: ["math > subtracts wrong", "top level fails"],
    });
  });

  test("deno test: counts and failing names from the FAILURES section", () => {
    const out = [
      "running 3 tests from ./a.test.ts",
      "math ...",
      "  subtracts wrong ... \u001b[31mFAILED\u001b[0m (2ms)",
      " ERRORS ",
      "",
      "math ... subtracts wrong => ./a.test.ts:5:1",
      "error: AssertionError",
      "",
      " FAILURES ",
      "",
      "math ... subtracts wrong => ./a.test.ts:5:1",
      "top level fails => ./a.test.ts:7:1",
      "",
      "FAILED | 1 passed (1 step) | 2 failed (1 step) (17ms)",
    ].join("\n");
    assert.deepEqual(parseTestOutput(out), {
      runner: "deno",
      passed: 1,
      failed: 2,
      failing: ["math > subtracts wrong", "top level fails"],
    });
    assert.deepEqual(parseTestOutput("ok | 4 passed | 0 failed (12ms)\n"), {
      runner: "deno",
      passed: 4,
      failed: 0,
      failing: [],
    });
  });

  test("node --test, spec reporter: counts and names under 'failing tests'", () => {
    const out =
      "▶ math\n  ✖ subtracts wrong (1.6ms)\n✖ math (4.2ms)\nℹ tests 4\nℹ pass 2\nℹ fail 2\n\n✖ failing tests:\n\ntest at b.test.mjs:5:1\n✖ subtracts wrong (1.6458ms)\n  AssertionError\n\ntest at b.test.mjs:7:1\n✖ top level fails (0.18ms)\n  Error: boom\n";
    assert.deepEqual(parseTestOutput(out), {
      runner: "node",
      passed: 2,
      failed: 2,
      failing: ["subtracts wrong", "top level fails"],
    });
  });

  test("node --test, TAP reporter: failing tests without their failing parent suites", () => {
    const out = [
      "TAP version 13",
      "# Subtest: math",
      "    not ok 2 - subtracts wrong",
      "      ---",
      "      failureType: 'testCodeFailure'",
      "      ...",
      "not ok 1 - math",
      "  ---",
      "  type: 'suite'",
      "  failureType: 'subtestsFailed'",
      "  ...",
      "not ok 2 - top level fails",
      "  ---",
      "  failureType: 'testCodeFailure'",
      "  ...",
      "# pass 2",
      "# fail 2",
    ].join("\n");
    assert.deepEqual(parseTestOutput(out), {
      runner: "node",
      passed: 2,
      failed: 2,
      failing: ["subtracts wrong", "top level fails"],
    });
  });

  test("unknown output leaves only the exit code to decide", () => {
    assert.deepEqual(parseTestOutput("make: *** [test] Error 1\n"), { runner: "unknown", failing: [] });
  });
});

describe("project files and fingerprint", () => {
  test("without git, every file outside node_modules and .git counts", async () => {
    const dir = tempDir();
    mkdirSync(join(dir, "src"));
    mkdirSync(join(dir, "node_modules", "x"), { recursive: true });
    writeFileSync(join(dir, "src", "a.ts"), "a");
    writeFileSync(join(dir, "node_modules", "x", "index.js"), "x");
    writeFileSync(join(dir, "b.ts"), "b");
    assert.deepEqual((await listProjectFiles(dir)).sort(), ["b.ts", "src/a.ts"]);
  });

  test("in a git work tree, tracked and untracked files count and ignored ones do not", async () => {
    const dir = tempDir();
    try {
      execFileSync("git", ["init", "-q"], { cwd: dir });
    } catch {
      return; // no git on this machine: the walk above covers the fallback
    }
    writeFileSync(join(dir, ".gitignore"), "build/\n");
    mkdirSync(join(dir, "build"));
    writeFileSync(join(dir, "build", "out.js"), "x");
    writeFileSync(join(dir, "a.ts"), "a");
    assert.deepEqual((await listProjectFiles(dir)).sort(), [".gitignore", "a.ts"]);
  });

  test("the fingerprint changes when a file is edited, added or removed", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "a.ts"), "one");
    const fp = async () => await fingerprintFiles(dir, await listProjectFiles(dir));
    const first = await fp();
    assert.equal(await fp(), first, "stable while nothing changes");
    writeFileSync(join(dir, "a.ts"), "two"); // same size
    utimesSync(join(dir, "a.ts"), new Date(2001, 1, 1), new Date(2001, 1, 1));
    const edited = await fp();
    assert.notEqual(edited, first);
    writeFileSync(join(dir, "b.ts"), "b");
    const added = await fp();
    assert.notEqual(added, edited);
    rmSync(join(dir, "b.ts"));
    assert.equal(await fp(), edited);
  });
  test("a fingerprint begun before a call is never its answer; calls waiting meanwhile share the next", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "a.ts"), "a");
    // The listing is held open until released, and counted: each one is a `git ls-files` in real use.
    const releases: (() => void)[] = [];
    let listings = 0;
    let files = ["a.ts"];
    const gate = new TestGate({
      command: "true",
      cwd: dir,
      projectFiles: async () => {
        listings++;
        const seen = [...files];
        await new Promise<void>((resolve) => releases.push(resolve));
        return seen;
      },
    });
    const first = gate.fingerprint();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(listings, 1);
    // A file appears while the first listing is under way: calls made now must see it.
    writeFileSync(join(dir, "b.ts"), "b");
    files = ["a.ts", "b.ts"];
    const second = gate.fingerprint();
    const third = gate.fingerprint();
    assert.equal(listings, 1, "the later calls wait instead of listing alongside");
    releases.shift()!();
    const before = await first;
    while (listings < 2) await new Promise((resolve) => setImmediate(resolve));
    releases.shift()!();
    const [after2, after3] = await Promise.all([second, third]);
    assert.equal(listings, 2, "the two waiting calls shared one listing");
    assert.equal(after2, after3);
    assert.notEqual(after2, before, "the change made during the first listing is in the later answer");
    assert.equal(after2, await fingerprintFiles(dir, ["a.ts", "b.ts"]));
    // Nothing in flight: the next call lists afresh.
    const fourth = gate.fingerprint();
    while (listings < 3) await new Promise((resolve) => setImmediate(resolve));
    releases.shift()!();
    assert.equal(await fourth, after2);
  });
});

describe("running the test command", () => {
  test("a run over its timeout is killed with its whole process group and reported", async () => {
    const outcome = await runCommand('sleep 30 & echo "grandchild $!"; wait', { cwd: tempDir(), timeoutMs: 500 }).done;
    assert.equal(outcome.timedOut, true);
    assert.ok(outcome.durationMs < 10_000);
    const pid = Number(/grandchild (\d+)/.exec(outcome.output)?.[1]);
    assert.ok(pid > 0, `the grandchild's pid was printed: ${outcome.output}`);
    const deadline = Date.now() + 5000;
    while (alive(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(alive(pid), false, "the grandchild is gone too");
  });

  test("a command that cannot start is a failed run, not a crash", async () => {
    const outcome = await runCommand(["/nonexistent/test-runner"], { cwd: tempDir(), timeoutMs: 5000 }).done;
    assert.equal(outcome.exitCode, null);
    assert.match(outcome.spawnError ?? "", /ENOENT/);
  });
});

describe("the gate", () => {
  test("an answered _Stop leaves no timer of its budget pending: the process exits at once", async () => {
    const run = await runToExit(`${repoRoot}tests/fixtures/gate-stop-exit.ts`);
    assert.equal(run.code, 0);
    assert.equal(run.stdout.trim(), '""', "the passing suite lets the stop through");
    // The budget is 30 s; 15 s leaves room for a slow start on a loaded machine.
    assert.ok(run.ms < 15_000, `exited after ${run.ms} ms`);
  });

  test("a failing suite is objected to by name, and the fixed suite lets the stop through", async () => {
    const project = tinyProject();
    const gate = new TestGate({ command: BUN_TEST, cwd: project.dir });
    try {
      assert.equal(gate.postCompact(), "", "no state before any run");
      const objection = await settledStop(() => gate.stop());
      assert.match(objection, /^The test suite fails \(1 failed, 1 passed\)/);
      assert.match(objection, /- adds two numbers/);
      assert.ok(objection.includes(`Reproduce with: ${BUN_TEST} (in ${project.dir})`));
      assert.match(gate.postCompact(), /failed \(1 failed, 1 passed\): adds two numbers/);
      assert.equal(await gate.stop(), objection, "unchanged files: the same objection, no new run");

      project.fix();
      const after = await settledStop(() => gate.stop());
      assert.equal(after, "");
      const run = await gate.runTests();
      assert.equal(run.passed, true);
      assert.equal(run.passedCount, 2);
      assert.equal(run.failedCount, 0);
      assert.match(gate.postCompact(), /passed \(0 failed, 2 passed\)/);
    } finally {
      gate.close();
    }
  });

  test("_Stop never allows a stop on files it has not seen pass, and answers within 1 s", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "a.ts"), "a");
    const gate = new TestGate({ command: "sleep 2", cwd: dir });
    try {
      const started = performance.now();
      assert.match(await gate.stop(), RUNNING, "a slow run: still running after the wait");
      assert.ok(performance.now() - started < STOP_LIMIT_MS);
      assert.match(gate.postCompact(), /in progress/);
      assert.equal(await settledStop(() => gate.stop()), "");
      writeFileSync(join(dir, "a.ts"), "changed!");
      const again = performance.now();
      assert.match(await gate.stop(), RUNNING, "changed files are never allowed on an old pass");
      assert.ok(performance.now() - again < STOP_LIMIT_MS);
    } finally {
      gate.close();
    }
  });

  test("runs never overlap: concurrent requests join the run in progress", async () => {
    const dir = tempDir();
    // Outside the project: the log and the release file must not change the fingerprint.
    const outside = tempDir();
    const log = join(outside, "runs.log");
    const release = join(outside, "release");
    writeFileSync(join(dir, "a.ts"), "a");
    // The run is held until the test releases it, so the later requests find it in progress
    // however long this machine takes to fingerprint the files for them (a `git` process). A
    // fixed `sleep 0.5` let a loaded machine end the first run before they looked: two runs.
    const gate = new TestGate({
      command: `echo start >> '${log}'; while [ ! -e '${release}' ]; do sleep 0.05; done; echo end >> '${log}'`,
      cwd: dir,
    });
    try {
      const first = gate.runTests();
      const [second, stopping, fourth] = [gate.runTests(), gate.stop(), gate.runTests()];
      // Asked now, while the first request's fingerprint is being taken, this is the fingerprint
      // the three later requests wait for (calls made meanwhile share the next one), and it
      // resolves for them first: once the test has it, each of them has looked for a run in
      // progress, the step that joins it.
      await gate.fingerprint();
      assert.equal(gate.running, true, "the first run is still held");
      writeFileSync(release, "");
      const [a, b, stopped, d] = await Promise.all([first, second, stopping, fourth]);
      assert.equal(a.passed, true);
      assert.equal(a, b, "the same run");
      assert.equal(a, d, "the same run");
      assert.ok(
        stopped === "" || RUNNING.test(stopped),
        `_Stop allows the passed run or says it is running: ${stopped}`,
      );
      assert.equal(readFileSync(log, "utf8"), "start\nend\n");
    } finally {
      gate.close();
    }
  });

  test("a run over its timeout is killed and reported as failed", async () => {
    const dir = tempDir();
    const gate = new TestGate({ command: "sleep 30", cwd: dir, timeoutMs: 500 });
    try {
      const run = await gate.runTests();
      assert.equal(run.timedOut, true);
      assert.equal(run.passed, false);
      assert.match(await gate.stop(), /did not finish in time/);
      assert.match(gate.postCompact(), /timed out/);
    } finally {
      gate.close();
    }
  });
});

describe("test-gate app in-process", () => {
  test("run_tests reports counts and failing tests; _Stop objects; _PostCompact summarises", async () => {
    const project = tinyProject();
    const gate = new TestGate({ command: BUN_TEST, cwd: project.dir });
    const app = createApp({ gate });
    const client = await httpClient("http://127.0.0.1/mcp", { fetch: appFetch(app) });
    try {
      assert.deepEqual((await client.listTools()).tools.map((tool) => tool.name).sort(), [
        "_PostCompact",
        "_Stop",
        "run_tests",
      ]);
      const summary = resultText(await client.callTool({ name: "run_tests", arguments: {} }));
      assert.match(summary, /^FAILED: 1 failed, 1 passed/);
      assert.match(summary, /- adds two numbers/);
      assert.match(summary, /Output \(last 4000 characters at most\):/);
      assert.match(
        resultText(await client.callTool({ name: "_Stop", arguments: {} })),
        /Failing tests:\n- adds two numbers/,
      );
      assert.match(
        resultText(await client.callTool({ name: "_PostCompact", arguments: {} })),
        /^Test gate: the last run of .* failed/,
      );
    } finally {
      await client.close();
      gate.close();
    }
  });

  test("run_tests says the folder it ran in, and when that is only the server's own for want of the agent's", async () => {
    const serverDir = tempDir();
    const project = tempDir();
    const gates = new Gates({ command: "pwd", cwd: serverDir, followAgentCwd: true });
    const client = await httpClient("http://127.0.0.1/mcp", { fetch: appFetch(createApp({ gate: gates })) });
    const session = { "sprout-agent/session": "s1" };
    const runTests = () => client.callTool({ name: "run_tests", arguments: {}, _meta: session }).then(resultText);
    try {
      const before = await runTests();
      assert.match(
        before,
        new RegExp(`^PASSED: .* — "pwd" in "${serverDir}", [\\d.]+ m?s\nNo project folder is known`),
      );
      assert.match(before, /start the server with --cwd/);
      assert.match(before, new RegExp(`Output .*:\n${serverDir}$`), "the command ran where the line says");
      // A hook call names the agent's folder; later calls of the same session run there.
      const hook = { ...session, "sprout-agent/hook": { event: "Stop", cwd: project } };
      await client.callTool({ name: "_Stop", arguments: {}, _meta: hook });
      const after = await runTests();
      assert.match(after, new RegExp(`^PASSED: .* — "pwd" in "${project}", `));
      assert.doesNotMatch(after, /No project folder is known/);
      assert.match(after, new RegExp(`Output .*:\n${project}$`));
    } finally {
      await client.close();
      gates.close();
    }
  });

  test("bad Host refused, bearer token enforced, /health open", async () => {
    const gate = new TestGate({ command: "true", cwd: tempDir() });
    const app = createApp({ gate, token: "tok" });
    const call = { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} };
    assert.equal(
      (await postJsonRpc("http://attacker.example/mcp", call, {
        fetch: appFetch(app, { authorization: "Bearer tok" }),
      })).status,
      403,
    );
    assert.equal((await postJsonRpc("http://127.0.0.1/mcp", call, { fetch: appFetch(app) })).status, 401);
    assert.equal(
      (await postJsonRpc("http://127.0.0.1/mcp", call, { fetch: appFetch(app, { authorization: "Bearer bad" }) }))
        .status,
      401,
    );
    assert.equal(
      (await postJsonRpc("http://127.0.0.1/mcp", call, { fetch: appFetch(app, { authorization: "Bearer tok" }) }))
        .status,
      200,
    );
    const health = await appFetch(app)("http://127.0.0.1/health");
    assert.deepEqual(await health.json(), { status: "ok", server: "test-gate" });
  });

  test("off localhost the app needs allowedHosts, and then checks Host and Origin against them", async () => {
    const gate = new TestGate({ command: "true", cwd: tempDir() });
    for (const host of ["0.0.0.0", "::", "10.0.0.5"]) {
      assert.throws(() => createApp({ gate, host }), /^Error: Cannot serve on ".+" without allowedHosts: /);
    }
    const app = createApp({ gate, host: "0.0.0.0", allowedHosts: ["gate.example.test"] });
    const call = { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} };
    assert.equal((await postJsonRpc("http://127.0.0.1/mcp", call, { fetch: appFetch(app) })).status, 403);
    const badOrigin = await postJsonRpc("http://gate.example.test/mcp", call, {
      fetch: appFetch(app, { origin: "http://evil.example" }),
    });
    assert.equal(badOrigin.status, 403);
    assert.equal((await postJsonRpc("http://gate.example.test/mcp", call, { fetch: appFetch(app) })).status, 200);
  });
});

describe("test-gate as a process", () => {
  for (const which of serverRuntimes) {
    test(`main.ts under ${which} gates on the project given by --cmd and --cwd`, async () => {
      const project = tinyProject();
      const server = await startServer(MAIN, ["--cmd", BUN_TEST, "--cwd", project.dir, "--timeout", "60"], which);
      try {
        assert.match(server.firstLine, /^listening on http:\/\/127\.0\.0\.1:\d+\/mcp$/);
        const client = await httpClient(server.url);
        try {
          const stop = () => client.callTool({ name: "_Stop", arguments: {} }).then(resultText);
          assert.match(await settledStop(stop), /- adds two numbers/);
          project.fix();
          assert.match(
            resultText(await client.callTool({ name: "run_tests", arguments: {} })),
            /^PASSED: 0 failed, 2 passed/,
          );
          assert.equal(await settledStop(stop), "");
        } finally {
          await client.close();
        }
      } finally {
        await server.stop();
      }
    });

    test(`main.ts under ${which} refuses to bind beyond localhost without --allowed-hosts, naming it`, async () => {
      const refused = await runServerToExit(MAIN, ["--host", "0.0.0.0", "--cmd", "true"], which);
      assert.equal(refused.code, 2);
      assert.equal(refused.stdout, "", "never listening");
      assert.match(refused.stderr, /^Cannot bind "0\.0\.0\.0" without --allowed-hosts: .*DNS rebinding/);
    });

    test(`stdio.ts under ${which} runs the tests given by TEST_GATE_CMD-style flags`, async () => {
      const project = tinyProject();
      const client = await stdioClient(STDIO, ["--cmd", BUN_TEST, "--cwd", project.dir], which);
      try {
        assert.match(
          resultText(await client.callTool({ name: "run_tests", arguments: {} })),
          /^FAILED: 1 failed, 1 passed/,
        );
      } finally {
        await client.close();
      }
    });
  }
});

describe("objections without test names", () => {
  test("a command that fails without naming tests is objected to with its last output lines", async () => {
    const gate = new TestGate({ command: "echo 'sh: 1: frobnicate: not found' >&2; exit 127", cwd: tempDir() });
    try {
      const text = await settledStop(() => gate.stop());
      assert.match(text, /^The test suite fails \(exit code 127\)/);
      assert.match(text, /Last lines of output:\n {2}sh: 1: frobnicate: not found/);
    } finally {
      gate.close();
    }
  });
});
