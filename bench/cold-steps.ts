/**
 * Where a cold start's time goes before the first LLM request (issue 21; docs/PERFORMANCE.md,
 * "Cold start"): starts this runtime N times on a script that imports the run path's modules
 * in order and then does what `cli.ts run "hi"` does (options from the environment, the
 * servers of `.mcp.json`, the printer, the stdin check and signal handlers, `createAgent`,
 * `prompt`), with `fetch` replaced by one that ends the process, and prints the median of
 * each step in ms; then the same for what a bare `fetch` script pays (the runtime's start and
 * `node:process`).
 *
 *     bun bench/cold-steps.ts [N]          deno run -A bench/cold-steps.ts [N]
 *     npx tsx bench/cold-steps.ts [N]      (Node through tsx: the loader is in every step)
 * @module
 */
// No static imports: a child must not load anything before its first line. Under Deno the
// kind of start is read through `Deno.env`: its global `process` starts the Node layer.
const CHILD = "SPROUT_BENCH_COLD_STEPS";
const denoEnv = (globalThis as { Deno?: { env: { get(name: string): string | undefined } } }).Deno?.env;

/** The child: one start, its steps as JSON `[label, ms][]` on stdout. */
async function steps(bare: boolean): Promise<void> {
  const t0 = performance.now();
  const marks: [string, number][] = [["runtime start to the first line of the script", t0]];
  let last = t0;
  const mark = (label: string) => {
    const now = performance.now();
    marks.push([label, now - last]);
    last = now;
  };
  const done = (process: { exit(code: number): never }) => {
    console.log(JSON.stringify(marks));
    process.exit(0);
  };
  if (bare) {
    const { default: process } = await import("node:process");
    mark("node:process");
    return done(process);
  }
  // node:fs loads only for a file to read (lib/cli/files.ts).
  await import("node:path");
  const { default: process } = await import("node:process");
  mark("node:path, node:process");
  globalThis.fetch = (() => {
    mark("prompt() to the fetch() call");
    done(process);
  }) as unknown as typeof fetch;
  await import("../lib/cli/main.ts");
  await import("../lib/cli/run.ts");
  mark("our modules (through lib/cli/main.ts and run.ts)");
  const { createAgent } = await import("../lib/agent/agent.ts");
  const { agentOptionsFromEnv } = await import("../lib/agent/from-env.ts");
  const { readText } = await import("../lib/cli/files.ts");
  const { stdinIsTerminal } = await import("../lib/cli/io.ts");
  const { humanPrinter } = await import("../lib/cli/render.ts");
  const { loadServers } = await import("../lib/cli/servers.ts");
  const options = agentOptionsFromEnv(process.env, { readFile: readText });
  const { servers } = loadServers(undefined);
  humanPrinter();
  mark("options from the environment, .mcp.json, the printer");
  stdinIsTerminal();
  process.on("SIGINT", () => {});
  process.on("SIGTERM", () => {});
  mark("whether stdin is a terminal, the signal handlers");
  const agent = await createAgent({
    ...options,
    mcpServers: servers,
    cwd: process.cwd(),
    env: process.env,
    onWarning: () => {},
    onEvent: () => {},
  });
  mark("createAgent (no servers, _SessionStart)");
  for await (const _ of agent.prompt("hi")) { /* the events */ }
}

/** The parent: N starts of each kind, the median of each step. */
async function main(): Promise<void> {
  const { spawnSync } = await import("node:child_process");
  const { default: process } = await import("node:process");
  const n = Number(process.argv[2] ?? 15);
  const deno = (globalThis as { Deno?: { execPath(): string } }).Deno;
  const runtime = deno
    ? [deno.execPath(), "run", "-A", "--quiet"]
    : process.execArgv.length > 0
    ? [process.execPath, ...process.execArgv]
    : [process.execPath];
  const env = {
    ...process.env,
    SPROUT_AGENT_PROVIDER: "anthropic",
    ANTHROPIC_API_KEY: "sk-ant-bench",
    ANTHROPIC_MODEL: "claude-bench",
    ANTHROPIC_BASE_URL: "http://127.0.0.1:9",
  };
  for (const kind of ["run", "bare"]) {
    const runs: [string, number][][] = [];
    for (let i = 0; i < n; i++) {
      const child = spawnSync(runtime[0]!, [...runtime.slice(1), new URL(import.meta.url).pathname], {
        env: { ...env, [CHILD]: kind },
        encoding: "utf8",
      });
      const line = child.stdout.split("\n").find((l) => l.startsWith("["));
      if (line === undefined) throw new Error(`cold-steps: the ${kind} child printed no steps: ${child.stderr}`);
      runs.push(JSON.parse(line) as [string, number][]);
    }
    console.log(`\n${kind === "run" ? "cli.ts run" : "bare fetch script"}, median of ${n} starts (ms):`);
    let sum = 0;
    for (const [i, [label]] of runs[0]!.entries()) {
      const values = runs.map((r) => r[i]![1]).sort((a, b) => a - b);
      const median = values[values.length >> 1]!;
      sum += median;
      console.log(`  ${label.padEnd(55)} ${median.toFixed(1).padStart(6)}`);
    }
    console.log(`  ${"sum".padEnd(55)} ${sum.toFixed(1).padStart(6)}`);
  }
}

const kind = denoEnv === undefined
  ? (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env[CHILD]
  : denoEnv.get(CHILD);
if (kind !== undefined) await steps(kind === "bare");
else await main();
