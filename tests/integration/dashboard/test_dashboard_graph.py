"""The build page shows a build graph (recipe `requires:`) in headless Chromium against the
real farmd: which job waits for which, why, and links both ways. No worker is registered,
so the graph stays as submitted: the dependency pending, the dependent held on it. Fails on
any JavaScript error; screenshots go to screenshots/."""
import os

from test_dashboard_e2e import Page, _browser
from test_graph import make_graph


def test_build_page_shows_what_each_job_waits_for_and_who_consumes_it(farm):
    farm.start_farmd(http=True)
    app = farm.ctl_json("submit", make_graph(farm.root))
    dep_job = app["jobs"][0]["inputs"][0]
    driver = _browser(os.path.join(farm.root, "chromium-profile"))
    try:
        p = Page(driver, "http://" + farm.http_address)
        p.go("/")
        p.go(f"/build/{app['id']}")
        p.wait(f"return document.querySelector('#graph [data-required-build=\"{dep_job['build_id']}\"]')",
               "the graph table of the dependent build")
        row = p.js(f"return document.querySelector('tr[data-graph-job=\"{app['jobs'][0]['id']}\"]').textContent")
        assert "graphdep #" + str(dep_job["build_id"]) in row, row
        assert "for build and validation" in row, row
        assert f"waiting for job {dep_job['job_id']} (graphdep) to build the wheel it requires" in row, row
        p.no_errors()
        p.shot("graph-held")

        p.js(f"document.querySelector('#graph a[href=\"#/build/{dep_job['build_id']}\"]').click()")
        p.wait(f"return document.querySelector('#graph [data-consumer-build=\"{app['id']}\"]')",
               "the dependency's build page linking back to its consumer")
        row = p.js(f"return document.querySelector('tr[data-graph-job=\"{dep_job['job_id']}\"]').textContent")
        assert f"graphapp #{app['id']}" in row, row
        p.no_errors()
        p.shot("graph-required-by")
    finally:
        driver.quit()
