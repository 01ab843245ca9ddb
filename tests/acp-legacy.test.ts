/**
 * `cli.ts acp` driven by the official ACP client (`@agentclientprotocol/sdk`) for two parts of
 * issue 25: an `mcpServers` entry pins its server's MCP era with
 * `_meta["sprout-agent/protocol"]` (a server that ignores unknown requests connects at once
 * when pinned legacy, and fails at the init timeout when not); and a prompt the provider pauses
 * past the continuations ends as `max_turn_requests`, ACP's closest stop reason, with the
 * reason as the last agent message (SPEC 6.5, docs/ACP.md). CASES C43.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import * as acp from "@agentclientprotocol/sdk";
import { PAUSE_TURNS_TEXT } from "../lib/conversation/events.ts";
import { tempDir } from "./helpers/acp.ts";
import { startAcpClient } from "./helpers/acp-client.ts";
import { repoRoot } from "./helpers/runtime.ts";

describe("acp with the SDK client: era pins and max_pause_turns", () => {
  const dir = tempDir();
  const pause = { text: "part ", stop: "pause_turn" };
  const script = dir.file("script.json", JSON.stringify([pause, pause, pause, pause, pause, pause, { text: "never" }]));
  const { connection, stop, stderr } = startAcpClient({
    SPROUT_AGENT_PROVIDER: "scripted",
    SPROUT_AGENT_SCRIPT: script,
    SPROUT_AGENT_MCP_INIT_TIMEOUT_SECS: "3",
    XDG_STATE_HOME: dir.path,
  }, { name: "sprout-acp-legacy-test" });
  const silent = (meta?: Record<string, unknown>): acp.McpServer => ({
    name: "silent",
    command: "node",
    args: [`${repoRoot}tests/fixtures/mcp/raw-server.mjs`, "--probe=silent"],
    env: [],
    ...(meta === undefined ? {} : { _meta: meta }),
  });

  before(async () => {
    await connection.agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {},
    });
  });
  after(async () => {
    const code = await stop();
    dir.cleanup();
    assert.equal(code, 0, stderr());
  });

  test("without a pin, a server that ignores unknown requests fails session/new at the init timeout, naming the fix", async () => {
    await assert.rejects(
      connection.agent.buildSession({ cwd: dir.path, mcpServers: [silent()] }).start(),
      (e: unknown) => /"protocol": "legacy"/.test(JSON.stringify(e) + String(e)),
    );
  });

  test('C43 pinned by _meta["sprout-agent/protocol"]: legacy at once; six pauses end as max_turn_requests with the reason', async () => {
    const started = Date.now();
    const session = await connection.agent
      .buildSession({ cwd: dir.path, mcpServers: [silent({ "sprout-agent/protocol": "legacy" })] })
      .start();
    assert.ok(Date.now() - started < 3000, "no probe: the pinned era skips detection");
    const done = session.prompt("a long one");
    const texts: string[] = [];
    while (true) {
      const message = await session.nextUpdate();
      if (message.kind === "stop") {
        assert.equal(message.stopReason, "max_turn_requests");
        break;
      }
      const update = message.update;
      if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
        texts.push(update.content.text);
      }
    }
    assert.equal((await done).stopReason, "max_turn_requests");
    assert.equal(texts.at(-1), `\n\n${PAUSE_TURNS_TEXT}\n`);
    assert.equal(texts.slice(0, -1).join(""), "part ".repeat(6));
  });
});
