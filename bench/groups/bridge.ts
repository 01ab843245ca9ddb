/**
 * Group `bridge`: what `cli.ts hook-bridge` costs a host per event (issue 24). A host spawns a
 * command hook on every event, so the number is spawn to exit with a Claude Code `Stop` event
 * on stdin: with no hook server enabled (the start-up alone), and with the todo-enforcer over
 * Streamable HTTP (start-up, connecting, one `_Stop` call). Node runs the package's bin,
 * dist/bin.cjs (what a host's `sprout-agent hook-bridge` runs: the bridge from a V8 code cache,
 * scripts/bin.cjs; built first unless `--quick`), with the cache and with it off, else the tests'
 * esbuild bundle of cli.ts; Bun and Deno the sources. Baseline: a minimal Node command hook
 * that reads the event and prints `{}` (bench/fixtures/empty-hook.mjs), always plain Node.
 * Subject and baseline alternate; the warm-up run writes the cache.
 * @module
 */
import { spawn } from "node:child_process";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
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

/**
 * Warms the todo-enforcer up with what each bridge event asks of it (`tools/list`, `_Stop` of
 * the bench's session), through the official client: a hook server that hosts rely on runs for
 * long and has served many events, and a fresh Bun process answers the first hundreds of
 * requests slower, which would count against whichever case ran first.
 */
async function warmUp(url: string, rounds: number): Promise<void> {
  const client = new Client({ name: "bench-bridge-warm-up", version: "1.0.0" }, {
    versionNegotiation: { mode: "auto" },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    for (let i = 0; i < rounds; i++) {
      await client.listTools();
      await client.callTool({ name: "_Stop", arguments: {}, _meta: { "sprout-agent/session": "bench-warm-up" } });
    }
  } finally {
    await client.close();
  }
}

/** The `bridge` group. */
export const bridgeGroup: Group = {
  name: "bridge",
  title: "hook-bridge start-up per event vs a minimal Node command hook",
  async run({ quick, runtimes, log }) {
    const samples = quick ? 3 : 15;
    const dir = mkdtempSync(join(tmpdir(), "sprout-bench-bridge-"));
    const todo = await startTodo();
    await warmUp(todo.url, quick ? 20 : 300);
    const config = join(dir, "mcp.json");
    writeFileSync(config, JSON.stringify({ mcpServers: { todo: { type: "http", url: todo.url } } }));
    const baseline = [runtimeBinary("node"), `${root}bench/fixtures/empty-hook.mjs`];
    const base = childEnv({ XDG_STATE_HOME: dir });
    const rows: Row[] = [];
    try {
      if (runtimes.includes("node") && !quick) {
        log("bridge: npm run build (dist/)");
        await runChild([runtimeBinary("node"), `${root}scripts/build.mjs`], { timeoutMs: 300_000 });
      }
      const todoEnv = { ...base, MCP_HOOK_SERVERS: "todo" };
      for (const which of runtimes) {
        const args = ["hook-bridge", "--host", "claude", "--mcp-config", config];
        const cases: [string, string[], Record<string, string>][] = [];
        if (which === "node" && existsSync(`${root}dist/bin.cjs`)) {
          const bin = [runtimeBinary("node"), `${root}dist/bin.cjs`, ...args];
          const cached = { XDG_CACHE_HOME: join(dir, "cache") };
          cases.push(
            ["node dist/bin.cjs hook-bridge, no hook server", bin, { ...base, ...cached }],
            ["node dist/bin.cjs hook-bridge, todo-enforcer over HTTP", bin, { ...todoEnv, ...cached }],
            ["node dist/bin.cjs hook-bridge, code cache off, todo-enforcer over HTTP", bin, {
              ...todoEnv,
              SPROUT_AGENT_CODE_CACHE_DIR: "off",
            }],
          );
        } else {
          const cli = [...tsCommand(`${root}cli.ts`, which), ...args];
          const label = which === "node" ? "node esbuild-bundle cli.ts" : `${which} cli.ts`;
          cases.push(
            [`${label} hook-bridge, no hook server`, cli, base],
            [`${label} hook-bridge, todo-enforcer over HTTP`, cli, todoEnv],
          );
        }
        for (const [name, cli, env] of cases) {
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
          await subject(); // warm-up: page cache, Deno's compile cache, the esbuild bundle, the code cache
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
