/**
 * The `./testing` entry point: fakes for hook authors and tests (a recording fake LLM server
 * and a scripted model). Placeholder until the api part of issue 10 lands its own file.
 *
 * @example
 * ```ts
 * import { startFakeLlm } from "./testing.ts";
 *
 * const fake = await startFakeLlm({ responses: [{ text: "hello" }] });
 * console.log(fake.url);
 * await fake.close();
 * ```
 * @module
 */
export * from "./lib/testing.ts";
