/**
 * The tool guard's three rules, as pure functions of one tool call (no I/O, no MCP):
 *
 * - `write-outside-cwd`: a write tool whose path argument resolves outside the session's
 *   folder (the agent's `cwd`) is denied.
 * - `ask-before`: a shell command on the configured list (`rm`, `git push`, `curl | sh`…) is
 *   asked about: the agent puts the question to the person, or denies when no one can answer.
 * - `force-with-lease`: `git push --force` (or `-f`) is rewritten to `--force-with-lease`,
 *   which pushes the same but refuses to overwrite commits it has not seen.
 *
 * Each answer is a typed hook answer (sprout-agent's SPEC 7.7): `{decision, reason,
 * updatedInput, additionalContext}`; `undefined` means no rule applies (the hook says nothing).
 * @module
 */
import { homedir } from "node:os";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { parseCommandLine, type Pipeline, programWords, runs, type SimpleCommand } from "./shell.ts";

/** What the guard checks, and on which tools. Every list is configurable (options.ts). */
export interface GuardRules {
  /** Globs over qualified tool names (`fs__write_file`) whose path arguments must stay inside cwd. */
  writeTools: string[];
  /** The argument names that hold paths in a write tool: a string, or an array of strings. */
  pathArgs: string[];
  /** Globs over qualified tool names that run shell commands. */
  shellTools: string[];
  /** The argument names that hold the command in a shell tool: a string, or an argv array. */
  commandArgs: string[];
  /**
   * Commands to ask about: words a command starts with (`git push`), or a pipeline of them
   * (`curl | sh`: a `curl` that pipes, directly or not, into `sh`).
   */
  ask: string[];
  /** Rewrite `git push --force`/`-f` to `--force-with-lease` (rule `force-with-lease`). */
  forceWithLease: boolean;
}

/**
 * The defaults: the write tools of `@modelcontextprotocol/server-filesystem` and tools named
 * like them, its path arguments (`move_file` takes `source` and `destination`) and common
 * others, shell tools by their usual names, and the commands that lose work or run code from
 * the network.
 */
export const DEFAULT_RULES: GuardRules = {
  writeTools: ["*__write_*", "*__edit_*", "*__create_directory", "*__move_*", "*__delete_*", "*__remove_*"],
  pathArgs: ["path", "paths", "file", "filePath", "file_path", "source", "destination", "target"],
  shellTools: ["*__shell*", "*__bash*", "*__*command", "*__exec"],
  commandArgs: ["command", "cmd", "script"],
  ask: ["rm", "git push", "git reset --hard", "curl | sh", "curl | bash", "wget | sh", "wget | bash"],
  forceWithLease: true,
};

/** A typed `_PreToolUse` answer. */
export interface GuardAnswer {
  decision: "allow" | "deny" | "ask";
  /** For `deny`: what the model reads; for `ask`: the question the person reads. */
  reason?: string;
  /** The arguments to run the tool with instead. */
  updatedInput?: Record<string, unknown>;
  /** Why the arguments were rewritten, for the model. */
  additionalContext?: string;
}

/** The part of `_meta["sprout-agent/hook"].toolCall` the rules read. */
export interface ToolCall {
  /** The qualified name the model used: `server__tool`. */
  name: string;
  arguments: Record<string, unknown>;
}

/** The globs the hook declares (`_meta["sprout-agent/hook"].tools`): it is called for these tools only. */
export function declaredTools(rules: GuardRules): string[] {
  return [...new Set([...rules.writeTools, ...rules.shellTools])];
}

/**
 * Whether `name` matches `glob` as the agent matches declared tools (SPEC 7.6): `*` any run
 * of characters, `?` one character, everything else literal.
 * @example matchesGlob("fs__write_file", "*__write_*") // true
 */
export function matchesGlob(name: string, glob: string): boolean {
  const pattern = glob.split("").map((c) => c === "*" ? ".*" : c === "?" ? "." : c.replace(/[\\^$.+()[\]{}|]/g, "\\$&"))
    .join("");
  return new RegExp(`^${pattern}$`, "s").test(name);
}

/**
 * The guard's answer for one call in the folder `cwd` (the agent's; `undefined` when the agent
 * sent none). Deny beats ask beats a plain rewrite; `undefined` when no rule applies.
 * @param home the folder `~` names (as `@modelcontextprotocol/server-filesystem` expands it);
 *   `null` when unknown, and then a path starting with `~` is denied
 * @example
 * checkToolCall({ name: "fs__write_file", arguments: { path: "../x" } }, "/work/p", DEFAULT_RULES)
 * // { decision: "deny", reason: 'Denied by tool-guard (rule write-outside-cwd): "path" is "../x", …' }
 */
export function checkToolCall(
  call: ToolCall,
  cwd: string | undefined,
  rules: GuardRules,
  home: string | null = homeFolder(),
): GuardAnswer | undefined {
  const applies = (globs: readonly string[]) => globs.some((glob) => matchesGlob(call.name, glob));
  if (applies(rules.writeTools)) {
    const denial = writeOutside(call.arguments, cwd, rules.pathArgs, home);
    if (denial !== undefined) return { decision: "deny", reason: denial };
  }
  if (!applies(rules.shellTools)) return undefined;
  const arg = rules.commandArgs.find((name) => isCommand(call.arguments[name]));
  if (arg === undefined) return undefined;
  const command = call.arguments[arg] as string | string[];
  const rewritten = rules.forceWithLease ? forceWithLease(command) : command;
  const changed = rewritten !== command;
  const updated = changed ? { updatedInput: { ...call.arguments, [arg]: rewritten } } : {};
  const note = "--force was rewritten to --force-with-lease (rule force-with-lease)";
  const asked = askedFor(pipelinesOf(rewritten), rules.ask);
  if (asked.length > 0) {
    const shown = typeof rewritten === "string"
      ? JSON.stringify(cut(rewritten, 300))
      : cut(JSON.stringify(rewritten), 300);
    const names = asked.map((entry) => JSON.stringify(entry)).join(" and ");
    return {
      decision: "ask",
      reason: `Run ${shown}? tool-guard asks before ${names} (rule ask-before)${changed ? `; ${note}` : ""}`,
      ...updated,
    };
  }
  if (!changed) return undefined;
  return {
    decision: "allow",
    ...updated,
    additionalContext: `${note}: it pushes the same, but refuses to overwrite commits on the remote that ` +
      "this clone has not fetched. If it is rejected, fetch and look at what changed before pushing again.",
  };
}

/** The denial for the first path argument that resolves outside `cwd`, or `undefined`. */
function writeOutside(
  args: Record<string, unknown>,
  cwd: string | undefined,
  pathArgs: readonly string[],
  home: string | null,
): string | undefined {
  const rule = "Denied by tool-guard (rule write-outside-cwd)";
  for (const name of pathArgs) {
    const value = args[name];
    const paths = typeof value === "string" ? [value] : Array.isArray(value) ? value.filter(isString) : [];
    for (const path of paths) {
      if (cwd === undefined || !isAbsolute(cwd)) {
        return `${rule}: the agent sent no session folder (cwd), so ${JSON.stringify(name)} cannot be checked`;
      }
      const full = resolveLike(path, cwd, home);
      if (full === undefined) {
        return `${rule}: ${JSON.stringify(name)} is ${JSON.stringify(path)}, and the home folder ~ is unknown here`;
      }
      if (!inside(full, cwd)) {
        const [arg, given, resolved, folder] = [name, path, full, cwd].map((v) => JSON.stringify(v));
        return `${rule}: ${arg} is ${given}, which is ${resolved}, outside the session's folder ${folder}. ` +
          "Write inside that folder instead";
      }
    }
  }
  return undefined;
}

/**
 * `path` as a tool server resolves it: `~` and `~/…` in the home folder (the filesystem
 * server does so, so `~/x` must not pass as a file named `~` inside cwd; `undefined` when
 * `home` is `null`), anything relative against `cwd`, `..` and `.` folded. Symbolic links are
 * not followed (see the README).
 */
export function resolveLike(path: string, cwd: string, home: string | null): string | undefined {
  if (path === "~" || path.startsWith("~/")) return home === null ? undefined : resolve(home, path.slice(2));
  return resolve(cwd, path);
}

/** The home folder, or `null` when it cannot be read (Deno without `--allow-sys=homedir`). */
function homeFolder(): string | null {
  try {
    return homedir();
  } catch {
    return null;
  }
}

/** Whether the absolute path `full` is `folder` or lies below it (`/a/bc` is not below `/a/b`). */
export function inside(full: string, folder: string): boolean {
  const rel = relative(resolve(folder), full);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/** The entries of `ask` some command of `pipelines` runs, each once, in the list's order. */
function askedFor(pipelines: readonly Pipeline[], ask: readonly string[]): string[] {
  return ask.filter((entry) => {
    const parts = entry.split("|").map((part) => part.trim().split(/\s+/).filter(Boolean));
    return pipelines.some((pipeline) => {
      // Each part must be run by a later command of the pipeline than the part before it.
      let at = 0;
      for (const part of parts) {
        while (at < pipeline.length && !runs(programWords(pipeline[at]!), part)) at++;
        if (at === pipeline.length) return false;
        at++;
      }
      return true;
    });
  });
}

/** Shells whose `-c` option takes a script: `bash -lc "rm -r x"` runs `rm -r x`. */
const SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh"]);

/**
 * The pipelines `command` runs: a command line parsed, an argv array as one command, and the
 * script of `sh -c SCRIPT` (or `bash -lc …`) parsed in turn, up to three levels deep.
 */
function pipelinesOf(command: string | readonly string[], depth = 0): Pipeline[] {
  const pipelines: Pipeline[] = typeof command === "string"
    ? parseCommandLine(command)
    : [[command.map((text) => ({ text, start: -1, end: -1 }))]];
  if (depth >= 3) return pipelines;
  const scripts = pipelines.flat().flatMap((cmd) => {
    const [program, ...rest] = programWords(cmd);
    if (program === undefined || !SHELLS.has(program.text)) return [];
    const flag = rest.findIndex((w) => /^-[a-z]*c[a-z]*$/.test(w.text));
    const script = flag === -1 ? undefined : rest[flag + 1]?.text;
    return script === undefined ? [] : pipelinesOf(script, depth + 1);
  });
  return [...pipelines, ...scripts];
}

/**
 * `command` with every `--force` or `-f` of a `git push` replaced by `--force-with-lease`
 * (the same value when there is none: compare by identity). A command line is edited in
 * place, so the rest of it stays byte for byte; an argv array element by element. Options
 * after `--`, `+branch` refspecs and `-f` inside a cluster (`-uf`) are left alone.
 * @example forceWithLease("git push -f origin main && echo ok") // "git push --force-with-lease origin main && echo ok"
 */
export function forceWithLease<T extends string | readonly string[]>(command: T): T {
  if (typeof command !== "string") {
    const argv = command as readonly string[];
    const hits = forcePositions(argv.map((text, i) => ({ text, start: i, end: i + 1 })));
    if (hits.length === 0) return command;
    return argv.map((w, i) => hits.some((h) => h.start === i) ? "--force-with-lease" : w) as unknown as T;
  }
  const hits = parseCommandLine(command).flat().flatMap(forcePositions);
  if (hits.length === 0) return command;
  let out: string = command;
  for (const hit of hits.sort((a, b) => b.start - a.start)) {
    out = out.slice(0, hit.start) + "--force-with-lease" + out.slice(hit.end);
  }
  return out as T;
}

/** The `--force` and `-f` words of `command` when it is a `git push`. */
function forcePositions(command: SimpleCommand): SimpleCommand {
  const words = programWords(command);
  if (!runs(words, ["git", "push"])) return [];
  const end = words.findIndex((w) => w.text === "--");
  return words.slice(0, end === -1 ? words.length : end).filter((w) => w.text === "--force" || w.text === "-f");
}

function isString(value: unknown): value is string {
  return typeof value === "string";
}

function isCommand(value: unknown): value is string | string[] {
  return typeof value === "string" || (Array.isArray(value) && value.length > 0 && value.every(isString));
}

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
