// The <site-agent> element's styles (shadow DOM). Theme with the --site-agent-* custom
// properties on the element; ::part(launcher) and ::part(panel) reach the two boxes.
export const styles = `
:host{--_accent:var(--site-agent-accent,#0f766e);--_accent-fg:var(--site-agent-accent-fg,#fff);
--_bg:var(--site-agent-bg,#fff);--_fg:var(--site-agent-fg,#1f2328);--_muted:var(--site-agent-muted,#57606a);
--_border:var(--site-agent-border,#d0d7de);--_surface:var(--site-agent-surface,#f3f5f7);
--_danger:var(--site-agent-danger,#b42318);--_radius:var(--site-agent-radius,12px);
--_font:var(--site-agent-font,system-ui,-apple-system,"Segoe UI",sans-serif);--_z:var(--site-agent-z,2147483000);
font-family:var(--_font);color:var(--_fg);font-size:15px;line-height:1.4}
@media (prefers-color-scheme:dark){:host{--_accent:var(--site-agent-accent,#2dd4bf);--_accent-fg:var(--site-agent-accent-fg,#04201d);
--_bg:var(--site-agent-bg,#16191d);--_fg:var(--site-agent-fg,#e6e8eb);--_muted:var(--site-agent-muted,#9aa4af);
--_border:var(--site-agent-border,#343a42);--_surface:var(--site-agent-surface,#20252b);--_danger:var(--site-agent-danger,#f97066)}}
*,*::before,*::after{box-sizing:border-box}
[hidden]{display:none!important}
button,textarea{font:inherit;color:inherit}
button{cursor:pointer;border-radius:calc(var(--_radius)*.67);border:1px solid var(--_border);background:var(--_surface);padding:.45em .9em}
button:disabled{cursor:default;opacity:.55}
:focus-visible{outline:2px solid var(--_accent);outline-offset:2px}
.primary{background:var(--_accent);color:var(--_accent-fg);border-color:var(--_accent)}
.danger{color:var(--_danger);border-color:var(--_danger);background:transparent}
.launcher{position:fixed;right:20px;bottom:20px;z-index:var(--_z);background:var(--_accent);color:var(--_accent-fg);
border:0;border-radius:999px;padding:.75em 1.2em;font-weight:600;box-shadow:0 4px 16px rgba(0,0,0,.2)}
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
.launcher{right:12px;bottom:12px}.msg{max-width:95%}}
@media (prefers-reduced-motion:no-preference){.panel{animation:in .15s ease-out}@keyframes in{from{opacity:0;transform:translateY(8px)}}}
`;
