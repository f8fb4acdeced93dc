"""The web pages in a real browser (issue #47): Debian's Chromium (``/usr/bin/chromium``,
installed by ``scripts/test.sh``), headless, driven by Playwright (PyPI) against a real
catalog server on loopback.

A reader signs in, browses from the catalogs to a table, opens its history (and a diff) and
its health, whose charts must be drawn; the admin view refuses the reader and shows an admin
the principals and that refusal. Hostile names, comments and properties must show as text:
no dialog opens, no element is made of them, and no Content-Security-Policy violation is
reported. No request URL, cookie or log line ever holds a token.

Screenshots of the main pages go to ``target/ui-screenshots/`` (or
``$DELTALOG_UI_SCREENSHOTS``); ``docs/ui.md`` describes them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.ui_catalog import COMMENT, IMG, SCRIPT, SCRIPT_TABLE, UiCatalog, ui_catalog

import deltalog as dl

CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(
    os.environ.get(
        "DELTALOG_UI_SCREENSHOTS",
        Path(__file__).resolve().parent.parent / "target" / "ui-screenshots",
    )
)
TOKEN_KEY = "deltalog.catalog.token"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        message = f"{CHROMIUM} is missing (Debian's chromium package; scripts/test.sh installs it)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiCatalog]:
    with ui_catalog(tmp_path_factory.mktemp("ui-browser")) as catalog:
        yield catalog


class Tab:
    """A browser tab of its own (own sessionStorage) that records what must never happen."""

    def __init__(self, browser: Any, ui: UiCatalog) -> None:
        self.context = browser.new_context(viewport={"width": 1360, "height": 1000})
        self.page = self.context.new_page()
        self.ui = ui
        self.dialogs: list[str] = []
        self.console: list[str] = []
        self.urls: list[str] = []
        self.page.on("dialog", self._dialog)
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))
        self.page.on("request", lambda r: self.urls.append(r.url))
        self.page.set_default_timeout(30_000)

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def sign_in(self, who: str) -> None:
        self.page.goto(f"{self.ui.url}/ui/")
        self.page.fill("#token", self.ui.tokens[who])
        self.page.click("#signin-button")
        self.page.wait_for_selector("#namespace")
        assert self.page.inner_text("#who").startswith(who)

    def go(self, fragment: str, ready: str) -> None:
        self.page.evaluate("f => { location.hash = f; }", fragment)
        self.page.wait_for_selector(ready)

    def shot(self, name: str) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

    def check_clean(self) -> None:
        """Nothing hostile ran, nothing was blocked, no token left the header."""
        assert self.dialogs == []
        # (A refused fetch, 401 or 403, is reported as "Failed to load resource": expected.)
        problems = [
            c
            for c in self.console
            if c.startswith(("error", "pageerror")) and "Failed to load resource" not in c
        ]
        assert problems == [], problems
        assert not any("Content Security Policy" in c for c in self.console)
        # Exactly the page's own script, and no image (an <img> would be injected markup).
        assert self.page.locator("script").count() == 1
        assert self.page.locator("img").count() == 0
        for token in self.ui.tokens.values():
            assert not any(token in url for url in self.urls)
        assert self.page.evaluate("document.cookie") == ""
        assert self.page.evaluate("localStorage.length") == 0

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def tab(browser: Any, ui: UiCatalog) -> Iterator[Tab]:
    t = Tab(browser, ui)
    try:
        yield t
    finally:
        t.close()


def bars_drawn(tab: Tab, plot: str) -> int:
    """How many of the chart's bars have a height."""
    tab.page.wait_for_selector(f"#{plot}")
    return int(
        tab.page.evaluate(
            "id => [...document.querySelectorAll('#' + id + ' rect.bar')]"
            ".filter(r => Number(r.getAttribute('height')) > 0).length",
            plot,
        )
    )


def test_a_reader_signs_in_and_browses_to_a_tables_history_and_health(tab: Tab, ui: UiCatalog):
    page = tab.page
    page.goto(f"{ui.url}/ui/")
    page.wait_for_selector("#signin")
    tab.shot("sign-in")
    tab.sign_in("rita")
    assert page.evaluate(f"sessionStorage.getItem('{TOKEN_KEY}')") == ui.tokens["rita"]
    assert page.locator("#namespaces a").all_inner_texts() == ["marketing", "sales"]
    tab.shot("catalogs")

    page.click("#namespaces >> text=sales")
    page.wait_for_selector("#tables")
    assert set(page.locator("#tables tbody tr td:first-child a").all_inner_texts()) == {
        SCRIPT_TABLE,
        IMG,
    }
    assert SCRIPT in page.inner_text("#namespace-properties")
    page.click("#namespaces >> text=eu")
    page.wait_for_selector("#tables >> text=orders")
    page.wait_for_function(
        "() => !document.querySelector('#tables tbody td.num:nth-child(5)')"
        ".textContent.includes('…')"
    )
    tab.shot("namespace")

    page.click("#tables >> text=orders")
    page.wait_for_selector("#columns")
    assert page.inner_text("#table-name") == "orders"
    assert COMMENT in page.inner_text("#columns")
    assert page.inner_text("#card-format").endswith("Delta, catalog-managed")
    assert "Partitioned by region" in page.inner_text("#layout")
    assert "deletionVectors" in page.inner_text("#features")
    assert SCRIPT in page.inner_text("#properties") and IMG in page.inner_text("#properties")
    assert page.inner_text("#description") == f"Orders {SCRIPT}"
    tab.shot("table")

    page.click("#tab-history")
    page.wait_for_selector("#history-table")
    principals = set(page.locator("#history-table tbody td:nth-child(4)").all_inner_texts())
    assert {"ada", "etl"} <= principals
    operations = page.locator("#history-table tbody td:nth-child(3)").all_inner_texts()
    assert {"CREATE TABLE", "WRITE", "DELETE"} <= set(operations)
    page.select_option("#diff-from", "0")
    page.click("#diff-button")
    page.wait_for_selector("#diff-properties")
    assert "team" in page.inner_text("#diff-properties")
    assert COMMENT in page.inner_text("#diff-columns")
    tab.shot("history")

    page.click("#tab-health")
    page.wait_for_selector("#health")
    for plot in (
        "plot-sizes",
        "plot-partition-files",
        "plot-partition-rows",
        "plot-dv",
        "plot-checkpoint",
        "plot-commits",
    ):
        assert bars_drawn(tab, plot) > 0, plot
    assert bars_drawn(tab, "plot-partition-files") == 3
    for line in ("plot-size", "plot-file-count"):
        points = page.get_attribute(f"#{line} polyline", "points")
        assert points and len(points.split()) >= 5, line
    assert "deltalog optimize --catalog CATALOG sales.eu.orders" in page.inner_text("#health")
    tab.shot("health")
    tab.check_clean()
    assert ui.tokens["rita"] not in ui.server.log_text()


def test_hostile_names_and_text_show_as_text(tab: Tab, ui: UiCatalog):
    tab.sign_in("ada")
    page = tab.page
    for name in (SCRIPT_TABLE, IMG):
        tab.go("#/ns/sales", "#tables")
        page.get_by_role("link", name=name, exact=True).click()
        page.wait_for_selector("#columns")
        assert page.inner_text("#table-name") == name
        page.click("#tab-history")
        page.wait_for_selector("#history-table")
        page.click("#tab-health")
        page.wait_for_selector("#plot-sizes")
    tab.shot("hostile-name")
    page.fill("#search", SCRIPT)
    page.wait_for_selector("#search-results")
    page.wait_for_function(
        "t => document.querySelector('#search-results h1').textContent.includes(t)", arg=SCRIPT
    )
    assert page.locator("#search-results tbody tr").count() == 0  # '/' is in no table name
    page.fill("#search", "<script>")
    page.wait_for_selector(f"#search-results >> text={SCRIPT_TABLE}")
    tab.check_clean()


def test_the_admin_view_refuses_a_reader_and_shows_an_admin_the_refusal(
    browser: Any, ui: UiCatalog
):
    reader = Tab(browser, ui)
    try:
        reader.sign_in("rita")
        reader.go("#/server", "#page-error")
        assert "403" in reader.page.inner_text("#page-error")
        reader.shot("server-refused")
        reader.check_clean()
    finally:
        reader.close()
    admin = Tab(browser, ui)
    try:
        admin.sign_in("ada")
        admin.go("#/server", "#principals")
        rows = admin.page.locator("#principals tbody tr").all_inner_texts()
        assert len(rows) == 3 and any(r.startswith("rita\treader") for r in rows)
        page_text = admin.page.inner_text("#server")
        assert not any(token in page_text for token in ui.tokens.values())
        # The reader's refusal reaches the audit log by a background write: reload until seen.
        for _ in range(50):
            if "/ui/api/server" in admin.page.inner_text("#refusals"):
                break
            admin.page.wait_for_timeout(200)
            admin.go("#/", "#namespace")
            admin.go("#/server", "#refusals")
        assert "/ui/api/server" in admin.page.inner_text("#refusals")
        assert "rita" in admin.page.inner_text("#refusals")
        admin.shot("server")
        admin.page.click("#sign-out")
        admin.page.wait_for_selector("#signin")
        assert admin.page.evaluate(f"sessionStorage.getItem('{TOKEN_KEY}')") is None
        admin.check_clean()
    finally:
        admin.close()


def test_without_authentication_the_pages_open_without_signing_in(
    browser: Any, tmp_path: Path
) -> None:
    from tests.catalog_server import running

    with running(tmp_path) as server:  # no --tokens: authentication off
        catalog = UiCatalog(server, {})
        admin = dl.connect_catalog({"type": "rest", "uri": server.url})
        admin.create_namespace("open")
        tab = Tab(browser, catalog)
        try:
            tab.page.goto(f"{server.url}/ui/")
            tab.page.wait_for_selector("#namespaces")
            assert tab.page.locator("#signin").count() == 0
            assert tab.page.inner_text("#who") == "anonymous (admin)"
            assert tab.page.is_hidden("#sign-out")
            assert tab.page.locator("#namespaces a").all_inner_texts() == ["open"]
            tab.check_clean()
        finally:
            tab.close()
