// The dashboard's build pages: the builds list with its filters (#/builds?recipe=&state=
// &submitter=&worker=, kept in the URL so a reload keeps them), a build with its matrix,
// wheels and publications (#/build/ID), and the publications of every build, failures
// first (#/publications). Loaded after app.js, whose helpers they use.
'use strict';

const BUILD_FILTERS = ['recipe', 'state', 'submitter', 'worker'];

function filterForm(q) {
  const states = ['', 'queued', 'running', 'succeeded', 'failed', 'cancelled'];
  const input = (name, label) => `<label>${label} <input name="${name}" value="${esc(q[name] || '')}"
    placeholder="any"></label>`;
  return `<form id="build-filters" class="filters">${input('recipe', 'Recipe')}
    <label>State <select name="state">${states.map((s) => `<option value="${s}"
      ${(q.state || '') === s ? 'selected' : ''}>${s || 'any'}</option>`).join('')}</select></label>
    ${input('submitter', 'Owner')}${input('worker', 'Worker')}
    <button type="submit">Filter</button> <a href="#/builds" id="clear-filters">clear</a></form>`;
}

function bindFilterForm() {
  const form = document.getElementById('build-filters');
  form.onsubmit = (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams();
    for (const name of BUILD_FILTERS) {
      const v = form.elements.namedItem(name).value.trim();
      if (v) q.set(name, v);
    }
    location.hash = '#/builds' + (q.toString() ? '?' + q : '');
  };
  form.elements.namedItem('state').onchange = () => form.requestSubmit();
}

function jobCounts(c) {
  const parts = [];
  if (c.JOB_SUCCEEDED) parts.push(`${c.JOB_SUCCEEDED} ok`);
  if (c.JOB_RUNNING) parts.push(`${c.JOB_RUNNING} running`);
  if (c.JOB_PENDING) parts.push(`${c.JOB_PENDING} queued`);
  if (c.JOB_FAILED) parts.push(`<span class="error">${c.JOB_FAILED} failed</span>`);
  if (c.JOB_CANCELLED) parts.push(`${c.JOB_CANCELLED} cancelled`);
  const validations = c.validation ? ` (${plural(c.validation, 'validation')})` : '';
  return `${plural(c.total, 'job')}${validations}${parts.length ? ': ' + parts.join(', ') : ''}`;
}

async function buildsPage(t, oldBefore) {
  const q = routeQuery();
  const before = q.before || oldBefore;
  const params = new URLSearchParams({limit: '50'});
  if (before) params.set('before', before);
  for (const name of BUILD_FILTERS) if (q[name]) params.set(name, q[name]);
  try {
    const r = await api('builds?' + params);
    if (t !== pageToken) return;
    const rows = r.builds.map((b) => `<tr data-build="${b.id}"><td><a href="#/build/${b.id}">#${b.id}</a></td>
      <td>${esc(b.recipe_name)}</td><td>${buildBadge(b)}
      ${b.blocked ? `<div class="reason muted">${esc(b.blocked_reason)}</div>` : ''}</td>
      <td class="owner">${esc(b.owner)}</td><td>${when(b.created_at)}</td>
      <td class="duration">${b.finished_at ? '' : '<span class="muted">for </span>'}${dur(b.duration_ms)}</td>
      <td>${jobCounts(b.jobs)}</td><td class="publishing">${publishingText(b.publishing)}</td></tr>`);
    const next = new URLSearchParams();
    for (const name of BUILD_FILTERS) if (q[name]) next.set(name, q[name]);
    next.set('before', r.next_before);
    const filtered = BUILD_FILTERS.some((n) => q[n]);
    app.innerHTML = `<h1>Builds</h1>${filterForm(q)}<table id="builds"><tr><th>Build</th><th>Recipe</th>
      <th>State</th><th>Owner</th><th>Created</th><th>Duration</th><th>Jobs</th><th>Publishing</th></tr>
      ${rows.join('') || `<tr><td colspan="8" class="muted">${filtered ? 'No build matches these filters.' : 'none'}</td></tr>`}</table>
      <p>${r.next_before ? `<a id="older" href="#/builds?${next}">Older builds →</a>` : ''}</p>`;
    bindFilterForm();
  } catch (e) { showError(e); }
}

// "2 published, 1 failed" with the failure in red and its reason on hover.
function publishingText(p) {
  if (!p || !p.total) return '<span class="muted">—</span>';
  return Object.entries(p.states).map(([state, n]) => state === 'failed' || state === 'refused'
    ? `<span class="error" title="${esc(p.error)}">${n} ${esc(state)}</span>` : `${n} ${esc(state)}`).join(', ');
}

// Where a publication went: a link to the release page or Hub file once it has one.
function publicationWhere(p) {
  const place = esc(`${p.repo} ${p.ref || ''} ${p.path || ''}`.trim());
  return p.remote_url ? `<a href="${esc(p.remote_url)}">${place}</a>` : place;
}

function publicationsHtml(rows) {
  if (!rows.length) return '';
  return `<h2>Publishing</h2><table id="publications"><tr><th>Target</th><th>Kind</th><th>Where</th>
    <th>File</th><th>State</th><th>Attempts</th><th>Error</th></tr>` + rows.map((p) => `<tr
    class="pub-${esc(p.state)}"><td>${esc(p.target)}</td><td>${esc(p.kind)}</td>
    <td>${publicationWhere(p)}</td>
    <td>${esc(p.filename)}</td><td class="${p.state === 'failed' || p.state === 'refused' ? 'error' : ''}">${esc(p.state)}</td>
    <td>${p.attempts}</td><td>${esc(p.error)}</td></tr>`).join('') + '</table>';
}

// What a cell says besides its state: why it waits, how far it is, or why it failed.
function cellDetail(j, waited, ran) {
  if (j.state === 'JOB_PENDING' && j.waiting) {
    return `<div class="cell-why">${esc(j.waiting.summary)}</div>`;
  }
  if (j.state === 'JOB_RUNNING') {
    return `<div class="times">${elapsedHtml(ran, j.expected_ms)}</div>${progressHtml(j.progress)}`;
  }
  if (j.state === 'JOB_FAILED' && j.failure) {
    // The summary says why it failed; the log's lines (the first may be any output) are
    // in the tooltip and on the job page.
    const why = j.failure.summary || (j.failure.lines || [])[0] || '';
    return `<div class="cell-why">${j.failure.phase ? `<b>${esc(j.failure.phase)}</b>: ` : ''}${esc(why)}</div>`;
  }
  return `<div class="times">waited ${dur(waited)}${j.ran_ms ? ' · ran ' + dur(ran) : ''}</div>`;
}

// The tooltip of a cell: the whole reason, per worker, or the failure's lines.
function cellTitle(j) {
  if (j.state === 'JOB_PENDING' && j.waiting) {
    return [j.waiting.summary].concat(j.waiting.workers.map((w) => `${w.name}: ${w.reason}`)).join('\n');
  }
  if (j.state === 'JOB_FAILED' && j.failure) {
    return [`failed in ${j.failure.phase || 'an unknown phase'}: ${j.failure.summary}`]
      .concat(j.failure.lines || []).join('\n');
  }
  return '';
}

// The validation jobs among `jobs` of the build job `jobId`, each with its state and,
// while pending, what it waits for (a GPU the wheels run on).
function validationsHtml(jobs, jobId) {
  const validations = jobs.filter((v) => v.kind === 'validation' && v.target_job_id === jobId);
  return validations.map((v) => `<div class="validation-job s-${stateName(v.state)}" data-validation-job="${v.id}"
    data-state="${esc(v.state)}" title="${esc(cellTitle(v))}"><a href="#/job/${v.id}">validation job ${v.id}</a>
    (attempt ${Number(v.target_attempt)}): ${esc(stateName(v.state))}${v.worker_id ? ' on ' + workerRef(v.worker_name, v.worker_id) : ''}
    ${v.state === 'JOB_PENDING' && v.waiting ? `<div class="cell-why">${esc(v.waiting.summary)}</div>` : ''}</div>`).join('');
}

// The matrix: one cell per build job; a validation job shows inside the cell of the job
// whose wheels it validates.
function gridHtml(build, fetchedAt) {
  const jobs = build.jobs.filter((j) => j.kind !== 'validation');
  const rowKey = (c) => [c.python, c.torch, c.cuda, c.platform].join('|');
  // Release order: torch 2.8 before 2.10, Python 3.9 before 3.11.
  const rows = [...new Set(jobs.map((j) => rowKey(j.cell)))]
    .sort((a, b) => a.localeCompare(b, 'en', {numeric: true}));
  const axis = (build.matrix && build.matrix.arch_lists) || [];
  const cols = [...new Set(axis.concat(jobs.map((j) => j.cell.arch_list)))]
    .filter((a) => jobs.some((j) => j.cell.arch_list === a));
  const head = cols.map((a) => `<th><code>${esc(a) || '<span class="muted">default archs</span>'}</code></th>`).join('');
  const body = rows.map((rk) => {
    const cells = cols.map((a) => {
      const j = jobs.find((x) => rowKey(x.cell) === rk && x.cell.arch_list === a);
      if (!j) return '<td class="empty"></td>';
      const live = Date.now() - fetchedAt;
      const waited = j.waited_ms + (j.state === 'JOB_PENDING' ? live : 0);
      const ran = j.ran_ms + (j.state === 'JOB_RUNNING' ? live : 0);
      const stuck = j.waiting && j.waiting.unplaceable ? ' unplaceable' : '';
      return `<td class="cell s-${stateName(j.state)}${stuck}" data-job="${j.id}" data-state="${esc(j.state)}"
        title="${esc(cellTitle(j))}"><a href="#/job/${j.id}">${stuck ? 'no worker' : stateName(j.state)}</a>
        ${j.worker_id ? `<div class="times">${workerRef(j.worker_name, j.worker_id)}</div>` : ''}
        ${cellDetail(j, waited, ran)}
        ${validationsHtml(build.jobs, j.id)}</td>`;
    }).join('');
    return `<tr><th>${cellLabel(jobs.find((x) => rowKey(x.cell) === rk).cell)}</th>${cells}</tr>`;
  }).join('');
  return `<table class="grid" id="grid"><tr><th>Python × torch × CUDA \\ arch list</th>${head}</tr>${body}</table>`;
}

// "passed · 718.4 TOPS (SDPA 589.0)" from a validation report's best case.
function validationSummary(v) {
  if (!v) return '';
  const cases = v.cases || [];
  // Reports stored before throughput had a unit carry attention TOPS alone.
  const rate = (c) => Number(c.throughput_unit ? c.throughput : c.tops) || 0;
  const best = cases.reduce((a, c) => (rate(c) > (a ? rate(a) : 0) ? c : a), null);
  const unit = best && best.throughput_unit ? best.throughput_unit : 'TOPS';
  const base = best ? Number(best.throughput_unit ? best.baseline_throughput : best.baseline_tops) || 0 : 0;
  const speed = best && rate(best) > 0
    ? ` · ${rate(best).toFixed(1)} ${esc(unit)}${base > 0 ? ` (${esc(best.baseline || 'baseline')} ${base.toFixed(1)})` : ''}`
    : '';
  const failed = cases.filter((c) => !c.passed).length;
  return `${badge(v.state)}${speed}${failed ? ` · <span class="error">${failed} of ${cases.length} cases failed</span>` : ''}
    <div class="muted reason">${esc(v.gpu_name)} ${esc(v.message)}</div>`;
}

// The line that installs the wheel: from its variant's index view when the index lists it,
// else the file itself (the index lists only validated wheels).
function pipLine(a) {
  return a.indexed ? `pip install --index-url ${location.origin}${a.index_path} ${a.project}==${a.version}`
                   : `pip install "${location.origin}${a.url}#sha256=${a.sha256}"`;
}

// A wheel's publication: its state, where it went (a GitHub asset links its release page
// and the file, a Hub file its page), and why it failed.
function wheelPublication(p, release) {
  const links = [];
  if (p.target === 'github' && release && release.remote_url) links.push(`<a href="${esc(release.remote_url)}">release</a>`);
  if (p.remote_url) links.push(`<a href="${esc(p.remote_url)}">${p.target === 'github' ? 'asset' : 'file'}</a>`);
  // failed: a person must act; refused: too large for the destination, nothing was sent.
  const bad = p.state === 'failed' || p.state === 'refused';
  return `<div class="pub pub-${esc(p.state)}">${esc(p.target)}
    ${bad ? `<span class="error" title="${esc(p.error)}">${esc(p.state)}</span>` : esc(p.state)}
    ${links.join(' ')}${bad ? `<div class="reason error">${esc(p.error)}</div>` : ''}</div>`;
}

// " · largest: sm_90a 12.1 MiB, sm_120a 11.9 MiB": where most of a wheel's bytes go.
function largestParts(m) {
  const parts = wheelParts(m).slice(0, 3);
  return parts.length ? ` · largest: ${parts.map((p) => `${esc(p.what)} ${bytes(p.compressed)}`).join(', ')}` : '';
}

function wheelsHtml(wheels, publications, jobs) {
  if (!wheels.length) return '';
  const release = publications.find((p) => p.kind === 'release');
  return `<h2>Wheels</h2><table id="wheels"><tr><th>Wheel</th><th>Variant</th><th>Manifest</th>
    <th>Validation</th><th>Install</th><th>Published</th></tr>` + wheels.map((w) => {
    const m = w.manifest || {};
    const archs = [...new Set((m.images || []).map((i) => i.arch))];
    const pubs = (w.publications || []).map((p) => wheelPublication(p, release)).join('');
    return `<tr data-wheel="${esc(w.filename)}"><td><a href="${esc(w.url)}">${esc(w.filename)}</a>
      <div class="muted">job <a href="#/job/${w.job_id}">${w.job_id}</a> · ${bytes(Number(w.size))}${largestParts(m)}
        · <a class="provenance" href="${esc(w.url)}.intoto.jsonl" title="signed build and validation statements (docs/provenance.md)">provenance</a></div></td>
      <td><code>${esc(w.variant)}</code></td>
      <td>${archs.length ? archs.map(esc).join(', ') : '<span class="muted">no device code</span>'}
        ${(m.runs_on || []).length ? `<div class="muted">runs on cc ${m.runs_on.map(esc).join(', ')}</div>` : ''}
        ${(m.missing || []).length ? `<div class="error">missing ${m.missing.map(esc).join(', ')}</div>` : ''}</td>
      <td class="validation">${validationSummary(w.validation)}${validationsHtml(jobs, w.job_id)}</td>
      <td><code class="pip">${esc(pipLine(w))}</code>
        ${w.indexed ? '' : '<div class="muted reason">not in the index until validated on a GPU</div>'}</td>
      <td>${pubs || '<span class="muted">not published</span>'}</td></tr>`;
  }).join('') + '</table>';
}

// What each job requires (recipe `requires:`) and which jobs require it, with the wheels
// consumed and why a held job waits.
function requirementUse(r) {
  return r.for_build && r.for_validation ? 'build and validation' : r.for_build ? 'build' : 'validation';
}

function graphHtml(jobs) {
  const linked = jobs.filter((j) => (j.requires || []).length || (j.required_by || []).length);
  if (!linked.length) return '';
  const rows = linked.map((j) => {
    const req = (j.requires || []).map((r) => `<div class="requires" data-required-build="${r.build_id}">
        <a href="#/build/${r.build_id}">${esc(r.recipe_name)} #${r.build_id}</a>
        (job <a href="#/job/${r.job_id}">#${r.job_id}</a>) ${badge(r.state)} for ${requirementUse(r)}
        ${r.wheels.map((w) => `<div class="mono muted" title="sha256 ${esc(w.sha256)}">consumed
          ${esc(w.filename)} sha256 ${esc(w.sha256.slice(0, 16))}…</div>`).join('')}</div>`).join('');
    const by = (j.required_by || []).map((c) => `<div class="required-by" data-consumer-build="${c.build_id}">
        <a href="#/build/${c.build_id}">${esc(c.recipe_name)} #${c.build_id}</a>
        (job <a href="#/job/${c.job_id}">#${c.job_id}</a>) ${badge(c.state)}</div>`).join('');
    const why = j.state === 'JOB_PENDING' && j.waiting ? esc(j.waiting.summary)
      : j.state === 'JOB_FAILED' && (j.requires || []).length ? esc(j.error || '') : '';
    return `<tr data-graph-job="${j.id}"><td><a href="#/job/${j.id}">#${j.id}</a> ${cellLabel(j.cell)}
      ${badge(j.state)}</td><td>${req || '<span class="muted">nothing</span>'}</td>
      <td>${by || '<span class="muted">no build</span>'}</td><td class="why">${why}</td></tr>`;
  }).join('');
  return `<h2>Graph</h2><table id="graph"><tr><th>Job</th><th>Requires (wheels consumed)</th>
    <th>Required by</th><th>Why it waits</th></tr>${rows}</table>`;
}

async function buildPage(t, id) {
  app.innerHTML = `<div id="build"></div>`;
  every(1000, guard(t, async () => {
    try {
      const fetchedAt = Date.now();
      const b = await api('builds/' + id);
      if (t !== pageToken) return;
      const active = b.state === 'BUILD_QUEUED' || b.state === 'BUILD_RUNNING';
      const end = b.finished_at ? Date.parse(b.finished_at) : b.now;
      document.getElementById('build').innerHTML = `<h1>Build #${b.id}: ${esc(b.recipe_name)}
        ${esc(b.recipe_version)} ${buildBadge(b)}</h1>
        <p class="muted">owner <span class="owner">${esc(b.owner)}</span>, submitted by ${esc(b.submitted_by)} ${when(b.created_at)}
        ${b.finished_at ? ' · finished ' + when(b.finished_at) : ''} ·
        <span id="build-duration">${active ? 'running for' : 'took'} ${dur(end - Date.parse(b.created_at))}</span></p>
        ${b.blocked ? `<div class="banner blocked" id="blocked">Blocked: ${esc(b.blocked_reason)}
          (${plural(b.unplaceable_jobs, 'job')} no worker can take)</div>`
          : b.unplaceable_jobs ? `<div class="banner" id="blocked">${plural(b.unplaceable_jobs, 'job')}
          no worker can take: ${esc(b.blocked_reason)}</div>` : ''}
        ${active ? '<button id="cancel">Cancel build</button>' : ''}
        <h2>Matrix</h2>${b.torch_followed ? `<p id="torch-followed">${esc(b.torch_followed)}
          <span class="muted">(what the indexes had when it was submitted)</span></p>` : ''}
        ${gridHtml(b, fetchedAt)}
        ${graphHtml(b.jobs)}
        ${b.rejected_cells.length ? '<h2>Rejected cells</h2><ul>' +
          b.rejected_cells.map((r) => `<li>${esc(r)}</li>`).join('') + '</ul>' : ''}
        ${wheelsHtml(b.wheels || [], b.publications || [], b.jobs)}
        ${publicationsHtml(b.publications || [])}
        <h2>Recipe</h2><pre class="mono">${esc(b.recipe_yaml)}</pre>`;
      const btn = document.getElementById('cancel');
      if (btn) btn.onclick = () => cancelBuild(b.id);
    } catch (e) { showError(e); }
  }));
}

async function publicationsPage(t) {
  app.innerHTML = `<h1>Publishing</h1><div id="pub-view"></div>`;
  every(3000, guard(t, async () => {
    try {
      const r = await api('publications');
      if (t !== pageToken) return;
      const counts = Object.entries(r.by_state).map(([s, n]) =>
        `<div class="card"><div class="n ${s === 'failed' && n ? 'error' : ''}">${n}</div>${esc(s)}</div>`).join('');
      const rows = r.publications.map((p) => `<tr class="pub-${esc(p.state)}" data-publication="${p.id}">
        <td><a href="#/build/${p.build_id}">${esc(p.recipe_name)} #${p.build_id}</a></td>
        <td>${esc(p.target)} ${esc(p.kind)}</td><td>${publicationWhere(p)}</td><td>${esc(p.filename)}</td>
        <td class="${p.state === 'failed' ? 'error' : ''}">${esc(p.state)}</td><td>${p.attempts}</td>
        <td>${when(p.updated_at)}</td><td class="error">${esc(p.error)}</td></tr>`).join('');
      document.getElementById('pub-view').innerHTML = `<div class="cards">${counts}</div>
        <table id="all-publications"><tr><th>Build</th><th>Target</th><th>Where</th><th>File</th>
        <th>State</th><th>Attempts</th><th>Updated</th><th>Error</th></tr>${rows ||
        '<tr><td colspan="8" class="muted">Nothing published yet: a recipe publishes with a <code>publish</code> section.</td></tr>'}</table>`;
      setStatus('updated ' + new Date().toLocaleTimeString());
    } catch (e) { showError(e); }
  }));
}
