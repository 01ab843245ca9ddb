/**
 * "Did you mean": an unknown flag or command close to a known one is named with it
 * (lib/cli/suggest.ts, parseRunArgs in lib/cli/args.ts; issue 21). In-process; the command
 * case runs through the CLI in e2e-cli.test.ts.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { parseRunArgs, RUN_FLAGS } from "../lib/cli/args.ts";
import { closest, editDistance } from "../lib/cli/suggest.ts";
import { AgentError } from "../lib/util/errors.ts";

function usageError(args: string[]): string {
  try {
    parseRunArgs(args);
  } catch (error) {
    assert.ok(error instanceof AgentError, String(error));
    assert.equal(error.code, "usage");
    return error.message;
  }
  assert.fail(`parseRunArgs(${JSON.stringify(args)}) did not throw`);
}

describe("did you mean (SPEC section 11: an unknown flag or command is a usage error)", () => {
  test("editDistance counts insertions, deletions, substitutions and neighbour swaps as 1", () => {
    assert.equal(editDistance("jsn", "json"), 1);
    assert.equal(editDistance("jsoon", "json"), 1);
    assert.equal(editDistance("jxon", "json"), 1);
    assert.equal(editDistance("apc", "acp"), 1);
    assert.equal(editDistance("", "run"), 3);
    assert.equal(editDistance("nope", "json"), 4);
    assert.equal(editDistance("same", "same"), 0);
  });

  test("an unknown flag near a known one names it", () => {
    for (
      const [flag, meant] of [
        ["--jsn", "--json"],
        ["--JSON", "--json"],
        ["-j", "--json"],
        ["--mcp", "--mcp-config"],
        ["--mcpconfig", "--mcp-config"],
        ["--mcp-configs", "--mcp-config"],
        ["--mcp_config=x.json", "--mcp-config"],
        ["--hepl", "--help"],
      ] as const
    ) {
      assert.equal(usageError([flag, "go"]), `Unknown flag "${flag}": did you mean ${meant}? (see --help)`);
    }
  });

  test("an unknown flag near none says only to see --help", () => {
    for (const flag of ["--nope", "--verbose", "-x"]) {
      assert.equal(usageError([flag, "go"]), `Unknown flag "${flag}": see --help`);
    }
    assert.equal(closest("--nope", RUN_FLAGS), undefined);
  });

  test("--json=VALUE says that --json takes no value", () => {
    assert.equal(usageError(["--json=true"]), `Unexpected value in "--json=true": --json takes no value (see --help)`);
  });

  test("commands: the nearest wins, a prefix counts, far words get nothing", () => {
    const commands = ["run", "hooks", "acp", "help", "--help", "--version"];
    assert.equal(closest("rn", commands), "run");
    assert.equal(closest("rnu", commands), "run");
    assert.equal(closest("hook", commands), "hooks");
    assert.equal(closest("apc", commands), "acp");
    assert.equal(closest("--verison", commands), "--version");
    assert.equal(closest("deploy", commands), undefined);
    assert.equal(closest("", commands), undefined);
  });

  test("known flags and prompt words still parse", () => {
    assert.deepEqual(parseRunArgs(["--json", "--mcp-config=a.json", "fix", "-", "--", "--jsn"]), {
      mcpConfig: "a.json",
      json: true,
      prompt: ["fix", "-", "--jsn"],
      permissions: { allow: [], ask: [], deny: [] },
      continue: false,
      resume: undefined,
    });
    assert.deepEqual(
      [
        parseRunArgs(["-c", "go"]).continue,
        parseRunArgs(["--resume=ses_1", "go"]).resume,
        parseRunArgs(["--resume", "x"]).prompt,
      ],
      [true, "ses_1", []],
    );
  });
});
