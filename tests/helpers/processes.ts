/**
 * Process checks for tests that prove no child outlives the agent. A killed child whose parent
 * is gone shows as a zombie (state `Z`) until it is reaped, under all three runtimes, so
 * zombies count as gone.
 * @module
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import process from "node:process";
import { tsCommand } from "./runtime.ts";

/**
 * Runs a TypeScript file under the current runtime ({@link tsCommand}) to its exit: its code,
 * its stdout and how long it ran, in ms. For checks that a process exits by itself, which is
 * how a timer or handle left pending shows.
 */
export function runToExit(
  file: string,
  args: string[] = [],
): Promise<{ code: number | null; stdout: string; ms: number }> {
  const [command, ...argv] = tsCommand(file);
  const child = spawn(command!, [...argv, ...args], { stdio: ["ignore", "pipe", "inherit"] });
  let stdout = "";
  child.stdout.on("data", (d) => (stdout += d));
  const started = Date.now();
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, stdout, ms: Date.now() - started })));
}

/** True while a process with `pid` exists and is not a zombie. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true; // no /proc: kill(pid, 0) is all we know
  }
}

/** Waits until `pid` is gone, polling every 25 ms; true when it went within `withinMs`. */
export async function gone(pid: number, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (alive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return true;
}

/** Pids of live (non-zombie) processes whose command line contains `needle` (reads /proc). */
export function processesMatching(needle: string): number[] {
  const found: number[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync("/proc");
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ");
      if (cmd.includes(needle) && alive(Number(entry))) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}
