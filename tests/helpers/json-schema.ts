/**
 * A small JSON Schema (draft-07) checker for the tests: the keywords Codex's published hook
 * schemas use (`type`, `enum`, `const`, `properties`, `required`, `additionalProperties`,
 * `items`, `pattern`, `allOf`, `anyOf`, `if`/`then`, local `$ref`). Anything else is ignored.
 * @module
 */

type Schema = boolean | Record<string, unknown>;

function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

/**
 * The problems of `value` against `schema` (`[]` when it conforms), each as `$.path: what`.
 * @example schemaProblems({ type: "object", required: ["a"] }, {}) // ['$: "a" is required']
 */
export function schemaProblems(schema: Schema, value: unknown, root: Schema = schema, path = "$"): string[] {
  if (schema === true) return [];
  if (schema === false) return [`${path}: no value is allowed`];
  const out: string[] = [];
  const s = schema;
  if (typeof s.$ref === "string") {
    const target = s.$ref.replace(/^#\//, "").split("/").reduce<unknown>(
      (node, key) => (node as Record<string, unknown>)?.[key],
      root,
    );
    out.push(...schemaProblems(target as Schema, value, root, path));
  }
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? s.type as string[] : [s.type as string];
    const actual = typeOf(value);
    if (!types.includes(actual) && !(actual === "integer" && types.includes("number"))) {
      out.push(`${path}: must be ${types.join(" or ")}, not ${actual}`);
    }
  }
  if (Array.isArray(s.enum) && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    out.push(`${path}: must be one of ${JSON.stringify(s.enum)}`);
  }
  if (s.const !== undefined && JSON.stringify(s.const) !== JSON.stringify(value)) {
    out.push(`${path}: must be ${JSON.stringify(s.const)}`);
  }
  if (typeof s.pattern === "string" && typeof value === "string" && !new RegExp(s.pattern).test(value)) {
    out.push(`${path}: must match ${s.pattern}`);
  }
  if (typeOf(value) === "object") {
    const record = value as Record<string, unknown>;
    const props = (s.properties ?? {}) as Record<string, Schema>;
    for (const key of (s.required ?? []) as string[]) {
      if (!Object.hasOwn(record, key)) out.push(`${path}: ${JSON.stringify(key)} is required`);
    }
    for (const [key, v] of Object.entries(record)) {
      if (props[key] !== undefined) out.push(...schemaProblems(props[key]!, v, root, `${path}.${key}`));
      else if (s.additionalProperties === false) out.push(`${path}: ${JSON.stringify(key)} is not allowed`);
      else if (typeof s.additionalProperties === "object") {
        out.push(...schemaProblems(s.additionalProperties as Schema, v, root, `${path}.${key}`));
      }
    }
  }
  if (Array.isArray(value) && s.items !== undefined) {
    value.forEach((v, i) => out.push(...schemaProblems(s.items as Schema, v, root, `${path}[${i}]`)));
  }
  for (const sub of (s.allOf ?? []) as Schema[]) out.push(...schemaProblems(sub, value, root, path));
  if (Array.isArray(s.anyOf) && !s.anyOf.some((sub) => schemaProblems(sub as Schema, value, root, path).length === 0)) {
    out.push(`${path}: matches none of anyOf`);
  }
  if (s.if !== undefined && schemaProblems(s.if as Schema, value, root, path).length === 0 && s.then !== undefined) {
    out.push(...schemaProblems(s.then as Schema, value, root, path));
  }
  return out;
}
