/**
 * The todo-enforcer's stores under load (issue 13): 50 simulated agents for 30 s per store
 * (`STORE_LOAD_SECS`), through the round-robin balancer of tests/helpers/store-load.ts, against
 * main.ts under Bun:
 *
 * - `memory`: one instance (the baseline the others are divided by)
 * - `lmdb`: one instance on a fresh LMDB folder
 * - `redis x1`: one instance on a fresh redis-server
 * - `redis x2 + kill`: two instances on one redis-server, one SIGKILLed halfway
 *
 * Prints requests per second per store, the ratio to memory, and what the kill cost (requests
 * replayed by the balancer, failed requests, mixed or lost lists). Exits 1 when any run saw an
 * error or a mixed or lost list.
 *
 *   npx bun bench/store-load.ts            # 30 s each, about 2.5 min
 *   STORE_LOAD_SECS=10 npx bun bench/store-load.ts
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { type StartedServer, startServer } from "../tests/helpers/hook-servers.ts";
import { startRedis } from "../tests/helpers/redis.ts";
import { runAgents, startBalancer } from "../tests/helpers/store-load.ts";

const MAIN = new URL("../servers/todo-enforcer/main.ts", import.meta.url).pathname;
const AGENTS = 50;
const DURATION_MS = Number(process.env.STORE_LOAD_SECS || "30") * 1000;

interface Row {
  store: string;
  rate: number;
  line: string;
  clean: boolean;
}

async function measure(
  store: string,
  instances: () => Promise<StartedServer[]>,
  killHalfway: boolean,
): Promise<Row> {
  const servers = await instances();
  const balancer = await startBalancer(servers.map((s) => s.url));
  try {
    const kill = killHalfway ? setTimeout(() => servers[0]?.child.kill("SIGKILL"), DURATION_MS / 2) : undefined;
    const result = await runAgents(balancer.url, {
      agents: AGENTS,
      durationMs: DURATION_MS,
      runId: store.replace(/\W+/g, "-"),
    });
    clearTimeout(kill);
    const rate = result.requests / (result.elapsedMs / 1000);
    const { stats } = balancer;
    const clean = result.errors.length === 0 && result.mixed.length === 0 && result.lost.length === 0 &&
      stats.failed === 0;
    const line =
      `${result.requests} requests in ${(result.elapsedMs / 1000).toFixed(1)} s, errors ${result.errors.length}, ` +
      `mixed ${result.mixed.length}, lost ${result.lost.length}` +
      (killHalfway ? `; kill: ${stats.retried} attempts replayed, ${stats.failed} failed at the balancer` : "");
    for (const problem of [...result.errors, ...result.mixed, ...result.lost].slice(0, 5)) console.error(problem);
    return { store, rate, line, clean };
  } finally {
    await balancer.close();
    for (const server of servers) await server.stop();
  }
}

const started = await startRedis();
if ("reason" in started) console.error(`Redis runs are skipped: ${started.reason}`);
const redisUrl = "redis" in started ? started.redis.url : "";
const rows: Row[] = [];
try {
  rows.push(await measure("memory", async () => [await startServer(MAIN, ["--store", "memory"], "bun")], false));
  const dir = mkdtempSync(join(tmpdir(), "sprout-bench-lmdb-"));
  try {
    rows.push(
      await measure(
        "lmdb",
        async () => [await startServer(MAIN, ["--store", "lmdb", "--store-path", dir], "bun")],
        false,
      ),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  if ("redis" in started) {
    const args = ["--store", "redis", "--redis-url", redisUrl];
    rows.push(await measure("redis x1", async () => [await startServer(MAIN, args, "bun")], false));
    rows.push(
      await measure(
        "redis x2 + kill",
        async () => [await startServer(MAIN, args, "bun"), await startServer(MAIN, args, "bun")],
        true,
      ),
    );
  }
} finally {
  if ("redis" in started) await started.redis.stop();
}

const baseline = rows[0]?.rate ?? 1;
console.log(
  `todo-enforcer stores: ${AGENTS} agents, ${DURATION_MS / 1000} s each, main.ts under Bun, via the balancer`,
);
for (const row of rows) {
  console.log(
    `${row.store.padEnd(16)} ${Math.round(row.rate).toString().padStart(6)} req/s  ` +
      `${(row.rate / baseline).toFixed(2)}× memory  ${row.line}`,
  );
}
process.exit(rows.every((row) => row.clean) ? 0 : 1);
