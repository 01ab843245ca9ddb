/**
 * The from-scratch hook of docs/HOOKS.md ("Tool calls: _PreToolUse and _PostToolUse") runs as
 * written: its two code blocks are copied out of the document into a folder outside the
 * repository (with the repository's node_modules linked in, as `npm install` would put them)
 * and started as a stdio server under the runtime running the test; the agent calls it before a
 * tool call of the fixture server named `shell`.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { closeChecked, runPrompt, startSession } from "./helpers/session.ts";
import { repoRoot, tsCommand } from "./helpers/runtime.ts";

/** The ```ts blocks of docs/HOOKS.md whose first line is `// NAME: …`, by NAME. */
function codeBlocks(): Map<string, string> {
  const doc = readFileSync(join(repoRoot, "docs/HOOKS.md"), "utf8");
  const blocks = new Map<string, string>();
  for (const m of doc.matchAll(/```ts\n(\/\/ ([\w.-]+\.ts):[^\n]*\n[\s\S]*?)```/g)) blocks.set(m[2]!, m[1]!);
  return blocks;
}

describe("docs/HOOKS.md's tool guard", () => {
  test("the two blocks, copied as they are, deny rm -r and let other commands run", async () => {
    const blocks = codeBlocks();
    assert.deepEqual([...blocks.keys()], ["guard.ts", "stdio.ts"]);
    const dir = mkdtempSync(join(tmpdir(), "sprout-guard-"));
    try {
      for (const [name, code] of blocks) writeFileSync(join(dir, name), code);
      writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
      symlinkSync(join(repoRoot, "node_modules"), join(dir, "node_modules"), "dir");
      const [command, ...args] = tsCommand(join(dir, "stdio.ts"));
      const t = await startSession({
        wire: "anthropic",
        env: { MCP_HOOK_SERVERS: "guard" },
        servers: [{ name: "shell" }],
        extraServers: [{ name: "guard", transport: { type: "stdio", command: command!, args, env: {}, cwd: dir } }],
        responses: [
          {
            toolCalls: [
              { id: "call_1", name: "shell__echo", arguments: { text: "cleaning", command: "rm -r build" } },
              { id: "call_2", name: "shell__echo", arguments: { text: "listing", command: "ls" } },
            ],
          },
          { text: "done" },
        ],
      });
      try {
        const { result } = await runPrompt(t.session, "clean up");
        assert.equal(result.stopReason, "end_turn");
        assert.deepEqual(t.calls().filter((c) => c.tool === "echo").map((c) => c.args), [{ text: "listing" }]);
        const results = t.session.history.flatMap((i) => (i.role === "tool" ? [i] : []));
        assert.deepEqual(results.map((r) => r.isError), [true, false]);
        const denial = results[0]!.content[0]!;
        assert.equal(
          denial.type === "text" && denial.text,
          JSON.stringify({
            hook: "_PreToolUse",
            server: "guard",
            text: "rm -r is not allowed here: delete files one by one",
          }),
        );
      } finally {
        await closeChecked(t);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
