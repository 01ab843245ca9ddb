/**
 * Group `bridge`: what `cli.ts hook-bridge` costs a host per event (issue 24). A host spawns a
 * command hook on every event, so the number is spawn to exit with a Claude Code `Stop` event
 * on stdin: with no hook server enabled (the start-up alone), and with the todo-enforcer over
 * Streamable HTTP (start-up, connecting, one `_Stop` call). Node runs the tests' esbuild bundle
 * of cli.ts (as the `cold` group does), Bun and Deno the sources. Baseline: a minimal Node
 * command hook that reads the event and prints `{}` (bench/fixtures/empty-hook.mjs), always
 * plain Node. Subject and baseline alternate.
 * @module
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  childEnv,
  type Group,
  median,
  now,
  root,
  type Row,
  row,
  runChild,
  runtimeBinary,
  tsCommand,
} from "../harness.ts";

const STOP = JSON.stringify({
  session_id: "bench-bridge",
  transcript_path: "/tmp/bench.jsonl",
  cwd: root,
  permission_mode: "default",
  hook_event_name: "Stop",
  stop_hook_active: false,
});

/** Starts the todo-enforcer (memory store) under Bun; resolves with its URL and a stop function. */
async function startTodo(): Promise<{ url: string; stop: () => void }> {
  const child = spawn(runtimeBinary("bun"), [
    `${root}servers/todo-enforcer/main.ts`,
    "--port",
    "0",
    "--store",
    "memory",
  ], {
    env: childEnv(),
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => {
      out += c;
      const match = /listening on (\S+)/.exec(out);
      if (match !== null) resolve(match[1]!);
    });
    child.once("exit", (code) => reject(new Error(`todo-enforcer exited with ${code}`)));
  });
  return { url, stop: () => child.kill("SIGTERM") };
}

/** The `bridge` group. */
export const bridgeGroup: Group = {
  name: "bridge",
  title: "hook-bridge start-up per event vs a minimal Node command hook",
  async run({ quick, runtimes, log }) {
    const samples = quick ? 3 : 15;
    const dir = mkdtempSync(join(tmpdir(), "sprout-bench-bridge-"));
    const todo = await startTodo();
    const config = join(dir, "mcp.json");
    writeFileSync(config, JSON.stringify({ mcpServers: { todo: { type: "http", url: todo.url } } }));
    const baseline = [runtimeBinary("node"), `${root}bench/fixtures/empty-hook.mjs`];
    const base = childEnv({ XDG_STATE_HOME: dir });
    const rows: Row[] = [];
    try {
      for (const which of runtimes) {
        const cli = [...tsCommand(`${root}cli.ts`, which), "hook-bridge", "--host", "claude", "--mcp-config", config];
        const label = which === "node" ? "node esbuild-bundle cli.ts" : `${which} cli.ts`;
        const cases: [string, Record<string, string>][] = [
          [`${label} hook-bridge, no hook server`, base],
          [`${label} hook-bridge, todo-enforcer over HTTP`, { ...base, MCP_HOOK_SERVERS: "todo" }],
        ];
        for (const [name, env] of cases) {
          log(`bridge: ${name}`);
          const subject = async () => {
            const start = now();
            await runChild(cli, { stdin: STOP, env });
            return now() - start;
          };
          const bare = async () => {
            const start = now();
            await runChild(baseline, { stdin: STOP, env: base });
            return now() - start;
          };
          await subject(); // warm-up: page cache, Deno's compile cache, the esbuild bundle
          await bare();
          const a: number[] = [];
          const b: number[] = [];
          for (let i = 0; i < samples; i++) {
            if (i % 2 === 0) a.push(await subject()), b.push(await bare());
            else b.push(await bare()), a.push(await subject());
          }
          rows.push(row("bridge", `${name} vs node minimal hook`, median(a), median(b), "ms"));
        }
      }
    } finally {
      todo.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    return rows;
  },
};
