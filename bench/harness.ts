/**
 * The bench harness: the row every group returns, statistics, the one table, and how to start
 * a file under Node (an esbuild bundle of it; tsx for a file outside the repository), Bun or
 * Deno as a child (groups that measure per runtime run their in-process part in such a child
 * through `bench/child.ts` and read its JSON back).
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import process from "node:process";
// The tests' own helpers: which runtime runs this file, and the argv that runs a `.ts` file
// under a runtime (Node: an esbuild bundle of it, tsx only for a file the bundle cannot
// serve; `deno run -A`).
import { type Runtime, runtime as currentRuntime, tsCommand } from "../tests/helpers/runtime.ts";

export { currentRuntime, type Runtime, tsCommand };

/** The repository root, with a trailing slash. */
export const root: string = fileURLToPath(new URL("../", import.meta.url));

/** Every runtime, in table order. */
export const RUNTIMES: readonly Runtime[] = ["node", "bun", "deno"];

/**
 * One line of the table: a subject measured against a baseline in the same run. `ratio` is
 * always subject cost / baseline cost, so above 1 means slower, heavier or fewer requests per
 * second than the baseline (for `req/s` rows it is `baseline / value`).
 */
export interface Row {
  /** The group's name (`hooks`, `mcp`, `loop`, `cold`, `acp`, `http`). */
  group: string;
  /** What was measured, naming the subject and, after `vs`, the baseline. */
  case: string;
  /** The subject's number, in `unit`. */
  value: number;
  /** The baseline's number, in `unit`. */
  baseline: number;
  /** `ms`, `MB`, `KB`, `req/s`, `req/CPU-s` (requests per CPU-second of the server process). */
  unit: string;
  /** Subject cost / baseline cost. */
  ratio: number;
}

/** What every group gets. */
export interface GroupOptions {
  /** Fewer samples and shorter runs: a smoke check, numbers are rough. */
  quick: boolean;
  /** The runtimes to measure where a group measures per runtime. */
  runtimes: readonly Runtime[];
  /** Progress lines (stderr). */
  log: (line: string) => void;
}

/** A group of the bench: a name, one line of what it measures, and the measurement. */
export interface Group {
  name: string;
  title: string;
  run(options: GroupOptions): Promise<Row[]>;
}

/** Builds a row; `higherIsBetter` for throughput (req/s). */
export function row(
  group: string,
  name: string,
  value: number,
  baseline: number,
  unit: string,
  higherIsBetter = false,
): Row {
  const ratio = higherIsBetter ? baseline / value : value / baseline;
  return { group, case: name, value, baseline, unit, ratio };
}

/** The `p`-th percentile (0–100) of `values`, nearest rank; NaN for none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

/** The median of `values`. */
export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** Milliseconds since an arbitrary origin, sub-millisecond. */
export const now = (): number => performance.now();

/** Times one call of `fn`, in ms. */
export async function time(fn: () => Promise<unknown>): Promise<number> {
  const start = now();
  await fn();
  return now() - start;
}

/**
 * Runs `subject` and `baseline` alternately `samples` times (after `warmup` rounds of each),
 * so both see the same machine load; resolves with their timings in ms.
 */
export async function alternate(
  samples: number,
  subject: () => Promise<unknown>,
  baseline: () => Promise<unknown>,
  warmup = 1,
): Promise<{ subject: number[]; baseline: number[] }> {
  for (let i = 0; i < warmup; i++) {
    await subject();
    await baseline();
  }
  const out = { subject: [] as number[], baseline: [] as number[] };
  for (let i = 0; i < samples; i++) {
    // Swap the order every sample so neither side always runs on a warmer machine.
    if (i % 2 === 0) {
      out.subject.push(await time(subject));
      out.baseline.push(await time(baseline));
    } else {
      out.baseline.push(await time(baseline));
      out.subject.push(await time(subject));
    }
  }
  return out;
}

/** The executable of `which`: this process's own when it is that runtime, else node_modules/.bin. */
export function runtimeBinary(which: Runtime): string {
  if (currentRuntime() === which) return process.execPath;
  return which === "node" ? "node" : `${root}node_modules/.bin/${which}`;
}

/** The argv that runs a plain `.mjs` file under `which` (no TypeScript loader). */
export function jsCommand(file: string, which: Runtime): string[] {
  if (which === "deno") return [runtimeBinary("deno"), "run", "-A", "--quiet", file];
  return [runtimeBinary(which), file];
}

/** This process's environment as plain strings, plus `extra` (Deno children need `DENO_DIR` and friends). */
export function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(SPROUT_AGENT_|ANTHROPIC_|OPENAI_COMPAT_|MCP_HOOK_SERVERS)/.test(key)) {
      env[key] = value;
    }
  }
  return { ...env, NO_COLOR: "1", ...extra };
}

/**
 * Runs `argv`, collects stdout and stderr, resolves when it exits.
 * @throws Error when it exits non-zero or outlives `timeoutMs` (default 120 s), with the stderr tail
 */
export function runChild(
  argv: string[],
  options: { stdin?: string; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<{ stdout: string; stderr: string }> {
  const [command = "", ...args] = argv;
  const child = spawn(command, args, { cwd: root, env: options.env ?? childEnv() });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
  child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  child.stdin.on("error", () => {}); // EPIPE when the child exits without reading stdin
  child.stdin.end(options.stdin ?? "");
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 120_000);
    child.once("error", reject);
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve({ stdout, stderr });
      else reject(new Error(`Command "${argv.join(" ")}" failed (${signal ?? code}): ${stderr.slice(-2000)}`));
    });
  });
}

/** Runs a group's in-process part under `which` via `bench/child.ts` and parses its JSON answer. */
export async function inRuntime<T>(which: Runtime, group: string, options: unknown): Promise<T> {
  const argv = tsCommand(`${root}bench/child.ts`, which);
  const { stdout } = await runChild([...argv, group, JSON.stringify(options)], { timeoutMs: 300_000 });
  const last = stdout.trim().split("\n").at(-1) ?? "";
  return JSON.parse(last) as T;
}

/** SIGTERM `child` and wait for its exit (SIGKILL after 3 s). */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once("exit", done));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
  await exited;
  clearTimeout(timer);
}

function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString("en-US");
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

/** The table as Markdown-compatible lines: group, case, value, baseline, ratio. */
export function formatTable(rows: readonly Row[]): string {
  const header = ["group", "case", "value", "baseline", "ratio"];
  const cells = rows.map((r) => [
    r.group,
    r.case,
    `${formatNumber(r.value)} ${r.unit}`,
    `${formatNumber(r.baseline)} ${r.unit}`,
    Number.isFinite(r.ratio) ? `${r.ratio.toFixed(r.ratio < 0.1 ? 3 : 2)}×` : "n/a",
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const right = [false, false, true, true, true];
  const line = (c: string[]) =>
    `| ${c.map((text, i) => right[i] ? text.padStart(widths[i]!) : text.padEnd(widths[i]!)).join(" | ")} |`;
  const rule = `| ${widths.map((w, i) => right[i] ? `${"-".repeat(w - 1)}:` : "-".repeat(w)).join(" | ")} |`;
  return [line(header), rule, ...cells.map(line)].join("\n");
}
