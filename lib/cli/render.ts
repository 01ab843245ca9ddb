/**
 * How the CLI shows a run to people: streamed text, a line per tool call, hook objection and
 * compaction, thinking dimmed on stderr, the summary line; colour only on a TTY without
 * `NO_COLOR`; servers' stderr lines made safe for a terminal.
 * @module
 */

import process from "node:process";
import { serverStderrShown } from "../config/config.ts";
import type { AgentEvent, PromptResult } from "../conversation/events.ts";
import { isHookPoint } from "../hooks/check.ts";
import { HOOK_POINTS } from "../hooks/points.ts";
import { redact } from "../util/redact.ts";
import { formatDuration } from "../util/time.ts";
import { printed, stderr, stdout } from "./io.ts";

/** The styles of one stream: each wraps text in an SGR code, or returns it as is when colour is off. */
export interface Painter {
  dim(s: string): string;
  green(s: string): string;
  red(s: string): string;
  yellow(s: string): string;
  cyan(s: string): string;
}

/** Human output: colour only on a TTY without NO_COLOR. */
export function painter(stream: NodeJS.WriteStream): Painter {
  const on = stream.isTTY === true && (process.env["NO_COLOR"] ?? "") === "";
  const wrap = (code: string) => (s: string) => (on ? `\x1b[${code}m${s}\x1b[0m` : s);
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
 * Prints events for people: streamed text, one line per tool call and hook objection. The
 * model's thinking goes to stderr, dimmed and marked `∴`, so it is never mistaken for (or
 * piped with) the answer; a refusal's explanation gets a line of its own.
 */
export function humanPrinter(): { event: (e: AgentEvent) => void; result: (r: PromptResult) => void } {
  const out = painter(process.stdout);
  const err = painter(process.stderr);
  let midLine = false;
  let thinking: "no" | "line-start" | "mid-line" = "no";
  const running = new Map<string, { args: Record<string, unknown>; timer: ReturnType<typeof setTimeout> }>();
  const endThinking = () => {
    if (thinking === "mid-line") stderr().write("\n");
    thinking = "no";
  };
  const line = (text: string) => {
    endThinking();
    if (midLine) stdout().write("\n");
    midLine = false;
    stdout().write(`${text}\n`);
  };
  return {
    event(e) {
      if (e.type !== "thinking-delta") endThinking();
      switch (e.type) {
        case "thinking-delta": {
          if (e.text === "") break;
          if (midLine) stdout().write("\n");
          midLine = false;
          const start = thinking === "no" ? "∴ " : "";
          stderr().write(err.dim(`${start}${e.text}`));
          thinking = e.text.endsWith("\n") ? "line-start" : "mid-line";
          break;
        }
        case "text-delta":
          stdout().write(e.text);
          midLine = !e.text.endsWith("\n");
          break;
        case "tool-start": {
          // One line per call, printed when it ends; a call still running after 1 s says so.
          const timer = setTimeout(() => line(out.dim(`… ${e.name} ${shortArgs(e.arguments)} running`)), 1000);
          running.set(e.id, { args: e.arguments, timer });
          break;
        }
        case "tool-end": {
          const started = running.get(e.id);
          running.delete(e.id);
          if (started) clearTimeout(started.timer);
          const args = started ? ` ${out.dim(shortArgs(started.args))}` : "";
          // A failure shows its error; a success the first line of what the model got back.
          const tail = e.ok
            ? out.dim(firstLine(e.output, 80) === "" ? "" : ` → ${firstLine(e.output, 80)}`)
            : ` ${out.red(firstLine(e.output, 120))}`;
          line(
            `${e.ok ? out.green("✓") : out.red("✗")} ${e.name}${args} ${
              out.dim(`(${formatDuration(e.durationMs)})`)
            }${tail}`,
          );
          break;
        }
        case "hook": {
          // How a hook's output shows follows its point's effect (lib/hooks/points.ts); a
          // point another event reports (_PostCompact: the compaction line) gets no line here.
          const point = isHookPoint(e.hook) ? HOOK_POINTS[e.hook] : undefined;
          if (e.outcome !== "objection" || point === undefined) break;
          if (point.effect === "injection" && point.reportedBy === undefined) {
            line(out.cyan(`⟲ ${e.hook} context from ${e.server}: ${firstLine(e.text ?? "")}`));
          } else if (point.effect === "log") {
            // Only logged: for people, a line on stderr beside the warnings.
            if (midLine) stdout().write("\n");
            midLine = false;
            stderr().write(err.dim(`${e.hook} from ${e.server}: ${firstLine(e.text ?? "")}\n`));
          } else if (point.effect === "objection") {
            // The first line, then up to 8 more lines of the objection, indented.
            const [first = "", ...more] = (e.text ?? "").trim().split("\n").filter((l) => l.trim() !== "");
            line(out.yellow(`⟲ ${e.hook} objection from ${e.server}: ${first}`));
            for (const l of more.slice(0, 8)) line(out.dim(`    ${l.length > 160 ? `${l.slice(0, 159)}…` : l}`));
            if (more.length > 8) line(out.dim(`    … ${more.length - 8} more lines`));
          }
          break;
        }
        case "compaction":
          line(out.cyan(
            `⟲ context compacted: ${Math.round(e.beforeTokens / 1000)}k → ${Math.round(e.afterTokens / 1000)}k tokens` +
              (e.mode === "truncation" ? " (old turns dropped)" : `; _PostCompact: ${e.injected.join(", ") || "none"}`),
          ));
          break;
        case "warning":
          if (midLine) stdout().write("\n");
          midLine = false;
          stderr().write(err.yellow(`warning: ${e.message}\n`));
          break;
        case "round-start":
          break;
      }
    },
    result(r) {
      if (r.refusal !== undefined) line(out.yellow(`⊘ refused: ${r.refusal}`));
      line(out.dim(
        `■ ${r.stopReason} · ${r.rounds} round${r.rounds === 1 ? "" : "s"} · ${r.toolCalls} tool call${
          r.toolCalls === 1 ? "" : "s"
        } · ` +
          `${r.objections} objection${r.objections === 1 ? "" : "s"} · ${formatDuration(r.durationMs)}`,
      ));
    },
  };
}

/**
 * `SPROUT_AGENT_SERVER_STDERR`: stdio servers' stderr lines on our stderr as `[name] line`,
 * shown by default except with `--json`; never on stdout.
 */
export function serverStderrOption(json: boolean): { onServerStderr?: (server: string, line: string) => void } {
  if (!serverStderrShown(process.env, !json)) return {};
  const err = painter(process.stderr);
  return {
    onServerStderr: (server, line) =>
      stderr().write(`${err.dim(`[${server}]`)} ${visible(redact(line, printed.secrets))}\n`),
  };
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
