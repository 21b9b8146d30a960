// The page doctor: lists a page's WebMCP tools and the mistakes in them that
// weaken the agent's safety or keep a model from using a tool. Each finding
// says what is wrong, why it matters and how to fix it.
//
//   const report = await document.querySelector('site-agent').agent.doctor();
//   // or: python -m pysite_agent doctor https://example.com/page
//
// It reads the tools from document.modelContext (attribute by attribute), the
// page's `<form toolname>` elements, and the raw arguments of the
// registerTool calls that loader.js recorded (web/webmcp/shim.js,
// recordRegistrations): browsers convert the hints before anyone can see
// them, so only the raw arguments show a hint given as a string or under an
// unknown name. Loaded only when asked (not part of the page's first bytes).

const REGISTRATIONS = Symbol.for('pysite-agent.webmcp-registrations');
const SHIM_BRAND = Symbol.for('pysite-agent.webmcp-shim'); // web/webmcp/shim.js
const LOADER = Symbol.for('pysite-agent.loader'); // set by loader.js when it runs
/** The annotations WebMCP defines (Chrome 156 keeps these and drops the rest). */
export const KNOWN_HINTS = ['readOnlyHint', 'untrustedContentHint', 'consequentialHint', 'debugging'];
/** What MCP and others call hints that mean something else, or nothing, here. */
const SUGGEST = {
  destructiveHint: 'consequentialHint (WebMCP has no destructiveHint; the agent asks before any tool that is not read-only)',
  idempotentHint: 'nothing (WebMCP has no idempotentHint)',
  openWorldHint: 'untrustedContentHint, if the tool returns text from outside the site',
  readOnly: 'readOnlyHint',
  untrustedContent: 'untrustedContentHint',
  consequential: 'consequentialHint',
};
/**
 * Keywords outside the WebMCP draft's schema subset (spec PR #289). The shim registers such
 * tools as Chromium does (web/webmcp/schema.js) and the agent checks every call against the
 * whole schema, so they are warnings about browsers that may enforce the draft, not errors.
 * `format` is only a note: Chromium itself writes it for a form's date and email inputs.
 */
const EXCLUDED = ['$ref', '$defs', 'definitions', '$dynamicRef', '$anchor', 'format', 'unevaluatedProperties',
  'unevaluatedItems', 'dependentRequired', 'dependentSchemas', 'dependencies', 'contentEncoding',
  'contentMediaType', 'contentSchema', 'if', 'then', 'else', 'patternProperties', 'propertyNames'];
/** Keywords Gemini's function declarations (an OpenAPI 3.0 subset) do not take. */
const NOT_FOR_GEMINI = ['anyOf', 'oneOf', 'allOf', 'not', 'const', 'additionalProperties', 'prefixItems', '$ref', '$defs'];
const JSON_TYPES = ['object', 'array', 'string', 'number', 'integer', 'boolean', 'null'];
const SEVERITY = { error: 0, warning: 1, info: 2 };

function finding(severity, code, tool, message, fix) {
  return { severity, code, tool, message, fix };
}

function closest(name) {
  if (SUGGEST[name]) return SUGGEST[name];
  const lower = name.toLowerCase();
  const hit = KNOWN_HINTS.find((k) => k.toLowerCase() === lower || k.toLowerCase() === `${lower}hint`);
  return hit ?? null;
}

/** Each subschema of `schema` with its JSON pointer. */
function* walk(schema, where = '') {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return;
  yield [schema, where || '/'];
  if (schema.properties && typeof schema.properties === 'object') {
    for (const [k, v] of Object.entries(schema.properties)) yield* walk(v, `${where}/properties/${k}`);
  }
  for (const k of ['items', 'not', 'additionalProperties', 'contains']) {
    if (schema[k] && typeof schema[k] === 'object') yield* walk(schema[k], `${where}/${k}`);
  }
  for (const k of ['anyOf', 'oneOf', 'allOf', 'prefixItems']) {
    if (Array.isArray(schema[k])) for (let i = 0; i < schema[k].length; i++) yield* walk(schema[k][i], `${where}/${k}/${i}`);
  }
}

function schemaFindings(name, schema, { form = false } = {}) {
  const out = [];
  if (schema === undefined || schema === null) return out;
  if (typeof schema !== 'object' || Array.isArray(schema)) {
    out.push(finding('error', 'schema-invalid', name, 'The inputSchema is not a JSON object, so no model can be told the arguments.',
      'Give inputSchema as an object: {type: "object", properties: {...}}.'));
    return out;
  }
  if (schema.type !== undefined && schema.type !== 'object') {
    out.push(finding('error', 'schema-root', name,
      `The inputSchema's root type is ${JSON.stringify(schema.type)}: tool arguments are always an object, OpenAI, Anthropic and Gemini refuse anything else, and Chrome's on-device model then gets no argument shape at all.`,
      'Make the root {type: "object", properties: {...}} and put the value in a property.'));
  }
  const gemini = new Set();
  for (const [sub, where] of walk(schema)) {
    for (const keyword of EXCLUDED) {
      if (!(keyword in sub)) continue;
      if (keyword === 'format') {
        // A form's schema is the browser's own (Chromium writes format for date/email inputs).
        if (!form) {
          out.push(finding('info', 'schema-subset', name,
            `'format' at ${where} is outside WebMCP's schema subset. The shim and Chromium register the tool and the agent checks the arguments, but some models ignore 'format'.`,
            "Say the format in the property's description too (for example 'a date, YYYY-MM-DD')."));
        }
        continue;
      }
      out.push(finding('warning', 'schema-subset', name,
        `'${keyword}' at ${where} is outside WebMCP's schema subset: the shim and Chromium register the tool (the agent checks every call against the whole schema), but a browser that enforces the subset may refuse it.`,
        keyword.startsWith('$') || keyword === 'definitions'
          ? 'Write the referenced schema out in place (no $ref/$defs).'
          : `Remove '${keyword}' and describe the rule in the description; the page's own code checks it anyway.`));
    }
    if ('additionalProperties' in sub && sub.additionalProperties !== false) {
      out.push(finding('info', 'schema-subset', name,
        `'additionalProperties' at ${where} is not false: WebMCP's schema subset allows only false, but the shim and Chromium register the tool, and the agent checks every call against the whole schema.`,
        'Use additionalProperties: false, or leave it out, for browsers that enforce the subset.'));
    }
    if (typeof sub.pattern === 'string') {
      try {
        new RegExp(sub.pattern, 'u');
      } catch {
        out.push(finding('error', 'schema-subset', name, `The pattern at ${where} is not a valid regular expression: the browser registers the tool, but the agent cannot check arguments against an invalid schema and refuses every call to it.`,
          'Fix the pattern (it is a JavaScript regular expression with the u flag).'));
      }
    }
    const types = Array.isArray(sub.type) ? sub.type : sub.type === undefined ? [] : [sub.type];
    for (const t of types) {
      if (!JSON_TYPES.includes(t)) {
        out.push(finding('error', 'schema-invalid', name, `The type ${JSON.stringify(t)} at ${where} is not a JSON Schema type: the schema is invalid, so the agent refuses every call to the tool.`,
          `Use one of ${JSON_TYPES.join(', ')}.`));
      }
    }
    for (const keyword of NOT_FOR_GEMINI) if (keyword in sub && !(keyword === 'additionalProperties' && sub[keyword] === false)) gemini.add(keyword);
  }
  if (gemini.size) {
    out.push(finding('warning', 'schema-gemini', name,
      `Gemini's function declarations do not take ${[...gemini].map((k) => `'${k}'`).join(', ')}: the proxy drops or simplifies them for Gemini, so that model sees a looser schema (the agent still checks the arguments).`,
      'Prefer plain properties with enum and descriptions where you can.'));
  }
  return out;
}

function nameFindings(name) {
  const out = [];
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) {
    out.push(finding('warning', 'name-renamed', name,
      `OpenAI and Anthropic take tool names of 1-64 letters, digits, '_' and '-': the proxy renames '${name}' for them, and the model sees the new name.`,
      "Use only letters, digits, '_' and '-', at most 64 characters (for example 'cart_add' for 'cart.add')."));
  } else if (!/^[A-Za-z]/.test(name) || name.length > 63) {
    out.push(finding('info', 'name-renamed', name, `Gemini wants a name that starts with a letter and has at most 63 characters: the proxy renames '${name}' for it.`,
      'Start the name with a letter.'));
  }
  return out;
}

function hintFindings(name, record) {
  const out = [];
  const annotations = record.annotations;
  for (const key of record.topLevel ?? []) {
    out.push(finding('error', 'hint-misplaced', name,
      `'${key}' is given next to name and description instead of inside 'annotations': browsers ignore it there, so the tool has no such hint.`,
      `Move it: annotations: {${key}: ...}.`));
  }
  if (annotations === undefined || annotations === null) return out;
  if (typeof annotations !== 'object' || Array.isArray(annotations)) {
    out.push(finding('error', 'hint-not-boolean', name, "'annotations' is not an object: browsers refuse the registration.", 'Give annotations as an object of booleans.'));
    return out;
  }
  for (const [key, value] of Object.entries(annotations)) {
    if (KNOWN_HINTS.includes(key)) {
      if (typeof value !== 'boolean') {
        const becomes = Boolean(value);
        const danger = key === 'readOnlyHint' && becomes && value !== true
          ? ' The tool then counts as read-only, so the agent runs it without asking the visitor.'
          : key === 'consequentialHint' && !becomes
            ? ' The agent then treats it as not consequential.'
            : '';
        out.push(finding('error', 'hint-not-boolean', name,
          `${key} is ${JSON.stringify(value)} (${typeof value}), not a boolean: browsers convert it, and ${JSON.stringify(value)} becomes ${becomes}.${danger}`,
          `Write ${key}: ${typeof value === 'string' && /^(true|false)$/.test(value) ? value : 'true or false'} (a boolean, without quotes).`));
      }
    } else {
      const better = closest(key);
      out.push(finding('warning', 'hint-unknown', name,
        `'${key}' is not a WebMCP annotation: Chromium drops it, and the agent cannot act on it.`,
        better ? `Use ${better}.` : `Use ${KNOWN_HINTS.join(', ')}, or remove it.`));
    }
  }
  return out;
}

/**
 * Findings for a page report `{tools, forms, registrations}` (registrations:
 * the recorded raw registerTool arguments, or null when nothing was recorded).
 * Returns `[{severity: 'error'|'warning'|'info', code, tool, message, fix}]`,
 * errors first.
 */
export function diagnose(report) {
  const { tools = [], forms = [], registrations = null } = report;
  const out = [];
  const formNames = new Set(forms.map((f) => f.toolname));
  if (!tools.length && !forms.length) {
    out.push(finding('warning', 'no-tools', null, 'The page has no WebMCP tools: the agent can only answer from its instructions.',
      'Register tools with document.modelContext.registerTool(...) or add <form toolname tooldescription>.'));
    if (lateLoader(report)) {
      out.push(finding('warning', 'loader-order', null,
        `loader.js ran after the page's own scripts (${report.loader.scriptsBefore} before it${report.loader.readyState === 'complete' ? ', and only after the page had loaded' : ''}), and no tool was registered: the likely cause is an app that checks document.modelContext once when it starts, found none (this browser has no WebMCP of its own, so the shim came with loader.js), and registered nothing.`,
        "Load loader.js first: <script type=\"module\" src=\"/site-agent/loader.js\"></script> in <head>, before the app's scripts; or register tools whenever document.modelContext is there (check it when a tool is registered, not once at start)."));
    }
  }
  if (registrations === null) {
    out.push(finding('info', 'registrations-unseen', null,
      "loader.js recorded no registerTool calls (it is not on this page), so hints given as strings or under unknown names could not be checked: browsers convert them before anyone can read them.",
      'Load loader.js before the scripts that register tools.'));
  }
  const recorded = new Map();
  for (const record of registrations ?? []) {
    const name = typeof record.name === 'string' ? record.name : String(record.name);
    if (record.error) {
      const duplicate = /duplicate/i.test(record.error);
      out.push(finding('error', duplicate ? 'duplicate-name' : /name/i.test(record.error) ? 'invalid-name' : 'registration-failed', name,
        `registerTool('${name}') failed: ${record.error}. The tool is not available to any agent.`,
        duplicate
          ? 'Give each tool its own name, or unregister the old one first (abort its signal).'
          : /name/i.test(record.error)
            ? "Use 1-128 letters, digits, '_', '-' or '.' for the name."
            : 'Fix what the error names; the findings below may say more.'));
    }
    out.push(...hintFindings(name, record));
    if (record.error) out.push(...schemaFindings(name, record.inputSchema));
    if (!recorded.has(name) || record.ok) recorded.set(name, record);
  }
  for (const form of forms) {
    if (!form.description) {
      out.push(finding('error', 'no-description', form.toolname,
        `The form '${form.toolname}' has no tooldescription: it is not registered as a tool, and a model could not tell what it does.`,
        'Add tooldescription="what submitting this form does".'));
    }
  }
  const seen = new Map();
  for (const tool of tools) {
    seen.set(tool.name, (seen.get(tool.name) ?? 0) + 1);
    if (registrations !== null && !recorded.has(tool.name) && !formNames.has(tool.name)) {
      out.push(finding('info', 'registration-unseen', tool.name,
        'This tool was registered before loader.js loaded, so its raw arguments (hints as strings, unknown hint names) could not be checked.',
        'Load loader.js before the script that registers this tool.'));
    }
    if (!tool.description || !tool.description.trim()) {
      out.push(finding('error', 'no-description', tool.name, 'The tool has no description: a model cannot tell when to use it, and the confirmation card cannot say what it does.',
        'Describe what it does and what it returns in one or two sentences.'));
    } else if (tool.description.trim().length < 15) {
      out.push(finding('warning', 'short-description', tool.name, `The description "${tool.description}" is too short for a model to choose this tool reliably.`,
        'Say what the tool does, what it needs and what it returns.'));
    }
    if (!formNames.has(tool.name) && (tool.annotations === null || tool.annotations === undefined)) {
      out.push(finding('warning', 'no-annotations', tool.name,
        'The tool has no annotations, so the agent asks the visitor before every call (safety rule 2), even if it only reads.',
        'Add annotations: {readOnlyHint: true} if it only reads; {consequentialHint: true} if it spends money or cannot be undone.'));
    }
    out.push(...nameFindings(tool.name));
    out.push(...schemaFindings(tool.name, tool.inputSchema, { form: formNames.has(tool.name) }));
  }
  for (const [name, count] of seen) {
    if (count > 1) {
      out.push(finding('error', 'duplicate-name', name, `${count} tools are listed as '${name}' (for example a form and a script, or two frames): a model cannot tell them apart.`,
        'Give each tool its own name.'));
    }
  }
  const unique = new Map(out.map((f) => [JSON.stringify([f.code, f.tool, f.message]), f]));
  return [...unique.values()].sort((a, b) => SEVERITY[a.severity] - SEVERITY[b.severity]);
}

function plain(value) {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') {
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  }
  try {
    return JSON.parse(JSON.stringify(value));
  } catch {
    return null;
  }
}

/**
 * True when loader.js came late on a page without native WebMCP: scripts of the page before
 * its own <script>, or loader.js run only after the page's load, and no registerTool call
 * recorded. (Native WebMCP exists before any script, so the order does not matter there.)
 */
function lateLoader(report) {
  const loader = report.loader;
  if (!loader || report.webmcp !== 'shim') return false; // the page's own (native or defined) came first
  if (report.registrations && report.registrations.length) return false;
  return loader.scriptsBefore > 0 || loader.readyState === 'complete'; // a module script runs at 'interactive'
}

/**
 * Which document.modelContext the page has: 'native' (the browser's own), 'shim'
 * (web/webmcp/shim.js, which loader.js installs), 'page' (one the page defined itself, such as
 * another polyfill) or 'none'.
 */
export function webmcpKind(context = document.modelContext) {
  if (context === null || context === undefined) return 'none';
  if (context[SHIM_BRAND] === true) return 'shim';
  const desc = Object.getOwnPropertyDescriptor(Document.prototype, 'modelContext');
  const native = !!desc?.get && /\{\s*\[native code\]\s*\}\s*$/.test(Function.prototype.toString.call(desc.get))
    && !Object.prototype.hasOwnProperty.call(document, 'modelContext') && desc.get.call(document) === context;
  return native ? 'native' : 'page';
}

/**
 * When loader.js ran: `{url, readyState, scriptsBefore}` (`readyState`: the document's then;
 * `scriptsBefore`: the page's scripts before loader.js's own <script> in document order, null
 * when no <script> has loader.js's address: a bundle imported it). Null without loader.js.
 */
function loaderReport() {
  const seen = globalThis[LOADER];
  if (!seen) return null;
  const own = [...document.scripts].find((s) => s.src && s.src === seen.url);
  let scriptsBefore = null;
  if (own) {
    scriptsBefore = [...document.scripts].filter((s) => s !== own && !/^(importmap|speculationrules|application\/(ld\+)?json)$/i.test(s.type)
      && (own.compareDocumentPosition(s) & Node.DOCUMENT_POSITION_PRECEDING)).length;
  }
  return { url: seen.url, readyState: seen.readyState ?? null, scriptsBefore };
}

/** What the doctor looks at on this page. */
export async function gather(modelContext = document.modelContext) {
  const tools = [];
  for (const tool of (await modelContext?.getTools()) ?? []) {
    // Attribute by attribute: a Chrome 160 Tool cannot be serialized whole.
    tools.push({
      name: String(tool.name), title: tool.title ?? '', description: tool.description ?? '',
      inputSchema: plain(tool.inputSchema), outputSchema: plain(tool.outputSchema),
      annotations: plain(tool.annotations), origin: tool.origin ?? null,
    });
  }
  const forms = [...document.querySelectorAll('form[toolname]')].map((form) => ({
    toolname: form.getAttribute('toolname'),
    description: (form.getAttribute('tooldescription') ?? '').trim(),
    autosubmit: form.hasAttribute('toolautosubmit'),
  }));
  const recorded = globalThis[REGISTRATIONS];
  return {
    url: location.href,
    webmcp: webmcpKind(modelContext),
    loader: loaderReport(),
    tools, forms,
    registrations: recorded ? JSON.parse(JSON.stringify(recorded)) : null,
  };
}

/** The page's tools and the findings: `{url, webmcp, loader, tools, forms, registrations, findings}`. */
export async function doctor(modelContext = undefined) {
  const report = await gather(modelContext ?? document.modelContext);
  return { ...report, findings: diagnose(report) };
}
