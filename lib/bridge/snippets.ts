/**
 * `hook-bridge --print-config HOST`: the settings that run the bridge as the host's command
 * hook for every event it maps (lib/bridge/hosts.ts), in the host's own configuration format.
 * @module
 */

import { HOST_EVENTS, type HostName } from "./hosts.ts";

/** Where each host reads the printed settings from (merged with what is there). */
export const CONFIG_FILES: Readonly<Record<HostName, string>> = {
  claude: ".claude/settings.json (or ~/.claude/settings.json)",
  codex: ".codex/hooks.json (or ~/.codex/hooks.json)",
  gemini: ".gemini/settings.json (or ~/.gemini/settings.json)",
  copilot: ".github/hooks/sprout-agent.json",
};

/**
 * A host waits this long for the bridge, in seconds: room for connecting the servers
 * (`SPROUT_AGENT_MCP_INIT_TIMEOUT_SECS`, 30 s at most by default) and one hook timeout.
 */
export const HOOK_TIMEOUT_SECS = 60;

/**
 * The settings JSON that runs `command hook-bridge --host HOST` on each of the host's mapped
 * events (Copilot CLI's camelCase events, with `--event NAME`, since their payloads name none).
 * @param command how the host starts our CLI; default `sprout-agent` (the package's bin)
 * @example hookSettings("claude").hooks.Stop // [{ hooks: [{ type: "command", command: "sprout-agent hook-bridge --host claude", timeout: 60 }] }]
 */
export function hookSettings(host: HostName, command = "sprout-agent"):
  & { hooks: Record<string, unknown[]> }
  & Record<
    string,
    unknown
  > {
  const run = `${command} hook-bridge --host ${host}`;
  const hooks: Record<string, unknown[]> = {};
  if (host === "copilot") {
    for (const event of Object.keys(HOST_EVENTS.copilot).filter((e) => /^[a-z]/.test(e))) {
      hooks[event] = [{ type: "command", bash: `${run} --event ${event}`, timeoutSec: HOOK_TIMEOUT_SECS }];
    }
    return { version: 1, hooks };
  }
  for (const event of Object.keys(HOST_EVENTS[host])) {
    if (host === "claude" && event === "PostToolUseFailure") continue; // older versions reject unknown events
    const handler = host === "gemini"
      ? { type: "command", name: "sprout-agent", command: run, timeout: HOOK_TIMEOUT_SECS * 1000 }
      : { type: "command", command: run, timeout: HOOK_TIMEOUT_SECS };
    // No `matcher`: every tool (Codex reads a matcher as a regex, where "*" is not one).
    hooks[event] = [{ hooks: [handler] }];
  }
  return { hooks };
}
