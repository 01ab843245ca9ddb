/**
 * Which project folder a request's tests run in. A folder given by `--cwd` (`TEST_GATE_CWD`) is
 * the only one. Without it, the gate follows the agent: sprout-agent sends the folder it works
 * in as `cwd` in every hook call's `params._meta["sprout-agent/hook"]` (its SPEC section 2.3),
 * and an HTTP server has no other way to know it. `run_tests` carries no hook context, so the
 * folder is remembered per agent session (`_meta["sprout-agent/session"]`); a request with
 * neither uses the server's current folder. One {@link TestGate} per folder.
 * @module
 */
import { isAbsolute } from "node:path";
import { type GateOptions, TestGate } from "./gate.ts";

/** Options of {@link Gates}: the gate's, and whether to follow the agent's folder. */
export type GatesOptions = GateOptions & {
  /** True when no folder was configured: use the `cwd` the agent sends. Default false. */
  followAgentCwd?: boolean;
};

/** The most agent sessions whose folder is remembered (least recently seen forgotten first). */
const MAX_SESSIONS = 1000;

/** The absolute `cwd` of a hook call's `_meta["sprout-agent/hook"]`, if any. */
export function agentCwd(meta: Record<string, unknown> | undefined): string | undefined {
  const hook = meta?.["sprout-agent/hook"];
  const cwd = typeof hook === "object" && hook !== null ? (hook as Record<string, unknown>)["cwd"] : undefined;
  return typeof cwd === "string" && isAbsolute(cwd) ? cwd : undefined;
}

/**
 * The gates of one server: one fixed folder, or one gate per folder the agents name.
 * @example
 * const gates = new Gates({ command: "bun test", cwd: process.cwd(), followAgentCwd: true });
 * gates.for({ "sprout-agent/hook": { event: "Stop", cwd: "/home/me/app" } }).stop();
 */
export class Gates {
  readonly #options: GateOptions;
  readonly #follow: boolean;
  readonly #gates = new Map<string, TestGate>();
  readonly #sessions = new Map<string, string>();

  constructor(options: GatesOptions) {
    const { followAgentCwd, ...gate } = options;
    this.#options = gate;
    this.#follow = followAgentCwd ?? false;
  }

  /** The test command as text (the same for every folder). */
  get command(): string {
    return this.#gate(this.#options.cwd).command;
  }

  /** The gate a request with this `_meta` belongs to. */
  for(meta: Record<string, unknown> | undefined): TestGate {
    if (!this.#follow) return this.#gate(this.#options.cwd);
    const session = meta?.["sprout-agent/session"];
    const key = typeof session === "string" && session !== "" ? session : undefined;
    let cwd = agentCwd(meta);
    if (cwd !== undefined && key !== undefined) {
      this.#sessions.delete(key); // re-insert: Map order is our recency order
      this.#sessions.set(key, cwd);
      if (this.#sessions.size > MAX_SESSIONS) this.#sessions.delete(this.#sessions.keys().next().value!);
    }
    cwd ??= key === undefined ? undefined : this.#sessions.get(key);
    return this.#gate(cwd ?? this.#options.cwd);
  }

  /**
   * True when a request with this `_meta` runs in the server's own folder only for want of
   * another: no `--cwd`, and neither the request nor its session has named the agent's folder
   * (sprout-agent names it in hook calls, so a `run_tests` before the session's first hook
   * call has none). `run_tests` says so, since that folder is likely not the agent's project.
   */
  guessesFolder(meta: Record<string, unknown> | undefined): boolean {
    if (!this.#follow || agentCwd(meta) !== undefined) return false;
    const session = meta?.["sprout-agent/session"];
    return typeof session !== "string" || session === "" || !this.#sessions.has(session);
  }

  /** Kills every run in progress and refuses new ones (for shutdown). */
  close(): void {
    for (const gate of this.#gates.values()) gate.close();
  }

  #gate(cwd: string): TestGate {
    let gate = this.#gates.get(cwd);
    if (gate === undefined) {
      gate = new TestGate({ ...this.#options, cwd });
      this.#gates.set(cwd, gate);
    }
    return gate;
  }
}
