/**
 * A real Redis (or Valkey) server for tests: `redis-server` (or `valkey-server`) from PATH, as
 * installed from the Debian packages by `.ci/run`, started on a free loopback port with its own
 * temporary folder and no persistence. Tests that need it skip with the reason when it cannot
 * start.
 * @module
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A running Redis server. */
export interface StartedRedis {
  /** `redis://127.0.0.1:PORT`. */
  url: string;
  child: ChildProcess;
  /** SIGTERM, waits for the exit, removes its folder. */
  stop(): Promise<void>;
}

/** The server binary on PATH: `redis-server`, else `valkey-server`, else undefined. */
function serverBinary(): string | undefined {
  for (const name of ["redis-server", "valkey-server"]) {
    try {
      return execFileSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).trim() || undefined;
    } catch {
      // not on PATH: try the next name
    }
  }
  return undefined;
}

/** A port that was free a moment ago on 127.0.0.1. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts a Redis server, or says why it cannot: resolves `{redis}` once it accepts connections
 * (within 10 s), or `{reason}` (no binary on PATH, or it exited or stayed silent).
 */
export async function startRedis(): Promise<{ redis: StartedRedis } | { reason: string }> {
  const binary = serverBinary();
  if (binary === undefined) {
    return { reason: "no redis-server or valkey-server on PATH (.ci/run installs the Debian package redis-server)" };
  }
  const dir = mkdtempSync(join(tmpdir(), "sprout-redis-"));
  const port = await freePort();
  const child = spawn(
    binary,
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 10_000);
    const onData = (chunk: string) => {
      output += chunk;
      if (/ready to accept connections/i.test(output)) {
        clearTimeout(timer);
        resolve(true);
      }
    };
    child.stdout?.setEncoding("utf8").on("data", onData);
    child.stderr?.setEncoding("utf8").on("data", onData);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve(false);
    });
    child.once("error", () => resolve(false));
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  if (!ready) {
    await stop();
    return { reason: `${binary} did not start on port ${port}: ${output.trim().split("\n").slice(-3).join(" | ")}` };
  }
  return { redis: { url: `redis://127.0.0.1:${port}`, child, stop } };
}
