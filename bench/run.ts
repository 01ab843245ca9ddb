/**
 * `npm run bench`: runs the groups, then prints one table (group, case, value, baseline,
 * ratio) where every ratio compares two numbers measured in this run. See docs/PERFORMANCE.md.
 *
 *   npm run bench                          all groups, all runtimes (6–8 minutes)
 *   npm run bench -- --quick               fewer samples: a smoke run, rough numbers
 *   npm run bench -- hooks mcp             only these groups
 *   npm run bench -- --runtimes node,bun   per-runtime groups only under these
 *   npm run bench -- --json out.json       also write the rows and the machine as JSON
 * @module
 */
import { writeFileSync } from "node:fs";
import process from "node:process";
import { parseArgs } from "node:util";
import { GROUPS, machine, runBench } from "./bench.ts";
import { formatTable, type Runtime, RUNTIMES } from "./harness.ts";

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
    `\n${info.date} · ${info.cpus} × ${info.cpu} · node ${info.node} · bun ${info.bun} · deno ${info.deno} · load ${info.loadAverage} · ${
      ((performance.now() - started) / 1000).toFixed(0)
    } s${values.quick === true ? " · --quick" : ""}`,
  );
  if (values.json !== undefined) {
    writeFileSync(values.json, JSON.stringify({ machine: info, quick: values.quick === true, rows }, null, 2) + "\n");
  }
}

try {
  await main();
  process.exit(0); // leftover keep-alive sockets of the SDK clients must not hold the process
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
}
