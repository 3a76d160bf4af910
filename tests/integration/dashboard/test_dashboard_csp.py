"""The dashboard under its Content-Security-Policy, in real headless Chromium: every page
(overview with a running job's progress bar, builds, a build, a job with its live log, a
validation job, publications, schedules, workers, the duration chart with its legend, the
package index) renders with no CSP violation and no console error; and
the policy is in force (an inline script injected into the page does not run and is
reported). The data comes from dashboard_fixture --demo, as in test_dashboard_e2e.py."""
import os

from test_dashboard_e2e import Page, _browser

# Installed before any page script runs (DevTools scripts are outside the page's policy):
# collects every violation the page reports.
COLLECT_VIOLATIONS = """
window.cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => window.cspViolations.push(
  e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile +
  ':' + e.lineNumber + ' ' + (e.sample || '')));
"""


def _no_violations(p, where, app=True):
    """No CSP violation and no console error; `app`: a page of the dashboard's script,
    which also collects its own JavaScript errors (the index's pages have no script)."""
    violations = p.js("return window.cspViolations")
    assert violations == [], f"{where}: CSP violations {violations}"
    if app:
        p.no_errors()
    else:
        # The browser asks for /favicon.ico on its own; the index has none (404).
        severe = [e for e in p.d.get_log("browser") if e.get("level") == "SEVERE" and
                  "/favicon.ico" not in e.get("message", "")]
        assert not severe, f"{where}: console errors {severe}"


def test_every_page_works_under_the_content_security_policy(farm):
    address = farm.start_dashboard_fixture("--demo", "--lines", "40", "--line-ms", "300")
    driver = _browser(os.path.join(farm.root, "chromium-profile"))
    try:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                               {"source": COLLECT_VIOLATIONS})
        p = Page(driver, "http://" + address)
        p.go("/")
        p.wait("return document.querySelector('#running .bar rect')", "a running job's progress bar")
        job_id = p.js("return document.querySelector('#running a[href^=\"#/job/\"]')"
                      ".getAttribute('href').split('/')[2]")
        _no_violations(p, "overview")
        p.shot("csp-overview")
        pages = {
            "/builds": "document.querySelector('tr[data-build]')",
            "/build/1": "document.querySelector('td.cell .bar rect')",
            "/build/3": "document.querySelector('td.cell .validation-job')",
            f"/job/{job_id}": "document.querySelectorAll('#log .l').length > 0",
            "/publications": "document.getElementById('pub-view')",
            "/schedules": "document.getElementById('schedules-view')",
            "/workers": "document.querySelectorAll('tr[data-worker]').length === 3",
            "/chart": "document.querySelector('#duration-chart circle') && "
                      "document.querySelector('.legend i.swatch-0')",
        }
        for route, ready_js in pages.items():
            p.go(route)
            p.wait(f"return {ready_js}", f"{route} to render")
            _no_violations(p, route)
        p.shot("csp-chart")
        # The package index's page (server-rendered, the dashboard's style sheet; the
        # fixture's wheels are not in the blob store, so it lists variants, no project).
        driver.get(f"http://{address}/simple/")
        p.wait("return document.querySelector('#variants')", "the index page")
        _no_violations(p, "/simple/", app=False)
        # The policy is in force: an injected inline script does not run and is reported.
        driver.get(f"http://{address}/#/")
        p.wait("return document.getElementById('ov')", "the overview again")
        p.js("const s = document.createElement('script'); s.textContent = 'window.inlineRan = 1';"
             "document.head.appendChild(s);")
        p.wait("return window.cspViolations.length > 0", "the injected script's violation", 5)
        assert p.js("return window.inlineRan") is None
        assert "script-src" in p.js("return window.cspViolations[0]")
        driver.get_log("browser")  # the blocked script's console error is expected
    finally:
        driver.quit()
