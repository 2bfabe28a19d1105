"""The web page in headless Chromium (Playwright): a client's queue shows a running job's progress and,
once the job has ended, a link to its report that opens it."""

import shutil

import pytest

from tests.serve_server import TOKENS, Server

pytestmark = pytest.mark.slow
sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright: pip install 'solbench[test]'")

SYSTEM_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


@pytest.fixture
def browser():
    """Playwright's own Chromium (`playwright install chromium`), else one installed on the system."""
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch()
        except sync_api.Error:
            path = next((shutil.which(n) for n in SYSTEM_BROWSERS if shutil.which(n)), None)
            if path is None:
                pytest.skip("no Chromium: `playwright install chromium` could not fetch one and none is installed")
            b = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
        yield b
        b.close()


def test_the_queue_shows_progress_then_the_report_link(tmp_path, browser):
    server = Server(tmp_path).start()
    try:
        job = server.submit("dave")
        server.wait(job["id"], "dave", until=lambda s: s["done"] >= 1, timeout_s=300)
        page = browser.new_page()
        page.goto(f"{server.url}/ui?token={TOKENS['dave']}")
        row = page.locator(f'tr.job[data-job="{job["id"]}"]')
        assert row.get_attribute("data-state") == "running"  # 9 scenarios to go: seconds on a CPU
        progress = row.locator("td.progress").inner_text()
        assert "/10" in progress and not progress.startswith("0/"), progress
        assert int(row.locator("progress").get_attribute("value")) >= 1
        server.wait(job["id"], "dave", timeout_s=300)
        page.wait_for_selector(f'tr.job[data-job="{job["id"]}"][data-state="done"] a.report', timeout=15000)
        assert "done: passed" in row.inner_text()
        row.locator("a.report").click()
        page.wait_for_load_state()
        assert page.url.endswith(f"/v1/jobs/{job['id']}/report") and "smoke" in page.content()
        other = browser.new_page()  # another client's page does not list the job
        other.goto(f"{server.url}/ui?token={TOKENS['alice']}")
        assert job["id"] not in other.content()
        other.goto(f"{server.url}/v1/jobs/{job['id']}/report")
        assert "no job" in other.content()
    finally:
        server.stop()


def test_the_page_asks_for_a_token(tmp_path, browser):
    server = Server(tmp_path).start()
    try:
        page = browser.new_page()
        page.goto(server.url + "/")
        assert page.locator("input[name=token]").count() == 1
        page.goto(server.url + "/ui?token=wrong-token-0000000000")
        assert "unknown token" in page.content()
    finally:
        server.stop()
