// How registerTool() reads a tool's `inputSchema` / `outputSchema`, as Chromium 156's own
// WebMCP does (measured with --enable-features=WebMCP, tests/browser/test_shim_schemas.py):
// any object is kept as its JSON text (JSON.stringify's rules: functions and undefined
// dropped, toJSON used), and no keyword is checked: `$ref`/`$defs`, `patternProperties`,
// `additionalProperties` as a schema, `anyOf`/`oneOf` at the root, `format`, unknown
// keywords and even an invalid `pattern` are accepted. The shim also takes a JSON string
// (older Chrome). The page doctor (webmcp/doctor.js) flags what lies outside the draft's
// subset, and the gateway validates every call with full JSON Schema, so nothing the
// browser lists is lost here. The shim's own argument check is webmcp/arguments.js.

export function isObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The JSON text of `schema` (the `member` of a tool given to registerTool), or undefined
 * when it is undefined. Throws the message of a TypeError (`fail(message)` builds it) when
 * it is not an object or a JSON string of one, or cannot be written as JSON (a cycle, a BigInt).
 */
export function readSchema(schema, member, fail) {
  if (schema === undefined) return undefined;
  let value = schema;
  if (typeof value === 'string') {
    // Native 156 wants an object; older Chrome took a JSON string. Accept both.
    try {
      value = JSON.parse(value);
    } catch {
      throw fail(`Failed to read the '${member}' property: the string is not valid JSON.`);
    }
  }
  if (typeof value !== 'object' || value === null) {
    throw fail(`Failed to read the '${member}' property: Failed to convert value to 'object'.`);
  }
  try {
    return JSON.stringify(value);
  } catch (error) {
    throw fail(error.message);
  }
}
