// Invisible and text-direction characters made visible: "evil\u202egnp.exe" reads as
// "evilexe.png" in a browser; revealed it reads "evil⟦U+202E⟧gnp.exe". The ranges are
// pysite_agent/core/display.py's HIDDEN_RANGES (tests/test_reveal_js.py checks that
// they agree); the card's argument lines arrive revealed from Python already.
const RANGES = [
  [0x0000, 0x0008], [0x000B, 0x000C], [0x000E, 0x001F], [0x007F, 0x009F], [0x00AD, 0x00AD],
  [0x034F, 0x034F], [0x061C, 0x061C], [0x115F, 0x1160], [0x17B4, 0x17B5], [0x180B, 0x180F],
  [0x200B, 0x200F], [0x2028, 0x202E], [0x2060, 0x206F], [0x3164, 0x3164], [0xFEFF, 0xFEFF],
  [0xFFA0, 0xFFA0], [0xFFF9, 0xFFFB], [0x1D173, 0x1D17A], [0xE0000, 0xE007F],
];
const hex = (n) => n.toString(16).toUpperCase().padStart(4, '0');
const HIDDEN = new RegExp(`[${RANGES.map(([a, b]) => `\\u{${hex(a)}}-\\u{${hex(b)}}`).join('')}]`, 'gu');

/** `text` with each hidden character as ⟦U+XXXX⟧ (a non-string is returned as it is). */
export function reveal(text) {
  return typeof text === 'string' ? text.replace(HIDDEN, (c) => `⟦U+${hex(c.codePointAt(0))}⟧`) : text;
}

/** Whether `text` was changed by reveal() or holds its markers (the card's lines). */
export const showsHidden = (text) => typeof text === 'string' && /⟦U\+[0-9A-F]{4,6}⟧/.test(text);
