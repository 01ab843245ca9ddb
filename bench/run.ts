/**
 * `npm run bench`: runs the groups, then prints one table (group, case, value, baseline,
 * ratio) where every ratio compares two numbers measured in this run. See docs/PERFORMANCE.md.
 *
 *   npm run bench                          all groups, all runtimes (a few minutes)
 *   npm run bench -- --quick               fewer samples: a smoke run, rough numbers
 *   npm run bench -- hooks mcp             only these groups
 *   npm run bench -- --runtimes node,bun   per-runtime groups only under these
 *   npm run bench -- --json out.json       also write the rows and the machine as JSON
 * @module
 */
import { writeFileSync } from "node:fs";
import { cpus } from "node:os";
import process from "node:process";
import { parseArgs } from "node:util";
import { formatTable, type Group, type Row, runChild, type Runtime, runtimeBinary, RUNTIMES } from "./harness.ts";
import { acpGroup } from "./groups/acp.ts";
import { coldGroup } from "./groups/cold.ts";
import { hooksGroup } from "./groups/hooks.ts";
import { httpGroup } from "./groups/http.ts";
import { loopGroup } from "./groups/loop.ts";
import { mcpGroup } from "./groups/mcp.ts";

/** Every group, in table order. */
export const GROUPS: readonly Group[] = [hooksGroup, mcpGroup, loopGroup, coldGroup, acpGroup, httpGroup];

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
  };
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    args: process.argv.slice(2),
    allowPositionals: true,
    options: {
      quick: { type: "boolean" },
      json: { type: "string" },
      runtimes: { type: "string" },
      help: { type: "boolean" },
    },
  });
  if (values.help === true) {
    console.log(
      `Usage: npm run bench -- [--quick] [--runtimes node,bun,deno] [--json FILE] [GROUP...]\nGroups:\n${
        GROUPS.map((g) => `  ${g.name.padEnd(6)} ${g.title}`).join("\n")
      }`,
    );
    return;
  }
  const runtimes = (values.runtimes ?? RUNTIMES.join(",")).split(",").map((r) => r.trim()) as Runtime[];
  const bad = runtimes.find((r) => !RUNTIMES.includes(r));
  if (bad !== undefined) throw new Error(`Unknown runtime "${bad}": expected node, bun or deno`);
  const started = performance.now();
  const rows = await runBench({ groups: positionals, quick: values.quick === true, runtimes });
  const info = await machine();
  console.log(formatTable(rows));
  console.log(
    `\n${info.date} · ${info.cpus} × ${info.cpu} · node ${info.node} · bun ${info.bun} · deno ${info.deno} · ${
      ((performance.now() - started) / 1000).toFixed(0)
    } s${values.quick === true ? " · --quick" : ""}`,
  );
  if (values.json !== undefined) {
    writeFileSync(values.json, JSON.stringify({ machine: info, quick: values.quick === true, rows }, null, 2) + "\n");
  }
}

if (import.meta.main ?? process.argv[1]?.endsWith("bench/run.ts")) {
  try {
    await main();
    process.exit(0); // leftover keep-alive sockets of the SDK clients must not hold the process
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  }
}
