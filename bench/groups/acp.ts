/**
 * Group `acp`: memory of `cli.ts acp` (scripted model, no MCP servers) driven by the official
 * ACP client (`@agentclientprotocol/sdk`) while it holds 1, 10 and 100 open sessions
 * (`session/new`), per runtime. Value: the agent's resident set size (VmRSS of
 * /proc/PID/status) with N sessions open; baseline: its RSS once `initialize` is answered.
 * The case names the growth per session in KB.
 * @module
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { childEnv, type Group, root, type Row, row, stopChild, tsCommand } from "../harness.ts";

/** The resident set size of `pid`, in MB (Linux). */
function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

const settle = () => new Promise((done) => setTimeout(done, 300));

/** The `acp` group. */
export const acpGroup: Group = {
  name: "acp",
  title: "ACP agent memory with 1/10/100 open sessions vs idle",
  async run({ quick, runtimes, log }) {
    const counts = quick ? [1, 10] : [1, 10, 100];
    const dir = mkdtempSync(join(tmpdir(), "sprout-bench-acp-"));
    const script = join(dir, "script.json");
    writeFileSync(script, JSON.stringify([{ text: "hi" }]));
    const rows: Row[] = [];
    try {
      for (const which of runtimes) {
        log(`acp: ${which}`);
        const [command = "", ...args] = tsCommand(`${root}cli.ts`, which);
        const child = spawn(command, [...args, "acp"], {
          cwd: root,
          env: childEnv({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script }),
          stdio: ["pipe", "pipe", "inherit"],
        });
        const stream = acp.ndJsonStream(
          Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
          Readable.toWeb(child.stdout) as unknown as ReadableStream<Uint8Array>,
        );
        const connection = acp.client({ name: "sprout-bench" }).connect(stream);
        try {
          await connection.agent.request(acp.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
          await settle();
          const idle = rssMb(child.pid!);
          let open = 0;
          for (const n of counts) {
            while (open < n) {
              await connection.agent.request(acp.methods.agent.session.new, { cwd: dir, mcpServers: [] });
              open++;
            }
            await settle();
            const rss = rssMb(child.pid!);
            const perSession = ((rss - idle) * 1024) / n;
            rows.push(
              row(
                "acp",
                `${which}: RSS, ${n} session${n > 1 ? "s" : ""} (${perSession.toFixed(0)} KB each) vs idle`,
                rss,
                idle,
                "MB",
              ),
            );
          }
        } finally {
          connection.close();
          await stopChild(child);
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return rows;
  },
};
