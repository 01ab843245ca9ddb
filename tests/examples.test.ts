/**
 * The README's offline example works as written: `cli.ts run --mcp-config examples/hello/mcp.json`
 * with the scripted model, the third-party filesystem server and the todo-enforcer hook.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { runCli } from "./helpers/cli.ts";
import { repoRoot, runsOnce } from "./helpers/runtime.ts";

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
    assert.match(run.stdout, /✓ fs__list_directory \{"path":"\."\} \(\d+ ms\) → \[FILE\] mcp\.json/);
    assert.match(run.stdout, /⟲ _Stop objection from todo: You have open todo items\. Keep working\./);
    assert.match(run.stdout, /✓ fs__read_text_file \{"path":"notes\.md"\}.* → # Notes/);
    assert.match(run.stdout, /■ end_turn · 6 rounds · 4 tool calls · 1 objection/);
    // The servers' own stderr is shown as "[name] line" (SPROUT_AGENT_SERVER_STDERR, shown for
    // run); anything else on stderr would be a warning of the agent's.
    const agentLines = run.stderr.split("\n").filter((line) => line !== "" && !/^\[(fs|todo)\] /.test(line));
    assert.deepEqual(agentLines, [], "no warnings");
  });
});
