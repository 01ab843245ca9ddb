// The recap at the end of `npm test` (scripts/test.sh): one line per runner with its passed,
// failed and skipped counts, then the failing tests by name, read from each runner's saved
// output, so that the last lines of the ~7,000 say what happened. It never changes the exit
// status: test.sh decides that from the runners' own exit codes, and a runner whose output
// holds no summary (it crashed, or was killed) is shown as such.
// Usage: node scripts/recap.mjs [--failed-steps "tsc lint"] NAME=FORMAT:EXIT:FILE …
//   FORMAT is node (node --test's TAP), bun (bun test) or deno (deno test); EXIT the runner's
//   exit status, which says passed or FAILED (the counts come from the output).
// Plain JavaScript: runs on Node without tsx.
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import process from "node:process";
import { pathToFileURL } from "node:url";

// deno-lint-ignore no-control-regex
const ansi = /\x1b\[[0-9;]*m/g;

/** Reads node --test's TAP: the `# pass N` summary and the failing tests (not the suites that only contain them). */
export function parseNode(text) {
  const lines = text.replace(ansi, "").split("\n");
  const counts = {};
  for (const line of lines) {
    const m = /^# (tests|pass|fail|cancelled|skipped|todo) (\d+)$/.exec(line);
    if (m) counts[m[1]] = Number(m[2]);
  }
  const failures = [];
  const names = []; // the `# Subtest:` names, by depth (4 spaces each)
  for (let i = 0; i < lines.length; i++) {
    const subtest = /^( *)# Subtest: (.*)$/.exec(lines[i]);
    if (subtest) {
      names.length = subtest[1].length / 4;
      names.push(subtest[2]);
      continue;
    }
    const notOk = /^( *)not ok \d+ - (.*?)(?: # (?:SKIP|TODO)\b.*)?$/.exec(lines[i]);
    if (!notOk || / # TODO\b/.test(lines[i])) continue; // a failing todo test does not fail the run
    const depth = notOk[1].length / 4;
    // The YAML block that follows: a suite that failed only through its tests is not listed.
    let type = "";
    let location = "";
    for (let j = i + 1; j < lines.length && !/^ *\.\.\.$/.test(lines[j]); j++) {
      const field = /^ *(failureType|location): '(.*)'$/.exec(lines[j]);
      if (field?.[1] === "failureType") type = field[2];
      else if (field?.[1] === "location") location = field[2];
    }
    if (type === "subtestsFailed") continue;
    const path = [...names.slice(0, depth), notOk[2]].join(" > ");
    failures.push({ file: sourceFile(location.replace(/:\d+:\d+$/, "")), name: path });
  }
  if (counts.pass === undefined) return { summary: undefined, failures };
  return {
    summary: [
      `${counts.pass} passed`,
      `${counts.fail ?? 0} failed`,
      `${counts.skipped ?? 0} skipped`,
      ...(counts.cancelled ? [`${counts.cancelled} cancelled`] : []),
      ...(counts.todo ? [`${counts.todo} todo`] : []),
    ].join(", "),
    failures,
  };
}

/** The test file a location names: the source of a compiled file of scripts/bundle-tests.mjs, relative to the cwd. */
function sourceFile(file) {
  if (file === "") return "";
  const path = file.replace(/^file:\/\//, "");
  const compiled = /\/node_modules\/\.cache\/sprout-agent-tests\/suite\/(.*)\.mjs$/.exec(path);
  if (compiled) return `${compiled[1]}.ts`;
  return path.startsWith("/") ? relative(process.cwd(), path) : path;
}

/** Reads bun test's output: the ` N pass`/` N fail`/` N skip` summary and the `(fail) name` lines, with their files. */
export function parseBun(text) {
  const counts = {};
  const failures = [];
  let file = "";
  // Bun may list the failures again at the end ("N tests failed:"), under no file header.
  let repeating = false;
  for (const line of text.replace(ansi, "").split("\n")) {
    if (/^\s*\d+ tests? failed:$/.test(line) || /^Ran \d+ tests?\b/.test(line)) repeating = true;
    const header = /^(\S.*\.(?:test|spec)\.[cm]?[jt]sx?):$/.exec(line);
    if (header && !repeating) file = header[1].replace(/^\.\//, "");
    const count = /^ (\d+) (pass|fail|skip|todo)$/.exec(line);
    if (count) counts[count[2]] = Number(count[1]);
    const failed = /^\(fail\) (.*?)(?: \[[\d.]+m?s\])?$/.exec(line);
    if (failed && !failures.some((f) => f.name === failed[1] && (repeating || f.file === file))) {
      failures.push({ file: repeating ? "" : file, name: failed[1] });
    }
  }
  if (counts.pass === undefined && counts.fail === undefined) return { summary: undefined, failures };
  return {
    summary: [
      `${counts.pass ?? 0} passed`,
      `${counts.fail ?? 0} failed`,
      `${counts.skip ?? 0} skipped`,
      ...(counts.todo ? [`${counts.todo} todo`] : []),
    ].join(", "),
    failures,
  };
}

/**
 * Reads deno test's output: the `ok | N passed | N failed | N ignored` line (Deno counts a
 * describe as a test and the tests in it as steps, and says so) and the FAILURES section,
 * each name with the file its progress line named.
 */
export function parseDeno(text) {
  const lines = text.replace(ansi, "").split("\n");
  let summary;
  const files = new Map(); // test name → file, from the progress lines `./file => name ... FAILED`
  for (const line of lines) {
    const s = /^(?:ok|FAILED) \| (\d+ passed.*)$/.exec(line);
    if (s) {
      // "2 passed (6 steps) | 1 failed | 1 ignored (1 step) (47ms)"; Deno leaves out "0 ignored".
      const parts = s[1].replace(/ \((?:[\d.]+(?:µs|ms|s|m|h))+\)$/, "").split(" | ");
      const part = (word) => parts.find((p) => p.startsWith(`${parseInt(p)} ${word}`)) ?? `0 ${word}`;
      const counts = [part("passed"), part("failed"), part("ignored")].join(", ");
      summary = counts + (/ steps?\)/.test(counts) ? " (a describe counts as a test, its tests as steps)" : "");
    }
    const progress = /^(\S+) => (.*) \.\.\. FAILED\b/.exec(line);
    if (progress && !files.has(progress[2])) files.set(progress[2], progress[1].replace(/^\.\//, ""));
  }
  const failures = [];
  const start = lines.findIndex((l) => l.trim() === "FAILURES");
  if (start >= 0) {
    for (const line of lines.slice(start + 1)) {
      if (/^(ok|FAILED) \|/.test(line)) break;
      const m = /^(.*) => \S+$/.exec(line);
      if (m) failures.push({ file: files.get(m[1]) ?? "", name: m[1].replaceAll(" ... ", " > ") });
    }
  }
  return { summary, failures };
}

const parsers = { node: parseNode, bun: parseBun, deno: parseDeno };

/** `: ` and the first error line of a runner's output (esbuild's, Deno's, Node's), or "" when it has none. */
function firstError(text) {
  const line = text.replace(ansi, "").split("\n").find((l) => /^(?:✘ \[ERROR\]|error:|\w*Error:)/.test(l));
  return line === undefined ? "" : `: ${line.trim().slice(0, 200)}`;
}

/** The line scripts/test.sh prints when a runner ran past its time limit, with the last test it reported. */
function stoppedLine(text) {
  const stopped = /^::: (stopped after \d+ s) \(SPROUT_TEST_RUNNER_SECS\)/m.exec(text);
  if (stopped === null) return undefined;
  const tests = text.split("\n").filter((l) => /^ *(not )?ok \d+ - |^\((pass|fail)\) |\.\.\. (ok|FAILED)/.test(l));
  const last = tests.at(-1)?.trim().slice(0, 200);
  return `${stopped[1]}, the time limit (SPROUT_TEST_RUNNER_SECS); the last test it reported: ${last ?? "none"}`;
}

/** The recap's lines for the runs `[{name, format, code, text}]` and the names of the steps that failed. */
export function recap(runs, failedSteps = []) {
  const out = ["::: recap"];
  const failing = [];
  const width = Math.max(...runs.map((r) => r.name.length), failedSteps.length > 0 ? "steps".length : 0);
  for (const run of runs) {
    const { summary, failures } = parsers[run.format](run.text);
    const verdict = run.code === 0 ? "ok" : `FAILED (exit ${run.code})`;
    out.push(
      `${run.name.padEnd(width)}  ${verdict} · ${
        summary ?? (stoppedLine(run.text) ??
          `no summary in its output (it crashed, or was killed)${firstError(run.text)}`)
      }`,
    );
    for (const f of failures) failing.push(`  ${run.name.padEnd(width)}  ${f.file ? `${f.file}: ` : ""}${f.name}`);
  }
  if (failedSteps.length > 0) out.push(`${"steps".padEnd(width)}  failed: ${failedSteps.join(", ")}`);
  if (failing.length > 0) out.push("failing tests:", ...failing);
  return out;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  let failedSteps = [];
  if (args[0] === "--failed-steps") {
    failedSteps = (args[1] ?? "").split(/\s+/).filter(Boolean);
    args.splice(0, 2);
  }
  const runs = args.map((arg) => {
    const m = /^([^=]+)=(node|bun|deno):(\d+):(.+)$/.exec(arg);
    if (!m) {
      console.error(`usage: node scripts/recap.mjs [--failed-steps "a b"] NAME=node|bun|deno:EXIT:FILE …; got ${arg}`);
      process.exit(2);
    }
    let text = "";
    try {
      text = readFileSync(m[4], "utf8");
    } catch {
      // No output file: shown as a runner without a summary.
    }
    return { name: m[1], format: m[2], code: Number(m[3]), text };
  });
  console.log(recap(runs, failedSteps).join("\n"));
}
