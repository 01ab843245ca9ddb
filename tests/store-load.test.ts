/**
 * Issue 13's load test: 50 simulated agents (sprout-agent's MCP client, one session each)
 * against two todo-enforcer instances (main.ts under Bun, `--store redis`, one real Redis
 * server) behind a round-robin balancer on loopback. No error, no mixed or lost state; then one
 * instance is killed with SIGKILL halfway and the other serves every session, each list intact.
 *
 * `STORE_LOAD_SECS` sets the duration (default 6 s here; `bench/store-load.ts` runs 30 s per
 * store and prints the rates). Runs once (under Bun; see tests/helpers/runtime.ts): three
 * runners loading the same 2 cores at once would measure each other. Skips, saying why, only
 * where Redis cannot start.
 */
import assert from "node:assert/strict";
import process from "node:process";
import { after, before, describe, test } from "node:test";
import { type StartedServer, startServer } from "./helpers/hook-servers.ts";
import { type StartedRedis, startRedis } from "./helpers/redis.ts";
import { repoRoot, runsOnce } from "./helpers/runtime.ts";
import { type Balancer, runAgents, startBalancer } from "./helpers/store-load.ts";

const MAIN = `${repoRoot}servers/todo-enforcer/main.ts`;
const AGENTS = 50;
const DURATION_MS = Number(process.env.STORE_LOAD_SECS || "6") * 1000;

const started = runsOnce ? await startRedis() : { reason: "runs once, under Bun" };
const redis: StartedRedis | undefined = "redis" in started ? started.redis : undefined;
const skip = runsOnce && "reason" in started ? `Redis cannot start here: ${started.reason}` : !runsOnce;
if (typeof skip === "string") console.log(`skipping the shared-store load test: ${skip}`);

describe("two todo-enforcer instances on one Redis behind a round-robin balancer", { skip }, () => {
  const instances: StartedServer[] = [];
  let balancer: Balancer | undefined;
  before(async () => {
    const args = ["--port", "0", "--store", "redis", "--redis-url", redis?.url ?? ""];
    instances.push(await startServer(MAIN, args, "bun"), await startServer(MAIN, args, "bun"));
    balancer = await startBalancer(instances.map((i) => i.url));
  });
  after(async () => {
    await balancer?.close();
    for (const instance of instances) await instance.stop();
    await redis?.stop();
  });

  test(`${AGENTS} agents: no error, no mixed or lost state; one instance SIGKILLed halfway, the other serves every session`, async () => {
    assert.ok(balancer);
    const [victim, survivor] = instances;
    assert.ok(victim && survivor);
    let killedAtMs = 0;
    const t0 = performance.now();
    const kill = setTimeout(() => {
      killedAtMs = performance.now() - t0;
      victim.child.kill("SIGKILL");
    }, DURATION_MS / 2);
    const result = await runAgents(balancer.url, { agents: AGENTS, durationMs: DURATION_MS, runId: "load" });
    clearTimeout(kill);
    const { stats } = balancer;
    console.log(
      `store-load redis x2: ${AGENTS} agents, ${result.requests} requests in ${
        (result.elapsedMs / 1000).toFixed(1)
      } s ` +
        `(${Math.round(result.requests / (result.elapsedMs / 1000))} req/s), ${result.cycles} cycles; ` +
        `instance killed at ${(killedAtMs / 1000).toFixed(1)} s: ${stats.retried} attempts replayed on the survivor, ` +
        `${stats.failed} failed at the balancer; errors ${result.errors.length}, mixed ${result.mixed.length}, ` +
        `lost ${result.lost.length}`,
    );
    assert.ok(killedAtMs > 0, "the instance was killed during the run");
    assert.notEqual(victim.child.signalCode, null, "the victim died of the signal");
    assert.deepEqual(result.errors.slice(0, 5), [], "no failed request");
    assert.deepEqual(result.mixed.slice(0, 5), [], "every answer shows exactly the agent's own last write");
    assert.deepEqual(result.lost.slice(0, 5), [], "every agent's final list is its last acknowledged write");
    assert.equal(stats.failed, 0, "the balancer always found a live instance");
    assert.ok(result.cycles >= AGENTS * 2, `every agent kept working (${result.cycles} cycles in all)`);
  });
});
