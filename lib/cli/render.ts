/**
 * How the CLI shows a run to people: the answer's text on stdout, alone; on stderr a line per
 * tool call, hook output and compaction, the thinking dimmed, the warnings and the summary line;
 * colour only on a TTY without `NO_COLOR`; servers' stderr lines made safe for a terminal.
 * @module
 */

import process from "node:process";
import { serverStderrShown } from "../config/config.ts";
import { type AgentEvent, PAUSE_TURNS_TEXT, type PromptResult } from "../conversation/events.ts";
import { isHookPoint } from "../hooks/check.ts";
import { hookAnswerWords } from "../hooks/decisions.ts";
import { HOOK_POINTS } from "../hooks/points.ts";
import { redact } from "../util/redact.ts";
import { formatDuration } from "../util/time.ts";
import { nodeFs } from "./files.ts";
import { printed, stderr, stdout } from "./io.ts";

/** The styles of one stream: each wraps text in an SGR code, or returns it as is when colour is off. */
export interface Painter {
  dim(s: string): string;
  green(s: string): string;
  red(s: string): string;
  yellow(s: string): string;
  cyan(s: string): string;
}

/**
 * Human output: colour only on a TTY without NO_COLOR. Given a function (`() => process.stderr`),
 * it asks for the stream only when it first paints: Bun and Deno build `process.stdout` and
 * `process.stderr` on first access (7 and 17 ms), which a run must not pay before its first
 * LLM request (issue 21).
 */
export function painter(stream: NodeJS.WriteStream | (() => NodeJS.WriteStream)): Painter {
  let colour: boolean | undefined;
  const on = () =>
    colour ??= (typeof stream === "function" ? stream() : stream).isTTY === true &&
      (process.env["NO_COLOR"] ?? "") === "";
  const wrap = (code: string) => (s: string) => (on() ? `\x1b[${code}m${s}\x1b[0m` : s);
  return { dim: wrap("2"), green: wrap("32"), red: wrap("31"), yellow: wrap("33"), cyan: wrap("36") };
}

/** A tool call's arguments as JSON, cut to 80 characters. */
export function shortArgs(args: Record<string, unknown>): string {
  const json = JSON.stringify(args);
  return json.length > 80 ? `${json.slice(0, 77)}…` : json;
}

/** The first non-blank line of `text`, cut to `max` characters (default 160). */
export function firstLine(text: string, max = 160): string {
  const line = text.trim().split("\n").find((l) => l.trim() !== "") ?? "";
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/**
 * Whether stdout and stderr are one open file (the same inode): a terminal both print to, or
 * `> all.log 2>&1`, or `2>&1 | less`. Then a reader sees the two streams' bytes interleaved in
 * one place, and a line on stderr must not start after unfinished text of stdout's. Without
 * inode numbers (Windows) or a readable descriptor: when both are terminals.
 */
export function sameDestination(): boolean {
  const bothTerminals = process.stdout.isTTY === true && process.stderr.isTTY === true;
  try {
    const out = nodeFs().fstatSync(1);
    const err = nodeFs().fstatSync(2);
    if (out.ino === 0 && err.ino === 0) return bothTerminals;
    return out.dev === err.dev && out.ino === err.ino;
  } catch {
    return bothTerminals;
  }
}

/** What {@link humanPrinter} returns: the run's events in, people's output out. */
export interface HumanPrinter {
  /** Shows one event: text on stdout, everything else on stderr. */
  event(e: AgentEvent): void;
  /**
   * Ends the answer (at most one newline on stdout), then the refusal line and the summary on
   * stderr; the summary ends with ` · session ID` when `session` (the saved session's id) is given.
   */
  result(r: PromptResult, session?: string): void;
  /** Ends the answer, then `error: MESSAGE` on stderr (the prompt failed). */
  error(message: string): void;
  /** One line of ours on stderr (a server's stderr line), started on a fresh line. */
  note(text: string): void;
}

/**
 * Prints a run for people (SPEC section 11). stdout gets the answer: the model's text exactly
 * as it streamed, and at the end one newline when the text does not end with one (so a shell
 * prompt starts on its own line), nothing when there was no text. Everything else goes to
 * stderr, styled by stderr's TTY-ness: the thinking (dimmed, marked `∴`), one line per tool
 * call, hook output, compaction, warnings, a refusal's explanation and the summary.
 *
 * Line breaks: each stream's own lines never glue (a stderr line after streamed thinking
 * starts on a fresh stderr line). When stdout and stderr are one destination
 * ({@link sameDestination}: a terminal, `2>&1`), a stderr line after unfinished answer text
 * starts with a newline on stderr, so the reader sees it on a line of its own while stdout
 * still holds the text alone. When they go to different places that newline would only be
 * a stray blank line in stderr's file, so it is not written. No newline is ever added to
 * stdout mid-answer: `run "…" > answer.md` holds what the model wrote.
 */
export function humanPrinter(): HumanPrinter {
  const err = painter(() => process.stderr);
  // Asked on the first write, not before the first LLM request (see painter).
  let sameCache: boolean | undefined;
  const shared = () => (sameCache ??= sameDestination());
  let textOpen = false; // stdout's last byte is not a newline
  let lastOpen = false; // the last write to either stream left its line open (what one shared destination shows)
  // The last two characters of stdout, and of what one shared destination shows: for the blank
  // line between the texts of two rounds.
  let stdoutTail = "";
  let sharedTail = "";
  const tailOf = (before: string, text: string) => (before + text).slice(-2);
  /** A round started since the last text: its first text is set off by a blank line. */
  let newRound = false;
  let thinking: "no" | "line-start" | "mid-line" = "no";
  /** `_Stop` objection lines printed: several hooks may object to one end of turn. */
  let hookObjections = 0;
  const running = new Map<string, { args: Record<string, unknown>; timer: ReturnType<typeof setTimeout> }>();
  const writeErr = (raw: string, painted = raw) => {
    stderr().write(painted);
    lastOpen = !raw.endsWith("\n");
    sharedTail = tailOf(sharedTail, raw);
  };
  const writeOut = (text: string) => {
    stdout().write(text);
    stdoutTail = tailOf(stdoutTail, text);
    sharedTail = tailOf(sharedTail, text);
  };
  const endThinking = () => {
    if (thinking === "mid-line") writeErr("\n");
    thinking = "no";
  };
  const line = (text: string) => {
    endThinking();
    if (shared() && lastOpen) writeErr("\n");
    writeErr(`${text}\n`);
  };
  const endAnswer = () => {
    endThinking();
    // On a shared destination a stderr line may already have ended stdout's line.
    if (shared() ? lastOpen : textOpen) writeOut("\n");
    textOpen = false;
    lastOpen = false;
  };
  return {
    event(e) {
      if (e.type !== "thinking-delta") endThinking();
      switch (e.type) {
        case "thinking-delta": {
          if (e.text === "") break;
          if (thinking === "no" && shared() && lastOpen) writeErr("\n");
          const text = `${thinking === "no" ? "∴ " : ""}${e.text}`;
          writeErr(text, err.dim(text));
          thinking = e.text.endsWith("\n") ? "line-start" : "mid-line";
          break;
        }
        case "text-delta":
          if (e.text === "") break;
          if (newRound && stdoutTail !== "") {
            // The texts of two rounds are two paragraphs: a blank line between them (SPEC 11).
            const tail = shared() ? sharedTail : stdoutTail;
            writeOut(tail.endsWith("\n\n") ? "" : tail.endsWith("\n") ? "\n" : "\n\n");
          }
          newRound = false;
          writeOut(e.text);
          textOpen = !e.text.endsWith("\n");
          lastOpen = textOpen;
          break;
        case "tool-start": {
          // One line per call, printed when it ends; a call still running after 1 s says so.
          const timer = setTimeout(() => line(err.dim(`… ${e.name} ${shortArgs(e.arguments)} running`)), 1000);
          running.set(e.id, { args: e.arguments, timer });
          break;
        }
        case "tool-end": {
          const started = running.get(e.id);
          running.delete(e.id);
          if (started) clearTimeout(started.timer);
          const args = started ? ` ${err.dim(shortArgs(started.args))}` : "";
          // A failure shows its error; a success the first line of what the model got back.
          const tail = e.ok
            ? err.dim(firstLine(e.output, 80) === "" ? "" : ` → ${firstLine(e.output, 80)}`)
            : ` ${err.red(firstLine(e.output, 120))}`;
          line(
            `${e.ok ? err.green("✓") : err.red("✗")} ${e.name}${args} ${
              err.dim(`(${formatDuration(e.durationMs)})`)
            }${tail}`,
          );
          break;
        }
        case "hook": {
          // How a hook's output shows follows its point's effect (lib/hooks/points.ts); a
          // point another event reports (_PostCompact: the compaction line) gets no line here.
          const point = isHookPoint(e.hook) ? HOOK_POINTS[e.hook] : undefined;
          const note = e.decision?.systemMessage?.trim();
          if (note) line(err.dim(`${e.hook} from ${e.server} notes: ${firstLine(note)}`));
          if (e.outcome !== "objection" || point === undefined) break;
          if (point.effect === "deny" || point.effect === "append" || e.decision?.continue === false) {
            // The tool points, and any halt (SPEC 7.6, 7.7): what the hook did, in words.
            const [verb, said] = hookAnswerWords(point.effect, e.text, e.decision);
            const what = firstLine(said ?? "");
            line(err.yellow(`⟲ ${e.hook} from ${e.server} ${verb}${what === "" ? "" : `: ${what}`}`));
          } else if (point.effect === "injection" && point.reportedBy === undefined) {
            line(err.cyan(`⟲ ${e.hook} context from ${e.server}: ${firstLine(e.text ?? "")}`));
          } else if (point.effect === "guidance") {
            line(err.cyan(`⟲ ${e.hook} guidance from ${e.server}: ${firstLine(e.text ?? "")}`));
          } else if (point.effect === "log") {
            line(err.dim(`${e.hook} from ${e.server}: ${firstLine(e.text ?? "")}`));
          } else if (point.effect === "objection") {
            // The first line, then up to 8 more lines of the objection, indented.
            const [first = "", ...more] = (e.text ?? "").trim().split("\n").filter((l) => l.trim() !== "");
            hookObjections++;
            line(err.yellow(`⟲ ${e.hook} objection from ${e.server}: ${first}`));
            for (const l of more.slice(0, 8)) line(err.dim(`    ${l.length > 160 ? `${l.slice(0, 159)}…` : l}`));
            if (more.length > 8) line(err.dim(`    … ${more.length - 8} more lines`));
          }
          break;
        }
        case "compaction":
          // One line per compaction (issue 23): sizes, the handoff count, the repeated calls.
          line(err.cyan(
            `⟲ context compacted: ${Math.round(e.beforeTokens / 1000)}k → ${Math.round(e.afterTokens / 1000)}k tokens` +
              (e.mode === "truncation"
                ? ` (old turns dropped); after ${e.handoffs} handoff${e.handoffs === 1 ? "" : "s"}`
                : `; handoff ${e.handoffs}`) +
              `; repeated calls: ${e.repeatedCalls}` +
              (e.mode === "truncation" ? "" : `; _PostCompact: ${e.injected.join(", ") || "none"}`),
          ));
          break;
        case "warning":
          line(err.yellow(`warning: ${withoutShownStderr(e.message)}`));
          break;
        case "round-start":
          newRound = true;
          break;
      }
    },
    result(r, session) {
      endAnswer();
      if (r.refusal !== undefined) line(err.yellow(`⊘ refused: ${r.refusal}`));
      if (r.halt !== undefined) line(err.yellow(`⊘ halted by ${r.halt.hook} from ${r.halt.server}: ${r.halt.reason}`));
      if (r.limit !== undefined) line(err.yellow(`⊘ ${r.limit.kind} limit: ${r.limit.reason}`));
      if (r.stopReason === "max_pause_turns") line(err.yellow(`⊘ ${PAUSE_TURNS_TEXT}`));
      // An objection is an end of turn the _Stop hooks objected to (the unit of the budget, SPEC
      // 7.2), however many objected at once; when several did, the ⟲ lines outnumber it: say so.
      const together = hookObjections > r.objections && r.objections > 0
        ? ` (${hookObjections} hooks${r.objections === 1 ? " at once" : ", some at once"})`
        : "";
      hookObjections = 0;
      line(err.dim(
        `■ ${r.stopReason} · ${r.rounds} round${r.rounds === 1 ? "" : "s"} · ${r.toolCalls} tool call${
          r.toolCalls === 1 ? "" : "s"
        } · ` +
          `${r.objections} objection${r.objections === 1 ? "" : "s"}${together} · ${formatDuration(r.durationMs)}` +
          (session === undefined ? "" : ` · session ${session}`),
      ));
    },
    error(message) {
      endAnswer();
      line(`error: ${message}`);
    },
    note: line,
  };
}

/**
 * `SPROUT_AGENT_SERVER_STDERR`: stdio servers' stderr lines on our stderr as `[name] line`,
 * shown by default except with `--json`; never on stdout. With `printer` they go through its
 * {@link HumanPrinter.note}, so they start on a fresh line as its own lines do.
 */
export function serverStderrOption(
  json: boolean,
  printer?: Pick<HumanPrinter, "note">,
): { onServerStderr?: (server: string, line: string) => void } {
  if (!serverStderrShown(process.env, !json)) return {};
  const err = painter(() => process.stderr);
  const note = printer?.note ?? ((text: string) => stderr().write(`${text}\n`));
  return {
    onServerStderr: (server, line) => {
      stderrShown.add(server);
      note(`${err.dim(`[${server}]`)} ${visible(redact(line, printed.secrets))}`);
    },
  };
}

/** The servers whose stderr lines {@link serverStderrOption} has printed. */
const stderrShown = new Set<string>();

/**
 * `message` without the stderr tail the MCP client's messages end with (`; stderr:\n…`, a
 * server that exited or timed out) when it names a server whose stderr lines were printed as
 * they came: the tail holds those lines, so it would show them a second time.
 * @example withoutShownStderr('Cannot start server "x": server exited (code 1); stderr:\nboom')
 * // 'Cannot start server "x": server exited (code 1); its stderr is above' once "x" printed a line
 */
export function withoutShownStderr(message: string): string {
  const at = message.indexOf("; stderr:\n");
  const server = /\b[Ss]erver "([^"]+)"/.exec(message)?.[1];
  if (at === -1 || server === undefined || !stderrShown.has(server)) return message;
  return `${message.slice(0, at)}; its stderr is above`;
}

/**
 * `text` with its control characters (but tab) in caret notation (`ESC` as `^[`, `BEL` as `^G`,
 * C1 as `^[` and a letter): a server's stderr goes to the user's terminal, where an escape
 * sequence could set the title, hide text or write to the clipboard.
 */
export function visible(text: string): string {
  // deno-lint-ignore no-control-regex -- matching control characters is the point
  return text.replace(/[\x00-\x08\x0a-\x1f\x7f-\x9f]/g, (c) => {
    const code = c.charCodeAt(0);
    if (code === 0x7f) return "^?";
    return code < 0x20 ? `^${String.fromCharCode(code + 64)}` : `^[${String.fromCharCode(code - 64)}`;
  });
}
