/**
 * HTTP throughput of the example hook servers against a floor measured in the same run: each
 * server answers the `_Stop` call sprout-agent sends (bench/servers-request.ts), and the floor
 * is a minimal Hono app on the same runtime answering the very same bytes. The ratio
 * `serverRps / floorRps` is what to compare across machines; the absolute numbers are not.
 *
 *   npx tsx bench/throughput.ts [--runtime node|bun|deno] [--duration 5] [--era modern|legacy]
 *     [--server todo-enforcer|test-gate|sdk-noop] [--json]
 *
 * Each case runs its target in a child process (bench/servers-target.ts) on 127.0.0.1 and loads
 * it with autocannon (10 connections, 1 s warm-up, then `duration` seconds) from this process.
 * `npm run bench` shows the same measurement as its `http` group (bench/groups/http.ts).
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import process from "node:process";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { type BenchRequest, benchRequest, type Era, initializeRequest } from "./servers-request.ts";

/** The runtimes a target can run under. */
export type ServerRuntime = "node" | "bun" | "deno";

/** Options of {@link measureServers}. */
export interface MeasureServersOptions {
  /** The runtime serving both the floor and the servers. */
  runtime: ServerRuntime;
  /** Measured seconds per case, after the warm-up. Default 5. */
  durationSec?: number;
  /** Seconds of load before the measured run (JIT, caches). Default 1. */
  warmupSec?: number;
  /** Which eras to measure. Default both, modern first. */
  eras?: Era[];
  /** Concurrent connections. Default 10. */
  connections?: number;
  /** Which servers to measure. Default the two example servers. */
  servers?: BenchServer[];
}

/** One measured case: a server in one era against its floor. */
export interface ServerThroughput {
  server: BenchServer;
  era: Era;
  /** Requests per second of the minimal Hono app returning the same bytes. */
  floorRps: number;
  /** Requests per second of the server. */
  serverRps: number;
  /** `serverRps / floorRps`. */
  ratio: number;
  /**
   * Requests per second of CPU time the target process used (Linux `/proc`; `undefined`
   * elsewhere): unlike `floorRps`/`serverRps`, this barely moves when other processes share the
   * cores, so its ratio is the steadier one on a busy machine.
   */
  floorCpuRps?: number;
  serverCpuRps?: number;
  /** `serverCpuRps / floorCpuRps`. */
  cpuRatio?: number;
}

/** What one load run measured. */
interface Load {
  rps: number;
  cpuRps: number | undefined;
}

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TARGET = fileURLToPath(new URL("./servers-target.ts", import.meta.url));
/** The servers {@link measureServers} can measure, and their bench/servers-target.ts kinds. */
const TARGETS = { "todo-enforcer": "todo", "test-gate": "gate", "sdk-noop": "noop" } as const;

/** A measurable server: the two example servers, or `sdk-noop`, the SDK's path with a no-op tool. */
export type BenchServer = keyof typeof TARGETS;

function command(runtime: ServerRuntime): [string, string[]] {
  if (runtime === "bun") return [`${ROOT}node_modules/.bin/bun`, [TARGET]];
  if (runtime === "deno") return [`${ROOT}node_modules/.bin/deno`, ["run", "-A", "--quiet", TARGET]];
  return ["node", ["--import", "tsx", TARGET]];
}

/** Starts one target and resolves with its URL once it prints its `listening on` line. */
async function start(runtime: ServerRuntime, kind: string, era: Era): Promise<{ url: string; child: ChildProcess }> {
  const [file, args] = command(runtime);
  const child = spawn(file, [...args, kind, era], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  // stderr is kept for the error below, not echoed: Deno warns there on every start.
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)));
  const lines = createInterface({ input: child.stdout! });
  const exited = once(child, "exit").then(([code]) => {
    throw new Error(`Cannot start bench target "${kind}" under ${runtime}: it exited with code ${code}\n${stderr}`);
  });
  for await (const line of lines) {
    const match = /^listening on (\S+)/.exec(line);
    if (match?.[1] !== undefined) {
      void exited.catch(() => {});
      return { url: match[1], child };
    }
  }
  return await exited;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill("SIGTERM");
  await once(child, "exit");
}

async function send(request: BenchRequest): Promise<Response> {
  return await fetch(request.url, { method: request.method, headers: request.headers, body: request.body });
}

/** CPU seconds (user + system) used so far by process `pid`, from Linux `/proc`; `undefined` elsewhere. */
function cpuSeconds(pid: number | undefined): number | undefined {
  try {
    // Fields after the command name: state is field 3, utime 14 and stime 15, in ticks of 1/100 s.
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

/** Checks the target answers the request with a successful tool result, then loads it. */
async function load(
  request: BenchRequest,
  pid: number | undefined,
  durationSec: number,
  warmupSec: number,
  connections: number,
): Promise<Load> {
  const check = await send(request);
  const text = await check.text();
  if (check.status !== 200 || !text.includes('"result"') || text.includes('"isError":true')) {
    throw new Error(`Cannot measure ${request.url}: it answered ${check.status} ${text.slice(0, 200)}`);
  }
  const options = { url: request.url, method: request.method, headers: request.headers, body: request.body };
  await autocannon({ ...options, connections, duration: warmupSec });
  const cpuBefore = cpuSeconds(pid);
  const result = await autocannon({ ...options, connections, duration: durationSec });
  const cpuAfter = cpuSeconds(pid);
  // A stray reset as a run ends is tolerated (seen under Deno); more means the numbers are wrong.
  if (result.non2xx > 0 || result.errors > result.requests.total / 100) {
    throw new Error(`Cannot measure ${request.url}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  }
  const cpu = cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore;
  return {
    rps: result.requests.average,
    cpuRps: cpu === undefined || cpu <= 0 ? undefined : result.requests.total / cpu,
  };
}

async function measureOne(
  runtime: ServerRuntime,
  kind: string,
  era: Era,
  durationSec: number,
  warmupSec: number,
  connections: number,
): Promise<Load> {
  const { url, child } = await start(runtime, kind, era);
  try {
    // A legacy client initializes first; the stateless servers give no session id to reuse.
    if (era === "legacy") await (await send(initializeRequest(url))).text();
    return await load(benchRequest(era, url), child.pid, durationSec, warmupSec, connections);
  } finally {
    await stop(child);
  }
}

/**
 * Measures both example servers and their floors under `runtime`, one case at a time.
 * Takes about `(warmupSec + durationSec + 1) * 4` seconds per era.
 * @throws {Error} when a target cannot start or answers anything but a successful result
 */
export async function measureServers(options: MeasureServersOptions): Promise<ServerThroughput[]> {
  const durationSec = options.durationSec ?? 5;
  const warmupSec = options.warmupSec ?? 1;
  const connections = options.connections ?? 10;
  const rows: ServerThroughput[] = [];
  for (const era of options.eras ?? ["modern", "legacy"]) {
    for (const server of options.servers ?? ["todo-enforcer", "test-gate"]) {
      const kind = TARGETS[server];
      const floor = await measureOne(options.runtime, `${kind}-floor`, era, durationSec, warmupSec, connections);
      const served = await measureOne(options.runtime, kind, era, durationSec, warmupSec, connections);
      const row: ServerThroughput = {
        server,
        era,
        floorRps: floor.rps,
        serverRps: served.rps,
        ratio: served.rps / floor.rps,
      };
      if (floor.cpuRps !== undefined && served.cpuRps !== undefined) {
        Object.assign(row, {
          floorCpuRps: floor.cpuRps,
          serverCpuRps: served.cpuRps,
          cpuRatio: served.cpuRps / floor.cpuRps,
        });
      }
      rows.push(row);
    }
  }
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith("bench/throughput.ts")) {
  const { values } = parseArgs({
    options: {
      runtime: { type: "string", multiple: true },
      duration: { type: "string", default: "5" },
      era: { type: "string", multiple: true },
      server: { type: "string", multiple: true },
      json: { type: "boolean", default: false },
    },
  });
  const runtimes = (values.runtime ?? ["node", "bun"]) as ServerRuntime[];
  const eras = (values.era ?? ["modern", "legacy"]) as Era[];
  const servers = (values.server ?? ["todo-enforcer", "test-gate"]) as BenchServer[];
  const all: (ServerThroughput & { runtime: ServerRuntime })[] = [];
  for (const runtime of runtimes) {
    for (const row of await measureServers({ runtime, durationSec: Number(values.duration), eras, servers })) {
      all.push({ runtime, ...row });
      if (!values.json) {
        console.log(
          `${runtime.padEnd(5)} ${row.server.padEnd(14)} ${row.era.padEnd(7)} floor ${
            row.floorRps.toFixed(0).padStart(6)
          } rps  server ${row.serverRps.toFixed(0).padStart(6)} rps  ratio ${
            row.ratio.toFixed(2)
          }  per CPU-second: floor ${row.floorCpuRps?.toFixed(0).padStart(6) ?? "     ?"} server ${
            row.serverCpuRps?.toFixed(0).padStart(6) ?? "     ?"
          } ratio ${row.cpuRatio?.toFixed(2) ?? "?"}`,
        );
      }
    }
  }
  if (values.json) console.log(JSON.stringify(all, null, 2));
}
