/**
 * Runs the test command once: its own process group, a timeout that kills the whole group,
 * and the combined output kept up to a bound.
 * @module
 */
import { spawn } from "node:child_process";
import process from "node:process";

/** How one run of the command ended. */
export interface RunOutcome {
  /** The exit code, or `null` when a signal ended it or it never started. */
  exitCode: number | null;
  /** `true` when the run went over its timeout and was killed. */
  timedOut: boolean;
  /** Set when the command could not be started at all (for example not found). */
  spawnError?: string;
  /** The last `maxOutputChars` characters of stdout and stderr, interleaved as they arrived. */
  output: string;
  durationMs: number;
}

/** A run in progress. */
export interface RunHandle {
  /** Resolves when the run has ended; never rejects. */
  done: Promise<RunOutcome>;
  /**
   * Kills the run's whole process group: SIGTERM, then SIGKILL after a grace period, or
   * SIGKILL at once when `now` is true (for a process about to exit).
   */
  kill(now?: boolean): void;
}

/** Options of {@link runCommand}. */
export interface RunOptions {
  cwd: string;
  /** Kill the run (its whole process group) after this many milliseconds. */
  timeoutMs: number;
  /** The child's environment. Default: this process's environment plus `NO_COLOR=1`. */
  env?: Record<string, string | undefined>;
  /** Output characters kept, from the end. Default 262144. */
  maxOutputChars?: number;
}

/** Grace between SIGTERM and SIGKILL when a run is stopped. */
const KILL_GRACE_MS = 2000;

/**
 * Starts `command`, an argv array or a shell string (run by `/bin/sh -c`), in a new process
 * group so that a timeout kills the runner and everything it started.
 * @example
 * const outcome = await runCommand("bun test", { cwd: "/project", timeoutMs: 600_000 }).done;
 */
export function runCommand(command: string | readonly string[], options: RunOptions): RunHandle {
  const started = performance.now();
  const maxChars = options.maxOutputChars ?? 262_144;
  const env = options.env ?? { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" };
  let output = "";
  const append = (chunk: string) => {
    output += chunk;
    if (output.length > maxChars * 2) output = output.slice(-maxChars);
  };

  let child;
  try {
    child = typeof command === "string"
      ? spawn(command, { cwd: options.cwd, env, shell: true, detached: true, stdio: ["ignore", "pipe", "pipe"] })
      : spawn(command[0] ?? "", command.slice(1), {
        cwd: options.cwd,
        env,
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
      });
  } catch (error) {
    const outcome = {
      exitCode: null,
      timedOut: false,
      spawnError: (error as Error).message,
      output: "",
      durationMs: 0,
    };
    return { done: Promise.resolve(outcome), kill() {} };
  }
  const proc = child;

  let timedOut = false;
  let exited = false;
  const killGroup = (signal: NodeJS.Signals) => {
    if (exited || proc.pid === undefined) return;
    try {
      process.kill(-proc.pid, signal); // negative pid: the whole process group
    } catch {
      // already gone
    }
  };
  const kill = (now = false) => {
    if (now) return killGroup("SIGKILL");
    killGroup("SIGTERM");
    setTimeout(() => killGroup("SIGKILL"), KILL_GRACE_MS).unref?.();
  };
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, options.timeoutMs);

  proc.stdout?.setEncoding("utf8").on("data", append);
  proc.stderr?.setEncoding("utf8").on("data", append);

  const done = new Promise<RunOutcome>((resolve) => {
    let settled = false;
    const finish = (exitCode: number | null, spawnError?: string) => {
      if (settled) return;
      settled = true;
      exited = true;
      clearTimeout(timer);
      resolve({
        exitCode,
        timedOut,
        ...(spawnError === undefined ? {} : { spawnError }),
        output: output.slice(-maxChars),
        durationMs: Math.round(performance.now() - started),
      });
    };
    proc.once("error", (error) => finish(null, error.message));
    proc.once("close", (code) => finish(code));
    // A grandchild that left the group may hold the pipes open: do not wait for it forever.
    proc.once("exit", (code) => setTimeout(() => finish(code), 1000).unref?.());
  });
  return { done, kill };
}
