// The dashboard's coverage page (#/coverage): one table per package of every cell the farm
// knows (package x version x torch x CUDA x Python x GPU arch list x platform) with its
// state in words and colour, from /api/v1/coverage. Loaded after app.js, whose helpers
// (esc, api, every, guard, when) it uses.
'use strict';

function coverageBadge(c) {
  return `<span class="badge s-${esc(c.state)}" title="${esc(c.cause)}">${esc(c.state_words)}</span>`;
}
function coverageRow(c) {
  const job = c.job_id ? `<a href="#/job/${Number(c.job_id)}">job ${Number(c.job_id)}</a>` : '';
  const build = c.build_id ? `<a href="#/build/${Number(c.build_id)}">build ${Number(c.build_id)}</a>` : '';
  return `<tr class="cov-cell" data-state="${esc(c.state)}">
    <td>${esc(c.version)}</td><td>${esc(c.torch)}${c.release_candidate ? ' <span class="badge rc" title="built against a torch release candidate">rc</span>' : ''}</td><td>${esc(c.cuda)}</td>
    <td>${esc(c.python)}</td><td>${esc(c.arch_list)}</td><td>${esc(c.platform)}</td>
    <td>${coverageBadge(c)}${c.cause ? `<div class="muted reason">${esc(c.cause)}</div>` : ''}</td>
    <td>${esc(c.wheel)}</td><td>${job} ${build}</td>
    <td>${when(c.built_at)}</td><td>${when(c.validated_at)}</td></tr>`;
}
async function drawCoverage(t) {
  try {
    const q = new URLSearchParams(routeQuery()).toString();
    const data = await api('coverage' + (q ? '?' + q : ''));
    if (t !== pageToken) return;
    const byPackage = new Map();
    for (const c of data.cells) {
      if (!byPackage.has(c.package)) byPackage.set(c.package, []);
      byPackage.get(c.package).push(c);
    }
    const counts = data.states.map((s) =>
      `<span class="badge s-${esc(s.name)}">${esc(s.words)}: ${Number(data.counts[s.name])}</span>`).join(' ');
    let html = `<p>${counts}</p><p class="muted">from the newest ${Number(data.builds_read)} builds;
      <a href="/feeds/wheels.atom">Atom feed</a> of validated wheels and failed builds</p>`;
    if (!byPackage.size) html += '<p class="muted">No builds yet.</p>';
    for (const [name, cells] of byPackage) {
      html += `<h2 class="cov-package">${esc(name)}</h2><table class="coverage"><thead><tr>
        <th>version</th><th>torch</th><th>CUDA</th><th>Python</th><th>arch list</th><th>platform</th>
        <th>state</th><th>wheel</th><th>decided by</th><th>built</th><th>validated</th></tr></thead>
        <tbody>${cells.map(coverageRow).join('')}</tbody></table>`;
    }
    document.getElementById('coverage').innerHTML = html;
    setStatus('updated ' + new Date().toLocaleTimeString());
  } catch (e) { showError(e); }
}
// Requested cells (/api/v1/requests, docs/requests.md): what people asked the farm for,
// how many asked, and where each stands.
function requestRow(r) {
  const build = r.build_id ? `<a href="#/build/${Number(r.build_id)}">build ${Number(r.build_id)}</a>` : '';
  const waits = r.state === 'requested' && r.anonymous ? ' (waits for an admin)' : '';
  return `<tr class="req-cell" data-state="${esc(r.state)}" data-request="${Number(r.id)}">
    <td>${Number(r.id)}</td><td>${esc(r.package)}</td><td>${esc(r.version || 'newest')}</td>
    <td>${esc(r.torch)}</td><td>${esc(r.cuda)}</td><td>${esc(r.python)}</td>
    <td>${esc(r.compute_capability)}</td><td>${esc(r.platform)}</td>
    <td><span class="badge s-req-${esc(r.state)}">${esc(r.state)}${esc(waits)}</span>
      ${r.reason ? `<div class="muted reason">${esc(r.reason)}</div>` : ''}</td>
    <td class="filings">${Number(r.filings)}</td><td>${build}</td><td>${esc(r.wheel)}</td></tr>`;
}
async function drawRequests(t) {
  try {
    const data = await api('requests');
    if (t !== pageToken) return;
    const counts = Object.keys(data.counts).map((k) =>
      `<span class="badge s-req-${esc(k)}">${esc(k)}: ${Number(data.counts[k])}</span>`).join(' ');
    document.getElementById('requests').innerHTML = `<p>${counts}</p>` + (data.requests.length
      ? `<table class="requests"><thead><tr><th>request</th><th>package</th><th>version</th>
          <th>torch</th><th>CUDA</th><th>Python</th><th>GPU cc</th><th>platform</th><th>state</th>
          <th>requesters</th><th>build</th><th>wheel</th></tr></thead>
          <tbody>${data.requests.map(requestRow).join('')}</tbody></table>`
      : '<p class="muted">No requests yet.</p>');
  } catch (e) { showError(e); }
}
// The form stays outside the refreshed tables, so polling never wipes what is typed.
const requestForm = `<details id="new-request"><summary>Ask for a wheel</summary>
  <form id="request-form"><div class="form-grid">
    <label>Package <input name="package" required placeholder="sageattention"></label>
    <label>Version <input name="version" placeholder="newest"></label>
    <label>Python <input name="python" required placeholder="3.12"></label>
    <label>torch <input name="torch" placeholder="2.8 (none: empty)"></label>
    <label>CUDA <input name="cuda" placeholder="12.8"></label>
    <label>GPU compute capability <input name="compute_capability" required placeholder="8.9"></label>
    <label>Platform <input name="platform" required value="linux_x86_64"></label></div>
    <button type="submit">Request</button> <span id="request-form-result"></span>
  </form></details>`;
function bindRequestForm(t) {
  const form = document.getElementById('request-form');
  form.onsubmit = async (ev) => {
    ev.preventDefault();
    const out = document.getElementById('request-form-result');
    out.textContent = '';
    const body = {};
    for (const n of ['package', 'version', 'python', 'torch', 'cuda', 'compute_capability',
                     'platform']) body[n] = form.elements.namedItem(n).value.trim();
    try {
      const r = await api('requests', {method: 'POST', body: JSON.stringify(body),
        headers: Object.assign({'Content-Type': 'application/json'}, headers())});
      out.textContent = `request ${Number(r.id)}: ${r.state}${r.reason ? ': ' + r.reason : ''}` +
        (r.merged ? ' (merged with an identical request)' : '');
      drawRequests(t);
    } catch (e) { out.textContent = e.message; }
  };
}
function coveragePage(t) {
  app.innerHTML = `<h1>Coverage</h1><div id="coverage"><p class="muted">Loading…</p></div>
    <h2>Requested cells</h2><div id="requests"><p class="muted">Loading…</p></div>${requestForm}`;
  bindRequestForm(t);
  every(5000, guard(t, () => { drawCoverage(t); drawRequests(t); }));
}
