/**
 * `cli.ts acp` as a child process under the current runtime, connected to the official ACP
 * client (`@agentclientprotocol/sdk`'s `client()` app over the agent's stdio). Shared by the
 * ACP end-to-end tests.
 * @module
 */
import { spawn } from "node:child_process";
import process from "node:process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { within } from "./acp.ts";
import { repoRoot, runtime, tsCommand } from "./runtime.ts";

/** The SDK client's connection to the agent. */
type Connection = ReturnType<acp.ClientApp["connect"]>;

/** The running agent and its client connection. */
export interface AcpClientAgent {
  /** The SDK's view of the agent (requests, `buildSession`). */
  agent: Connection["agent"];
  /** The client connection itself. */
  connection: Connection;
  /** `Date.now()` when the child was spawned. */
  spawned: number;
  /** Everything the agent wrote to stderr so far. */
  stderr(): string;
  /** SIGKILL, as a crash would end it; resolves once it is gone. */
  kill(): Promise<void>;
  /**
   * Ends stdin and waits (up to 15 s, then SIGKILL) for the exit code, then (up to 2 s) for
   * its stderr to close, so `stderr()` is whole; `null` when it had to be killed.
   */
  stop(): Promise<number | null>;
}

/**
 * Spawns `cli.ts acp ARGS…` with `env` added to this process's environment and connects a
 * client named `name` to it; `setup` adds the client's handlers (permission, elicitation…).
 */
export function startAcpClient(
  env: Record<string, string>,
  options: { args?: string[]; name?: string; setup?: (app: acp.ClientApp) => acp.ClientApp } = {},
): AcpClientAgent {
  const [command, ...args] = tsCommand("cli.ts", runtime());
  const spawned = Date.now();
  const child = spawn(command!, [...args, "acp", ...(options.args ?? [])], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (c: string) => (stderr += c));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  // Its stderr is whole once the pipes close (its last lines may come after the exit).
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const stream = acp.ndJsonStream(
    Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
    Readable.toWeb(child.stdout) as unknown as ReadableStream<Uint8Array>,
  );
  const app = acp.client({ name: options.name ?? "sprout-acp-test" });
  const connection = (options.setup?.(app) ?? app).connect(stream);
  return {
    agent: connection.agent,
    connection,
    spawned,
    stderr: () => stderr,
    async kill() {
      child.kill("SIGKILL");
      await exited;
      connection.close();
    },
    async stop() {
      child.stdin.end();
      const code = await within(exited, 15_000);
      if (code === "timeout") child.kill("SIGKILL");
      else await within(closed, 2_000);
      connection.close();
      return code === "timeout" ? null : code;
    },
  };
}
