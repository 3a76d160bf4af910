// The dashboard's job page (#/job/ID, #/job/ID/L<seq> for a line): why the job waits, how
// far it is, what failed, and its log, grouped by phase (the server marks where each
// starts) with timestamps, line anchors and search. Loaded after app.js.
'use strict';

let shownJob = null;     // id of the job page on screen (line anchors do not reload it)
let shownAttempt = -1;
let wantedLine = 0;      // a line to highlight once it has arrived
let logGroup = null;     // the open phase group new lines go into
let logEnded = false;

const PHASE_NAMES = {setup: 'setup', fetch: 'fetch source', provision: 'provisioning', build: 'build',
                     checks: 'wheel checks', validation: 'validation', upload: 'upload'};

function timeOfDay(ms) {
  if (!(ms > 0)) return '';
  const d = new Date(Number(ms));
  return d.toLocaleTimeString([], {hour12: false}) + '.' + String(d.getMilliseconds()).padStart(3, '0');
}

// The job's variant. A cell without a CUDA version is listed in the index's cpu view, yet
// the worker builds it with its default toolkit when it has one: "variant cpu" would
// misname a CUDA build.
function variantText(j) {
  if (j.cell.cuda || j.variant !== 'cpu') return `variant <code>${esc(j.variant)}</code>`;
  return `<span id="variant">no CUDA version in the cell (built with the worker's default
    toolkit, if any) · index view <code>cpu</code></span>`;
}

// Starts a collapsible group for `phase`; lines before any marker go into "setup".
function startGroup(phase, ms) {
  const el = document.getElementById('log');
  const g = document.createElement('details');
  g.className = 'phase';
  g.open = true;
  g.dataset.phase = phase;
  g.innerHTML = `<summary><span class="phase-name">${esc(PHASE_NAMES[phase] || phase)}</span>
    <span class="muted phase-meta" data-start="${Number(ms) || 0}">${timeOfDay(ms)}</span>
    <span class="muted phase-count"></span></summary>`;
  el.appendChild(g);
  logGroup = g;
  return g;
}

// A group's count of lines and errors, and how long its phase took: from its first line to
// the next phase's first line, or to its own last line while it is the last.
function updateGroupMeta(g) {
  const n = g.querySelectorAll('.l').length;
  const errors = g.querySelectorAll('.l.lvl-error').length;
  const start = Number(g.querySelector('.phase-meta').dataset.start);
  const end = Number(g.dataset.end || g.dataset.last);
  const took = start > 0 && end >= start ? ` · <span class="phase-took">${dur(end - start)}</span>` : '';
  g.querySelector('.phase-count').innerHTML = `· ${plural(n, 'line')}${took}` +
    (errors ? ` · <span class="error">${plural(errors, 'error')}</span>` : '');
}

function appendLog(line) {
  const el = document.getElementById('log');
  if (!el) return;
  if (!logGroup || (line.phase && line.phase !== logGroup.dataset.phase)) {
    if (logGroup) {
      logGroup.dataset.end = line.time_ms;  // the phase ended where the next one starts
      updateGroupMeta(logGroup);
    }
    startGroup(line.phase || 'setup', line.time_ms);
  }
  logGroup.dataset.last = line.time_ms;
  const div = document.createElement('div');
  const cls = ['l'];
  if (line.stream === 3) cls.push('sys');
  else if (line.stream === 2) cls.push('stderr');
  if (line.level) cls.push('lvl-' + line.level);
  div.className = cls.join(' ');
  div.id = 'L' + line.seq;
  div.dataset.seq = line.seq;
  div.innerHTML = `<a class="ln" href="#/job/${shownJob}/L${line.seq}">${line.seq}</a><span class="ts">${
    timeOfDay(line.time_ms)}</span><span class="t">${ansiToHtml(line.text)}</span>`;
  logGroup.appendChild(div);
  if (line.seq % 50 === 0) updateGroupMeta(logGroup);
  if (wantedLine === line.seq) highlightLine(wantedLine);
  else if (!wantedLine && document.getElementById('follow').checked) el.scrollTop = el.scrollHeight;
}

// Marks line `seq` (from a #/job/ID/L<seq> anchor) and scrolls to it, opening its group.
function highlightLine(seq) {
  wantedLine = seq;
  const line = document.getElementById('L' + seq);
  if (!line) return;  // comes later: appendLog calls again
  for (const old of document.querySelectorAll('#log .l.target')) old.classList.remove('target');
  line.classList.add('target');
  line.closest('details').open = true;
  document.getElementById('follow').checked = false;
  const log = document.getElementById('log');
  log.scrollTop = line.offsetTop - log.offsetTop - log.clientHeight / 3;
}

// Search: marks every matching line, counts them, Enter goes to the next.
let searchHits = [], searchAt = -1;
function runSearch() {
  const q = document.getElementById('log-search').value.toLowerCase();
  for (const old of document.querySelectorAll('#log .l.match')) old.classList.remove('match', 'current');
  searchHits = [];
  searchAt = -1;
  if (q) {
    for (const l of document.querySelectorAll('#log .l')) {
      if (l.querySelector('.t').textContent.toLowerCase().includes(q)) {
        l.classList.add('match');
        searchHits.push(l);
      }
    }
  }
  document.getElementById('search-count').textContent = q ? plural(searchHits.length, 'match') : '';
}
function nextHit(step) {
  if (!searchHits.length) return;
  if (searchAt >= 0) searchHits[searchAt].classList.remove('current');
  searchAt = (searchAt + step + searchHits.length) % searchHits.length;
  const hit = searchHits[searchAt];
  hit.classList.add('current');
  hit.closest('details').open = true;
  document.getElementById('follow').checked = false;
  const log = document.getElementById('log');
  log.scrollTop = hit.offsetTop - log.offsetTop - log.clientHeight / 3;
  document.getElementById('search-count').textContent = `${searchAt + 1} of ${plural(searchHits.length, 'match')}`;
}

// Once the attempt ended, only the phase it ended in stays open.
function closeFinishedGroups() {
  if (logGroup) updateGroupMeta(logGroup);
  if (logEnded) return;
  logEnded = true;
  const groups = [...document.querySelectorAll('#log details.phase')];
  groups.forEach((g, i) => {
    if (i < groups.length - 1 && !g.querySelector('.l.lvl-error, .l.target')) g.open = false;
  });
}

function followLog(t, id, attempt, after) {
  if (stream) { stream.close(); stream = null; }
  if (token()) return pollLog(t, id, attempt, after);  // EventSource cannot send a token
  stream = new EventSource(`/api/v1/jobs/${id}/log/stream?attempt=${attempt}&after=${after}`);
  stream.addEventListener('line', guard(t, (e) => appendLog(JSON.parse(e.data))));
  stream.addEventListener('end', guard(t, (e) => {
    stream.close(); stream = null;
    document.getElementById('log-state').textContent = 'attempt ended: ' + stateName(JSON.parse(e.data).state);
    closeFinishedGroups();
    refreshJob(t, id);
  }));
  stream.onerror = guard(t, () => setStatus('log stream reconnecting…'));
}

async function pollLog(t, id, attempt, after) {
  for (let i = 0; i < 100000 && t === pageToken; i++) {
    const r = await api(`jobs/${id}/log?attempt=${attempt}&after=${after}`);
    if (t !== pageToken) return;
    r.lines.forEach(appendLog);
    after = r.last_seq;
    if (r.finished) { closeFinishedGroups(); refreshJob(t, id); return; }
    if (!r.lines.length) await new Promise((ok) => setTimeout(ok, 1000));
  }
}

function attemptsTable(attempts) {
  if (!attempts.length) return '<p class="muted">No attempt yet.</p>';
  return `<table id="attempts"><tr><th>#</th><th>Worker</th><th>Cause</th><th>Detail</th>
    <th>Started</th><th>Finished</th><th>Exit</th><th>Peak RSS</th><th>Progress</th></tr>` + attempts.map((a) =>
    `<tr><td>${a.number}</td><td>${workerRef(a.worker_name, a.worker_id)}</td>
     <td>${a.running ? badge('running') : esc(String(a.cause).replace(/^CAUSE_/, '').toLowerCase())}</td>
     <td>${esc(a.detail)}</td><td>${when(a.started_at)}</td><td>${when(a.finished_at)}</td>
     <td>${a.running || a.exit_code < 0 ? '' : a.exit_code}</td>
     <td>${Number(a.peak_rss_bytes) > 0 ? bytes(Number(a.peak_rss_bytes)) + (a.running ? ' <span class="muted">so far</span>' : '')
                                        : `<span class="muted">${a.running ? 'not reported yet' : '—'}</span>`}</td>
     <td>${progressHtml({units_done: a.units_done, units_total: a.units_total})}</td></tr>`).join('') + '</table>';
}

// Where the wheel's bytes go: each code image (per arch and module) and the largest other
// parts, in the wheel and unpacked, then the rest and the whole wheel.
function bytesHtml(m) {
  if (!m.bytes) return '';
  const b = m.bytes;
  const row = (what, c, u, note) => `<tr><td><code>${esc(what)}</code></td><td>${bytes(c)}</td>
    <td>${bytes(u)}</td><td class="muted">${note || ''}</td></tr>`;
  const packed = {};
  for (const i of m.images || []) {
    if (i.compressed) packed[`${i.arch} in ${i.module}`] = (packed[`${i.arch} in ${i.module}`] || 0) + Number(i.fatbin_bytes || 0);
  }
  const rows = wheelParts(m).map((p) => row(p.what, p.compressed, p.uncompressed,
    packed[p.what] ? `nvcc-compressed to ${bytes(packed[p.what])}` : ''));
  rows.push(row('rest', Number((b.rest || {}).compressed_bytes || 0), Number((b.rest || {}).uncompressed_bytes || 0)));
  rows.push(row('wheel', Number(b.wheel_bytes || 0), Number(b.uncompressed_bytes || 0)));
  return `<h4>Where the bytes go</h4><table class="wheel-bytes"><tr><th>Part</th><th>In the wheel</th>
    <th>Unpacked</th><th></th></tr>${rows.join('')}</table>`;
}

function artifactsHtml(arts) {
  if (!arts.length) return '<p class="muted">No artifacts.</p>';
  const origin = location.origin;
  return arts.map((a) => {
    const m = a.manifest || {}, v = a.validation || {};
    const images = (m.images || []).map((i) => `<tr><td><code>${esc(i.module)}</code></td>
      <td>${esc(i.kind)}</td><td>${esc(i.arch)}</td></tr>`).join('');
    const cases = (v.cases || []).map((c) => {
      // Reports stored before throughput had a unit carry attention TOPS alone.
      const legacy = !c.throughput_unit && !c.throughput;
      const tp = Number(legacy ? c.tops : c.throughput) || 0, unit = legacy ? 'TOPS' : c.throughput_unit;
      const base = Number(legacy ? c.baseline_tops : c.baseline_throughput) || 0;
      return `<tr class="${c.passed ? '' : 'error'}"><td>${esc(c.name)}</td><td>${Number(c.cosine).toFixed(5)}</td>
      <td>${Number(c.relative_l1).toFixed(5)}</td><td>${tp ? tp.toFixed(1) + ' ' + esc(unit) : ''}</td>
      <td>${base ? base.toFixed(1) + ' ' + esc(unit) + ' ' + esc(c.baseline || '') : ''}</td>
      <td>${esc(c.implementation || '')}${c.fast_implementation && c.implementation &&
        c.fast_implementation !== c.implementation ? ` <span class="error">(fallback; fast: ${esc(c.fast_implementation)})</span>` : ''}</td>
      <td>${c.passed ? 'yes' : 'no'}</td></tr>`;
    }).join('');
    return `<div class="artifact"><h3><a href="${esc(a.url)}">${esc(a.filename)}</a></h3>
      <p>sha256 <code class="sha">${esc(a.sha256)}</code> · ${bytes(Number(a.size))} · variant <code>${esc(a.variant)}</code>
        · <a class="provenance" href="${esc(a.url)}.intoto.jsonl">signed provenance</a></p>
      <pre class="mono pip">${a.indexed ? `pip install --index-url ${esc(origin + a.index_path)} ${esc(a.project)}==${esc(a.version)}
` : ''}pip install "${esc(origin + a.url)}#sha256=${esc(a.sha256)}"</pre>
      ${a.indexed ? '' : '<p class="muted">Not in the index: it lists wheels once they are validated on a GPU.</p>'}
      <h4>Arch manifest</h4><p>runs on: ${(m.runs_on || []).map(esc).join(', ') || '<span class="muted">unknown</span>'}
      ${(m.missing || []).length ? `<br><span class="error">missing: ${m.missing.map(esc).join(', ')}</span>` : ''}
      ${a.arch_warning ? `<br><span class="error arch-warning">warning: ${esc(a.arch_warning)}</span>` : ''}</p>
      ${images ? `<table class="manifest"><tr><th>Module</th><th>Kind</th><th>Arch</th></tr>${images}</table>` : ''}
      ${bytesHtml(m)}
      <h4>Validation ${badge(v.state)}</h4>
      <p>${esc(v.gpu_name)} ${v.compute_capability ? '(sm ' + esc(v.compute_capability) + ')' : ''} ${esc(v.message)}</p>
      ${cases ? `<table class="validation"><tr><th>Case</th><th>Cosine</th><th>Rel. L1</th><th>Throughput</th>
        <th>Baseline</th><th>Implementation</th><th>Passed</th></tr>${cases}</table>` : ''}</div>`;
  }).join('');
}

// Why a pending job waits: the sentence, then each worker that cannot take it and why.
function waitingHtml(w) {
  if (!w) return '';
  const rows = w.workers.map((x) => `<tr><td>${workerRef(x.name, x.id)}</td><td>${esc(x.reason)}</td></tr>`).join('');
  return `<div class="banner ${w.unplaceable ? 'blocked' : ''}" id="waiting"><b>${w.unplaceable ? 'No worker can take this job' : 'Waiting'}:</b>
    <span class="waiting-summary">${esc(w.summary)}</span>
    ${rows ? `<table class="reasons"><tr><th>Worker</th><th>Why not</th></tr>${rows}</table>` : ''}</div>`;
}

// What failed, first on the page: the phase, the attempt's detail and the lines that say why.
function failureHtml(f) {
  if (!f) return '';
  const lines = (f.lines || []).map(esc).join('\n');
  return `<div class="banner failed" id="failure"><b>Failed${f.phase ? ` in ${esc(PHASE_NAMES[f.phase] || f.phase)}` : ''}:</b>
    <span class="failure-summary">${esc(f.summary)}</span>
    ${lines ? `<pre class="mono failure-lines">${lines}</pre>` : ''}</div>`;
}

// A stable-ABI build: the torches its wheel was proven with, then how each cell fared.
function proofsHtml(j) {
  if (!j.torch_proofs || !j.torch_proofs.length) return '';
  const rows = j.torch_proofs.map((p) => {
    const state = String(p.state || '').replace('PROOF_', '').toLowerCase();
    const job = Number(p.job_id) > 0 ? `<a href="#/job/${Number(p.job_id)}">job ${Number(p.job_id)}</a>` : '';
    return `<tr class="proof-${esc(state)}"><td>${esc(p.cell.torch)}</td><td>${esc(p.cell.python)}</td>
      <td>${esc(p.cell.cuda)}</td><td>${esc(state)}</td><td>${job}</td><td>${esc(p.detail || '')}</td></tr>`;
  }).join('');
  const proven = (j.proven_torch || []).map(esc).join(', ') || 'none yet';
  return `<div class="banner" id="proofs"><b>Proven with torch:</b> <span class="proven">${proven}</span>
    <table class="validation"><tr><th>Torch</th><th>Python</th><th>CUDA</th><th>Validation</th><th>Job</th>
    <th>Detail</th></tr>${rows}</table></div>`;
}

// A provisioned job: the lock its environment installs, and what changed since the previous
// build of the recipe in this cell.
function lockHtml(j) {
  const l = j.lock;
  if (!l) return '';
  const changes = (l.changes || []).map((c) => `<li>${esc(c)}</li>`).join('');
  const since = Number(l.previous_job_id) > 0
    ? ` · since <a href="#/job/${Number(l.previous_job_id)}">job ${Number(l.previous_job_id)}</a>:
       ${changes ? `<ul class="lock-changes">${changes}</ul>` : 'unchanged'}` : '';
  return `<p class="banner" id="lock"><b>Environment:</b> ${l.torch ? `torch ${esc(l.torch)} · ` : ''}
    lock <code>${esc(String(l.digest || '').slice(0, 12))}</code>, ${Number(l.packages)} packages,
    ${bytes(Number(l.bytes))}${since}</p>`;
}

// The recipe's `cells:` entries this job's cell matched: the settings its build ran with.
function cellSettingsHtml(j) {
  const lines = (j.cell_settings || []).map((s) => `<li>${esc(s)}</li>`).join('');
  return lines ? `<div class="banner" id="cell-settings"><b>Cell settings:</b>
    <ul class="cell-settings">${lines}</ul></div>` : '';
}

async function refreshJob(t, id) {
  try {
    const fetchedAt = Date.now();
    const j = await api('jobs/' + id);
    if (t !== pageToken) return;
    const live = j.state === 'JOB_RUNNING' ? Date.now() - fetchedAt : 0;
    const validation = j.kind === 'validation';
    document.getElementById('job-head').innerHTML = `<h1>${validation ? 'Validation job' : 'Job'} ${j.id} ${badge(j.state)}</h1>
      ${validation ? `<p id="validation-of" class="banner">This job is the ${validationOf(j)}: it installs
        that attempt's wheels on a GPU they run on and stores its report with them.</p>` : ''}
      <p><a href="#/build/${j.build_id}">${esc(j.recipe_name)} build #${j.build_id}</a> ·
      ${cellLabel(j.cell)} · arch <code>${esc(j.cell.arch_list) || 'default'}</code> ·
      ${variantText(j)}</p>
      <p class="muted">worker ${workerRef(j.worker_name, j.worker_id)} · created ${when(j.created_at)} ·
      waited ${dur(j.waited_ms)}${j.ran_ms || j.state === 'JOB_RUNNING' ? ' · ' + elapsedHtml(j.ran_ms + live, j.expected_ms) : ''}
      ${j.expected_ms > 0 && j.state === 'JOB_PENDING' ? ` · expected to take ~${dur(j.expected_ms)}` : ''}
      ${progressHtml(j.progress)}</p>
      ${failureHtml(j.failure)}${waitingHtml(j.waiting)}${proofsHtml(j)}${lockHtml(j)}${cellSettingsHtml(j)}
      ${j.error && !j.failure && !j.waiting ? `<p class="error">${esc(j.error)}</p>` : ''}
      ${j.state === 'JOB_FAILED' || j.state === 'JOB_CANCELLED' ? '<button id="retry">Retry job</button>' : ''}`;
    const retry = document.getElementById('retry');
    if (retry) retry.onclick = () => retryJob(j.id);
    document.getElementById('job-attempts').innerHTML = attemptsTable(j.attempts);
    document.getElementById('job-artifacts').innerHTML = validation && !j.artifacts.length
      ? `<p class="muted">A validation job makes no wheels: its report is stored with those of
        <a href="#/job/${Number(j.target_job_id)}">job ${Number(j.target_job_id)}</a>.</p>`
      : artifactsHtml(j.artifacts);
    document.getElementById('download').href = `/api/v1/jobs/${j.id}/log.txt?attempt=${j.attempt}`;
    if (j.attempt !== shownAttempt && j.attempt > 0) {
      shownAttempt = j.attempt;
      document.getElementById('log').innerHTML = '';
      logGroup = null;
      logEnded = false;
      document.getElementById('log-state').textContent = `attempt ${j.attempt}`;
      followLog(t, id, j.attempt, 0);
    } else if (j.attempt === 0) {
      document.getElementById('log').innerHTML =
        `<p class="muted">No log yet: the job has not started${j.waiting ? ' (see why above)' : ''}.</p>`;
    }
  } catch (e) { showError(e); }
}

function jobPage(t, id, line) {
  shownJob = id;
  shownAttempt = -1;
  wantedLine = line || 0;
  logGroup = null;
  logEnded = false;
  app.innerHTML = `<div id="job-head"></div><h2>Log</h2><div class="toolbar">
    <label><input type="checkbox" id="follow" ${line ? '' : 'checked'}> follow</label>
    <input id="log-search" type="search" placeholder="search the log" size="28">
    <span id="search-count" class="muted"></span>
    <a id="download" href="#">Download full log</a><span id="log-state" class="muted"></span></div>
    <div id="log"></div><h2>Attempts</h2><div id="job-attempts"></div>
    <h2>Artifacts</h2><div id="job-artifacts"></div>`;
  const search = document.getElementById('log-search');
  search.oninput = runSearch;
  search.onkeydown = (e) => { if (e.key === 'Enter') nextHit(e.shiftKey ? -1 : 1); };
  every(2000, guard(t, () => refreshJob(t, id)));
}
