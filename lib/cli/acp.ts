/**
 * `cli.ts acp`: the Agent Client Protocol on stdin/stdout (lib/acp/), loaded only when asked
 * for, so `run` never pays for it.
 * @module
 */

import process from "node:process";
import { AgentError } from "../util/errors.ts";
import { stdout } from "./io.ts";

/** `cli.ts acp`: serves until stdin ends. Returns the exit status; throws `AgentError("usage")` on any argument. */
export async function acp(args: string[]): Promise<number> {
  if (args.length > 0) {
    throw new AgentError(
      "usage",
      `Unexpected argument ${JSON.stringify(args[0])}: acp takes no arguments (see --help)`,
    );
  }
  // The CLI's stdout writer watches the pipe: a client that closes it ends the process (141).
  stdout();
  const { serveAcp } = await import("../acp/server.ts");
  // serveAcp writes process.stdout itself and resolves once what it wrote is flushed.
  return await serveAcp({ env: process.env, stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });
}
