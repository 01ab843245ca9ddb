/**
 * The check a `_PreToolUse` rewrite passes before the tool runs with it (SPEC section 7.6): the
 * new arguments against the tool's input schema. A subset of JSON Schema, the part that says
 * whether a call is well formed: `type`, `properties`, `required`, `enum`, `const`, `items`,
 * `additionalProperties: false`, `minimum`/`maximum`, `minLength`/`maxLength`. Other keywords
 * (`pattern`, `format`, `$ref`, combinators) are left to the server, which checks its own input.
 * @module
 */

/** At most this many problems are reported for one value. */
const MAX_PROBLEMS = 5;

/**
 * The ways `value` breaks `schema`, each naming the path (`$.path`), or `[]` when it keeps it
 * (or when the schema says nothing this check reads).
 * @example
 * inputProblems({ path: 3 }, { type: "object", properties: { path: { type: "string" } }, required: ["path"] })
 * // ['$.path must be string, not number']
 */
export function inputProblems(value: unknown, schema: unknown): string[] {
  const problems: string[] = [];
  check(value, schema, "$", problems, 0);
  return problems.slice(0, MAX_PROBLEMS);
}

function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number" && Number.isInteger(value)) return "integer";
  return typeof value;
}

function matchesType(value: unknown, type: string): boolean {
  const actual = typeOf(value);
  return actual === type || (type === "number" && actual === "integer");
}

function check(value: unknown, schema: unknown, path: string, problems: string[], depth: number): void {
  if (problems.length >= MAX_PROBLEMS || depth > 32) return;
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return;
  const s = schema as Record<string, unknown>;
  const types = typeof s.type === "string"
    ? [s.type]
    : Array.isArray(s.type)
    ? s.type.filter((t) => typeof t === "string")
    : [];
  if (types.length > 0 && !types.some((t) => matchesType(value, t as string))) {
    problems.push(`${path} must be ${types.join(" or ")}, not ${typeOf(value)}`);
    return;
  }
  if (Array.isArray(s.enum) && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    problems.push(`${path} must be one of ${s.enum.map((e) => JSON.stringify(e)).join(", ")}`);
  }
  if (Object.hasOwn(s, "const") && JSON.stringify(s.const) !== JSON.stringify(value)) {
    problems.push(`${path} must be ${JSON.stringify(s.const)}`);
  }
  if (typeof value === "number") {
    if (typeof s.minimum === "number" && value < s.minimum) problems.push(`${path} must be >= ${s.minimum}`);
    if (typeof s.maximum === "number" && value > s.maximum) problems.push(`${path} must be <= ${s.maximum}`);
  }
  if (typeof value === "string") {
    const length = [...value].length;
    if (typeof s.minLength === "number" && length < s.minLength) {
      problems.push(`${path} must be at least ${s.minLength} characters`);
    }
    if (typeof s.maxLength === "number" && length > s.maxLength) {
      problems.push(`${path} must be at most ${s.maxLength} characters`);
    }
  }
  if (Array.isArray(value) && typeof s.items === "object" && s.items !== null && !Array.isArray(s.items)) {
    value.forEach((item, i) => check(item, s.items, `${path}[${i}]`, problems, depth + 1));
  }
  if (typeOf(value) === "object") {
    const record = value as Record<string, unknown>;
    const properties = typeof s.properties === "object" && s.properties !== null
      ? s.properties as Record<string, unknown>
      : {};
    if (Array.isArray(s.required)) {
      for (const key of s.required) {
        if (typeof key === "string" && !Object.hasOwn(record, key)) problems.push(`${path}.${key} is required`);
      }
    }
    for (const [key, item] of Object.entries(record)) {
      if (Object.hasOwn(properties, key)) check(item, properties[key], `${path}.${key}`, problems, depth + 1);
      else if (s.additionalProperties === false) problems.push(`${path}.${key} is not allowed`);
    }
  }
}
