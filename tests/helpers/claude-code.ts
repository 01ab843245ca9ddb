/**
 * The real Claude Code CLI for end-to-end tests, installed on demand (its native binary is
 * 245 MB, so it is no dev dependency every `npm ci` pays for), by claude-code-peer.ts's
 * installer into `$XDG_CACHE_HOME/sprout-agent-tests/` (else `~/.cache/…`), reused afterwards. And a fake Anthropic API for it, run offline through
 * `ANTHROPIC_BASE_URL`: it answers Claude Code's `HEAD` probe, records each
 * `POST /v1/messages?beta=true` (one streaming request per model turn) and streams the
 * scripted answer in the API's SSE bytes (lib/testing/wire.ts). Claude Code puts a
 * `role: "system"` message inside `messages`, which the strict fake of lib/testing refuses, so
 * this fake does not validate.
 * @module
 */
import { createServer } from "node:http";
import type { Socket } from "node:net";
import { anthropicEvents, type FakeReply } from "../../lib/testing/wire.ts";
import { installClaudeCode as installPeer, runClaude as runPeer } from "./claude-code-peer.ts";

/** The Claude Code version the tests pin (npm `@anthropic-ai/claude-code`), and its cache folder. */
export { CLAUDE_CODE_VERSION, claudeCodeDir } from "./claude-code-peer.ts";

/**
 * The `claude` binary of the pinned version, installed into the cache when missing, or why
 * it cannot be had (no network, no npm): the tests skip saying so. One installer for every
 * test (tests/helpers/claude-code-peer.ts: into a temporary folder renamed into place, under a
 * lock, so runners starting together install once).
 */
export async function installClaudeCode(): Promise<{ bin: string } | { reason: string }> {
  const got = await installPeer();
  return "bin" in got ? got : { reason: got.skip };
}

/** One `POST /v1/messages` Claude Code sent. */
export interface ClaudeRequest {
  /** The parsed body: `model`, `system`, `messages`, `tools`… */
  body: Record<string, unknown>;
  /** The body as sent, for searching it whole. */
  raw: string;
}

/** A running fake Anthropic API. */
export interface FakeAnthropic {
  /** For `ANTHROPIC_BASE_URL`. */
  url: string;
  /** Every `POST /v1/messages`, in order. */
  requests: ClaudeRequest[];
  close(): Promise<void>;
}

/** Starts the fake: `respond(request, index)` is the answer to the index-th model turn. */
export async function startFakeAnthropic(
  respond: (request: ClaudeRequest, index: number) => FakeReply,
): Promise<FakeAnthropic> {
  const requests: ClaudeRequest[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    let raw = "";
    req.on("data", (d) => (raw += d));
    req.on("end", () => {
      const path = (req.url ?? "/").split("?")[0]!;
      if (req.method !== "POST" || !path.endsWith("/v1/messages")) {
        res.writeHead(req.method === "HEAD" ? 200 : 404, { "content-type": "application/json" });
        res.end(req.method === "HEAD" ? undefined : "{}");
        return;
      }
      const body = JSON.parse(raw) as Record<string, unknown>;
      const request = { body, raw };
      const index = requests.push(request) - 1;
      const turn = respond(request, index);
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      for (const piece of anthropicEvents(turn, body, index + 1)) {
        if ("pause" in piece) continue;
        res.write(`event: ${piece.event}\ndata: ${JSON.stringify(piece.data)}\n\n`);
      }
      res.end();
    });
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * What a request added after the model's last turn: the roles and the text (text blocks and
 * tool results joined) of the messages after the last assistant message. Claude Code 2.1
 * sends a stop hook's block as a `user` message `<system-reminder>…Stop hook feedback:\n
 * REASON…`, then a `system` one (`Stop hook blocking error from command: …`).
 */
export function sinceLastTurn(request: ClaudeRequest): { roles: string[]; text: string } {
  const messages = request.body.messages as Array<{ role: string; content: unknown }>;
  const from = messages.map((m) => m.role).lastIndexOf("assistant") + 1;
  const added = messages.slice(from);
  return { roles: added.map((m) => m.role), text: added.map((m) => contentText(m.content)).join("\n") };
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((b: Record<string, unknown>) =>
    typeof b.text === "string" ? b.text : b.type === "tool_result" ? contentText(b.content) : ""
  ).join("\n");
}

/**
 * Runs `claude -p PROMPT --output-format json` in `cwd` (whose `.mcp.json` and
 * `.claude/settings.json` the test wrote) against `api`, offline, with a HOME of its own;
 * resolves when it exits (tests/helpers/claude-code-peer.ts `runClaude`: its process group
 * killed whole then, or after 120 s).
 */
export function runClaude(
  bin: string,
  options: { cwd: string; home: string; api: string; prompt: string; args?: string[]; env?: Record<string, string> },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runPeer({
    bin,
    fake: { url: options.api },
    cwd: options.cwd,
    home: options.home,
    prompt: options.prompt,
    args: ["--output-format", "json", ...(options.args ?? [])],
    ...(options.env === undefined ? {} : { env: options.env }),
  });
}
