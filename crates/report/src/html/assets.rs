//! The page's inline stylesheet and scripts. No external resource of any kind: system fonts
//! only, no web fonts, no images but inline SVG.

/// Records uncaught script errors as attributes of `<html>` (`data-js-errors` = count,
/// `data-js-error` = last message), so that a headless browser's DOM dump shows them.
pub const ERROR_TRAP_JS: &str = "(function(){var d=document.documentElement;\
window.addEventListener('error',function(e){\
d.setAttribute('data-js-errors',String((+d.getAttribute('data-js-errors')||0)+1));\
d.setAttribute('data-js-error',String(e&&e.message||e));});})();";

/// Sortable tables: a click on a header button sorts the body rows by that column (numbers
/// by their `data-v` key, text otherwise), toggling ascending/descending; ties keep the
/// original order (`data-i`). Sets `data-js="ready"` on `<html>` once wired.
pub const SORT_JS: &str = r#"(function(){
function key(td){var v=td.getAttribute('data-v');
if(v!==null){var n=parseFloat(v);return isNaN(n)?v:n;}
return td.textContent.trim().toLowerCase();}
function cmp(x,y){if(typeof x==='number'&&typeof y==='number'){return x-y;}
return String(x).localeCompare(String(y));}
var tables=document.querySelectorAll('table.sortable');
Array.prototype.forEach.call(tables,function(t){
var ths=t.tHead.rows[0].cells;
Array.prototype.forEach.call(ths,function(th,i){
var b=th.querySelector('button');if(!b){return;}
b.addEventListener('click',function(){
var asc=th.getAttribute('aria-sort')!=='ascending';
Array.prototype.forEach.call(ths,function(h){h.removeAttribute('aria-sort');});
th.setAttribute('aria-sort',asc?'ascending':'descending');
var body=t.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
rows.sort(function(a,b){var c=cmp(key(a.cells[i]),key(b.cells[i]));
if(c!==0){return asc?c:-c;}return (+a.getAttribute('data-i'))-(+b.getAttribute('data-i'));});
rows.forEach(function(r){body.appendChild(r);});});});});
document.documentElement.setAttribute('data-js','ready');
})();"#;

/// The stylesheet.
pub const CSS: &str = r#"
:root{--fg:#1f2937;--muted:#5b6472;--line:#e3e6eb;--bg:#f6f7f9;--card:#fff;
--pass:#067647;--pass-bg:#e8f6ee;--fail:#b42318;--fail-bg:#fdeceb;--warn:#9a5b00;--warn-bg:#fff4e0;
--accent:#1d4ed8;--gold:#a16207;
font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue","Noto Sans","Liberation Sans",Arial,sans-serif;
font-size:15px;line-height:1.45;color:var(--fg);background:var(--bg)}
*{box-sizing:border-box}
body{margin:0}
code,.mono{font-family:ui-monospace,"SFMono-Regular","DejaVu Sans Mono","Liberation Mono",Menlo,Consolas,monospace;font-size:.86em}
nav{position:sticky;top:0;z-index:5;background:#111827;color:#e5e7eb;padding:.45rem 1.5rem;display:flex;gap:1.1rem;align-items:center;flex-wrap:wrap;font-size:.9rem}
nav .brand{font-weight:700;letter-spacing:.02em;color:#fff;margin-right:.6rem}
nav a{color:#cbd5e1;text-decoration:none}
nav a:hover,nav a:focus{color:#fff;text-decoration:underline}
main{max-width:1320px;margin:0 auto;padding:1.2rem 1.5rem 2rem}
section{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:1.1rem 1.3rem;margin:0 0 1.1rem}
h1{margin:0;font-size:1.05rem;font-weight:600;color:var(--muted)}
h2{margin:0 0 .7rem;font-size:1.2rem}
h3{margin:1.1rem 0 .5rem;font-size:1rem}
h2+h3{margin-top:.2rem}
p{margin:.35rem 0 .6rem}
.muted{color:var(--muted)}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.small{font-size:.85rem}
.verdict{display:flex;gap:1.5rem;align-items:flex-start;border-width:2px}
.verdict.accept{border-color:var(--pass);background:linear-gradient(90deg,var(--pass-bg),#fff 60%)}
.verdict.stop{border-color:var(--fail);background:linear-gradient(90deg,var(--fail-bg),#fff 60%)}
.badge-big{font-size:2.6rem;font-weight:800;letter-spacing:.06em;padding:.2rem 1.1rem;border-radius:10px;color:#fff;line-height:1.2;white-space:nowrap}
.accept .badge-big{background:var(--pass)}
.stop .badge-big{background:var(--fail)}
.verdict .why{flex:1}
.verdict .lead{font-size:1.15rem;font-weight:600;margin:.15rem 0 .4rem}
.verdict ul{margin:.2rem 0 .2rem 1.1rem;padding:0}
.verdict li{margin:.2rem 0}
.regression{margin-top:.6rem;padding:.5rem .7rem;border-radius:8px;background:var(--warn-bg);border:1px solid #f0c27a}
.regression.none{background:#f3f4f6;border-color:var(--line)}
.tag{display:inline-block;white-space:nowrap;font-size:.75rem;font-weight:600;padding:.05rem .4rem;border-radius:4px;background:#eef0f3;color:#374151;vertical-align:1px}
.tag.fail{background:var(--fail);color:#fff}
.tag.pass{background:var(--pass);color:#fff}
.tag.warn{background:#f5b544;color:#3b2300}
.tag.gold{background:#fdf2c4;color:#713f12}
.meta{display:grid;grid-template-columns:repeat(auto-fit,minmax(280px,1fr));gap:.2rem 1.5rem}
.meta dl{margin:0;display:grid;grid-template-columns:max-content 1fr;gap:.15rem .8rem}
.meta dt{color:var(--muted)}
.meta dd{margin:0;overflow-wrap:anywhere}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(132px,1fr));gap:.6rem}
.card{border:1px solid var(--line);border-radius:8px;padding:.55rem .75rem;background:#fbfbfc}
.card .k{font-size:.8rem;color:var(--muted)}
.card .v{font-size:1.45rem;font-weight:700;font-variant-numeric:tabular-nums}
.card .s{font-size:.8rem;color:var(--muted)}
.card.bad{border-color:#f3b8b2;background:var(--fail-bg)}
.card.bad .v{color:var(--fail)}
.card.good .v{color:var(--pass)}
.table-wrap{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:.87rem}
caption{text-align:left;color:var(--muted);font-size:.82rem;padding:.2rem 0 .4rem}
th,td{padding:.3rem .4rem;border-bottom:1px solid var(--line);vertical-align:top;text-align:left}
thead th{background:#f3f4f6;font-weight:600;white-space:nowrap;position:sticky;top:0}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
th button{all:unset;cursor:pointer;display:inline-flex;gap:.25rem;align-items:center}
th button:focus-visible{outline:2px solid var(--accent);outline-offset:2px}
th button::after{content:"\2195";color:#9ca3af;font-size:.8em}
th[aria-sort=ascending] button::after{content:"\25B2";color:var(--fg)}
th[aria-sort=descending] button::after{content:"\25BC";color:var(--fg)}
tr.fail td{background:var(--fail-bg)}
tr.fail td:first-child{box-shadow:inset 3px 0 0 var(--fail)}
tbody tr:hover td{background:#eef2ff}
.status{font-weight:700;white-space:nowrap}
.status.pass{color:var(--pass)}
.status.fail{color:var(--fail)}
.query{display:block;color:var(--muted);font-size:.8rem;max-width:26rem}
.chunk{display:inline-block;white-space:nowrap;margin:0 .45rem .1rem 0;font-family:ui-monospace,"DejaVu Sans Mono","Liberation Mono",Menlo,monospace;font-size:.8rem}
.chunk .r{font-weight:700}
.chunk.out .r{color:var(--fail)}
.chunk.gold::before{content:"\2605";color:var(--gold);margin-right:.15rem}
.note{min-width:10rem;max-width:18rem;font-size:.8rem}
#case-table tbody th{min-width:11rem;font-weight:400}
#delta-table tbody th{font-weight:400}
details>summary{cursor:pointer}
.note details>summary{color:var(--fg)}
.grid2{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:1.2rem}
.grid3{display:grid;grid-template-columns:repeat(auto-fit,minmax(340px,1fr));gap:1rem}
@media (max-width:900px){.grid2{grid-template-columns:1fr}.verdict{flex-direction:column}}
figure{margin:0}
figcaption{font-size:.85rem;color:var(--muted);margin:.1rem 0 .3rem}
figcaption strong{color:var(--fg)}
svg.chart{width:100%;height:auto;display:block}
svg.chart text{font-family:inherit;fill:#374151}
svg.chart .grid{stroke:#e5e7eb;stroke-width:1}
svg.chart .axis{stroke:#9ca3af;stroke-width:1}
svg.chart .lbl{font-size:11px}
svg.chart .val{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}
.scroll{max-height:640px;overflow-y:auto}
svg.spark{width:180px;height:40px;display:block}
svg.spark .grid{stroke:#e5e7eb;stroke-width:1}
table.sparks td{vertical-align:middle}
table.sparks .last{font-weight:600;font-variant-numeric:tabular-nums;white-space:nowrap}
.legend{display:flex;flex-wrap:wrap;gap:.3rem .9rem;font-size:.8rem;margin:.3rem 0 0}
.legend span{display:inline-flex;align-items:center;gap:.3rem}
.legend svg{width:28px;height:12px}
ol.checklist{margin:.3rem 0;padding:0;list-style:none;font-size:.9rem}
ol.checklist li{margin:.3rem 0}
.case-diag{border:1px solid var(--line);border-left:4px solid var(--fail);border-radius:8px;padding:.6rem .8rem;margin:.6rem 0;background:#fffdfd}
.case-diag.documented{border-left-color:#f59e0b}
.case-diag h3{margin:0 0 .2rem;font-size:.98rem}
.check{display:inline-block;min-width:7.5rem;font-weight:600;font-size:.8rem;color:#374151}
.pattern{border:1px solid var(--line);border-left:4px solid var(--accent);border-radius:8px;padding:.6rem .8rem;margin:.6rem 0}
.pattern h4{margin:0 0 .2rem;font-size:.95rem}
.pattern p{margin:.2rem 0;font-size:.92rem}
table.inner{font-size:.8rem;margin:.3rem 0 .2rem;width:auto}
table.inner th,table.inner td{padding:.15rem .45rem}
.up{color:var(--pass)}
.down{color:var(--fail)}
.sig{font-weight:700}
ul.plain{margin:.2rem 0;padding-left:1.1rem}
footer{max-width:1320px;margin:0 auto;padding:0 1.5rem 2rem;color:var(--muted);font-size:.8rem}
@media print{nav{display:none}section{break-inside:avoid;border-color:#ccc}body,:root{background:#fff}.scroll{max-height:none}}
"#;
