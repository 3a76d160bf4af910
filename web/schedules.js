// The dashboard's schedule pages (#/schedules, #/schedule/ID), loaded after app.js, whose
// helpers they use.
'use strict';

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
        <td class="owner">${esc(s.owner)}</td>
        <td>${firesOn(s)}</td><td>${s.watch ? '' : esc(s.time_zone)}</td>
        <td class="next">${nextFire(s)}</td><td class="last-run">${lastRun(s.last_run)}</td>
        <td>${scheduleButtons(s)}</td></tr>`);
      const el = document.getElementById('schedules-view');
      el.innerHTML = `<table id="schedules"><tr><th>Schedule</th><th>Recipe</th><th>Owner</th><th>Fires on</th>
        <th>Time zone</th><th>Next fire</th><th>Last run</th><th></th></tr>${rows.join('') ||
        '<tr><td colspan="8" class="muted">No schedule. Add one below or with <code>farmctl schedules add</code>.</td></tr>'}</table>`;
      bindScheduleButtons(el, refresh);
      setStatus('updated ' + new Date().toLocaleTimeString());
    } catch (e) { showError(e); }
  });
  every(2000, refresh);
}

// A cron schedule's expression, or what a watch schedule watches upstream.
function firesOn(s) {
  return s.watch ? `<span class="watch">watch: ${esc(s.watch)}</span>`
                 : `<code class="cron">${esc(s.cron)}</code>`;
}

function runsTable(runs) {
  if (!runs.length) return '<p class="muted">No run yet.</p>';
  return `<table id="runs"><tr><th>Run</th><th>Trigger</th><th>Outcome</th><th>Fire time</th>
    <th>Build</th><th>Commit</th><th>Detail</th></tr>` + runs.map((r) =>
    `<tr data-run="${Number(r.id)}" data-outcome="${esc(r.outcome)}"><td>${Number(r.id)}</td>
     <td>${esc(String(r.trigger).replace(/^TRIGGER_/, '').toLowerCase())}</td>
     <td>${outcomeBadge(r.outcome)}</td><td>${esc(r.fire_time)}</td><td>${runBuild(r)}</td>
     <td><code>${esc(String(r.resolved_commit || '').slice(0, 12))}</code></td>
     <td>${esc(r.detail)}${r.upstream_time ? ` <span class="muted">(upstream ${esc(r.upstream_time)})</span>` : ''}</td></tr>`).join('') + '</table>';
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
        <tr><th>Owner</th><td class="owner">${esc(s.owner)}</td></tr>
        <tr><th>Fires on</th><td>${firesOn(s)}${s.watch ? '' : ' in ' + esc(s.time_zone)}</td></tr>
        ${s.watch ? `<tr><th>Watch</th><td class="watch-status">${esc(s.watch_status)}</td></tr>` : ''}
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

