/**
 * Group `http`: hook-server throughput against a floor, measured by bench/throughput.ts
 * ({@link measureServers}): autocannon (10 connections) POSTs the `_Stop` call sprout-agent
 * sends (bench/servers-request.ts) to the todo-enforcer and the test-gate, each served the way
 * its `main.ts` serves under the runtime, and the same request to a minimal Hono app answering
 * the very same bytes. Two rows per case: requests per second, and requests per CPU-second of
 * the server process (Linux `/proc`), the steadier of the two on a shared machine.
 * @module
 */
import { measureServers } from "../throughput.ts";
import { type Group, type Row, row } from "../harness.ts";

/** The `http` group. */
export const httpGroup: Group = {
  name: "http",
  title: "hook-server throughput (autocannon) vs a minimal Hono floor, per second and per CPU-second",
  async run({ quick, runtimes, log }) {
    const rows: Row[] = [];
    for (const runtime of runtimes) {
      log(`http: ${runtime}`);
      // --quick: the modern era only (the one sprout-agent speaks first), shorter runs.
      const measured = await measureServers({
        runtime,
        durationSec: quick ? 1 : 3,
        warmupSec: quick ? 0.5 : 1,
        eras: quick ? ["modern"] : ["modern", "legacy"],
      });
      for (const m of measured) {
        const name = `${runtime}: ${m.server} _Stop (${m.era})`;
        rows.push(row("http", `${name} vs minimal Hono`, m.serverRps, m.floorRps, "req/s", true));
        if (m.serverCpuRps !== undefined && m.floorCpuRps !== undefined) {
          rows.push(
            row("http", `${name} vs minimal Hono, per CPU-s`, m.serverCpuRps, m.floorCpuRps, "req/CPU-s", true),
          );
        }
      }
    }
    return rows;
  },
};
