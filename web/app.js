// The farm dashboard: a single page with hash routes, reading only /api/v1. Plain JS, no
// framework and no network beyond this server. Every error is recorded in
// window.farmErrors (the end-to-end test fails on any).
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
function badge(s) { const n = stateName(s); return `<span class="badge s-${esc(n)}">${esc(n)}</span>`; }
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
function cellLabel(c) {
  return `py${esc(c.python)} · torch ${esc(c.torch || '-')} · CUDA ${esc(c.cuda || '-')}`;
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

// ---------------------------------------------------------------------------------------
// Pages
// ---------------------------------------------------------------------------------------
function jobRows(jobs, fetchedAt, withError) {
  if (!jobs.length) return `<tr><td colspan="6" class="muted">none</td></tr>`;
  return jobs.map((j) => {
    const live = j.state === 'JOB_RUNNING' ? Date.now() - fetchedAt : 0;
    return `<tr><td><a href="#/job/${j.id}">job ${j.id}</a></td>
      <td><a href="#/build/${j.build_id}">${esc(j.recipe_name)} #${j.build_id}</a></td>
      <td>${cellLabel(j.cell)} · <code>${esc(j.cell.arch_list)}</code></td>
      <td>${badge(j.state)}</td><td>${esc(j.worker_id)}</td>
      <td>${withError ? esc(j.error) : 'running ' + dur(j.ran_ms + live)}</td></tr>`;
  }).join('');
}

function workerTable(workers) {
  if (!workers.length) return '<p class="muted">No worker registered.</p>';
  const rows = workers.map((w) => `<tr data-worker="${esc(w.id)}">
      <td>${esc(w.hostname || w.name)}<div class="muted">${esc(w.name)}</div></td>
      <td>${esc(w.platform)}${w.wsl2 ? ' <span class="muted">WSL2</span>' : ''}</td>
      <td>${w.gpus.map((g) => `${esc(g.name)} <span class="muted">(sm ${esc(g.compute_capability)}${g.unified_memory ? ', unified memory' : ''})</span>`).join('<br>') || '<span class="muted">none</span>'}${w.gpu_driver_error ? `<div class="error">${esc(w.gpu_driver_error)}</div>` : ''}</td>
      <td>${w.toolkits.map(esc).join(', ')}</td>
      <td>${badge(w.state)}${w.probe_error ? `<div class="error">${esc(w.probe_error)}</div>` : ''}</td>
      <td>${w.heartbeat_age_ms >= 0 ? dur(w.heartbeat_age_ms) + ' ago' : 'never'}</td>
      <td>${w.running_jobs.map((id) => `<a href="#/job/${id}">${id}</a>`).join(' ')}</td>
      <td><button class="drain" data-id="${esc(w.id)}" data-drain="${w.state === 'draining' ? 0 : 1}">
        ${w.state === 'draining' ? 'Undrain' : 'Drain'}</button></td></tr>`);
  return `<table><tr><th>Host</th><th>Platform</th><th>GPUs</th><th>CUDA toolkits</th>
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
        <div class="card"><div class="n" id="queue-depth">${ov.queue_depth}</div>queued jobs</div>
        <div class="card"><div class="n">${c.JOB_RUNNING}</div>running</div>
        <div class="card"><div class="n">${c.JOB_SUCCEEDED}</div>succeeded</div>
        <div class="card"><div class="n">${c.JOB_FAILED}</div>failed</div></div>
        <h2>Running jobs</h2><table id="running"><tr><th>Job</th><th>Build</th><th>Cell</th>
        <th>State</th><th>Worker</th><th>Elapsed</th></tr>${jobRows(ov.running, fetchedAt, false)}</table>
        <h2>Recent failures</h2><table id="failures"><tr><th>Job</th><th>Build</th><th>Cell</th>
        <th>State</th><th>Worker</th><th>Error</th></tr>${jobRows(ov.recent_failures, fetchedAt, true)}</table>
        <h2>Worker fleet</h2>${workerTable(ov.workers)}`;
      setStatus('updated ' + new Date().toLocaleTimeString());
    } catch (e) { showError(e); }
  }));
  drawChart(t, 'chart');
}

async function buildsPage(t, before) {
  try {
    const r = await api('builds?limit=50' + (before ? '&before=' + before : ''));
    if (t !== pageToken) return;
    const rows = r.builds.map((b) => `<tr><td><a href="#/build/${b.id}">#${b.id}</a></td>
      <td>${esc(b.recipe_name)}</td><td>${badge(b.state)}</td><td>${esc(b.submitted_by)}</td>
      <td>${esc(b.created_at)}</td><td>${b.jobs.total} jobs: ${b.jobs.JOB_SUCCEEDED} ok,
      ${b.jobs.JOB_RUNNING} running, ${b.jobs.JOB_PENDING} queued, ${b.jobs.JOB_FAILED} failed</td>
      <td class="publishing">${publishingText(b.publishing)}</td></tr>`);
    app.innerHTML = `<h1>Builds</h1><table id="builds"><tr><th>Build</th><th>Recipe</th><th>State</th>
      <th>By</th><th>Created</th><th>Jobs</th><th>Publishing</th></tr>${rows.join('') ||
      '<tr><td colspan="7" class="muted">none</td></tr>'}</table>
      <p>${r.next_before ? `<a id="older" href="#/builds/before/${r.next_before}">Older builds →</a>` : ''}</p>`;
  } catch (e) { showError(e); }
}

// "2 published, 1 failed" with the failure in red and its reason on hover.
function publishingText(p) {
  if (!p || !p.total) return '<span class="muted">—</span>';
  return Object.entries(p.states).map(([state, n]) => state === 'failed'
    ? `<span class="error" title="${esc(p.error)}">${n} failed</span>` : `${n} ${esc(state)}`).join(', ');
}

function publicationsHtml(rows) {
  if (!rows.length) return '';
  return `<h2>Publishing</h2><table id="publications"><tr><th>Target</th><th>Kind</th><th>Where</th>
    <th>File</th><th>State</th><th>Attempts</th><th>Error</th></tr>` + rows.map((p) => `<tr
    class="pub-${esc(p.state)}"><td>${esc(p.target)}</td><td>${esc(p.kind)}</td>
    <td>${p.remote_url ? `<a href="${esc(p.remote_url)}">${esc(p.repo)} ${esc(p.ref)}</a>`
                       : esc(p.repo + ' ' + p.ref)} ${esc(p.path)}</td>
    <td>${esc(p.filename)}</td><td class="${p.state === 'failed' ? 'error' : ''}">${esc(p.state)}</td>
    <td>${p.attempts}</td><td>${esc(p.error)}</td></tr>`).join('') + '</table>';
}

function gridHtml(build, fetchedAt) {
  const rowKey = (c) => [c.python, c.torch, c.cuda].join('|');
  const rows = [...new Set(build.jobs.map((j) => rowKey(j.cell)))].sort();
  const axis = (build.matrix && build.matrix.arch_lists) || [];
  const cols = [...new Set(axis.concat(build.jobs.map((j) => j.cell.arch_list)))]
    .filter((a) => build.jobs.some((j) => j.cell.arch_list === a));
  const head = cols.map((a) => `<th><code>${esc(a)}</code></th>`).join('');
  const body = rows.map((rk) => {
    const [py, torch, cuda] = rk.split('|');
    const cells = cols.map((a) => {
      const j = build.jobs.find((x) => rowKey(x.cell) === rk && x.cell.arch_list === a);
      if (!j) return '<td class="empty"></td>';
      const live = Date.now() - fetchedAt;
      const waited = j.waited_ms + (j.state === 'JOB_PENDING' ? live : 0);
      const ran = j.ran_ms + (j.state === 'JOB_RUNNING' ? live : 0);
      return `<td class="cell s-${stateName(j.state)}" data-job="${j.id}" data-state="${esc(j.state)}">
        <a href="#/job/${j.id}">${stateName(j.state)}</a>
        <div class="times">waited ${dur(waited)}${j.ran_ms || j.state === 'JOB_RUNNING' ? ' · ran ' + dur(ran) : ''}</div></td>`;
    }).join('');
    return `<tr><th>py${esc(py)} · torch ${esc(torch || '-')} · CUDA ${esc(cuda || '-')}</th>${cells}</tr>`;
  }).join('');
  return `<table class="grid" id="grid"><tr><th>Python × torch × CUDA \\ arch list</th>${head}</tr>${body}</table>`;
}

async function buildPage(t, id) {
  app.innerHTML = `<div id="build"></div>`;
  every(1000, guard(t, async () => {
    try {
      const fetchedAt = Date.now();
      const b = await api('builds/' + id);
      if (t !== pageToken) return;
      const active = b.state === 'BUILD_QUEUED' || b.state === 'BUILD_RUNNING';
      document.getElementById('build').innerHTML = `<h1>Build #${b.id}: ${esc(b.recipe_name)}
        ${esc(b.recipe_version)} ${badge(b.state)}</h1>
        <p class="muted">submitted by ${esc(b.submitted_by)} at ${esc(b.created_at)}
        ${b.finished_at ? ' · finished ' + esc(b.finished_at) : ''}</p>
        ${active ? '<button id="cancel">Cancel build</button>' : ''}
        <h2>Matrix</h2>${gridHtml(b, fetchedAt)}
        ${b.rejected_cells.length ? '<h2>Rejected cells</h2><ul>' +
          b.rejected_cells.map((r) => `<li>${esc(r)}</li>`).join('') + '</ul>' : ''}
        ${publicationsHtml(b.publications || [])}
        <h2>Recipe</h2><pre class="mono">${esc(b.recipe_yaml)}</pre>`;
      const btn = document.getElementById('cancel');
      if (btn) btn.onclick = () => cancelBuild(b.id);
    } catch (e) { showError(e); }
  }));
}

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

function attemptsTable(attempts) {
  if (!attempts.length) return '<p class="muted">Not started yet.</p>';
  return `<table id="attempts"><tr><th>#</th><th>Worker</th><th>Cause</th><th>Detail</th>
    <th>Started</th><th>Finished</th><th>Exit</th><th>Peak RSS</th></tr>` + attempts.map((a) =>
    `<tr><td>${a.number}</td><td>${esc(a.worker_id)}</td>
     <td>${a.running ? badge('running') : esc(String(a.cause).replace(/^CAUSE_/, '').toLowerCase())}</td>
     <td>${esc(a.detail)}</td><td>${esc(a.started_at)}</td><td>${esc(a.finished_at)}</td>
     <td>${a.running ? '' : a.exit_code}</td><td>${bytes(Number(a.peak_rss_bytes))}</td></tr>`).join('') + '</table>';
}

function artifactsHtml(arts) {
  if (!arts.length) return '<p class="muted">No artifacts.</p>';
  const origin = location.origin;
  return arts.map((a) => {
    const m = a.manifest || {}, v = a.validation || {};
    const images = (m.images || []).map((i) => `<tr><td><code>${esc(i.module)}</code></td>
      <td>${esc(i.kind)}</td><td>${esc(i.arch)}</td></tr>`).join('');
    const cases = (v.cases || []).map((c) => `<tr><td>${esc(c.name)}</td><td>${Number(c.cosine).toFixed(5)}</td>
      <td>${Number(c.relative_l1).toFixed(5)}</td><td>${Number(c.tops).toFixed(1)}</td>
      <td>${Number(c.baseline_tops).toFixed(1)}</td><td>${c.passed ? 'yes' : 'no'}</td></tr>`).join('');
    return `<div class="artifact"><h3><a href="${esc(a.url)}">${esc(a.filename)}</a></h3>
      <p>sha256 <code class="sha">${esc(a.sha256)}</code> · ${bytes(Number(a.size))}</p>
      <pre class="mono pip">pip install --index-url ${esc(origin + a.index_path)} ${esc(a.project)}==${esc(a.version)}
pip install "${esc(origin + a.url)}#sha256=${esc(a.sha256)}"</pre>
      <h4>Arch manifest</h4><p>runs on: ${(m.runs_on || []).map(esc).join(', ') || '<span class="muted">unknown</span>'}
      ${(m.missing || []).length ? `<br><span class="error">missing: ${m.missing.map(esc).join(', ')}</span>` : ''}</p>
      ${images ? `<table class="manifest"><tr><th>Module</th><th>Kind</th><th>Arch</th></tr>${images}</table>` : ''}
      <h4>Validation ${badge(v.state)}</h4>
      <p>${esc(v.gpu_name)} ${v.compute_capability ? '(sm ' + esc(v.compute_capability) + ')' : ''} ${esc(v.message)}</p>
      ${cases ? `<table class="validation"><tr><th>Case</th><th>Cosine</th><th>Rel. L1</th><th>TOPS</th>
        <th>Baseline TOPS</th><th>Passed</th></tr>${cases}</table>` : ''}</div>`;
  }).join('');
}

function appendLog(line) {
  const el = document.getElementById('log');
  if (!el) return;
  const div = document.createElement('span');
  div.className = 'l' + (line.stream === 3 ? ' sys' : line.stream === 2 ? ' err' : '');
  div.dataset.seq = line.seq;
  div.innerHTML = ansiToHtml(line.text) + '\n';
  el.appendChild(div);
  if (document.getElementById('follow').checked) el.scrollTop = el.scrollHeight;
}

function followLog(t, id, attempt, after) {
  if (stream) { stream.close(); stream = null; }
  if (token()) return pollLog(t, id, attempt, after);  // EventSource cannot send a token
  stream = new EventSource(`/api/v1/jobs/${id}/log/stream?attempt=${attempt}&after=${after}`);
  stream.addEventListener('line', guard(t, (e) => appendLog(JSON.parse(e.data))));
  stream.addEventListener('end', guard(t, (e) => {
    stream.close(); stream = null;
    document.getElementById('log-state').textContent = 'attempt ended: ' + stateName(JSON.parse(e.data).state);
    refreshJob(t, id);
  }));
  stream.onerror = guard(t, () => setStatus('log stream reconnecting…'));
}

async function pollLog(t, id, attempt, after) {
  for (let i = 0; i < 100000 && t === pageToken; i++) {
    const r = await api(`jobs/${id}/log?attempt=${attempt}&after=${after}`);
    r.lines.forEach(appendLog);
    after = r.last_seq;
    if (r.finished) { refreshJob(t, id); return; }
    if (!r.lines.length) await new Promise((ok) => setTimeout(ok, 1000));
  }
}

let shownAttempt = -1;
async function refreshJob(t, id) {
  try {
    const fetchedAt = Date.now();
    const j = await api('jobs/' + id);
    if (t !== pageToken) return;
    const live = j.state === 'JOB_RUNNING' ? Date.now() - fetchedAt : 0;
    document.getElementById('job-head').innerHTML = `<h1>Job ${j.id} ${badge(j.state)}</h1>
      <p><a href="#/build/${j.build_id}">${esc(j.recipe_name)} build #${j.build_id}</a> ·
      ${cellLabel(j.cell)} · arch <code>${esc(j.cell.arch_list)}</code> · ${esc(j.cell.platform)} ·
      variant <code>${esc(j.variant)}</code></p>
      <p class="muted">worker ${esc(j.worker_id || '-')} · waited ${dur(j.waited_ms)} ·
      ran <span id="elapsed">${dur(j.ran_ms + live)}</span>${j.error ? ` · <span class="error">${esc(j.error)}</span>` : ''}</p>
      ${j.state === 'JOB_FAILED' || j.state === 'JOB_CANCELLED' ? '<button id="retry">Retry job</button>' : ''}`;
    const retry = document.getElementById('retry');
    if (retry) retry.onclick = () => retryJob(j.id);
    document.getElementById('job-attempts').innerHTML = attemptsTable(j.attempts);
    document.getElementById('job-artifacts').innerHTML = artifactsHtml(j.artifacts);
    document.getElementById('download').href = `/api/v1/jobs/${j.id}/log.txt?attempt=${j.attempt}`;
    if (j.attempt !== shownAttempt && j.attempt > 0) {
      shownAttempt = j.attempt;
      document.getElementById('log').innerHTML = '';
      document.getElementById('log-state').textContent = `attempt ${j.attempt}`;
      followLog(t, id, j.attempt, 0);
    }
  } catch (e) { showError(e); }
}

function jobPage(t, id) {
  shownAttempt = -1;
  app.innerHTML = `<div id="job-head"></div><h2>Log</h2><div class="toolbar">
    <label><input type="checkbox" id="follow" checked> follow</label>
    <a id="download" href="#">Download full log</a><span id="log-state" class="muted"></span></div>
    <pre id="log"></pre><h2>Attempts</h2><div id="job-attempts"></div>
    <h2>Artifacts</h2><div id="job-artifacts"></div>`;
  every(2000, guard(t, () => refreshJob(t, id)));
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

// ---------------------------------------------------------------------------------------
// Schedules: refreshed every 2 s like the other pages, so a pause or a run made elsewhere
// (farmctl, the cron timer) shows without a reload.
// ---------------------------------------------------------------------------------------
function outcomeName(o) { return String(o || '').replace(/^RUN_/, '').toLowerCase(); }
function outcomeBadge(o) { const n = outcomeName(o); return `<span class="badge s-${esc(n)}">${esc(n)}</span>`; }
function policyName(p) { return String(p || '').replace(/^(MISSED|CONCURRENCY)_/, '').toLowerCase(); }
function nextFire(s) {
  if (s.paused) return '<span class="badge s-paused">paused</span>';
  return `<span class="next-local">${esc(s.next_fire_local || '')}</span>
    <div class="muted next-utc" data-unix="${esc(s.next_fire_unix)}">${esc(s.next_fire_time)}</div>`;
}
function runBuild(r) {
  if (!r.build_id) return '<span class="muted">no build</span>';
  return `<a class="run-build" href="#/build/${Number(r.build_id)}">build #${Number(r.build_id)}</a>
    ${badge(r.build_state)}`;
}
function lastRun(r) {
  if (!r) return '<span class="muted">never ran</span>';
  return `${outcomeBadge(r.outcome)} ${runBuild(r)}
    ${r.skipped_reason ? `<div class="muted reason">${esc(r.skipped_reason)}</div>` : ''}`;
}
function scheduleButtons(s, withDelete) {
  return `<button class="sched-toggle" data-id="${Number(s.id)}" data-pause="${s.paused ? 0 : 1}">
      ${s.paused ? 'Resume' : 'Pause'}</button>
    <button class="sched-run" data-id="${Number(s.id)}">Run now</button>` +
    (withDelete ? ` <button class="sched-delete" data-id="${Number(s.id)}">Delete</button>` : '');
}
// Wires the buttons under `root`; `refresh` redraws after the action answered.
function bindScheduleButtons(root, refresh) {
  for (const b of root.querySelectorAll('button.sched-toggle')) {
    b.onclick = async () => {
      const pause = b.dataset.pause === '1';
      await postAction(`schedules/${b.dataset.id}/${pause ? 'pause' : 'resume'}`, 'submitter',
                       pause ? 'schedule paused' : 'schedule resumed');
      refresh();
    };
  }
  for (const b of root.querySelectorAll('button.sched-run')) {
    b.onclick = async () => {
      await postAction(`schedules/${b.dataset.id}/run-now`, 'submitter', 'schedule fired');
      refresh();
    };
  }
  for (const b of root.querySelectorAll('button.sched-delete')) {
    b.onclick = async () => {
      if (!confirm(`Delete schedule ${b.dataset.id}? Its runs' builds are kept.`)) return;
      if (!haveToken('submitter')) return;
      try {
        await api(`schedules/${b.dataset.id}/delete`, {method: 'POST', headers: headers()});
        setStatus('schedule deleted');
        location.hash = '#/schedules';
      } catch (e) { showError(e); }
    };
  }
}

// The form stays outside the refreshed table, so polling never wipes what is typed.
const scheduleForm = `<details id="new-schedule"><summary>New schedule</summary>
  <form id="schedule-form"><div class="form-grid">
    <label>Name <input name="name" placeholder="the recipe's name"></label>
    <label>Cron <input name="cron" required placeholder="0 3 * * * or @nightly"></label>
    <label>Time zone <input name="time_zone" value="UTC"></label>
    <label>Missed runs <select name="missed_run_policy"><option>skip</option><option>once</option></select></label>
    <label>Concurrency <select name="concurrency_policy"><option>skip</option><option>allow</option></select></label>
    <label><input type="checkbox" name="paused"> Start paused</label></div>
    <label>Recipe file <input type="file" name="recipe_file" accept=".yaml,.yml"></label>
    <label>Recipe YAML <textarea name="recipe_yaml" rows="12" required></textarea></label>
    <button type="submit">Create schedule</button> <span id="schedule-form-error" class="error"></span>
  </form></details>`;
function bindScheduleForm() {
  const form = document.getElementById('schedule-form');
  const field = (n) => form.elements.namedItem(n);  // form.name would be the form's own
  field('recipe_file').onchange = async () => {
    const f = field('recipe_file').files[0];
    if (f) field('recipe_yaml').value = await f.text();
  };
  form.onsubmit = async (ev) => {
    ev.preventDefault();
    const out = document.getElementById('schedule-form-error');
    out.textContent = '';
    if (!haveToken('submitter')) return;
    const body = {paused: field('paused').checked};
    for (const n of ['name', 'cron', 'time_zone', 'missed_run_policy', 'concurrency_policy',
                     'recipe_yaml']) body[n] = field(n).value;
    try {
      const s = await api('schedules', {method: 'POST', body: JSON.stringify(body),
        headers: Object.assign({'Content-Type': 'application/json'}, headers())});
      setStatus(`schedule ${Number(s.id)} created`);
      location.hash = `#/schedule/${Number(s.id)}`;
    } catch (e) { out.textContent = e.message; }
  };
}

function schedulesPage(t) {
  app.innerHTML = `<h1>Schedules</h1><div id="schedules-view"></div>${scheduleForm}`;
  bindScheduleForm();
  const refresh = guard(t, async () => {
    try {
      const r = await api('schedules');
      if (t !== pageToken) return;
      const rows = r.schedules.map((s) => `<tr data-schedule="${Number(s.id)}" data-paused="${s.paused ? 1 : 0}">
        <td><a href="#/schedule/${Number(s.id)}">${esc(s.name)}</a></td><td>${esc(s.recipe_name)}</td>
        <td><code class="cron">${esc(s.cron)}</code></td><td>${esc(s.time_zone)}</td>
        <td class="next">${nextFire(s)}</td><td class="last-run">${lastRun(s.last_run)}</td>
        <td>${scheduleButtons(s)}</td></tr>`);
      const el = document.getElementById('schedules-view');
      el.innerHTML = `<table id="schedules"><tr><th>Schedule</th><th>Recipe</th><th>Cron</th>
        <th>Time zone</th><th>Next fire</th><th>Last run</th><th></th></tr>${rows.join('') ||
        '<tr><td colspan="7" class="muted">No schedule. Add one below or with <code>farmctl schedules add</code>.</td></tr>'}</table>`;
      bindScheduleButtons(el, refresh);
      setStatus('updated ' + new Date().toLocaleTimeString());
    } catch (e) { showError(e); }
  });
  every(2000, refresh);
}

function runsTable(runs) {
  if (!runs.length) return '<p class="muted">No run yet.</p>';
  return `<table id="runs"><tr><th>Run</th><th>Trigger</th><th>Outcome</th><th>Fire time</th>
    <th>Build</th><th>Commit</th><th>Detail</th></tr>` + runs.map((r) =>
    `<tr data-run="${Number(r.id)}" data-outcome="${esc(r.outcome)}"><td>${Number(r.id)}</td>
     <td>${esc(String(r.trigger).replace(/^TRIGGER_/, '').toLowerCase())}</td>
     <td>${outcomeBadge(r.outcome)}</td><td>${esc(r.fire_time)}</td><td>${runBuild(r)}</td>
     <td><code>${esc(String(r.resolved_commit || '').slice(0, 12))}</code></td>
     <td>${esc(r.detail)}</td></tr>`).join('') + '</table>';
}

function schedulePage(t, id) {
  app.innerHTML = `<div id="schedule"></div>`;
  const refresh = guard(t, async () => {
    try {
      const s = await api('schedules/' + id);
      if (t !== pageToken) return;
      const el = document.getElementById('schedule');
      el.innerHTML = `<h1 data-paused="${s.paused ? 1 : 0}">Schedule ${Number(s.id)}: ${esc(s.name)}
        ${s.paused ? '<span class="badge s-paused">paused</span>' : '<span class="badge s-active">active</span>'}</h1>
        <p>${scheduleButtons(s, true)}</p>
        <table class="props"><tr><th>Recipe</th><td>${esc(s.recipe_name)}</td></tr>
        <tr><th>Cron</th><td><code class="cron">${esc(s.cron)}</code> in ${esc(s.time_zone)}</td></tr>
        <tr><th>Next fire</th><td class="next">${nextFire(s)}</td></tr>
        <tr><th>Missed runs</th><td>${esc(policyName(s.missed_run_policy))}</td></tr>
        <tr><th>Concurrency</th><td>${esc(policyName(s.concurrency_policy))}</td></tr>
        <tr><th>Created</th><td>by ${esc(s.created_by)} at ${esc(s.created_at)}</td></tr></table>
        <h2>Recent runs</h2>${runsTable(s.runs || [])}`;
      bindScheduleButtons(el, refresh);
      setStatus('updated ' + new Date().toLocaleTimeString());
    } catch (e) { showError(e); }
  });
  every(2000, refresh);
}

// Build duration (minutes) against finish time, one line per recipe, drawn as SVG.
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
    const colours = ['#1a5fb4', '#d43f3a', '#1f9d55', '#d99a00', '#7b6fa8', '#0e8a8a'];
    let svg = `<svg id="duration-chart" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">
      <line x1="${L}" y1="${H - B}" x2="${W}" y2="${H - B}" stroke="#999"/>
      <line x1="${L}" y1="0" x2="${L}" y2="${H - B}" stroke="#999"/>
      <text x="4" y="14" font-size="11">${dur(y1)}</text><text x="4" y="${H - B}" font-size="11">0</text>
      <text x="${L}" y="${H - 8}" font-size="11">${esc(new Date(x0).toLocaleString())}</text>
      <text x="${W - 160}" y="${H - 8}" font-size="11">${esc(new Date(x1).toLocaleString())}</text>`;
    r.series.forEach((s, i) => {
      const c = colours[i % colours.length];
      const line = s.points.map((p) => `${sx(p.finished_ms).toFixed(1)},${sy(p.duration_ms).toFixed(1)}`).join(' ');
      svg += `<polyline fill="none" stroke="${c}" stroke-width="1.5" points="${line}"/>`;
      svg += s.points.map((p) => `<circle cx="${sx(p.finished_ms).toFixed(1)}" cy="${sy(p.duration_ms).toFixed(1)}"
        r="3" fill="${p.state === 'JOB_SUCCEEDED' ? c : '#d43f3a'}"><title>job ${p.job_id}: ${dur(p.duration_ms)}</title></circle>`).join('');
    });
    el.innerHTML = svg + '</svg><div class="legend">' + r.series.map((s, i) =>
      `<span><i style="background:${colours[i % colours.length]}"></i>${esc(s.recipe)}</span>`).join('') + '</div>';
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
  timers.forEach(clearInterval); timers = [];
  if (stream) { stream.close(); stream = null; }
  const t = ++pageToken;
  const h = location.hash.replace(/^#/, '') || '/';
  let m;
  if ((m = h.match(/^\/build\/(\d+)$/))) return buildPage(t, m[1]);
  if ((m = h.match(/^\/job\/(\d+)$/))) return jobPage(t, m[1]);
  if ((m = h.match(/^\/builds(?:\/before\/(\d+))?$/))) return buildsPage(t, m[1]);
  if ((m = h.match(/^\/schedule\/(\d+)$/))) return schedulePage(t, m[1]);
  if (h === '/schedules') return schedulesPage(t);
  if (h === '/workers') return workersPage(t);
  if (h === '/chart') return chartPage(t);
  return overviewPage(t);
}
window.addEventListener('hashchange', route);
route();
