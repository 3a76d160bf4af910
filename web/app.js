// The farm dashboard: a single page with hash routes, reading only /api/v1. Plain JS, no
// framework and no network beyond this server. This file holds the shared helpers, the
// overview, workers and chart pages and the router; builds.js, job.js and schedules.js
// hold the other pages. Every error is recorded in window.farmErrors (the end-to-end
// tests fail on any).
'use strict';

window.farmErrors = [];
window.addEventListener('error', (e) => window.farmErrors.push(String(e.message || e)));
window.addEventListener('unhandledrejection', (e) => window.farmErrors.push(String(e.reason)));

const app = document.getElementById('app');
let timers = [];      // refresh timers of the current page
let stream = null;    // EventSource of the job page
let pageToken = 0;    // bumps on every navigation so stale callbacks do nothing

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------
function esc(s) {
  return String(s === undefined || s === null ? '' : s).replace(/[&<>"']/g,
    (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c]));
}
function token() { return localStorage.getItem('farmToken') || ''; }
function headers() { const t = token(); return t ? {'Authorization': 'Bearer ' + t} : {}; }
async function api(path, opts) {
  const res = await fetch('/api/v1/' + path, Object.assign({headers: headers()}, opts || {}));
  const body = await res.json();
  if (!res.ok) throw new Error((body.error && body.error.message) || res.statusText);
  return body;
}
function stateName(s) { return String(s || '').replace(/^(JOB|BUILD|VALIDATION)_/, '').toLowerCase(); }
// The parts of a wheel's stored manifest, largest first (common/wheel/wheel_bytes.h,
// WheelSizeParts): code images added up per arch and module, then the other listed parts.
function wheelParts(m) {
  if (!m || !m.bytes) return [];
  const images = {};
  for (const i of m.images || []) {
    const what = `${i.arch} in ${i.module}`;
    const p = images[what] || (images[what] = {what, compressed: 0, uncompressed: 0});
    p.compressed += Number(i.compressed_bytes || 0);
    p.uncompressed += Number(i.uncompressed_bytes || 0);
  }
  const parts = Object.values(images).concat((m.bytes.largest || []).map((p) => ({
    what: p.name, compressed: Number(p.compressed_bytes || 0), uncompressed: Number(p.uncompressed_bytes || 0)})));
  return parts.sort((a, b) => b.compressed - a.compressed);
}
function badge(s) { const n = stateName(s); return `<span class="badge s-${esc(n)}">${esc(n.replace(/_/g, ' '))}</span>`; }
// A build's badge: "blocked" when no worker can take any of its remaining jobs.
function buildBadge(b) {
  return b.blocked ? `<span class="badge s-blocked" title="${esc(b.blocked_reason)}">blocked</span>`
                   : badge(b.state);
}
function dur(ms) {
  if (!(ms >= 0)) return '';
  const s = Math.round(ms / 1000);
  if (s < 60) return s + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm ' + (s % 60) + 's';
  return Math.floor(s / 3600) + 'h ' + Math.floor((s % 3600) / 60) + 'm';
}
function bytes(n) {
  if (!(n > 0)) return '0 B';
  const u = ['B', 'KiB', 'MiB', 'GiB']; let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return n.toFixed(i ? 1 : 0) + ' ' + u[i];
}
function plural(n, word) { return `${n} ${word}${n === 1 ? '' : 's'}`; }
// "3 min ago" for a time, with the exact local and UTC time on hover.
function when(iso) {
  if (!iso) return '<span class="muted">—</span>';
  const t = Date.parse(iso);
  if (isNaN(t)) return esc(iso);
  const s = Math.round((Date.now() - t) / 1000);
  const a = Math.abs(s);
  const text = a < 10 ? 'just now'
    : a < 60 ? `${a} s` : a < 3600 ? `${Math.round(a / 60)} min`
    : a < 86400 ? `${Math.round(a / 3600)} h` : `${Math.round(a / 86400)} d`;
  const rel = text === 'just now' ? text : s >= 0 ? text + ' ago' : 'in ' + text;
  return `<time class="rel" datetime="${esc(iso)}" title="${esc(new Date(t).toLocaleString())} (${esc(iso)})">${esc(rel)}</time>`;
}
// A worker by the name people use, its id on hover.
function workerRef(name, id) {
  if (!id) return '<span class="muted">—</span>';
  return `<span class="worker" data-worker-id="${esc(id)}" title="${esc(id)}">${esc(name || id)}</span>`;
}
// "py3.11 · torch 2.8 · CUDA 13.0": only the axes the cell has; a recipe without a matrix
// builds with whatever the worker offers.
function cellLabel(c) {
  const parts = [];
  if (c.python) parts.push('py' + esc(c.python));
  if (c.torch) parts.push('torch ' + esc(c.torch));
  if (c.cuda) parts.push('CUDA ' + esc(c.cuda));
  if (c.platform) parts.push(esc(c.platform));
  return parts.length ? parts.join(' · ') : '<span class="muted">default cell (the worker\'s Python and CUDA)</span>';
}
// A validation job's label, "validation of job N attempt A" with a link to the build job
// whose wheels it validates; "" for a build job.
function validationOf(j) {
  if (j.kind !== 'validation') return '';
  const target = Number(j.target_job_id);
  return `<span class="validation-of">validation of <a href="#/job/${target}">job ${target}</a>
    attempt ${Number(j.target_attempt)}</span>`;
}
// Units done of total (or compiles done) and the peak RSS so far, with a bar.
function progressHtml(p) {
  if (!p) return '';
  const total = Number(p.units_total), done = Number(p.units_done), rss = Number(p.peak_rss_bytes);
  const parts = [];
  let bar = '';
  if (total > 0) {
    const pct = Math.floor(done * 100 / total);
    parts.push(`${done}/${total} units (${pct}%)`);
    // An SVG rect, not a style attribute: the Content-Security-Policy allows no inline style.
    bar = `<svg class="bar" viewBox="0 0 100 1" preserveAspectRatio="none"><rect width="${pct}" height="1"/></svg>`;
  } else if (done > 0) {
    parts.push(plural(done, 'compile') + ' done');
  }
  if (rss > 0) parts.push('peak RSS ' + bytes(rss));
  return parts.length ? `<span class="progress">${bar}${parts.join(' · ')}</span>` : '';
}
// "ran 2m 3s of ~4m 10s" when the last successful run of this cell is known.
function elapsedHtml(ranMs, expectedMs) {
  const ran = dur(ranMs);
  if (!(expectedMs > 0)) return `ran <span class="elapsed">${ran}</span>`;
  const late = ranMs > expectedMs ? ' late' : '';
  return `ran <span class="elapsed">${ran}</span> <span class="expected${late}" title="the last successful build of this recipe and cell took ${dur(expectedMs)}">of ~${dur(expectedMs)}</span>`;
}
function setStatus(text, isError) {
  const el = document.getElementById('status');
  el.textContent = text; el.className = isError ? 'error' : 'muted';
}
function every(ms, fn) { fn(); timers.push(setInterval(fn, ms)); }
function guard(token, fn) {
  return (...args) => { if (token === pageToken) return fn(...args); };
}
function showError(e) { setStatus('error: ' + e.message, true); }
// The query of the current hash route ("#/builds?state=failed") as an object.
function routeQuery() {
  const q = location.hash.indexOf('?');
  return q < 0 ? {} : Object.fromEntries(new URLSearchParams(location.hash.slice(q + 1)));
}

// ANSI SGR colours to spans; every other escape sequence is dropped.
function ansiToHtml(text) {
  let out = '', fg = null, bg = null, bold = false, open = false;
  const parts = String(text).split(/\x1b\[([0-9;]*)([A-Za-z])/);
  for (let i = 0; i < parts.length; i += 3) {
    if (parts[i]) out += esc(parts[i]);
    if (i + 2 >= parts.length || parts[i + 2] !== 'm') continue;
    for (const code of (parts[i + 1] || '0').split(';').map(Number)) {
      if (code === 0) { fg = bg = null; bold = false; }
      else if (code === 1) bold = true;
      else if (code === 22) bold = false;
      else if (code >= 30 && code <= 37) fg = code - 30;
      else if (code >= 90 && code <= 97) fg = code - 90;
      else if (code === 39) fg = null;
      else if (code >= 40 && code <= 47) bg = code - 40;
      else if (code === 49) bg = null;
    }
    if (open) { out += '</span>'; open = false; }
    const cls = [];
    if (fg !== null) cls.push('ansi-fg-' + fg);
    if (bg !== null) cls.push('ansi-bg-' + bg);
    if (bold) cls.push('ansi-bold');
    if (cls.length) { out += `<span class="${cls.join(' ')}">`; open = true; }
  }
  return open ? out + '</span>' : out;
}
window.ansiToHtml = ansiToHtml;

// Write actions need a bearer token (submitter; admin to drain), asked for once.
function haveToken(role) {
  if (token()) return true;
  const t = prompt(`Bearer token with the ${role} role:`);
  if (!t) return false;
  localStorage.setItem('farmToken', t);
  return true;
}
async function postAction(path, role, done) {
  if (!haveToken(role)) return;
  try { await api(path, {method: 'POST', headers: headers()}); setStatus(done); }
  catch (e) { showError(e); }
}
function cancelBuild(id) { return postAction(`builds/${id}/cancel`, 'submitter', 'cancel requested'); }
function retryJob(id) { return postAction(`jobs/${id}/retry`, 'submitter', 'retry queued'); }
function drainWorker(id, drain) {
  return postAction(`workers/${encodeURIComponent(id)}/${drain ? 'drain' : 'undrain'}`, 'admin',
                    drain ? 'drain requested' : 'drain lifted');
}

// ---------------------------------------------------------------------------------------
// Overview, workers, chart
// ---------------------------------------------------------------------------------------
function jobRows(jobs, fetchedAt, withError) {
  if (!jobs.length) return `<tr><td colspan="6" class="muted">none</td></tr>`;
  return jobs.map((j) => {
    const live = j.state === 'JOB_RUNNING' ? Date.now() - fetchedAt : 0;
    const last = withError
      ? `${j.failure && j.failure.phase ? `<span class="phase-tag">${esc(j.failure.phase)}</span> ` : ''}${esc(j.error)}`
      : `${elapsedHtml(j.ran_ms + live, j.expected_ms)} ${progressHtml(j.progress)}`;
    return `<tr data-job="${j.id}"><td><a href="#/job/${j.id}">job ${j.id}</a>
      ${j.kind === 'validation' ? `<div class="muted">${validationOf(j)}</div>` : ''}</td>
      <td><a href="#/build/${j.build_id}">${esc(j.recipe_name)} #${j.build_id}</a></td>
      <td>${cellLabel(j.cell)} · <code>${esc(j.cell.arch_list)}</code></td>
      <td>${badge(j.state)}</td><td>${workerRef(j.worker_name, j.worker_id)}</td><td>${last}</td></tr>`;
  }).join('');
}

function workerTable(workers) {
  if (!workers.length) return '<p class="muted">No worker registered.</p>';
  const rows = workers.map((w) => `<tr data-worker="${esc(w.id)}">
      <td>${workerRef(w.name, w.id)}<div class="muted">${esc(w.hostname)}</div></td>
      <td>${esc(w.platform)}${w.wsl2 ? ' <span class="muted">WSL2</span>' : ''}</td>
      <td>${w.gpus.map((g) => `${esc(g.name)} <span class="muted">(sm ${esc(g.compute_capability)}${g.unified_memory ? ', unified memory' : ''})</span>`).join('<br>') || '<span class="muted">none</span>'}${w.gpu_driver_error ? `<div class="error">${esc(w.gpu_driver_error)}</div>` : ''}</td>
      <td>${w.toolkits.map(esc).join(', ')}</td>
      <td>${badge(w.state)}${w.probe_error ? `<div class="error">${esc(w.probe_error)}</div>` : ''}</td>
      <td>${w.heartbeat_age_ms >= 0 ? `<span title="${esc(w.last_heartbeat)}">${dur(w.heartbeat_age_ms)} ago</span>` : 'never'}</td>
      <td>${w.running_jobs.map((id) => `<a href="#/job/${id}">${id}</a>${
        (w.running_validation_jobs || []).includes(id) ? ' <span class="muted">(validation)</span>' : ''}`).join(' ')}</td>
      <td><button class="drain" data-id="${esc(w.id)}" data-drain="${w.state === 'draining' ? 0 : 1}">
        ${w.state === 'draining' ? 'Undrain' : 'Drain'}</button></td></tr>`);
  return `<table><tr><th>Worker</th><th>Platform</th><th>GPUs</th><th>CUDA toolkits</th>
    <th>State</th><th>Last heartbeat</th><th>Running jobs</th><th></th></tr>${rows.join('')}</table>`;
}

async function overviewPage(t) {
  app.innerHTML = `<h1>Overview</h1><div id="ov"></div><h2>Build duration over time</h2>
    <div id="chart" class="chart"></div>`;
  every(2000, guard(t, async () => {
    try {
      const fetchedAt = Date.now();
      const ov = await api('overview');
      if (t !== pageToken) return;
      const c = ov.jobs_by_state;
      document.getElementById('ov').innerHTML = `<div class="cards">
        <div class="card"><div class="n" id="queue-depth">${ov.queue_depth}</div>${ov.queue_depth === 1 ? 'queued job' : 'queued jobs'}</div>
        <div class="card"><div class="n">${c.JOB_RUNNING}</div>running</div>
        <div class="card"><div class="n">${c.JOB_SUCCEEDED}</div>succeeded</div>
        <div class="card"><div class="n">${c.JOB_FAILED}</div>failed</div></div>
        <h2>Running jobs</h2><table id="running"><tr><th>Job</th><th>Build</th><th>Cell</th>
        <th>State</th><th>Worker</th><th>How far</th></tr>${jobRows(ov.running, fetchedAt, false)}</table>
        <h2>Recent failures</h2><table id="failures"><tr><th>Job</th><th>Build</th><th>Cell</th>
        <th>State</th><th>Worker</th><th>Error</th></tr>${jobRows(ov.recent_failures, fetchedAt, true)}</table>
        <h2>Worker fleet</h2>${workerTable(ov.workers)}`;
      setStatus('updated ' + new Date().toLocaleTimeString());
    } catch (e) { showError(e); }
  }));
  drawChart(t, 'chart');
}

async function workersPage(t) {
  app.innerHTML = `<h1>Workers</h1><div id="workers"></div>`;
  every(2000, guard(t, async () => {
    try {
      const r = await api('workers');
      if (t !== pageToken) return;
      document.getElementById('workers').innerHTML = workerTable(r.workers);
      for (const b of document.querySelectorAll('button.drain')) {
        b.onclick = () => drainWorker(b.dataset.id, b.dataset.drain === '1');
      }
    } catch (e) { showError(e); }
  }));
}

// Build duration against finish time, one line per recipe and cell (points of different
// cells are different things), failed jobs as red points, drawn as SVG.
async function drawChart(t, elId) {
  try {
    const r = await api('chart');
    const el = document.getElementById(elId);
    if (t !== pageToken || !el) return;
    const pts = r.series.flatMap((s) => s.points);
    if (!pts.length) { el.innerHTML = '<p class="muted">No finished job yet.</p>'; return; }
    const W = 900, H = 260, L = 60, B = 30;
    const x0 = Math.min(...pts.map((p) => p.finished_ms)), x1 = Math.max(...pts.map((p) => p.finished_ms));
    const y1 = Math.max(...pts.map((p) => p.duration_ms)) || 1;
    const sx = (v) => L + (x1 === x0 ? (W - L) / 2 : (v - x0) / (x1 - x0) * (W - L - 10));
    const sy = (v) => H - B - v / y1 * (H - B - 10);
    // The same colours as style.css's .legend .swatch-N; none is the red of a failed job's point.
    const colours = ['#1a5fb4', '#8a5a2b', '#1f9d55', '#d99a00', '#7b6fa8', '#0e8a8a'];
    const recipes = [...new Set(r.series.map((s) => s.recipe))];
    const colour = (s) => colours[recipes.indexOf(s.recipe) % colours.length];
    let svg = `<svg id="duration-chart" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">
      <line x1="${L}" y1="${H - B}" x2="${W}" y2="${H - B}" stroke="#999"/>
      <line x1="${L}" y1="0" x2="${L}" y2="${H - B}" stroke="#999"/>
      <text x="4" y="14" font-size="11">${dur(y1)}</text><text x="4" y="${H - B}" font-size="11">0</text>
      <text x="${L}" y="${H - 8}" font-size="11">${esc(new Date(x0).toLocaleString())}</text>
      <text x="${W - 160}" y="${H - 8}" font-size="11">${esc(new Date(x1).toLocaleString())}</text>`;
    r.series.forEach((s) => {
      const c = colour(s);
      const ok = s.points.filter((p) => p.state === 'JOB_SUCCEEDED');
      if (ok.length > 1) {
        const line = ok.map((p) => `${sx(p.finished_ms).toFixed(1)},${sy(p.duration_ms).toFixed(1)}`).join(' ');
        svg += `<polyline fill="none" stroke="${c}" stroke-width="1.5" points="${line}"><title>${esc(s.recipe)} ${esc(s.cell || '')}</title></polyline>`;
      }
      svg += s.points.map((p) => `<circle cx="${sx(p.finished_ms).toFixed(1)}" cy="${sy(p.duration_ms).toFixed(1)}"
        r="3" fill="${p.state === 'JOB_SUCCEEDED' ? c : '#d43f3a'}"><title>job ${p.job_id} (build ${p.build_id}, ${esc(s.cell || '')}): ${dur(p.duration_ms)}</title></circle>`).join('');
    });
    el.innerHTML = svg + '</svg><div class="legend">' + recipes.map((name, i) =>
      `<span><i class="swatch-${i % colours.length}"></i>${esc(name)}</span>`).join('') +
      '<span class="muted">one line per recipe and cell; run time of the attempt that counted</span></div>';
  } catch (e) { showError(e); }
}

function chartPage(t) {
  app.innerHTML = `<h1>Build duration over time</h1><div id="chart-full" class="chart"></div>`;
  every(10000, guard(t, () => drawChart(t, 'chart-full')));
}

// ---------------------------------------------------------------------------------------
// Routing
// ---------------------------------------------------------------------------------------
function route() {
  const h = location.hash.replace(/^#/, '') || '/';
  const path = h.split('?')[0];
  let m;
  // A line anchor on the job page already shown only moves the highlight.
  if ((m = path.match(/^\/job\/(\d+)\/L(\d+)$/)) && shownJob === m[1]) return highlightLine(Number(m[2]));
  timers.forEach(clearInterval); timers = [];
  if (stream) { stream.close(); stream = null; }
  shownJob = null;
  const t = ++pageToken;
  if ((m = path.match(/^\/build\/(\d+)$/))) return buildPage(t, m[1]);
  if ((m = path.match(/^\/job\/(\d+)(?:\/L(\d+))?$/))) return jobPage(t, m[1], Number(m[2] || 0));
  if ((m = path.match(/^\/builds(?:\/before\/(\d+))?$/))) return buildsPage(t, m[1]);
  if ((m = path.match(/^\/schedule\/(\d+)$/))) return schedulePage(t, m[1]);
  if (path === '/publications') return publicationsPage(t);
  if (path === '/schedules') return schedulesPage(t);
  if (path === '/coverage') return coveragePage(t);
  if (path === '/workers') return workersPage(t);
  if (path === '/chart') return chartPage(t);
  return overviewPage(t);
}
window.addEventListener('hashchange', route);
// Runs once every script of the page (builds.js, job.js, schedules.js, coverage.js) is loaded.
document.addEventListener('DOMContentLoaded', route);
