/**
 * The gate: remembers the last test run together with the fingerprint of the files it ran on,
 * and decides whether the agent may end its turn. Never allows a stop on files it has not
 * seen pass; answers `_Stop` within about a second whatever the suite is doing.
 * @module
 */
import { fingerprintFiles, listProjectFiles } from "./fingerprint.ts";
import { parseTestOutput } from "./results.ts";
import { runCommand, type RunHandle } from "./run.ts";

/** Options of {@link TestGate}. */
export interface GateOptions {
  /** The test command: an argv array, or a shell string such as `"bun test"` or `"deno test -A"`. */
  command: string | readonly string[];
  /** The project folder: the command runs here and its files are fingerprinted. */
  cwd: string;
  /** A run longer than this is killed (process group) and counts as failed. Default 600000 (600 s). */
  timeoutMs?: number;
  /** How long `_Stop` waits for a run it started before answering "still running". Default 800. */
  stopWaitMs?: number;
  /** Which files count as the project. Default: {@link listProjectFiles} (git, or a walk). */
  projectFiles?: (cwd: string) => Promise<string[]>;
  /** The test command's environment. Default: this process's plus `NO_COLOR=1`. */
  env?: Record<string, string | undefined>;
}

/** The result of one run, as the tools report it. */
export interface TestRun {
  /** The command, for display and to reproduce. */
  command: string;
  /** The folder it ran in (absolute when the gate's `cwd` is). */
  cwd: string;
  passed: boolean;
  /** Counts when the runner's output gave them. */
  passedCount?: number;
  failedCount?: number;
  /** Names of failing tests, when the runner's output gave them. */
  failing: string[];
  exitCode: number | null;
  timedOut: boolean;
  /** Why the command could not start, when it could not. */
  spawnError?: string;
  durationMs: number;
  /** The last {@link OUTPUT_TAIL_CHARS} characters of the output. */
  outputTail: string;
  /** The fingerprint of the project files taken just before the run started. */
  fingerprint: string;
}

/** Output characters kept in a {@link TestRun} and shown by `run_tests`. */
export const OUTPUT_TAIL_CHARS = 4000;

interface Running {
  fingerprint: string;
  promise: Promise<TestRun>;
  handle: RunHandle;
}

const noop = () => {};
/**
 * `promise`'s value, or `late()` when `ms` pass first. The timer is cleared as soon as the race
 * is decided, so an answered `_Stop` leaves nothing pending (a bare `sleep` in the race would
 * keep the process alive, and timers piling up, for `stopWaitMs` after every call).
 */
async function within<T>(promise: Promise<T>, ms: number, late: () => T): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(late()), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Renders an argv array as a shell-ready line (quoting only where needed). */
export function commandText(command: string | readonly string[]): string {
  if (typeof command === "string") return command;
  return command.map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`)).join(" ");
}

function counts(run: TestRun): string {
  if (run.failedCount === undefined || run.passedCount === undefined) return `exit code ${run.exitCode ?? "none"}`;
  return `${run.failedCount} failed, ${run.passedCount} passed`;
}

/**
 * The test gate of one project folder. Its state is the project's, not an agent session's:
 * whether the suite passes on these files is the same answer for every session.
 */
export class TestGate {
  #options: Required<Omit<GateOptions, "env">> & Pick<GateOptions, "env">;
  #last: TestRun | undefined;
  #running: Running | undefined;
  #closed = false;
  /** The fingerprint being taken, and the one queued behind it (see {@link fingerprint}). */
  #fingerprinting: Promise<string> | undefined;
  #nextFingerprint: Promise<string> | undefined;

  constructor(options: GateOptions) {
    this.#options = {
      timeoutMs: 600_000,
      stopWaitMs: 800,
      projectFiles: listProjectFiles,
      ...options,
    };
  }

  /** The command as text, as the objections quote it. */
  get command(): string {
    return commandText(this.#options.command);
  }

  /** The last finished run, if any. */
  get last(): TestRun | undefined {
    return this.#last;
  }

  /** True while a run is in progress. */
  get running(): boolean {
    return this.#running !== undefined;
  }

  /**
   * The fingerprint of the project files as they are now: taken after this call began, so a
   * file saved just before the call is in it. Calls made while one is being taken wait for it
   * to end and then share the next one: listing the project (a `git` process) and reading every
   * file's size and time is the gate's whole cost per `_Stop`, and agents calling at once need
   * it only once. A call never shares a fingerprint that began before it, which could miss a
   * change made in between.
   */
  fingerprint(): Promise<string> {
    if (this.#fingerprinting === undefined) return this.#takeFingerprint();
    this.#nextFingerprint ??= this.#fingerprinting.then(noop, noop).then(() => {
      this.#nextFingerprint = undefined;
      return this.#takeFingerprint();
    });
    return this.#nextFingerprint;
  }

  #takeFingerprint(): Promise<string> {
    const taking = (async () => {
      const files = await this.#options.projectFiles(this.#options.cwd);
      return await fingerprintFiles(this.#options.cwd, files);
    })();
    this.#fingerprinting = taking;
    const done = () => {
      if (this.#fingerprinting === taking) this.#fingerprinting = undefined;
    };
    taking.then(done, done);
    return taking;
  }

  /**
   * Runs the suite on the current files and returns the result. Runs never overlap: a run
   * already going on the same files is joined; one going on older files is awaited first.
   */
  async runTests(): Promise<TestRun> {
    const fingerprint = await this.fingerprint();
    while (this.#running !== undefined && this.#running.fingerprint !== fingerprint) await this.#running.promise;
    return await (this.#running ?? this.#start(fingerprint)).promise;
  }

  /**
   * The `_Stop` answer: `""` when the suite was seen passing on the current files; an objection
   * naming the failing tests when it failed; when the files changed (or nothing ran yet) it
   * starts a run and waits up to `stopWaitMs`, then objects that the suite is still running.
   * Answers within about `stopWaitMs` + 150 ms, whatever happens.
   */
  async stop(): Promise<string> {
    const budgetMs = this.#options.stopWaitMs;
    const deadline = performance.now() + budgetMs;
    const decide = async (): Promise<string> => {
      for (;;) {
        const fingerprint = await this.fingerprint();
        const last = this.#last;
        if (last !== undefined && last.fingerprint === fingerprint) {
          return last.passed ? "" : failureText(last, this.#options.cwd);
        }
        const run = this.#running ?? this.#start(fingerprint);
        const left = deadline - performance.now();
        if (left <= 0) return this.#runningText();
        const finished = await within(run.promise.then(() => true), left, () => false);
        if (!finished) return this.#runningText();
        // The run ended in time: loop to check its fingerprint against the files as they are now.
      }
    };
    try {
      // Even listing a huge project cannot make _Stop late: past the budget, we object.
      return await within(decide(), budgetMs + 150, () => this.#runningText());
    } catch (error) {
      return `The test gate could not check the project: ${
        (error as Error).message
      }. Run the tests before ending the turn.`;
    }
  }

  /** The `_PostCompact` answer: the last known state in one or two lines, or `""`. */
  postCompact(): string {
    const last = this.#last;
    const runningLine = this.#running === undefined
      ? ""
      : `\nA new run of "${this.command}" is in progress; run_tests gives its result.`;
    if (last === undefined) return this.#running === undefined ? "" : runningLine.trimStart();
    const state = last.passed
      ? `passed (${counts(last)})`
      : last.timedOut
      ? "timed out"
      : `failed (${counts(last)})${last.failing.length > 0 ? `: ${last.failing.slice(0, 5).join("; ")}` : ""}`;
    return `Test gate: the last run of "${this.command}" ${state}.${runningLine}`;
  }

  /** Kills a run in progress and refuses new ones (for shutdown). */
  close(): void {
    this.#closed = true;
    this.#running?.handle.kill(true);
  }

  #runningText(): string {
    return `The test suite ("${this.command}") is running on the current files. Call the run_tests tool to get its result before ending the turn.`;
  }

  #start(fingerprint: string): Running {
    if (this.#closed) throw new Error("Cannot run the tests: the test gate is shutting down");
    const handle = runCommand(this.#options.command, {
      cwd: this.#options.cwd,
      timeoutMs: this.#options.timeoutMs,
      ...(this.#options.env === undefined ? {} : { env: this.#options.env }),
    });
    const promise = handle.done.then((outcome) => {
      const parsed = parseTestOutput(outcome.output);
      const failedCount = parsed.failed;
      const run: TestRun = {
        command: this.command,
        cwd: this.#options.cwd,
        passed: outcome.exitCode === 0 && !outcome.timedOut && (failedCount ?? 0) === 0,
        ...(parsed.passed === undefined ? {} : { passedCount: parsed.passed }),
        ...(failedCount === undefined ? {} : { failedCount }),
        failing: parsed.failing,
        exitCode: outcome.exitCode,
        timedOut: outcome.timedOut,
        ...(outcome.spawnError === undefined ? {} : { spawnError: outcome.spawnError }),
        durationMs: outcome.durationMs,
        outputTail: outcome.output.slice(-OUTPUT_TAIL_CHARS),
        fingerprint,
      };
      this.#last = run;
      if (this.#running === running) this.#running = undefined;
      return run;
    });
    const running: Running = { fingerprint, promise, handle };
    this.#running = running;
    return running;
  }
}

/** The objection for a failed run: what failed, and how to reproduce it. */
export function failureText(run: TestRun, cwd: string): string {
  const lines: string[] = [];
  if (run.spawnError !== undefined) {
    lines.push(`The test command could not start: ${run.spawnError}.`);
  } else if (run.timedOut) {
    lines.push(
      `The test suite did not finish in time and was stopped; make it finish (and pass) before ending the turn.`,
    );
  } else {
    lines.push(`The test suite fails (${counts(run)}). Make it pass before ending the turn.`);
  }
  if (run.failing.length > 0) lines.push("Failing tests:", ...run.failing.slice(0, 20).map((name) => `- ${name}`));
  if (run.failing.length > 20) lines.push(`- … and ${run.failing.length - 20} more`);
  if (run.failing.length === 0 && run.outputTail.trim() !== "") {
    // The runner named no test (a crash, a missing command…): its last words usually say why.
    lines.push(
      "Last lines of output:",
      ...run.outputTail.trimEnd().split("\n").slice(-8).map((line) => `  ${line.slice(0, 200)}`),
    );
  }
  lines.push(`Reproduce with: ${run.command} (in ${cwd})`);
  return lines.join("\n");
}

/**
 * The `run_tests` tool's text: verdict, counts, the command and the folder it ran in (a
 * server shared over HTTP may run in several), `note` when given, failing tests and the
 * output's tail.
 */
export function runSummary(run: TestRun, note = ""): string {
  const verdict = run.passed ? "PASSED" : run.timedOut ? "TIMED OUT (killed)" : "FAILED";
  const took = run.durationMs < 1000 ? `${run.durationMs} ms` : `${(run.durationMs / 1000).toFixed(1)} s`;
  const lines = [`${verdict}: ${counts(run)} — "${run.command}" in "${run.cwd}", ${took}`];
  if (note !== "") lines.push(note);
  if (run.spawnError !== undefined) lines.push(`The command could not start: ${run.spawnError}`);
  if (run.failing.length > 0) lines.push("Failing tests:", ...run.failing.map((name) => `- ${name}`));
  const tail = run.outputTail.trimEnd();
  if (tail !== "") lines.push("", `Output (last ${OUTPUT_TAIL_CHARS} characters at most):`, tail);
  return lines.join("\n");
}
