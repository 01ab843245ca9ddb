/**
 * A push-based async iterable with a result promise: what a prompt run returns
 * (events as data, for the CLI, ACP and tests alike). Producers `push` events and `close` with a result or an error;
 * consumers iterate the events and await `result`.
 * @module
 */

/**
 * The events of one run plus its outcome.
 * @example
 * const run: EventStream<AgentEvent, PromptResult> = agent.prompt("go");
 * for await (const event of run) console.log(event.type);
 * console.log((await run.result).stopReason);
 */
export interface EventStream<E, R> extends AsyncIterable<E> {
  /** Resolves when the run ends; rejects with the error that ended it. */
  readonly result: Promise<R>;
}

/**
 * Creates an {@link EventStream} and the functions that feed it. Events pushed before anyone
 * iterates are buffered; a second iterator gets only what the first has not taken.
 */
export function eventStream<E, R>(): {
  stream: EventStream<E, R>;
  push: (event: E) => void;
  close: (outcome: { result: R } | { error: unknown }) => void;
} {
  const queue: E[] = [];
  let done = false;
  let wake: (() => void) | undefined;
  let settle!: (outcome: { result: R } | { error: unknown }) => void;
  const result = new Promise<R>((resolve, reject) => {
    settle = (o) => ("error" in o ? reject(o.error) : resolve(o.result));
  });
  // An unobserved failure must not crash the process: consumers see it through `result`.
  result.catch(() => {});
  const stream: EventStream<E, R> = {
    result,
    async *[Symbol.asyncIterator]() {
      while (true) {
        const next = queue.shift();
        if (next !== undefined) {
          yield next;
          continue;
        }
        if (done) return;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    },
  };
  return {
    stream,
    push(event) {
      if (done) return;
      queue.push(event);
      wake?.();
    },
    close(outcome) {
      if (done) return;
      done = true;
      settle(outcome);
      wake?.();
    },
  };
}
