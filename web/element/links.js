// Links in the assistant's answers: http(s) URLs, bare or as Markdown's [text](url), become
// <a> elements built from text nodes. Nothing else becomes a link or markup (no javascript:,
// data: or other schemes, no URL with a user name or password), so a model's text can never
// inject HTML. Same-origin links open in the page (the conversation goes along to the next
// page); others open in a new tab with neither opener nor referrer.

// A Markdown link [text](http...) or a bare http(s) URL.
const LINK = /\[([^\]\n]{1,200})\]\((https?:\/\/[^\s()<>]+(?:\([^\s()<>]*\)[^\s()<>]*)*)\)|\bhttps?:\/\/[^\s<>"'`]+/gi;
// Punctuation that ends a sentence rather than a bare URL.
const TRAILING = /[.,;:!?'"»”’\]]+$/;

/** The URL when `raw` is an absolute http(s) URL without credentials, else null. */
export function safeURL(raw) {
  try {
    const url = new URL(raw);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
    if (url.username || url.password) return null;
    return url;
  } catch {
    return null;
  }
}

// A bare URL's end: trailing punctuation, and a ')' that closes nothing opened in the URL.
function trimBare(raw) {
  let url = raw.replace(TRAILING, '');
  while (url.endsWith(')') && (url.match(/\(/g) || []).length < (url.match(/\)/g) || []).length) {
    url = url.slice(0, -1).replace(TRAILING, '');
  }
  return url;
}

function anchor(url, text) {
  const a = document.createElement('a');
  a.href = url.href;
  a.textContent = text;
  if (url.origin !== location.origin) {
    a.target = '_blank';
    a.rel = 'noopener noreferrer';
  }
  return a;
}

/** Appends `text` to `parent` as text nodes, with its http(s) links as <a> elements. */
export function appendWithLinks(parent, text) {
  const source = String(text);
  let last = 0;
  for (const match of source.matchAll(LINK)) {
    const [whole, label, target] = match;
    let shown = whole;
    let url = null;
    if (label !== undefined) {
      url = safeURL(target);
    } else {
      shown = trimBare(whole);
      url = safeURL(shown);
    }
    if (!url) continue;
    if (match.index > last) parent.append(document.createTextNode(source.slice(last, match.index)));
    parent.append(anchor(url, label !== undefined ? label : shown));
    last = match.index + shown.length;
  }
  if (last < source.length) parent.append(document.createTextNode(source.slice(last)));
  return parent;
}
