// The WebMCP spec's JSON Schema subset (webmachinelearning/webmcp PR #289): which
// schemas registerTool() accepts; loaded with webmcp/core.js and by webmcp/doctor.js.
// The argument check of executeTool() is webmcp/arguments.js. Registration refuses
// the excluded keywords, an `additionalProperties` other than `false`, and an invalid
// `pattern`; other keywords are accepted (docs/webmcp-native.md explains the choice).
// `format` is accepted although the draft excludes it: Chromium 156's registerTool() takes it
// (apps use `format: "date"`), the doctor still flags it, and the gateway validates every call.

/** Keywords the spec excludes from the subset (PR #289: remote/DAG, formats, content...). */
export const EXCLUDED = [
  '$ref', '$defs', 'definitions', '$dynamicRef', '$anchor', '$dynamicAnchor',
  'unevaluatedProperties', 'unevaluatedItems', 'dependentRequired', 'dependentSchemas',
  'dependencies', 'contentEncoding', 'contentMediaType', 'contentSchema',
  'if', 'then', 'else', 'patternProperties', 'propertyNames',
];
const SUBSCHEMA_LISTS = ['prefixItems', 'anyOf', 'oneOf', 'allOf'];
const SUBSCHEMAS = ['items', 'not', 'contains'];

export function isObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Throws an Error saying why `schema` is outside the subset; returns nothing
 * when it fits. `where` is the JSON pointer of the subschema (for messages).
 */
export function checkSubset(schema, where = '') {
  if (typeof schema === 'boolean') return;
  if (!isObject(schema)) throw new Error(`the schema at '${where || '/'}' is not an object`);
  for (const keyword of EXCLUDED) {
    if (keyword in schema) {
      throw new Error(`'${keyword}' (at '${where || '/'}') is not in WebMCP's schema subset`);
    }
  }
  if ('additionalProperties' in schema && schema.additionalProperties !== false) {
    throw new Error(`'additionalProperties' (at '${where || '/'}') may only be false in WebMCP's schema subset`);
  }
  if ('pattern' in schema) {
    try {
      new RegExp(schema.pattern, 'u');
    } catch {
      throw new Error(`'pattern' (at '${where || '/'}') is not a valid regular expression`);
    }
  }
  if (isObject(schema.properties)) {
    for (const [key, sub] of Object.entries(schema.properties)) checkSubset(sub, `${where}/properties/${key}`);
  }
  for (const keyword of SUBSCHEMAS) {
    if (keyword in schema) checkSubset(schema[keyword], `${where}/${keyword}`);
  }
  for (const keyword of SUBSCHEMA_LISTS) {
    if (Array.isArray(schema[keyword])) {
      schema[keyword].forEach((sub, i) => checkSubset(sub, `${where}/${keyword}/${i}`));
    }
  }
}
