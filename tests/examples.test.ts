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
});
