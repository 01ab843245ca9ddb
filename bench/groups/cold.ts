/**
 * Group `cold`: cold start, the time from spawning `cli.ts run "hi"` (no MCP servers) to its
 * first LLM request arriving at a local fake LLM (`startFakeLlm`, testing.ts), under Node
 * (an esbuild bundle of cli.ts, as the tests run it: `tsCommand` → `nodeBundle`, not tsx; and
 * the package's built `dist/cli.js`), Bun and Deno (the sources); baseline: the same runtime
 * starting a plain script that does one bare `fetch` of the same request
 * (bench/fixtures/fetch-llm.mjs; plain Node for both Node rows). Subject and baseline alternate.
 * @module
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeLlm } from "../../lib/testing/fake-llm.ts";
import {
  childEnv,
  type Group,
  jsCommand,
  median,
  now,
  root,
  type Row,
  row,
  runChild,
  runtimeBinary,
  tsCommand,
} from "../harness.ts";

/** Spawns `argv` and resolves with the ms from spawn to the next request at the fake LLM, then waits for its exit. */
async function firstRequest(
  argv: readonly string[],
  env: Record<string, string>,
  arrival: { next?: () => void },
): Promise<number> {
  const [command = "", ...args] = argv;
  const arrived = new Promise<number>((resolve) => (arrival.next = () => resolve(now())));
  const start = now();
  const child = spawn(command, args, { cwd: root, env, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  const first = await Promise.race([arrived, exited.then((code) => ({ code }))]);
  if (typeof first !== "number") throw new Error(`"${argv.join(" ")}" exited with ${first.code}: ${stderr}`);
  const code = await exited;
  if (code !== 0) throw new Error(`"${argv.join(" ")}" exited with ${code}: ${stderr}`);
  return first - start;
}

/** The `cold` group. */
export const coldGroup: Group = {
  name: "cold",
  title: "cold start to the first LLM request vs the runtime's bare fetch",
  async run({ quick, runtimes, log }) {
    const samples = quick ? 1 : 5;
    const arrival: { next?: () => void } = {};
    const llm = await startFakeLlm({
      responses: () => {
        arrival.next?.();
        return { text: "hi" };
      },
    });
    // Sessions are saved, as by default (SPEC 12), into a state folder of the bench's own; the
    // "sessions off" rows measure what saving costs a start.
    const state = mkdtempSync(join(tmpdir(), "sprout-bench-state-"));
    const env = childEnv({
      SPROUT_AGENT_PROVIDER: "anthropic",
      ANTHROPIC_API_KEY: "sk-ant-bench",
      ANTHROPIC_MODEL: "claude-bench",
      ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
      XDG_STATE_HOME: state,
    });
    const off = { ...env, SPROUT_AGENT_SESSION_DIR: "off" };
    const fetchScript = `${root}bench/fixtures/fetch-llm.mjs`;
    const cases: [string, string[], string[], Record<string, string>][] = [];
    for (const which of runtimes) {
      // Node runs the tests' esbuild bundle of cli.ts (tests/helpers/runtime.ts nodeBundle), not tsx.
      const cli = which === "node" ? "node esbuild-bundle cli.ts" : `${which} cli.ts`;
      cases.push([cli, tsCommand(`${root}cli.ts`, which), jsCommand(fetchScript, which), env]);
      if (which !== "node") {
        cases.push([`${cli}, sessions off`, tsCommand(`${root}cli.ts`, which), jsCommand(fetchScript, which), off]);
        continue;
      }
      if (!quick) {
        log("cold: npm run build (dist/)");
        await runChild([runtimeBinary("node"), `${root}scripts/build.mjs`], { timeoutMs: 300_000 });
      }
      if (existsSync(`${root}dist/cli.js`)) {
        const dist = [runtimeBinary("node"), `${root}dist/cli.js`];
        cases.push(["node dist/cli.js", dist, jsCommand(fetchScript, which), env]);
        cases.push(["node dist/cli.js, sessions off", dist, jsCommand(fetchScript, which), off]);
      }
    }
    const rows: Row[] = [];
    try {
      for (const [label, agent, bare, caseEnv] of cases) {
        log(`cold: ${label}`);
        const agentRun = () => firstRequest([...agent, "run", "hi"], caseEnv, arrival);
        const bareRun = () => firstRequest([...bare, llm.anthropicBaseUrl], env, arrival);
        await agentRun(); // warm-up: page cache, Deno's compile cache, the esbuild bundle
        await bareRun();
        const a: number[] = [];
        const b: number[] = [];
        for (let i = 0; i < samples; i++) {
          if (i % 2 === 0) a.push(await agentRun()), b.push(await bareRun());
          else b.push(await bareRun()), a.push(await agentRun());
        }
        const runtime = label.split(" ")[0];
        rows.push(row("cold", `${label} vs ${runtime} bare fetch`, median(a), median(b), "ms"));
      }
    } finally {
      await llm.close();
      rmSync(state, { recursive: true, force: true });
    }
    return rows;
  },
};
