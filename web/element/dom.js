// The element's DOM helpers: h() builds an element (text always as textContent, never HTML),
// sheet() a constructed stylesheet for a shadow root.

/** `<tag>` with `props` (text: textContent, on*: listeners, else attributes) and children. */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'text') el.textContent = value;
    else if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? '' : value);
  }
  for (const child of children) if (child) el.append(child);
  return el;
}

/**
 * Adds the CSS `text` to the shadow `root`: a constructed stylesheet (not an inline <style>,
 * so a CSP without 'unsafe-inline' for styles still applies it), else a <style> element.
 */
const sheets = new Map(); // CSS text -> its sheet, shared by every element

export function adoptStyles(root, text) {
  try {
    let sheet = sheets.get(text);
    if (!sheet) {
      sheet = new CSSStyleSheet();
      sheet.replaceSync(text);
      sheets.set(text, sheet);
    }
    root.adoptedStyleSheets = [...root.adoptedStyleSheets, sheet];
  } catch {
    root.append(h('style', { text })); // no constructable stylesheets
  }
}
