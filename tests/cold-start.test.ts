/**
 * What `cli.ts run` loads before its first LLM request (issue 21): no `node:child_process`
 * (only a stdio server's spawn loads it), no `node:crypto`, no `node:util` (only `acp`'s
 * console redirection), no ACP code, and neither the MCP client (without servers) nor the
 * OpenAI-compatible one (unless chosen); and no static `node:fs` (lib/cli/files.ts loads it
 * for a file to read: Deno's costs a start about 9 ms). Two proofs: the static import graph of the sources,
 * which is what Bun and Deno load, checked under every runtime; and, under Node, a run whose
 * every ESM resolution goes through a recording loader hook (`module.register`), with the
 * stdio server and `acp` as controls that do load the builtins. Timing is for bench/ (the
 * `cold` group), not for these tests.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { cleanEnv } from "./helpers/cli.ts";
import { builtinRecorder, readRecorded } from "./helpers/builtins.ts";
import { repoRoot, runtime, tsCommand } from "./helpers/runtime.ts";

/** The builtins a run with no stdio server must not load. */
const LAZY = ["node:child_process", "node:crypto", "node:util"];
/**
 * Nor import statically: `node:fs`, which lib/cli/files.ts loads on first use through
 * `process.getBuiltinModule` (so Node's loader hook, below, cannot see it).
 */
const NOT_STATIC = [...LAZY, "node:fs"];

/** A module's imports that load something: static and side-effect imports, re-exports (not `import type`), and `import()` calls. */
function imports(source: string): { static: string[]; dynamic: string[] } {
  const code = source.replace(/^\s*\/\/.*$|\/\*[\s\S]*?\*\//gm, "");
  const found = { static: [] as string[], dynamic: [] as string[] };
  for (const m of code.matchAll(/^\s*(?:import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?["']([^"']+)["']/gm)) {
    if (m[1] === undefined) found.static.push(m[2]!);
  }
  for (const m of code.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g)) found.dynamic.push(m[1]!);
  return found;
}

/**
 * Every module `cli.ts run` evaluates before it has servers: the static graph from cli.ts,
 * plus the command module main.ts imports for `run`. Returns each file (repository-relative)
 * with the builtins it imports statically.
 */
function runGraph(): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  const visit = (file: string) => {
    const rel = relative(repoRoot, file);
    if (seen.has(rel)) return;
    const found = imports(readFileSync(file, "utf8"));
    seen.set(rel, found.static.filter((s) => s.startsWith("node:")));
    const next = found.static.filter((s) => s.startsWith("."));
    if (rel === "lib/cli/main.ts") next.push(...found.dynamic.filter((s) => s === "./run.ts"));
    for (const s of next) visit(resolve(dirname(file), s));
  };
  visit(join(repoRoot, "cli.ts"));
  return seen;
}

describe("what `cli.ts run` loads before its first request", () => {
  test("its static import graph (what Bun and Deno load) has no child_process, crypto, util, fs, ACP, MCP client or OpenAI client", () => {
    const graph = runGraph();
    assert.ok(graph.has("lib/cli/run.ts") && graph.has("lib/agent/loop.ts") && graph.has("lib/llm/anthropic.ts"));
    const eager = [...graph].flatMap(([file, builtins]) =>
      builtins.filter((b) => NOT_STATIC.includes(b)).map((b) => `${file} imports ${b}`)
    );
    assert.deepEqual(eager, []);
    const acp = [...graph.keys()].filter((f) => f.startsWith("lib/acp/") || f === "lib/util/console.ts");
    assert.deepEqual(acp, [], "ACP code on the run path");
    // The MCP client loads with the first server (its stdio part with the first stdio one),
    // the OpenAI-compatible client for provider openai only.
    const later = [
      "lib/mcp/client.ts",
      "lib/mcp/connection.ts",
      "lib/mcp/stdio.ts",
      "lib/mcp/stdio-peer.ts",
      "lib/llm/openai.ts",
    ];
    assert.deepEqual([...graph.keys()].filter((f) => later.includes(f)), []);
  });

  test("the scanner sees the forms that load a module and skips those that do not", () => {
    const found = imports(
      `import a from "./a.ts";\nimport type { B } from "./b.ts";\nimport { type C } from "./c.ts";\n` +
        `export * from "./d.ts";\nexport { e };\nimport "node:e";\n// import "./f.ts";\n` +
        `const g = await import("node:child_process");`,
    );
    assert.deepEqual(found, { static: ["./a.ts", "./c.ts", "./d.ts", "node:e"], dynamic: ["node:child_process"] });
  });

  test("what loads later is still imported where it is used", () => {
    const dynamic = (file: string) => imports(readFileSync(join(repoRoot, file), "utf8")).dynamic;
    assert.ok(dynamic("lib/mcp/stdio.ts").includes("node:child_process"));
    assert.ok(dynamic("lib/mcp/connection.ts").includes("./stdio-peer.ts"));
    assert.ok(dynamic("lib/mcp/registry.ts").includes("./client.ts"));
    assert.ok(dynamic("lib/agent/options.ts").includes("../llm/openai.ts"));
    assert.ok(imports(readFileSync(join(repoRoot, "lib/util/console.ts"), "utf8")).static.includes("node:util"));
    assert.match(readFileSync(join(repoRoot, "lib/cli/files.ts"), "utf8"), /getBuiltinModule\("node:fs"\)/);
  });
});

describe(
  "under Node, every builtin a run resolves",
  { skip: runtime() !== "node" && "Node's loader hooks only" },
  () => {
    const dir = mkdtempSync(join(tmpdir(), "sprout-cold-"));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const script = join(dir, "script.json");
    writeFileSync(script, JSON.stringify([{ text: "hi" }]));
    const env = cleanEnv({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script });

    /** Runs `cli.ts ARGS` under Node with the recorder; resolves with its exit code and the builtins it resolved. */
    async function recorded(
      name: string,
      args: string[],
    ): Promise<{ code: number | null; stderr: string; builtins: string[] }> {
      const log = join(dir, `${name}.log`);
      const [node, ...rest] = tsCommand(join(repoRoot, "cli.ts"), "node");
      const child = spawn(node!, ["--import", builtinRecorder(log), ...rest, ...args], { env, cwd: dir });
      let stderr = "";
      child.stderr.on("data", (d) => (stderr += d));
      child.stdin.end();
      const code = await new Promise<number | null>((done) => child.on("close", done));
      return { code, stderr, builtins: readRecorded(log) };
    }

    test("a run without stdio servers resolves none of child_process, crypto and util", async () => {
      const run = await recorded("run", ["run", "hi"]);
      assert.equal(run.code, 0, run.stderr);
      assert.ok(run.builtins.includes("node:process"), `the recorder saw nothing: ${run.builtins}`);
      assert.deepEqual(run.builtins.filter((b) => LAZY.includes(b)), []);
    });

    test("controls: a stdio server's spawn resolves child_process, acp resolves util", async () => {
      const config = join(dir, "mcp.json");
      writeFileSync(config, JSON.stringify({ mcpServers: { quits: { command: "sh", args: ["-c", "exit 0"] } } }));
      const [withServer, acp] = await Promise.all([
        recorded("server", ["run", "--mcp-config", config, "hi"]),
        recorded("acp", ["acp"]),
      ]);
      assert.equal(withServer.code, 0, withServer.stderr);
      assert.ok(withServer.builtins.includes("node:child_process"), withServer.builtins.join(" "));
      assert.ok(acp.builtins.includes("node:util"), acp.builtins.join(" "));
    });
  },
);
