/**
 * The agent's version, reported by `--version`, ACP `agentInfo` and MCP `clientInfo`.
 * @example
 * console.log(`sprout-agent ${VERSION}`);
 */
export const VERSION = "0.1.0";

/** The agent's name in `clientInfo` and `agentInfo`. */
export const AGENT_NAME = "sprout-agent";
