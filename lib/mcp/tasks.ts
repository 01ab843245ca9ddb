/**
 * Task-based tool calls (SPEC section 10): a server may answer `tools/call` with a task handle
 * instead of the result, and the client polls it to the end. Two shapes:
 * - the 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`, declared in every modern
 *   request's client capabilities): a `CreateTaskResult` with `resultType: "task"`, `taskId`,
 *   `status` and `pollIntervalMs`; `tasks/get` answers the task with its `result` or `error`
 *   inline once it is `completed` or `failed`, and with `inputRequests` while it is
 *   `input_required` (answered through `tasks/update`);
 * - the 2025-11-25 shape (legacy servers): the client asks for a task with `params.task`
 *   (only for tools whose `execution.taskSupport` is `"required"`), the answer is
 *   `{task: {taskId, status, pollInterval}}`, `tasks/get` polls, and `tasks/result` fetches the
 *   result once the task is terminal or needs input (its input requests then come as the
 *   server's own requests, answered as they arrive).
 *
 * Each change of status or status message is reported through `onProgress`. A cancel sends
 * `tasks/cancel`; so does the tool timeout, which bounds the whole wait.
 * @module
 */

import { abortError, AgentError } from "../util/errors.ts";
import { formatSeconds, sleep } from "../util/time.ts";
import { JsonRpcError } from "./jsonrpc.ts";
import { answerAll, ClientWaitTimeoutError, type InputContext, type InputHandler } from "./input-requests.ts";
import { asObject } from "../util/json.ts";

/** The poll interval when the server gives none, in ms. */
export const DEFAULT_POLL_INTERVAL_MS = 500;
/** The shortest and longest poll intervals the client keeps to, whatever the server says, in ms. */
export const POLL_INTERVAL_BOUNDS_MS: readonly [number, number] = [10, 30_000];
/** How long `tasks/cancel` may take when a task is abandoned, in ms. */
const CANCEL_TIMEOUT_MS = 5_000;

/** The statuses after which a task does not change. */
const TERMINAL = new Set(["completed", "failed", "cancelled"]);

/**
 * The task handle in a `tools/call` result, or `undefined` for an ordinary result: modern
 * `resultType: "task"` (the task's fields at the top level), legacy a `task` object without
 * `content`.
 */
export function taskOf(result: Record<string, unknown>): { taskId: string; task: Record<string, unknown> } | undefined {
  if (result.resultType === "task") {
    return typeof result.taskId === "string" ? { taskId: result.taskId, task: result } : undefined;
  }
  if (result.resultType !== undefined || result.content !== undefined) return undefined;
  const task = asObject(result.task);
  return typeof task?.taskId === "string" ? { taskId: task.taskId, task } : undefined;
}

/** What {@link awaitTask} needs. */
export interface AwaitTaskOptions {
  /** The era of the connection: which shape to speak. */
  modern: boolean;
  /** Server, tool, call id and the call's signal (a cancel sends `tasks/cancel`). */
  context: InputContext;
  /** The tool timeout's end (`Date.now()` ms): the whole wait, polls included. */
  deadline: number;
  /** The tool timeout in ms, for the message. */
  timeoutMs: number;
  /** Answers a modern task's `inputRequests`. */
  input: InputHandler | undefined;
  /**
   * The context handed to `input`: by default `context`; the connection's also aborts at the
   * deadline, so that nobody is asked past the tool timeout.
   */
  inputContext?: InputContext | undefined;
  /**
   * Sends one request (`tasks/get`, `tasks/update`, `tasks/result`, `tasks/cancel`) and
   * resolves with its raw result. `detached` (`tasks/cancel`): sent whatever the call's
   * signal and deadline say, bounded by `timeoutMs` alone.
   */
  request: (
    method: string,
    params: Record<string, unknown>,
    timeoutMs: number,
    detached?: boolean,
  ) => Promise<Record<string, unknown>>;
  /** Each new status (`working`, `input_required`…) or status message, as a line for the person. */
  onProgress?: ((message: string) => void) | undefined;
  /** Waits between polls; default a timer that the call's signal cuts short. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/**
 * Polls the task of `first` (see {@link taskOf}) to its end and resolves with the tool's
 * result (a `CallToolResult` object; a modern one still carries `resultType: "complete"`).
 * @throws {JsonRpcError} a `failed` task's error; {@link AgentError} `mcp` for a task that was
 *   cancelled by the server, or a malformed answer; {@link ClientWaitTimeoutError} past the
 *   deadline (after `tasks/cancel`); an `AbortError` when the call's signal aborts (after
 *   `tasks/cancel`, sent without waiting)
 */
export async function awaitTask(
  first: { taskId: string; task: Record<string, unknown> },
  options: AwaitTaskOptions,
): Promise<Record<string, unknown>> {
  const { context, modern } = options;
  const { taskId } = first;
  const pauseFor = options.sleep ?? sleep;
  const label = `task "${taskId}" of tool "${context.tool ?? "?"}" on server "${context.server}"`;
  let task = first.task;
  let shown = "";
  const answered = new Set<string>();
  const cancel = () =>
    options.request("tasks/cancel", { taskId }, CANCEL_TIMEOUT_MS, true).catch(() => ({} as Record<string, unknown>));
  const left = () => options.deadline - Date.now();
  let gaveUp = false;
  const timedOut = async (): Promise<never> => {
    gaveUp = true;
    await cancel();
    throw new ClientWaitTimeoutError(
      `Tool "${context.tool ?? "?"}" timed out after ${
        formatSeconds(options.timeoutMs)
      } s waiting for task "${taskId}" (status ${JSON.stringify(task.status)}); the task was cancelled`,
    );
  };
  try {
    for (;;) {
      context.signal.throwIfAborted();
      const status = typeof task.status === "string" ? task.status : "";
      const message = typeof task.statusMessage === "string" && task.statusMessage !== ""
        ? `${status}: ${task.statusMessage}`
        : status;
      if (message !== shown && message !== "") {
        shown = message;
        options.onProgress?.(`task ${message}`);
      }
      if (modern) {
        if (status === "completed") {
          const result = asObject(task.result);
          if (result === undefined) throw new AgentError("mcp", `The ${label} completed without a result`);
          return result;
        }
        if (status === "failed") throw failedError(label, task.error);
        if (status === "cancelled") throw new AgentError("mcp", `The ${label} was cancelled by the server`);
        if (status === "input_required") {
          const requests = asObject(task.inputRequests) ?? {};
          const fresh = Object.fromEntries(Object.entries(requests).filter(([key]) => !answered.has(key)));
          if (Object.keys(fresh).length > 0) {
            const responses = await answerAll(fresh, options.input, options.inputContext ?? context);
            for (const key of Object.keys(fresh)) answered.add(key);
            context.signal.throwIfAborted();
            if (left() <= 0) return await timedOut();
            await options.request("tasks/update", { taskId, inputResponses: responses }, left());
            task = await options.request("tasks/get", { taskId }, Math.max(1, left()));
            continue;
          }
        }
      } else if (TERMINAL.has(status) || status === "input_required") {
        // tasks/result waits for the end; a task that needs input asks through the server's own requests meanwhile.
        if (left() <= 0) return await timedOut();
        try {
          return await options.request("tasks/result", { taskId }, left());
        } catch (error) {
          if (error instanceof AgentError && error.code === "timeout") return await timedOut();
          throw error;
        }
      }
      const interval = pollInterval(task, modern);
      if (left() <= 0) return await timedOut();
      await pauseFor(Math.min(interval, left()), context.signal);
      if (left() <= 0) return await timedOut();
      try {
        task = await options.request("tasks/get", { taskId }, left());
      } catch (error) {
        if (error instanceof AgentError && error.code === "timeout") return await timedOut();
        throw error;
      }
    }
  } catch (error) {
    if (context.signal.aborted) {
      void cancel();
      throw abortError(`The ${label} was cancelled`);
    }
    // The person was still answering the task's question at the deadline.
    if (!gaveUp && options.inputContext?.signal.aborted === true) return await timedOut();
    throw error;
  }
}

/** The interval to wait before the next poll: the server's, within {@link POLL_INTERVAL_BOUNDS_MS}. */
export function pollInterval(task: Record<string, unknown>, modern: boolean): number {
  const given = modern ? task.pollIntervalMs : task.pollInterval;
  const ms = typeof given === "number" && Number.isFinite(given) ? given : DEFAULT_POLL_INTERVAL_MS;
  return Math.min(POLL_INTERVAL_BOUNDS_MS[1], Math.max(POLL_INTERVAL_BOUNDS_MS[0], ms));
}

function failedError(label: string, error: unknown): Error {
  const e = asObject(error);
  const code = typeof e?.code === "number" ? e.code : -32603;
  const text = typeof e?.message === "string" ? e.message : "the task failed";
  return new JsonRpcError(`The ${label} failed: ${text} (code ${code})`, { code, message: text, data: e?.data });
}
