/**
 * The README's offline example works as written: `cli.ts run --mcp-config examples/hello/mcp.json`
 * with the scripted model, the third-party filesystem server and the todo-enforcer hook.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import process from "node:process";
import { runCli } from "./helpers/cli.ts";
import { spawnSync } from "node:child_process";
import { repoRoot, runsOnce, tsCommand } from "./helpers/runtime.ts";

describe("README examples", { skip: !runsOnce && "runs once, under bun" }, () => {
  test("the scripted hello example lists and reads files through server-filesystem, and the todo hook objects once", async () => {
    const readme = readFileSync(`${repoRoot}README.md`, "utf8");
    assert.match(readme, /SPROUT_AGENT_PROVIDER=scripted SPROUT_AGENT_SCRIPT=examples\/hello\/script\.json/);
    assert.match(readme, /cli\.ts run --mcp-config examples\/hello\/mcp\.json "List the files, then finish"/);
    const run = await runCli(
      ["run", "--mcp-config", "examples/hello/mcp.json", "List the files, then finish"],
      {
        SPROUT_AGENT_PROVIDER: "scripted",
        SPROUT_AGENT_SCRIPT: "examples/hello/script.json",
        MCP_HOOK_SERVERS: "todo",
      },
      { cwd: repoRoot, timeoutMs: 90_000 },
    );
    assert.equal(run.code, 0, run.stderr);
    // stdout is the answer: the model's text only, a blank line between the rounds' texts; the
    // rest of the run is on stderr.
    const script = JSON.parse(readFileSync(`${repoRoot}examples/hello/script.json`, "utf8")) as Array<
      { text?: string }
    >;
    const text = script.map((turn) => turn.text ?? "").filter((t) => t !== "").join("\n\n");
    assert.equal(run.stdout, text.endsWith("\n") ? text : `${text}\n`);
    assert.match(run.stderr, /✓ fs__list_directory \{"path":"\."\} \(\d+ ms\) → \[FILE\] mcp\.json/);
    assert.match(run.stderr, /⟲ _Stop objection from todo: You have open todo items\. Keep working\./);
    assert.match(run.stderr, /✓ fs__read_text_file \{"path":"notes\.md"\}.* → # Notes/);
    assert.match(run.stderr, /■ end_turn · 6 rounds · 4 tool calls · 1 objection/);
    assert.doesNotMatch(run.stderr, /^warning:/m, "no warnings");
  });

  test("examples/subagents: two subagents from agent files at once, their hooks counted per agent, both reports in", () => {
    const [command, ...args] = tsCommand(`${repoRoot}examples/subagents/run.ts`);
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) {
      if (v !== undefined && !/^(SPROUT_AGENT_|ANTHROPIC_|OPENAI_COMPAT_)/.test(k)) env[k] = v;
    }
    const run = spawnSync(command!, args, { cwd: repoRoot, env, encoding: "utf8", timeout: 60_000 });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout, "Review and test plan are in: fix line 3, then add the two tests.\n");
    assert.match(run.stderr, /^ {2}\[reviewer\] _SubagentStop objected: Name the line of each problem\.$/m);
    assert.match(
      run.stderr,
      /✓ subagent_reviewer → line 3: divides by zero \/ {2}\/ Each problem above names its line\./,
    );
    assert.match(run.stderr, /✓ subagent_tester → a test with an empty list \/ a test with one item/);
    assert.match(
      run.stderr,
      /■ end_turn; hook calls: \{"_SubagentStart reviewer":1,"_SubagentStart tester":1,"_SubagentStop reviewer":1,"_SubagentStop tester":1,"_Stop parent":1\}/,
    );
  });
});
