// The panel's styles (shadow DOM), loaded with the panel (web/element/panel.js); the custom
// properties and the launcher's styles come first, with the element (LAUNCHER_STYLES in
// web/element/element.js). ::part(panel) and ::part(card) reach the boxes. Sizes are in
// rem/em, so the panel follows the visitor's font size; the full-screen layout's query is
// FULL_SCREEN in web/element/modal.js, where the panel is also modal.
export const styles = `
.panel{position:fixed;right:var(--_r);left:var(--_l);top:var(--_pt);bottom:var(--_pb);z-index:var(--_z);width:min(26rem,calc(100vw - 2.5rem));
height:min(40rem,calc(100vh - 7rem));display:flex;flex-direction:column;background:var(--_bg);color:var(--_fg);
border:1px solid var(--_border);border-radius:var(--_radius);box-shadow:0 12px 40px rgba(0,0,0,.25);overflow:hidden}
.head{display:flex;align-items:flex-start;gap:.75em;padding:.8em 1em;border-bottom:1px solid var(--_border);flex-wrap:wrap}
.titles{flex:1;min-width:0}
h2{margin:0;font-size:1.05em}
.model{display:block;color:var(--_muted);font-size:.8em;overflow-wrap:anywhere}
.close{border:0;background:transparent;font-size:1.3em;line-height:1;min-width:1.8em;min-height:1.8em;padding:.1em .4em;margin-inline-start:.4em}
.fresh{font-size:.8em;padding:.3em .6em}
.fresh-ask{display:flex;flex-wrap:wrap;align-items:center;gap:.4em;font-size:.85em;flex-basis:100%;order:3}
.fresh-ask span{flex-basis:100%}
.body{flex:1;overflow-y:auto;padding:.8em 1em;display:flex;flex-direction:column;gap:.6em}
.body:focus-visible{outline-offset:-2px}
.log{display:flex;flex-direction:column;gap:.5em}
.msg{max-width:88%;padding:.5em .75em;border-radius:var(--_radius);white-space:pre-wrap;overflow-wrap:anywhere;border:1px solid transparent}
.user{align-self:flex-end;background:var(--_accent);color:var(--_accent-fg)}
.assistant{align-self:flex-start;background:var(--_surface)}
.msg a{color:inherit;text-decoration:underline;text-underline-offset:.15em}
.step{opacity:.8;font-size:.92em}.mark{color:var(--_muted);font-size:.85em}
.note{align-self:stretch;color:var(--_muted);font-size:.85em;overflow-wrap:anywhere}
.error{align-self:stretch;color:var(--_danger);font-size:.9em;overflow-wrap:anywhere}
.retry-run{font-size:.95em;padding:.2em .7em}
.waiting::after{content:"";display:inline-block;width:1.2em;text-align:start}
@media (prefers-reduced-motion:no-preference){.waiting::after{animation:dots 1.2s steps(4,end) infinite;content:"…"}
@keyframes dots{0%{clip-path:inset(0 100% 0 0)}100%{clip-path:inset(0 0 0 0)}}}
.welcome{display:flex;flex-direction:column;gap:.6em}
.examples{display:flex;flex-wrap:wrap;gap:.4em;align-items:center}
.examples .note{flex-basis:100%}
.example{font-size:.9em;text-align:start}
.box{border:1px solid var(--_border);border-radius:var(--_radius);padding:.8em;display:flex;flex-direction:column;gap:.5em;background:var(--_surface)}
.box p{margin:0}
.box .fail{color:var(--_danger)}
progress{width:100%;accent-color:var(--_accent)}
.card{border:2px solid var(--_accent);background:var(--_bg);scroll-margin:.5em}
.layer{padding:0;border:0;margin:0;inset:auto;width:0;height:0;overflow:visible;background:transparent;max-width:none;max-height:none}
.layer::backdrop{background:transparent}
.card h3{margin:0;font-size:1em}
.card .summary{font-weight:600;white-space:pre-wrap;overflow-wrap:anywhere}
.card dl{margin:0;display:grid;grid-template-columns:minmax(5em,auto) 1fr;gap:.2em .8em}
.card dt{color:var(--_muted)}
.card dd{margin:0;overflow-wrap:anywhere;white-space:pre-wrap}
.why{color:var(--_muted);font-size:.9em}
.actions{display:flex;gap:.5em;justify-content:flex-end;flex-wrap:wrap}
.allow{font-weight:700;border-width:2px}
.allow::before{content:"✓ " / ""}
.deny::before{content:"✕ " / ""}
.allow[aria-disabled=true]{opacity:.55;cursor:not-allowed}
.blocked-hint{color:var(--_danger);font-size:.9em}
.more-above{position:sticky;top:0;z-index:1;align-self:center;font-size:.85em;padding:.25em .9em;background:var(--_bg);
box-shadow:0 2px 8px rgba(0,0,0,.18)}
form{display:flex;gap:.5em;padding:.7em 1em;border-top:1px solid var(--_border);align-items:flex-end}
textarea{flex:1;resize:none;min-height:2.4em;max-height:8em;padding:.45em .6em;border:1px solid var(--_border);
border-radius:calc(var(--_radius)*.67);background:var(--_bg);field-sizing:content}
.status{color:var(--_muted);font-size:.8em;padding:0 1em .5em;min-height:1.2em}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
@media (max-width:600px),(max-height:500px){.panel{right:0;left:0;top:0;bottom:0;width:100vw;height:100dvh;max-height:100dvh;border-radius:0;border:0}
.msg{max-width:95%}.body{padding:.6em .8em}}
@media (max-height:500px){.head{padding:.4em .8em}.status{padding-bottom:.2em}form{padding:.4em .8em}}
@media (max-height:260px){.panel{overflow-y:auto}.body{flex:none;overflow:visible}} /* 400 % zoom: the panel scrolls as one */
@media (pointer:coarse){button,button.close{min-height:44px;min-width:44px}textarea{font-size:max(1rem,16px);min-height:44px}
.head{gap:1em}.close{margin-inline-start:.75em}}
@media (forced-colors:active){.panel,.box,.msg,button,textarea{border:1px solid CanvasText}
.card{border:3px solid CanvasText}
.allow{forced-color-adjust:none;background:Highlight;color:HighlightText;border:3px solid CanvasText}
.allow[aria-disabled=true]{background:Canvas;color:GrayText;border-style:dashed;opacity:1}
.deny{border-style:dashed}
progress{accent-color:Highlight}}
@media (prefers-reduced-motion:no-preference){.panel{animation:in .15s ease-out}@keyframes in{from{opacity:0;transform:translateY(8px)}}}
`;
