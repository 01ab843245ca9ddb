/**
 * The JSON-RPC side of a stdio server (SPEC section 10): the child spawned with a
 * {@link JsonRpcPeer} over its stdin and stdout, failures named by the child's exit (code,
 * signal, stderr tail) rather than by a broken pipe, and replies too long to read failing
 * their request at once.
 * @module
 */

import { AgentError } from "../util/errors.ts";
import { withTimeout } from "../util/time.ts";
import { exitError } from "./exit.ts";
import { INVALID_REQUEST } from "./jsonrpc.ts";
import type { JsonRpcMessage, JsonRpcPeer } from "./jsonrpc.ts";
import { spawnStdio } from "./stdio.ts";
import type { OversizeLine, StdioProcess } from "./stdio.ts";
import type { McpExitInfo, StdioServerConfig } from "./types.ts";

/** Options of {@link openStdioPeer}. */
export interface StdioPeerOptions {
  /** The server's name, for messages. */
  name: string;
  /** Default working folder (the server's `cwd` wins). */
  cwd: string;
  /** The agent's environment, source of the pass-through list. */
  env: Record<string, string | undefined>;
  /** Largest line accepted from the server, in bytes. */
  maxLineBytes: number;
  /** Makes the connection's peer over `send`. */
  newPeer: (send: (message: JsonRpcMessage) => Promise<void>) => JsonRpcPeer;
  /** Non-fatal problems. */
  onWarning: (message: string) => void;
  /** Each line of the server's stderr (see `SpawnStdioOptions.onStderrLine`). */
  onStderrLine?: ((line: string) => void) | undefined;
  /** The process ended (see `SpawnStdioOptions.onExit`). */
  onExit: (info: McpExitInfo) => void;
}

/**
 * Spawns a stdio server and the peer that talks to it.
 * @throws {AgentError} `mcp-connect` (a rejection) when the command is not found or cannot start
 */
export async function openStdioPeer(
  config: StdioServerConfig,
  options: StdioPeerOptions,
): Promise<{ proc: StdioProcess; peer: JsonRpcPeer }> {
  const { name, maxLineBytes } = options;
  const proc = await spawnStdio(config, {
    name,
    cwd: options.cwd,
    env: options.env,
    maxLineBytes,
    onMessage: (m) => peer.receive(m),
    onWarning: options.onWarning,
    ...(options.onStderrLine === undefined ? {} : { onStderrLine: options.onStderrLine }),
    onOversize: (line) => failOversize(peer, line, { name, maxLineBytes }),
    onExit: options.onExit,
  });
  // A write to a server that just died fails (EPIPE) before its exit is seen: wait for the
  // exit briefly, so the error gives the exit code and the stderr tail, not "write EPIPE".
  const peer = options.newPeer((m) =>
    proc.send(m).catch(async (error: unknown) => {
      const info = await withTimeout(proc.exited, 500);
      throw info === undefined ? error : exitError(name, info);
    })
  );
  return { proc, peer };
}

export { exitError };

/**
 * A reply too long to read must not leave its request waiting for its timeout (660 s for a
 * tool): fail that request now, naming the size and the variable. The request is found by
 * the id read from the skipped bytes (exact: the top level of the JSON, not a guess). When
 * no id can be read (the line is not a JSON-RPC object) and exactly one request is
 * pending, the line can only be that request's reply, so it fails; with several pending,
 * failing the oldest could fail a call whose reply is still to come, so they are left to
 * their own timeouts. A request from the server that is too long is answered with -32600,
 * so the server does not wait on it either.
 */
function failOversize(peer: JsonRpcPeer, line: OversizeLine, options: { name: string; maxLineBytes: number }): void {
  const max = options.maxLineBytes;
  const size = line.complete ? `is ${line.bytes} bytes` : `is longer than ${max} bytes`;
  if (line.isRequest) {
    if (line.id !== undefined) {
      peer.answerError(
        line.id,
        INVALID_REQUEST,
        `Request too large: the message ${size}, over the ${max}-byte limit of the client`,
      );
    }
    return;
  }
  const id = line.id ?? (line.complete && peer.pendingCount === 1 ? peer.pendingIds()[0] : undefined);
  if (id === undefined) return;
  peer.fail(id, (method) =>
    new AgentError(
      "mcp",
      `Request "${method}" to server "${options.name}" failed: its reply ${size}, over the ${max}-byte limit set by SPROUT_AGENT_MAX_LINE_BYTES (raise it, or make the server answer with less)`,
    ));
}
