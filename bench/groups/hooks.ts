/**
 * Group `hooks`: the time from "the turn ended" to "the `_Stop` decision is known". Subject:
 * the agent's own `HookRunner.fire("_Stop", …)` over a real registry connected to 1 or 4
 * todo-enforcer servers (under Bun) over stdio or Streamable HTTP. Baseline: the way
 * Claude Code-style agents run hooks, one process spawned per event and per hook (a Node
 * script, the same script under Bun, or an `sh -c` one-liner) that reads the event as JSON on
 * stdin and writes a decision on stdout; for 4 hooks, 4 processes spawned concurrently.
 * All five are sampled in rotation so each sees the same load.
 * @module
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hookMeta } from "../../lib/hooks/points.ts";
import { HookRunner } from "../../lib/hooks/runner.ts";
import { createRegistry } from "../../lib/mcp/registry.ts";
import type { ToolRegistry } from "../../lib/mcp/types.ts";
import { childEnv, type Group, median, now, root, type Row, row, runtimeBinary } from "../harness.ts";
import { httpConfig, startHttpServer, stdioConfig, TODO_HTTP } from "../servers.ts";

const HOOK_SCRIPT = `${root}bench/fixtures/stop-hook.mjs`;

/** Spawns one command hook, sends it the event, resolves with its parsed decision. */
function commandHook(argv: readonly string[], event: string): Promise<unknown> {
  const [command = "", ...args] = argv;
  const child = spawn(command, args, { env: childEnv() });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
  child.stdin.on("error", () => {}); // EPIPE when a hook exits without reading its event
  child.stdin.end(event);
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => {
      if (code !== 0) reject(new Error(`Command hook "${argv.join(" ")}" exited with ${code}`));
      else resolve(JSON.parse(out));
    });
  });
}

async function connect(configs: ReturnType<typeof stdioConfig>[]): Promise<ToolRegistry> {
  const { registry, failures } = await createRegistry(configs, { sessionId: "bench", initTimeoutMs: 60_000 });
  if (failures.length > 0) throw new Error(failures.map((f) => f.message).join("; "));
  return registry;
}

async function decide(hooks: HookRunner, servers: number): Promise<void> {
  const { results } = await hooks.fire("_Stop", hookMeta(1, 0, 3));
  if (results.length !== servers || results.some((r) => r.outcome !== "none")) {
    throw new Error(`Unexpected _Stop results: ${JSON.stringify(results)}`);
  }
}

/** The `hooks` group. */
export const hooksGroup: Group = {
  name: "hooks",
  title: "_Stop decision: hook servers vs command hooks spawned per event",
  async run({ quick, log }) {
    const samples = quick ? 4 : 20;
    const dir = mkdtempSync(join(tmpdir(), "sprout-bench-hooks-"));
    const todoFile = join(dir, "todos.json");
    writeFileSync(todoFile, JSON.stringify([{ id: 1, title: "write the bench", done: true }]));
    const event = JSON.stringify({
      session_id: "bench",
      transcript_path: join(dir, "transcript.jsonl"),
      cwd: root,
      hook_event_name: "Stop",
      stop_hook_active: false,
    });
    const commands: Record<string, string[]> = {
      "node script": [runtimeBinary("node"), HOOK_SCRIPT, todoFile],
      "bun script": [runtimeBinary("bun"), HOOK_SCRIPT, todoFile],
      "sh -c one-liner": ["sh", "-c", `cat >/dev/null; echo '{}'`],
    };
    const http = await Promise.all([0, 1, 2, 3].map(() => startHttpServer(TODO_HTTP, "bun")));
    const rows: Row[] = [];
    try {
      for (const n of [1, 4]) {
        log(`hooks: ${n} server(s)`);
        const registries: Record<string, ToolRegistry> = {
          stdio: await connect([...Array(n).keys()].map((i) => stdioConfig(`todo${i}`, "bun"))),
          http: await connect(http.slice(0, n).map((s, i) => httpConfig(`todo${i}`, s.url))),
        };
        const subjects: Record<string, HookRunner> = {};
        for (const [k, registry] of Object.entries(registries)) {
          subjects[k] = new HookRunner({ registry, allow: { kind: "all" }, timeoutMs: 30_000 });
        }
        const runners: [string, () => Promise<unknown>][] = [
          ...Object.entries(subjects).map(([k, h]) => [k, () => decide(h, n)] as [string, () => Promise<unknown>]),
          ...Object.entries(commands).map(([k, argv]) =>
            [k, () => Promise.all(Array.from({ length: n }, () => commandHook(argv, event)))] as [
              string,
              () => Promise<unknown>,
            ]
          ),
        ];
        const times = new Map<string, number[]>(runners.map(([k]) => [k, []]));
        for (const [, fn] of runners) await fn(); // warm-up (first spawns fill the page cache)
        for (let i = 0; i < samples; i++) {
          // Rotate the order each sample.
          for (let j = 0; j < runners.length; j++) {
            const [name, fn] = runners[(i + j) % runners.length]!;
            const start = now();
            await fn();
            times.get(name)!.push(now() - start);
          }
        }
        for (const transport of Object.keys(subjects)) {
          for (const command of Object.keys(commands)) {
            rows.push(
              row(
                "hooks",
                `_Stop, ${n} ${transport} server${n > 1 ? "s" : ""} vs ${n} ${command}${n > 1 ? "s" : ""}`,
                median(times.get(transport)!),
                median(times.get(command)!),
                "ms",
              ),
            );
          }
        }
        await Promise.all(Object.values(registries).map((r) => r.close()));
      }
    } finally {
      await Promise.all(http.map((s) => s.stop()));
      rmSync(dir, { recursive: true, force: true });
    }
    return rows;
  },
};
