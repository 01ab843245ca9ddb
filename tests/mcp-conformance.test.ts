/**
 * The official MCP conformance suite's client scenarios against tests/conformance/client.ts
 * (a small client on lib/mcp/). Runs once (under Bun), since it does not depend on the runner.
 * Expected failures, with reasons, are in tests/conformance/client-baseline.yml; the suite's
 * `--expected-failures` exits 1 both for a failure outside it and for a listed scenario that
 * passes (a stale entry), so the baseline stays honest. Issue 6, guarantee 8.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import process from "node:process";
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { repoRoot, runsOnce, tsCommand } from "./helpers/runtime.ts";

const suite = `${repoRoot}node_modules/@modelcontextprotocol/conformance/dist/index.js`;
const bun = `${repoRoot}node_modules/.bin/bun`;
const baselineFile = `${repoRoot}tests/conformance/client-baseline.yml`;

/** Core scenarios run one at a time (sse-retry measures timing, so it runs alone). */
const CORE_PASSING = ["initialize", "tools_call", "sse-retry"];
const CORE_BASELINED = ["elicitation-sep1034-client-defaults"];
/** The suite's groups holding every other client scenario (all OAuth), run as whole suites. */
const AUTH_SUITES = ["auth", "backcompat", "draft", "extensions"];

function runSuite(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(bun, [suite, ...args], {
      cwd: repoRoot,
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.on("exit", (code) => resolve({ code, output }));
  });
}

function clientArgs(selector: string[]): string[] {
  const command = tsCommand(`${repoRoot}tests/conformance/client.ts`, "bun").join(" ");
  return ["client", "--command", command, ...selector, "--expected-failures", baselineFile, "--timeout", "30000"];
}

function runScenario(scenario: string) {
  return runSuite(clientArgs(["--scenario", scenario]));
}

/** The scenario names of the baseline file (its `- name` lines). */
function baselineEntries(): string[] {
  return [...readFileSync(baselineFile, "utf8").matchAll(/^\s+- ([\w/.-]+)\s*$/gm)].map((m) => m[1] ?? "");
}

/** Every client scenario the installed suite knows, from `conformance list`. */
async function listedClientScenarios(): Promise<string[]> {
  const { code, output } = await runSuite(["list"]);
  assert.equal(code, 0, output);
  const client = output.slice(output.indexOf("Client scenarios"));
  return [...client.matchAll(/^\s+- ([\w/.-]+) \[/gm)].map((m) => m[1] ?? "");
}

describe("MCP conformance suite, client scenarios", { skip: !runsOnce }, () => {
  for (const scenario of CORE_PASSING) {
    test(`scenario ${scenario} passes`, async () => {
      const { code, output } = await runScenario(scenario);
      assert.equal(code, 0, output.slice(-3000));
      assert.match(output, /OVERALL: PASSED/, output.slice(-3000));
    });
  }

  test("scenario elicitation-sep1034-client-defaults fails only as the baseline says", async () => {
    const { code, output } = await runScenario("elicitation-sep1034-client-defaults");
    assert.equal(code, 0, output.slice(-3000));
    assert.match(output, /Method not found: elicitation\/create/, output.slice(-3000));
  });

  test("the OAuth scenarios fail only as the baseline says (401 is an error), auth/resource-mismatch passes", async () => {
    const passed: string[] = [];
    const ran: string[] = [];
    for (const name of AUTH_SUITES) {
      const { code, output } = await runSuite(clientArgs(["--suite", name]));
      assert.equal(
        code,
        0,
        `suite "${name}": a failure outside the baseline or a stale entry:\n${output.slice(-3000)}`,
      );
      assert.match(output, /Baseline check passed/, output.slice(-3000));
      passed.push(...[...output.matchAll(/^✓ ([\w/.-]+): [1-9]\d* passed, 0 failed$/gm)].map((m) => m[1] ?? ""));
      ran.push(...[...output.matchAll(/^[✓✗] ([\w/.-]+): \d+ passed/gm)].map((m) => m[1] ?? ""));
    }
    const listed = (await listedClientScenarios()).filter((s) => s.startsWith("auth/"));
    assert.deepEqual([...ran].sort(), [...listed].sort(), "the four suites run every auth/* scenario once");
    console.log(`client conformance, OAuth suites: passed ${passed.join(", ")}`);
    assert.deepEqual(passed, ["auth/resource-mismatch"]);
  });

  test("every client scenario of the suite is run here, and every baseline entry names one", async () => {
    const listed = await listedClientScenarios();
    assert.ok(listed.length >= 26, `the suite lists its client scenarios (${listed.length})`);
    const covered = new Set([...CORE_PASSING, ...CORE_BASELINED, ...listed.filter((s) => s.startsWith("auth/"))]);
    assert.deepEqual(listed.filter((s) => !covered.has(s)), [], "a new non-auth client scenario needs a test here");
    const entries = baselineEntries();
    assert.deepEqual(entries.filter((e) => !listed.includes(e)), [], "baseline entries that name no scenario");
    assert.equal(new Set(entries).size, entries.length, "no duplicate baseline entry");
    for (const scenario of CORE_PASSING) assert.ok(!entries.includes(scenario), `${scenario} is not baselined`);
  });
});
