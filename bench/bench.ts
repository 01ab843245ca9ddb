/**
 * The groups and the function that runs them; `bench/run.ts` is the command line around it,
 * `tests/bench.test.ts` calls it directly.
 * @module
 */
import { cpus, loadavg } from "node:os";
import { type Group, type Row, runChild, type Runtime, runtimeBinary, RUNTIMES } from "./harness.ts";
import { acpGroup } from "./groups/acp.ts";
import { coldGroup } from "./groups/cold.ts";
import { hooksGroup } from "./groups/hooks.ts";
import { httpGroup } from "./groups/http.ts";
import { bridgeGroup } from "./groups/bridge.ts";
import { loopGroup } from "./groups/loop.ts";
import { mcpGroup } from "./groups/mcp.ts";
import { toolsGroup } from "./groups/tools.ts";

/** Every group, in table order. */
export const GROUPS: readonly Group[] = [
  hooksGroup,
  toolsGroup,
  mcpGroup,
  loopGroup,
  coldGroup,
  acpGroup,
  httpGroup,
  bridgeGroup,
];

/** Options of {@link runBench}. */
export interface BenchOptions {
  /** Group names to run; empty runs all. */
  groups?: readonly string[];
  quick?: boolean;
  runtimes?: readonly Runtime[];
  /** Progress lines; default stderr. */
  log?: (line: string) => void;
}

/**
 * Runs the selected groups one after the other.
 * @throws Error naming an unknown group
 */
export async function runBench(options: BenchOptions = {}): Promise<Row[]> {
  const wanted = options.groups ?? [];
  const unknown = wanted.filter((name) => !GROUPS.some((g) => g.name === name));
  if (unknown.length > 0) {
    throw new Error(`Unknown bench group "${unknown[0]}": expected one of ${GROUPS.map((g) => g.name).join(", ")}`);
  }
  const log = options.log ?? ((line: string) => console.error(line));
  const rows: Row[] = [];
  for (const group of GROUPS) {
    if (wanted.length > 0 && !wanted.includes(group.name)) continue;
    const started = performance.now();
    log(`# ${group.name}: ${group.title}`);
    rows.push(...await group.run({ quick: options.quick ?? false, runtimes: options.runtimes ?? RUNTIMES, log }));
    log(`# ${group.name} done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  return rows;
}

/** The machine and runtimes, for the JSON file and docs/PERFORMANCE.md. */
export async function machine(): Promise<Record<string, string | number>> {
  const version = async (which: Runtime): Promise<string> => {
    try {
      const { stdout } = await runChild([runtimeBinary(which), "--version"], { timeoutMs: 30_000 });
      // `deno 2.9.6 (stable, …)`, `v20.20.2`, `1.4.5`: keep the version number.
      return /\d+\.\d+\.\d+\S*/.exec(stdout)?.[0] ?? stdout.trim();
    } catch {
      return "unavailable";
    }
  };
  return {
    date: new Date().toISOString(),
    cpus: cpus().length,
    cpu: cpus()[0]?.model ?? "unknown",
    node: await version("node"),
    bun: await version("bun"),
    deno: await version("deno"),
    // Other work on the machine skews absolute numbers more than ratios.
    loadAverage: loadavg().map((n) => n.toFixed(1)).join(" "),
  };
}
