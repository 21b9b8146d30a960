// The argument check that executeTool() runs before a tool with an inputSchema
// (the WebMCP spec's JSON Schema subset, webmachinelearning/webmcp PR #289): a
// failure is a DataError whose message is JSON `{path, reason, schemaPath,
// message}`, so a model can correct itself. webmcp/core.js loads this module
// on the first call of such a tool; which schemas registration accepts is
// webmcp/schema.js's (any object, as Chromium). The check applies `const`, `anyOf`,
// `oneOf`, `allOf`, `not`, `patternProperties` and `additionalProperties` too
// (docs/webmcp-native.md); a keyword it does not know (`$ref`, `format`...) or one whose
// value is malformed (an invalid `pattern`, an unknown type name, a bound that is not a
// number) checks nothing here: the gateway validates every call with full JSON Schema.
import { isObject } from './schema.js';

function typeOf(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value; // 'object', 'string', 'number', 'boolean'
}

function hasType(value, type) {
  if (type === 'integer') return Number.isInteger(value);
  if (type === 'number') return typeof value === 'number' && Number.isFinite(value);
  return typeOf(value) === type;
}

const TYPES = new Set(['null', 'boolean', 'object', 'array', 'number', 'integer', 'string']);
const num = (bound) => typeof bound === 'number' && Number.isFinite(bound);

/** `pattern` as a RegExp, or null when it is not a valid one (it then checks nothing). */
function regex(pattern) {
  if (typeof pattern !== 'string') return null;
  try {
    return new RegExp(pattern, 'u');
  } catch {
    return null;
  }
}

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

function pointer(parts) {
  return parts.map((p) => `/${String(p).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

function problem(path, reason, message) {
  return { path: pointer(path), reason, schemaPath: `/${reason}`, message };
}

/**
 * The first way `value` fails `schema` as `{path, reason, schemaPath,
 * message}` (path: JSON pointer into the arguments; reason: the failing
 * keyword; schemaPath: `/` + that keyword), or null when it fits.
 */
export function checkArguments(schema, value, path = []) {
  if (schema === true || schema === undefined) return null;
  if (schema === false) return problem(path, 'false', 'no value is allowed here');
  if (!isObject(schema)) return null;
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  if ('type' in schema && types.length > 0 && types.every((t) => TYPES.has(t))) {
    if (!types.some((t) => hasType(value, t))) {
      return problem(path, 'type', `expected ${types.join(' or ')}, got ${typeOf(value)}`);
    }
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((v) => same(v, value))) {
    return problem(path, 'enum', `must be one of ${JSON.stringify(schema.enum)}`);
  }
  if ('const' in schema && !same(schema.const, value)) {
    return problem(path, 'const', `must be ${JSON.stringify(schema.const)}`);
  }
  if (typeof value === 'string') {
    const length = [...value].length;
    if (num(schema.minLength) && length < schema.minLength) {
      return problem(path, 'minLength', `must have at least ${schema.minLength} characters`);
    }
    if (num(schema.maxLength) && length > schema.maxLength) {
      return problem(path, 'maxLength', `must have at most ${schema.maxLength} characters`);
    }
    if (regex(schema.pattern) && !regex(schema.pattern).test(value)) {
      return problem(path, 'pattern', `must match ${schema.pattern}`);
    }
  }
  if (typeof value === 'number') {
    if (num(schema.minimum) && value < schema.minimum) {
      return problem(path, 'minimum', `must be >= ${schema.minimum}`);
    }
    if (num(schema.maximum) && value > schema.maximum) {
      return problem(path, 'maximum', `must be <= ${schema.maximum}`);
    }
    if (num(schema.exclusiveMinimum) && value <= schema.exclusiveMinimum) {
      return problem(path, 'exclusiveMinimum', `must be > ${schema.exclusiveMinimum}`);
    }
    if (num(schema.exclusiveMaximum) && value >= schema.exclusiveMaximum) {
      return problem(path, 'exclusiveMaximum', `must be < ${schema.exclusiveMaximum}`);
    }
    if (num(schema.multipleOf) && schema.multipleOf > 0 && !Number.isInteger(value / schema.multipleOf)) {
      return problem(path, 'multipleOf', `must be a multiple of ${schema.multipleOf}`);
    }
  }
  if (Array.isArray(value)) {
    if (num(schema.minItems) && value.length < schema.minItems) {
      return problem(path, 'minItems', `must have at least ${schema.minItems} items`);
    }
    if (num(schema.maxItems) && value.length > schema.maxItems) {
      return problem(path, 'maxItems', `must have at most ${schema.maxItems} items`);
    }
    if (schema.uniqueItems === true && new Set(value.map((v) => JSON.stringify(v))).size !== value.length) {
      return problem(path, 'uniqueItems', 'items must be unique');
    }
    const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : [];
    for (let i = 0; i < value.length; i++) {
      const sub = i < prefix.length ? prefix[i] : schema.items;
      const found = checkArguments(sub, value[i], [...path, i]);
      if (found) return found;
    }
  }
  if (typeOf(value) === 'object') {
    for (const key of Array.isArray(schema.required) ? schema.required : []) {
      if (!Object.prototype.hasOwnProperty.call(value, key)) {
        return problem([...path, key], 'required', `'${key}' is required`);
      }
    }
    const properties = isObject(schema.properties) ? schema.properties : {};
    const patterns = Object.entries(isObject(schema.patternProperties) ? schema.patternProperties : {})
      .map(([source, sub]) => [regex(source), sub]).filter(([re]) => re);
    for (const [key, item] of Object.entries(value)) {
      const declared = Object.prototype.hasOwnProperty.call(properties, key);
      const matching = patterns.filter(([re]) => re.test(key));
      if (declared) {
        const found = checkArguments(properties[key], item, [...path, key]);
        if (found) return found;
      }
      for (const [, sub] of matching) {
        const found = checkArguments(sub, item, [...path, key]);
        if (found) return found;
      }
      if (declared || matching.length > 0) continue;
      if (schema.additionalProperties === false) {
        return problem([...path, key], 'additionalProperties', `'${key}' is not an allowed property`);
      }
      const found = checkArguments(schema.additionalProperties, item, [...path, key]);
      if (found) return found;
    }
  }
  for (const sub of Array.isArray(schema.allOf) ? schema.allOf : []) {
    const found = checkArguments(sub, value, path);
    if (found) return found;
  }
  if (Array.isArray(schema.anyOf) && !schema.anyOf.some((sub) => !checkArguments(sub, value, path))) {
    return problem(path, 'anyOf', 'must match at least one of the allowed schemas');
  }
  if (Array.isArray(schema.oneOf) && schema.oneOf.filter((sub) => !checkArguments(sub, value, path)).length !== 1) {
    return problem(path, 'oneOf', 'must match exactly one of the allowed schemas');
  }
  if ('not' in schema && !checkArguments(schema.not, value, path)) {
    return problem(path, 'not', 'must not match the excluded schema');
  }
  return null;
}
