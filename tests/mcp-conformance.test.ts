/**
 * The official MCP conformance suite's client scenarios against tests/conformance/client.ts
 * (a small client on lib/mcp/). Runs once (under Bun), since it does not depend on the runner.
 * Expected failures, with reasons, are in tests/conformance/client-baseline.yml.
 */
import { spawn } from "node:child_process";
import process from "node:process";
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { repoRoot, runsOnce, tsCommand } from "./helpers/runtime.ts";

const suite = `${repoRoot}node_modules/@modelcontextprotocol/conformance/dist/index.js`;
const bun = `${repoRoot}node_modules/.bin/bun`;

function runScenario(scenario: string): Promise<{ code: number | null; output: string }> {
  const command = tsCommand(`${repoRoot}tests/conformance/client.ts`, "bun").join(" ");
  const args = [
    suite,
    "client",
    "--command",
    command,
    "--scenario",
    scenario,
    "--expected-failures",
    `${repoRoot}tests/conformance/client-baseline.yml`,
    "--timeout",
    "30000",
  ];
  return new Promise((resolve) => {
    const child = spawn(bun, args, { cwd: repoRoot, env: { ...process.env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.on("exit", (code) => resolve({ code, output }));
  });
}

describe("MCP conformance suite, client scenarios", { skip: !runsOnce }, () => {
  for (const scenario of ["initialize", "tools_call", "sse-retry"]) {
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
});
