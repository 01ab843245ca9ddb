/**
 * The MCP conformance suite's client under test, built on lib/mcp/: the suite runs
 * `<runtime> tests/conformance/client.ts <server URL>` with `MCP_CONFORMANCE_SCENARIO` set.
 * Connects (era detected), lists the tools and calls the scenario's tool, then closes.
 * Exit code 0 on success, 1 with the error on stderr otherwise.
 */
import process from "node:process";
import { connectMcp } from "../../lib/mcp/client.ts";

const url = process.argv[process.argv.length - 1] ?? "";
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? "";

/** The tool each scenario expects to be called, with its arguments. */
const calls: Record<string, { name: string; arguments: Record<string, unknown> }> = {
  tools_call: { name: "add_numbers", arguments: { a: 5, b: 3 } },
  "sse-retry": { name: "test_reconnection", arguments: {} },
  "elicitation-sep1034-client-defaults": { name: "test_client_elicitation_defaults", arguments: {} },
};

try {
  const connection = await connectMcp(
    { name: "conformance", transport: { type: "http", url, headers: {} } },
    { sessionId: "conformance", onWarning: (m) => process.stderr.write(`warning: ${m}\n`) },
  );
  try {
    const tools = await connection.listTools();
    process.stderr.write(
      `era ${connection.era} ${connection.protocolVersion}; tools: ${tools.map((t) => t.name).join(", ")}\n`,
    );
    const call = calls[scenario];
    if (call && tools.some((t) => t.name === call.name)) {
      const result = await connection.callTool(call.name, call.arguments, { timeoutMs: 20_000 });
      process.stderr.write(`${call.name}: ${JSON.stringify(result)}\n`);
    }
  } finally {
    await connection.close();
  }
  process.exit(0);
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
