/**
 * Reads pass/fail counts and failing test names out of a test runner's output: `bun test`,
 * `deno test`, `node --test` (spec and TAP reporters). Pure functions, no I/O.
 * @module
 */

/** What could be read from a runner's output. Counts are absent when no known summary was found. */
export interface ParsedResults {
  /** Which runner's format matched, or `"unknown"` (then only the exit code says anything). */
  runner: "bun" | "deno" | "node" | "unknown";
  passed?: number;
  failed?: number;
  /** Names of failing tests, in output order, without duplicates. */
  failing: string[];
}

/** Most failing names kept (a suite that is all red should not flood the LLM). */
export const MAX_FAILING_NAMES = 50;

// deno-lint-ignore no-control-regex
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g;

/** Removes terminal colour codes (runners add them even with NO_COLOR now and then). */
export function stripAnsi(text: string): string {
  return text.replace(ANSI, "");
}

function unique(names: string[]): string[] {
  return [...new Set(names.map((name) => name.trim()).filter((name) => name !== ""))].slice(0, MAX_FAILING_NAMES);
}

function lastNumber(text: string, pattern: RegExp): number | undefined {
  let found: number | undefined;
  for (const match of text.matchAll(pattern)) found = Number(match[1]);
  return found;
}

/**
 * Parses the combined stdout and stderr of one test run.
 * @example
 * parseTestOutput("(fail) math > adds [1ms]\n 3 pass\n 1 fail\n") // {runner: "bun", passed: 3, failed: 1, failing: ["math > adds"]}
 */
export function parseTestOutput(raw: string): ParsedResults {
  const text = stripAnsi(raw).replace(/\r\n?/g, "\n");

  // bun test: "(fail) suite > name [1.23ms]" lines, then " 3 pass" / " 1 fail" near the end.
  const bunPassed = lastNumber(text, /^\s*(\d+) pass$/gm);
  const bunFailed = lastNumber(text, /^\s*(\d+) fail$/gm);
  if (bunPassed !== undefined || bunFailed !== undefined) {
    const failing = [...text.matchAll(/^\(fail\) (.*?)(?: \[[\d.]+m?s\])?$/gm)].map((m) => m[1] ?? "");
    return { runner: "bun", passed: bunPassed ?? 0, failed: bunFailed ?? 0, failing: unique(failing) };
  }

  // deno test: "ok | 3 passed | 0 failed (12ms)" or "FAILED | 1 passed (1 step) | 2 failed (1 step)",
  // failing names listed under " FAILURES " as "suite ... name => file:line".
  const deno = [...text.matchAll(/^(?:ok|FAILED) \| (\d+) passed(?: \([^)]*\))? \| (\d+) failed/gm)].at(-1);
  if (deno !== undefined) {
    const section = text.split(/^ FAILURES $/m)[1] ?? "";
    const failing = [...section.matchAll(/^(.+?) => \S+$/gm)].map((m) => (m[1] ?? "").replaceAll(" ... ", " > "));
    return { runner: "deno", passed: Number(deno[1]), failed: Number(deno[2]), failing: unique(failing) };
  }

  // node --test, spec reporter: "ℹ pass 2" / "ℹ fail 1", names under "✖ failing tests:".
  const specPassed = lastNumber(text, /^ℹ pass (\d+)$/gm);
  const specFailed = lastNumber(text, /^ℹ fail (\d+)$/gm);
  if (specPassed !== undefined || specFailed !== undefined) {
    const section = text.split(/^✖ failing tests:$/m)[1] ?? "";
    const failing = [...section.matchAll(/^✖ (.*?)(?: \([\d.]+m?s\))?$/gm)].map((m) => m[1] ?? "");
    return { runner: "node", passed: specPassed ?? 0, failed: specFailed ?? 0, failing: unique(failing) };
  }

  // node --test, TAP reporter: "# pass 2" / "# fail 1", "not ok 3 - name" (suites whose only
  // failure is a failing subtest are left out: the subtest is named instead).
  const tapPassed = lastNumber(text, /^# pass (\d+)$/gm);
  const tapFailed = lastNumber(text, /^# fail (\d+)$/gm);
  if (tapPassed !== undefined || tapFailed !== undefined) {
    const failing: string[] = [];
    const lines = text.split("\n");
    for (const [index, line] of lines.entries()) {
      const match = /^\s*not ok \d+ - (.*?)(?: # .*)?$/.exec(line);
      if (match === null) continue;
      const block = lines.slice(index + 1, index + 12).join("\n");
      const blockEnd = block.search(/^\s*(?:not )?ok \d+/m);
      const yaml = blockEnd === -1 ? block : block.slice(0, blockEnd);
      if (!yaml.includes("failureType: 'subtestsFailed'")) failing.push(match[1] ?? "");
    }
    return { runner: "node", passed: tapPassed ?? 0, failed: tapFailed ?? 0, failing: unique(failing) };
  }

  return { runner: "unknown", failing: [] };
}
