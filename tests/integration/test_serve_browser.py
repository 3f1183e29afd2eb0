"""`layerbench serve` clicked through in a real browser: headless Chromium driven by Selenium and Debian's
chromedriver, against the server the CLI starts on a free port, over three real runs from two hosts
(tests/data/serve/runs.db): the runs page lists both hosts, a run's page shows its report, compare shows
the two runs' differences with intervals, and a comparison's history draws its trend over the three runs.

Twice: served from the SQLite file, and from a private PostgreSQL database the two hosts published to, each
from a store of its own and with a login of its own (layerbench_writer), browsed with a reader's login."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from layerbench.stack.ports import free_port
from tests.deadlines import wait_for

DATA = Path(__file__).resolve().parents[1] / "data" / "serve" / "runs.db"
A, B, C = "20261207-062347-3900", "20261207-062429-5952", "20261207-062511-3c86"
CHROMEDRIVER = Path("/usr/bin/chromedriver")
CHROMIUM = shutil.which("chromium")
START_S = 60.0  # the CLI's start and the server's bind, on a busy machine
PAGE_S = 60.0  # a page's load: a run's first one draws its figures
READY = "return document.readyState"

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or not CHROMEDRIVER.exists(), reason="needs chromium and chromium-driver (make test installs them)"
)


def accepts(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def layerbench(*args: str, env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-m", "layerbench.cli", *args], capture_output=True, text=True,
                          timeout=300, check=False, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr


def published(tmp_path: Path, env: dict[str, str], request: pytest.FixtureRequest) -> str:
    """Two hosts' stores (each a copy holding its own runs' ids) published to one fresh PostgreSQL database
    with a writer's login each; the reader's URL."""
    service = request.getfixturevalue("pg_service")
    owner = service.database()
    layerbench("publish", "--setup-roles", "--to", owner, env=env)
    dbname = owner.rsplit("/", 1)[1]
    service.role(f"{dbname}_ro", "read-pw", "layerbench_reader")
    for host, runs in (("vm", (A, C)), ("labb", (B,))):
        service.role(f"{dbname}_{host}", f"{host}-pw", "layerbench_writer")
        store = shutil.copy(DATA, tmp_path / f"{host}.db")
        for run in runs:
            layerbench("publish", run, "--db", str(store), "--to",
                       service.url(dbname, f"{dbname}_{host}", f"{host}-pw"), env=env)  # fmt: skip
    return str(service.url(dbname, f"{dbname}_ro", "read-pw"))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.requires_postgres)])
def server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """`layerbench serve` on a copy of the runs (its first reads write their cache beside it), or on the
    PostgreSQL database two hosts published them to; stopped by its PID."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}  # a PostgreSQL reader's cache: the test's
    db = published(tmp_path, env, request) if request.param == "postgresql" else shutil.copy(DATA, tmp_path / "runs.db")
    port = free_port()
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "layerbench.cli", "serve", "--db", str(db), "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT, env=env,
    )  # fmt: skip
    try:
        wait_for(lambda: accepts(port), f"layerbench serve on port {port}", START_S, lambda: proc.poll() is None)
        said = (tmp_path / "serve.log").read_text()
        assert f"at http://127.0.0.1:{port}/ (localhost only)" in said and "read-only" in said
        assert "read-pw" not in said  # a URL's password is never printed
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,1600"):  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    driver.set_page_load_timeout(PAGE_S)
    try:
        yield driver
    finally:
        driver.quit()


def arrives(browser: object, at: Callable[[str], bool]) -> None:
    """Waits for the page a click led to: a form's submit or a link's click returns before the browser has
    navigated, so the URL (and what is found next) may still be the last page's."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, PAGE_S).until(lambda b: at(b.current_url) and b.execute_script(READY) == "complete")


def test_runs_run_compare_history(server: str, browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.support.ui import Select

    assert isinstance(browser, WebDriver)
    browser.get(server + "/")
    rows = browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr")
    assert len(rows) == 3 and {r.find_elements(By.TAG_NAME, "td")[2].text for r in rows} == {"vm", "lab-b"}

    browser.find_element(By.CSS_SELECTOR, f'a.run[href="/runs/{A}"]').click()
    arrives(browser, lambda url: url == f"{server}/runs/{A}")
    assert "loop/ext4/docker:overlay2/volume" in browser.find_element(By.ID, "results").text
    assert browser.find_elements(By.CSS_SELECTOR, "#fig-normalized svg")  # the report's figure, inline

    Select(browser.find_element(By.ID, "compare-with")).select_by_value(B)
    browser.find_element(By.ID, "compare").click()
    arrives(browser, lambda url: url == f"{server}/compare?a={A}&b={B}")
    table = browser.find_element(By.ID, "compare")
    assert len(table.find_elements(By.CSS_SELECTOR, "tbody tr")) == 6 and "–" in table.text  # intervals
    assert "lab-b" in browser.find_element(By.ID, "runs-compared").text

    table.find_element(By.CSS_SELECTOR, "a.history").click()
    arrives(browser, lambda url: "/history?" in url)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#trend svg g.point")) == 3
    assert len(browser.find_elements(By.CSS_SELECTOR, "#history tbody tr")) == 3
    assert browser.get_log("browser") == []  # nothing the policy refused, no error in the console
