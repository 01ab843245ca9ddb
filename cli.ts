#!/usr/bin/env -S deno run -A
/**
 * The command line (SPEC section 11):
 *
 *     cli.ts run [--mcp-config FILE] [--json] [PROMPT…]
 *     cli.ts hooks [--mcp-config FILE] [--json]
 *     cli.ts acp
 *     cli.ts --help | --version
 *
 * Runs under `deno run -A cli.ts`, `bun cli.ts` and `npx tsx cli.ts` alike. The commands live
 * in lib/cli/ (one module each, loaded when chosen).
 * @module
 */

import process from "node:process";
import { runCli } from "./lib/cli/main.ts";

runCli(process.argv.slice(2));
