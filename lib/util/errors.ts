/**
 * The one error class of the core: callers branch on `code`, never on the message text.
 * @module
 */

/**
 * What kind of failure an {@link AgentError} reports.
 * @example
 * const exitCode = (code: AgentErrorCode) => (code === "config" || code === "usage" ? 2 : 1);
 */
export type AgentErrorCode =
  | "config" // bad environment, flags, .mcp.json or script file: exit 2
  | "usage" // bad command line: exit 2
  | "llm" // the LLM failed after retries, or the scripted model ran out: exit 1
  | "mcp-connect" // a server could not start or be reached
  | "mcp" // a request to a server failed (transport, JSON-RPC error, exit)
  | "timeout" // a deadline passed
  | "session" // a transcript cannot be claimed or found: unknown or bad id, in use, already there
  | "cancelled"; // the caller cancelled

/**
 * An error with a machine-readable `code`.
 * @example
 * throw new AgentError("config", 'Invalid SPROUT_AGENT_MAX_ROUNDS: "x" is not a whole number');
 */
export class AgentError extends Error {
  /** What kind of failure this is; callers branch on it (the CLI exits 2 for `config` and `usage`, 1 for the others). */
  readonly code: AgentErrorCode;
  /** HTTP status for `llm` errors, when there was one. */
  readonly status: number | undefined;
  /**
   * Creates an error whose `name` is `"AgentError"`.
   * @param code the failure kind, kept as {@link AgentError.code}
   * @param message what failed, in the house style: sentence case, the failed action first,
   *   quoted values, no trailing period
   * @param options.cause the underlying error, kept as the standard `Error.cause` (omitted when undefined)
   * @param options.status the HTTP status, kept as {@link AgentError.status}
   */
  constructor(code: AgentErrorCode, message: string, options?: { cause?: unknown; status?: number }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "AgentError";
    this.code = code;
    this.status = options?.status;
  }
}

/** True for the error an aborted `fetch` or an aborted wait throws. */
export function isAbortError(error: unknown): boolean {
  return error instanceof Error && (error.name === "AbortError" || (error as { code?: string }).code === "ABORT_ERR");
}

/** An `AbortError` (a `DOMException`, as `fetch` throws) for code that aborts by hand. */
export function abortError(message = "The operation was aborted"): Error {
  return new DOMException(message, "AbortError");
}
