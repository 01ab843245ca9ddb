/**
 * What the real LLM APIs reject, as checks on a request body: used by the fake LLM server of
 * `lib/testing/fake-llm.ts` (which answers 400 like the real API) and by tests asserting that every
 * request the agent sent was valid (SPEC section 6, "History invariants").
 *
 * Messages quote the APIs' own error texts where they are known (as reported in public issue
 * threads: anthropics/claude-code#5989, #23440, #40075, #37; BerriAI/litellm#23510;
 * lobehub/lobehub#1601, #1496; vercel/ai#5171; FoundationAgents/OpenManus#23; QwenLM/qwen-code#606;
 * mcp-use/mcp-use#90; alibaba/spring-ai-alibaba#4576). Where the exact text is not public the
 * message is ours and says so with the prefix `(fake)`.
 * The thinking rules (extended thinking, Anthropic) quote the errors reported in
 * anthropics/claude-code#20705 and #10627, n8n-io/n8n#22550, anomalyco/opencode#3077,
 * tailcallhq/forgecode#1853 and #2107, themaximalist/llm.js#30 and
 * liuw1535/antigravity2api-nodejs#149. The fake signs its thinking blocks with
 * {@link fakeThinkingSignature}; a block whose signature does not match its text was changed,
 * and is refused as the API refuses a modified block.
 * @module
 */

import { createHash } from "node:crypto";
import { TOOL_NAME_PATTERN } from "../mcp/registry-tools.ts";

/** The longest tool-call id some OpenAI models accept. */
export const OPENAI_MAX_TOOL_CALL_ID = 40;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

function schemaProblems(schema: unknown, where: string, anthropic: boolean, name: string): string[] {
  if (!isObj(schema)) {
    return [
      anthropic
        ? `${where}: Input should be a valid dictionary`
        : `Invalid schema for function '${name}': schema must be a JSON Schema of 'type: "object"', got 'type: "None"'.`,
    ];
  }
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    if (key in schema) {
      return [
        anthropic
          ? `${where}: input_schema does not support oneOf, allOf, or anyOf at the top level`
          : `Invalid schema for function '${name}': (fake) '${key}' is not supported at the top level of the schema`,
      ];
    }
  }
  if (schema["type"] !== "object") {
    const got = typeof schema["type"] === "string" ? schema["type"] : "None";
    return [
      anthropic
        ? `${where}.type: Input should be 'object'`
        : `Invalid schema for function '${name}': schema must be a JSON Schema of 'type: "object"', got 'type: "${got}"'.`,
    ];
  }
  // Both APIs check the schema itself: `properties` an object of schemas, `required` a list of names.
  const properties = schema["properties"];
  const badProperties = properties !== undefined &&
    (!isObj(properties) || Object.values(properties).some((p) => !isObj(p) && typeof p !== "boolean"));
  const required = schema["required"];
  const badRequired = required !== undefined &&
    (!Array.isArray(required) || required.some((r) => typeof r !== "string"));
  if (badProperties || badRequired) {
    const field = badProperties ? "properties" : "required";
    return [
      anthropic
        ? `${where}: JSON schema is invalid. It must match JSON Schema draft 2020-12 (${field})`
        : `Invalid schema for function '${name}': ${
          JSON.stringify(badProperties ? properties : required)
        } is not valid under any of the given schemas (${field}).`,
    ];
  }
  return [];
}

const digest = (text: string): string => createHash("sha256").update(text).digest("base64");

/**
 * The signature the fake LLM gives a `thinking` block with this text (the real API's is an
 * opaque base64 string checked server-side): `Eo` then a base64 SHA-256 of the text.
 */
export function fakeThinkingSignature(thinking: string): string {
  return `Eo${digest(`sprout-fake-thinking\u0000${thinking}`)}`;
}

/** The `data` of a fake `redacted_thinking` block made from `seed`: opaque, and checked like a signature. */
export function fakeRedactedThinkingData(seed: string): string {
  const body = btoa(String.fromCharCode(...new TextEncoder().encode(seed)));
  return `${body}.${digest(`sprout-fake-redacted\u0000${body}`)}`;
}

function fakeRedactedDataValid(data: string): boolean {
  const dot = data.lastIndexOf(".");
  return dot > 0 && data.slice(dot + 1) === digest(`sprout-fake-redacted\u0000${data.slice(0, dot)}`);
}

const isThinkingBlock = (b: unknown): boolean =>
  isObj(b) && (b["type"] === "thinking" || b["type"] === "redacted_thinking");

/**
 * The extended-thinking rules of the Messages API: the budget, signatures, where thinking
 * blocks may stand, and that the assistant turn of a tool-use loop starts with one when
 * thinking is enabled (the turn runs from the last user message that is not only tool
 * results; its tool results and later assistant messages belong to it).
 */
function thinkingProblems(body: Obj, messages: unknown[]): string[] {
  const problems: string[] = [];
  const thinking = body["thinking"];
  const enabled = isObj(thinking) && thinking["type"] === "enabled";
  if (enabled) {
    const budget = thinking["budget_tokens"];
    if (!Number.isInteger(budget)) problems.push("thinking.enabled.budget_tokens: Field required");
    else if ((budget as number) < 1024) {
      problems.push("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024");
    } else if (Number.isInteger(body["max_tokens"]) && (body["max_tokens"] as number) <= (budget as number)) {
      problems.push(
        "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size",
      );
    }
  }
  let turnStart = 0; // index of the first message after the last real user message
  messages.forEach((message: unknown, i) => {
    const m = isObj(message) ? message : {};
    const content = typeof m["content"] === "string"
      ? [{ type: "text", text: m["content"] }]
      : Array.isArray(m["content"])
      ? m["content"] as unknown[]
      : [];
    if (m["role"] === "user") {
      if (content.some((b) => !(isObj(b) && b["type"] === "tool_result"))) turnStart = i + 1;
      content.forEach((b, j) => {
        if (isThinkingBlock(b)) {
          problems.push(`messages.${i}.content.${j}: (fake) \`thinking\` blocks may only appear in assistant messages`);
        }
      });
      return;
    }
    if (m["role"] !== "assistant") return;
    content.forEach((b, j) => {
      if (!isObj(b)) return;
      if (b["type"] === "thinking") {
        const signature = b["signature"];
        if (typeof signature !== "string" || signature === "") {
          problems.push(`messages.${i}.content.${j}.thinking.signature: (fake) Field required`);
        } else if (typeof b["thinking"] !== "string" || signature !== fakeThinkingSignature(b["thinking"])) {
          problems.push(`messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`);
        }
      } else if (b["type"] === "redacted_thinking") {
        if (typeof b["data"] !== "string" || !fakeRedactedDataValid(b["data"])) {
          problems.push(`messages.${i}.content.${j}: (fake) Invalid \`data\` in \`redacted_thinking\` block`);
        }
      }
    });
    const first = content[0];
    if (content.some(isThinkingBlock) && !isThinkingBlock(first)) {
      const found = isObj(first) ? String(first["type"]) : "nothing";
      problems.push(
        `messages.${i}.content.0: If an assistant message contains any thinking blocks, the first block must be thinking or redacted_thinking. Found ${found}.`,
      );
    }
    if (content.length > 0 && isThinkingBlock(content[content.length - 1])) {
      problems.push(`messages.${i}: The final block in an assistant message cannot be \`thinking\`.`);
    }
    if (!enabled && i === messages.length - 1) {
      const j = content.findIndex(isThinkingBlock);
      if (j !== -1) {
        problems.push(
          `messages.${i}.content.${j}: When thinking is disabled, an \`assistant\` message in the final position cannot contain \`thinking\`. To use thinking blocks, enable \`thinking\` in your request.`,
        );
      }
    }
  });
  const opener = messages[turnStart];
  if (enabled && isObj(opener) && opener["role"] === "assistant") {
    const content = Array.isArray(opener["content"]) ? opener["content"] as unknown[] : [];
    const first = content[0];
    if (!isThinkingBlock(first)) {
      const found = isObj(first) ? String(first["type"]) : "nothing";
      problems.push(
        `messages.${turnStart}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${found}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`,
      );
    }
  }
  return problems;
}

function textProblem(text: unknown): string | undefined {
  if (typeof text !== "string") return "messages: text content blocks must be non-empty";
  if (text === "") return "messages: text content blocks must be non-empty";
  if (text.trim() === "") return "messages: text content blocks must contain non-whitespace text";
  return undefined;
}

/**
 * Checks a Messages API request body. Returns the problems the real API would report
 * (empty when the request is valid), extended thinking's rules included.
 * @example validateAnthropicRequest({model: "m", max_tokens: 10, messages: []}) // ["messages: at least one message is required"]
 */
export function validateAnthropicRequest(body: unknown): string[] {
  if (!isObj(body)) return ["(fake) the request body must be a JSON object"];
  const problems: string[] = [];
  if (typeof body["model"] !== "string" || body["model"] === "") problems.push("model: Field required");
  if (!Number.isInteger(body["max_tokens"]) || (body["max_tokens"] as number) < 1) {
    problems.push("max_tokens: Field required (an integer of at least 1)");
  }
  const tools = body["tools"] === undefined ? [] : body["tools"];
  if (!Array.isArray(tools)) problems.push("tools: Input should be a valid list");
  else {
    const names = new Set<string>();
    tools.forEach((tool: unknown, i) => {
      const t = isObj(tool) ? tool : {};
      const name = t["name"];
      if (typeof name !== "string" || !TOOL_NAME_PATTERN.test(name)) {
        problems.push(`tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`);
      } else if (names.has(name)) problems.push("tools: Tool names must be unique.");
      else names.add(name);
      problems.push(...schemaProblems(t["input_schema"], `tools.${i}.custom.input_schema`, true, String(name)));
    });
  }
  const hasTools = Array.isArray(tools) && tools.length > 0;
  const messages = body["messages"];
  if (!Array.isArray(messages)) return [...problems, "messages: Field required"];
  if (messages.length === 0) return [...problems, "messages: at least one message is required"];
  const seenIds = new Set<string>();
  let previousToolUses: string[] = [];
  messages.forEach((message: unknown, i) => {
    const m = isObj(message) ? message : {};
    const role = m["role"];
    if (role !== "user" && role !== "assistant") {
      problems.push(`messages.${i}.role: Input should be 'user' or 'assistant'`);
      return;
    }
    if (i === 0 && role !== "user") problems.push('messages: first message must use the "user" role');
    const prior = i > 0 && isObj(messages[i - 1]) ? (messages[i - 1] as Obj)["role"] : undefined;
    // Stricter than today's API, which merges consecutive same-role messages: older API
    // versions and some Anthropic-compatible gateways refuse them, and our client never
    // needs to send them, so the fake keeps the old rule (quoting the old error).
    if (prior === role) {
      problems.push(
        `messages: roles must alternate between "user" and "assistant", but found multiple "${role}" roles in a row`,
      );
    }
    const content = typeof m["content"] === "string" ? [{ type: "text", text: m["content"] }] : m["content"];
    if (!Array.isArray(content)) {
      problems.push(`messages.${i}.content: Input should be a valid list`);
      previousToolUses = [];
      return;
    }
    if (content.length === 0 && !(role === "assistant" && i === messages.length - 1)) {
      problems.push(
        `messages.${i}: all messages must have non-empty content except for the optional final assistant message`,
      );
    }
    const toolUses: string[] = [];
    const results: string[] = [];
    let seenNonResult = false;
    content.forEach((block: unknown, j) => {
      const b = isObj(block) ? block : {};
      const type = b["type"];
      if (type === "text") {
        const p = textProblem(b["text"]);
        if (p !== undefined) problems.push(p);
      }
      if ((type === "tool_use" || type === "tool_result") && !hasTools) {
        problems.push(
          `messages.${i}.content.${j}: Requests which include \`tool_use\` or \`tool_result\` blocks must define tools.`,
        );
      }
      if (type === "tool_use") {
        if (role !== "assistant") {
          problems.push(`messages.${i}.content.${j}: (fake) \`tool_use\` blocks may only appear in assistant messages`);
        }
        const id = String(b["id"] ?? "");
        if (seenIds.has(id)) problems.push(`messages.${i}.content.${j}: \`tool_use\` ids must be unique`);
        seenIds.add(id);
        toolUses.push(id);
        if (typeof b["name"] !== "string" || !TOOL_NAME_PATTERN.test(b["name"])) {
          problems.push(`messages.${i}.content.${j}.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`);
        }
        if (!isObj(b["input"])) problems.push(`messages.${i}.content.${j}.input: Input should be a valid dictionary`);
      }
      if (type === "tool_result") {
        if (role !== "user") {
          problems.push(`messages.${i}.content.${j}: (fake) \`tool_result\` blocks may only appear in user messages`);
        }
        const id = String(b["tool_use_id"] ?? "");
        if (!previousToolUses.includes(id) || results.includes(id)) {
          problems.push(
            `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
          );
        }
        if (seenNonResult && previousToolUses.length > 0) {
          problems.push(
            `messages.${i}: Did not find ${previousToolUses.length} \`tool_result\` block(s) at the beginning of this message. Messages following \`tool_use\` blocks must begin with a matching number of \`tool_result\` blocks.`,
          );
        }
        results.push(id);
        const inner = typeof b["content"] === "string" ? [{ type: "text", text: b["content"] }] : b["content"];
        if (Array.isArray(inner)) {
          for (const c of inner) {
            if (isObj(c) && c["type"] === "text") {
              const p = textProblem(c["text"]);
              if (p !== undefined) problems.push(p);
            }
          }
        }
      } else seenNonResult = true;
    });
    if (previousToolUses.length > 0) {
      const missing = previousToolUses.filter((id) => !results.includes(id));
      if (missing.length > 0) {
        problems.push(
          `messages.${i - 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${
            missing.join(", ")
          }. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
        );
      }
    }
    previousToolUses = toolUses;
  });
  if (previousToolUses.length > 0) {
    problems.push(
      `messages.${messages.length - 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${
        previousToolUses.join(", ")
      }. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
    );
  }
  problems.push(...thinkingProblems(body, messages));
  return [...new Set(problems)];
}

/** The error a Mistral-family chat template raises for an id that is not 9 alphanumerics. */
export const TEMPLATE_ID_ERROR = "Tool call IDs should be alphanumeric strings with length 9!";
/** The error a Mistral-family chat template raises for two user (or assistant) turns in a row. */
export const TEMPLATE_ALTERNATION_ERROR =
  "After the optional system message, conversation roles must alternate user/assistant/user/assistant/...";

/** vLLM's error (Mistral tokenizer mode) for an assistant message with empty content and no calls. */
export const EMPTY_ASSISTANT_ERROR =
  "Invalid assistant message: role='assistant' content=None tool_calls=None prefix=False";

/**
 * Options of {@link validateOpenAiRequest}.
 * @example
 * const problems = validateOpenAiRequest(body, { strictTemplate: true } satisfies OpenAiValidateOptions);
 */
export interface OpenAiValidateOptions {
  /**
   * Also apply the rules of a strict chat template, as a server rendering a Mistral-family
   * model does (llama.cpp `--jinja`, vLLM, LM Studio): see {@link strictTemplateProblems}.
   * Default false.
   */
  strictTemplate?: boolean;
}

/**
 * The problems a Mistral-family chat template raises for a Chat Completions body, quoting
 * its `raise_exception` texts (the Hugging Face templates of Mistral-7B-Instruct-v0.3,
 * Mistral-Nemo-Instruct-2407 and Mistral-Small-3.1, also shipped in llama.cpp's
 * `models/templates/`):
 * - every `tool_calls[].id` and every `tool_call_id` must be exactly 9 characters; the Mistral
 *   API and vLLM's mistral tokenizer also require them alphanumeric (`mistral_common`: "Tool
 *   call id was … but must be a-z, A-Z, 0-9, with a length of 9."), so both are checked as
 *   `[a-zA-Z0-9]{9}` with the template's text {@link TEMPLATE_ID_ERROR};
 * - after an optional first system message, the messages that are neither `tool` messages nor
 *   assistant messages with `tool_calls` must alternate user, assistant, user… starting with
 *   user ({@link TEMPLATE_ALTERNATION_ERROR});
 * - an assistant message needs text or tool calls: vLLM's Mistral mode refuses `content: ""`
 *   without calls ({@link EMPTY_ASSISTANT_ERROR}, vllm-project/vllm#21089).
 * @example strictTemplateProblems({messages: [{role: "user", content: "a"}, {role: "user", content: "b"}]}) // [TEMPLATE_ALTERNATION_ERROR]
 */
export function strictTemplateProblems(body: unknown): string[] {
  const messages = isObj(body) && Array.isArray(body["messages"]) ? body["messages"] as unknown[] : [];
  const all = messages.map((m) => isObj(m) ? m : {});
  const loop = all[0]?.["role"] === "system" ? all.slice(1) : all;
  const problems: string[] = [];
  const hasCalls = (m: Obj) => Array.isArray(m["tool_calls"]) && m["tool_calls"].length > 0;
  const turns = loop.filter((m) => m["role"] !== "tool" && m["role"] !== "tool_results" && !hasCalls(m));
  if (turns.some((m, i) => (m["role"] === "user") !== (i % 2 === 0))) problems.push(TEMPLATE_ALTERNATION_ERROR);
  const legal = (id: unknown) => typeof id === "string" && /^[a-zA-Z0-9]{9}$/.test(id);
  for (const m of loop) {
    const empty = m["content"] === undefined || m["content"] === null || m["content"] === "";
    if (m["role"] === "assistant" && empty && !hasCalls(m)) problems.push(EMPTY_ASSISTANT_ERROR);
    const ids = hasCalls(m) ? (m["tool_calls"] as unknown[]).map((c) => isObj(c) ? c["id"] : undefined) : [];
    if (m["role"] === "tool") ids.push(m["tool_call_id"]);
    if (ids.some((id) => !legal(id))) problems.push(TEMPLATE_ID_ERROR);
  }
  return [...new Set(problems)];
}

/**
 * Checks a Chat Completions request body. Returns the problems the real API would report
 * (empty when the request is valid); with `strictTemplate`, also those of a strict chat
 * template ({@link strictTemplateProblems}).
 * @example
 * validateOpenAiRequest({ model: "", messages: [{ role: "user", content: "hi" }] }) // ["you must provide a model parameter"]
 */
export function validateOpenAiRequest(body: unknown, options: OpenAiValidateOptions = {}): string[] {
  if (!isObj(body)) return ["(fake) the request body must be a JSON object"];
  if (options.strictTemplate === true) {
    const problems = validateOpenAiRequest(body);
    return [...new Set([...problems, ...strictTemplateProblems(body)])];
  }
  const problems: string[] = [];
  if (typeof body["model"] !== "string" || body["model"] === "") problems.push("you must provide a model parameter");
  const tools = body["tools"] === undefined ? [] : body["tools"];
  if (!Array.isArray(tools)) problems.push("Invalid type for 'tools': expected an array");
  else {
    tools.forEach((tool: unknown, i) => {
      const t = isObj(tool) ? tool : {};
      const fn = isObj(t["function"]) ? t["function"] : {};
      const name = fn["name"];
      if (t["type"] !== "function") problems.push(`Invalid value for 'tools[${i}].type': expected 'function'`);
      if (typeof name === "string" && name.length > 64) {
        problems.push(
          `Invalid 'tools[${i}].function.name': string too long. Expected a string with maximum length 64, but got a string with length ${name.length} instead.`,
        );
      } else if (typeof name !== "string" || !TOOL_NAME_PATTERN.test(name)) {
        problems.push(
          `Invalid 'tools[${i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
        );
      }
      if (fn["parameters"] !== undefined) problems.push(...schemaProblems(fn["parameters"], "", false, String(name)));
    });
  }
  const messages = body["messages"];
  if (!Array.isArray(messages)) return [...problems, "Missing required parameter: 'messages'."];
  if (messages.length === 0) {
    return [
      ...problems,
      "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
    ];
  }
  let open: string[] = []; // calls of the last assistant message still waiting for a tool message
  let answered: string[] = [];
  let inToolRun = false;
  const closeRun = () => {
    if (open.length > 0) {
      problems.push(
        `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${
          open.join(", ")
        }`,
      );
    }
    open = [];
    answered = [];
    inToolRun = false;
  };
  messages.forEach((message: unknown, i) => {
    const m = isObj(message) ? message : {};
    const role = m["role"];
    if (!["system", "developer", "user", "assistant", "tool"].includes(role as string)) {
      problems.push(
        `Invalid value: '${
          String(role)
        }'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`,
      );
      return;
    }
    if (role === "tool") {
      if (!inToolRun) {
        problems.push(
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
        );
        return;
      }
      const id = String(m["tool_call_id"] ?? "");
      if (!open.includes(id)) {
        problems.push(
          answered.includes(id)
            ? `(fake) messages[${i}]: a second 'tool' message answers tool_call_id '${id}'`
            : `Invalid parameter: 'tool_call_id' of '${id}' not found in 'tool_calls' of previous message.`,
        );
      } else {
        open = open.filter((x) => x !== id);
        answered.push(id);
      }
      if (typeof m["content"] !== "string" && !Array.isArray(m["content"])) {
        problems.push(
          `Invalid value for 'content': expected a string, got ${
            m["content"] === null ? "null" : typeof m["content"]
          }.`,
        );
      }
      return;
    }
    closeRun();
    const content = m["content"];
    if (role === "assistant") {
      const calls = m["tool_calls"];
      const hasCalls = Array.isArray(calls) && calls.length > 0;
      if ((content === null || content === undefined) && !hasCalls) {
        problems.push("Invalid value for 'content': expected a string, got null.");
      }
      if (hasCalls) {
        const ids = new Set<string>();
        (calls as unknown[]).forEach((call: unknown, j) => {
          const c = isObj(call) ? call : {};
          const fn = isObj(c["function"]) ? c["function"] : {};
          const id = typeof c["id"] === "string" ? c["id"] : "";
          if (id.length > OPENAI_MAX_TOOL_CALL_ID) {
            problems.push(
              `Invalid 'messages[${i}].tool_calls[${j}].id': string too long. Expected a string with maximum length ${OPENAI_MAX_TOOL_CALL_ID}, but got a string with length ${id.length} instead.`,
            );
          }
          if (ids.has(id)) problems.push(`(fake) messages[${i}].tool_calls[${j}]: duplicate tool call id '${id}'`);
          ids.add(id);
          if (typeof fn["name"] !== "string" || !TOOL_NAME_PATTERN.test(fn["name"])) {
            problems.push(
              `Invalid 'messages[${i}].tool_calls[${j}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
            );
          }
          if (typeof fn["arguments"] !== "string") {
            problems.push(
              `Invalid type for 'messages[${i}].tool_calls[${j}].function.arguments': expected a string, but got ${
                fn["arguments"] === null ? "null" : typeof fn["arguments"]
              } instead.`,
            );
          }
        });
        open = [...ids];
        inToolRun = true;
      }
    } else if (typeof content !== "string" && !Array.isArray(content)) {
      problems.push(
        `Invalid value for 'content': expected a string, got ${content === null ? "null" : typeof content}.`,
      );
    }
  });
  closeRun();
  return [...new Set(problems)];
}
