// The panel's styles (shadow DOM), loaded with the panel (web/element/panel.js); the custom
// properties and the launcher's styles come first, with the element (LAUNCHER_STYLES in
// web/element/element.js). ::part(panel) and ::part(card) reach the boxes.
export const styles = `
.panel{position:fixed;right:20px;bottom:78px;z-index:var(--_z);width:min(400px,calc(100vw - 40px));
height:min(600px,calc(100vh - 110px));display:flex;flex-direction:column;background:var(--_bg);color:var(--_fg);
border:1px solid var(--_border);border-radius:var(--_radius);box-shadow:0 12px 40px rgba(0,0,0,.25);overflow:hidden}
header{display:flex;align-items:flex-start;gap:.5em;padding:.8em 1em;border-bottom:1px solid var(--_border)}
.titles{flex:1;min-width:0}
h2{margin:0;font-size:1.05em}
.model{display:block;color:var(--_muted);font-size:.8em;overflow-wrap:anywhere}
.close{border:0;background:transparent;font-size:1.3em;line-height:1;padding:.1em .4em}
.fresh{font-size:.8em;padding:.3em .6em}
.body{flex:1;overflow-y:auto;padding:.8em 1em;display:flex;flex-direction:column;gap:.6em}
.log{display:flex;flex-direction:column;gap:.5em}
.msg{max-width:88%;padding:.5em .75em;border-radius:var(--_radius);white-space:pre-wrap;overflow-wrap:anywhere}
.user{align-self:flex-end;background:var(--_accent);color:var(--_accent-fg)}
.assistant{align-self:flex-start;background:var(--_surface)}
.step{opacity:.8;font-size:.92em}.mark{color:var(--_muted);font-size:.85em}
.note{align-self:stretch;color:var(--_muted);font-size:.85em;overflow-wrap:anywhere}
.error{align-self:stretch;color:var(--_danger);font-size:.9em;overflow-wrap:anywhere}
.box{border:1px solid var(--_border);border-radius:var(--_radius);padding:.8em;display:flex;flex-direction:column;gap:.5em;background:var(--_surface)}
.box p{margin:0}
.box .fail{color:var(--_danger)}
progress{width:100%;accent-color:var(--_accent)}
.card{border:2px solid var(--_accent);background:var(--_bg)}
.card h3{margin:0;font-size:1em}
.card dl{margin:0;display:grid;grid-template-columns:minmax(5em,auto) 1fr;gap:.2em .8em}
.card dt{color:var(--_muted)}
.card dd{margin:0;overflow-wrap:anywhere;white-space:pre-wrap}
.why{color:var(--_muted);font-size:.9em}
.actions{display:flex;gap:.5em;justify-content:flex-end;flex-wrap:wrap}
form{display:flex;gap:.5em;padding:.7em 1em;border-top:1px solid var(--_border);align-items:flex-end}
textarea{flex:1;resize:none;min-height:2.4em;max-height:8em;padding:.45em .6em;border:1px solid var(--_border);
border-radius:calc(var(--_radius)*.67);background:var(--_bg)}
.status{color:var(--_muted);font-size:.8em;padding:0 1em .5em;min-height:1.2em}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
@media (max-width:600px){.panel{right:0;left:0;bottom:0;width:100vw;height:100dvh;max-height:100dvh;border-radius:0;border:0}
.msg{max-width:95%}}
@media (prefers-reduced-motion:no-preference){.panel{animation:in .15s ease-out}@keyframes in{from{opacity:0;transform:translateY(8px)}}}
`;
