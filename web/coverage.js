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
    <td>${esc(c.version)}</td><td>${esc(c.torch)}</td><td>${esc(c.cuda)}</td>
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
function coveragePage(t) {
  app.innerHTML = '<h1>Coverage</h1><div id="coverage"><p class="muted">Loading…</p></div>';
  every(5000, guard(t, () => drawCoverage(t)));
}
