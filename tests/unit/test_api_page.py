"""The page at `/` in headless Chromium (Debian's `chromium` and `chromium-driver`, driven by
Selenium; `scripts/setup-browser.sh` installs them), against the app under a real uvicorn on a
loopback port (the people KB in memory, the hashing embedder, the scripted LLM of
test_api.py): a question asked with the keyboard streams its stages, the answer entities and
their triples appear, the evidence graph has the topic, the answer and the path, a node
expands from its button, nothing is loaded from another origin and the console stays clean;
at phone width nothing scrolls sideways.

With ``KGQA_PAGE_SCREENSHOTS=DIR`` the test saves its screenshots there (docs/img/ holds the
ones docs/server.md shows)."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_api import _free_port, _settings, make_state, respond

from kgqa.llm.fake import ScriptedLLM
from kgqa.server.app import create_app
from kgqa.server.state import ServerState
from kgqa.settings import Settings

pytestmark = pytest.mark.browser

VENDOR = Path(__file__).resolve().parents[2] / "kgqa" / "server" / "static" / "vendor"
Q = "what do the children of [Ada] work as?"


def page_respond(prompt: str) -> str:
    """test_api's scripted model, and two steps for the question the page asks."""
    if "children of [Ada] work as" in prompt.rsplit("[user]", 1)[-1]:
        return "1. childs of [Ada]\n2. professions of those childs\n<END>"
    return respond(prompt)


def test_the_shipped_cytoscape_is_the_npm_one_the_build_recorded() -> None:
    import hashlib

    recorded = json.loads((VENDOR / "VENDOR.json").read_text())["cytoscape"]
    data = (VENDOR / recorded["file"]).read_bytes()
    assert hashlib.sha256(data).hexdigest() == recorded["sha256"]
    wanted = json.loads((VENDOR.parents[1] / "web" / "package.json").read_text())
    assert wanted["dependencies"]["cytoscape"] == recorded["version"]
    assert (VENDOR / "cytoscape.LICENSE").is_file()


@pytest.fixture
def base(settings: Settings) -> Iterator[tuple[str, ServerState]]:
    import uvicorn

    llm = ScriptedLLM(responses=[page_respond] * 100)
    state = make_state(_settings(settings).with_overrides({"retrieval.hops": 2}), llm=llm)
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(state), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}", state
    server.should_exit = True
    thread.join(10)


@pytest.fixture
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver, (
        "the browser test needs Debian's chromium and chromium-driver: scripts/setup-browser.sh"
    )
    options = Options()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1500"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    b = webdriver.Chrome(service=Service(driver), options=options)
    b.set_page_load_timeout(30)
    try:
        yield b
    finally:
        b.quit()


def _shot(browser: Any, name: str) -> None:
    folder = os.environ.get("KGQA_PAGE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(Path(folder) / name))


def test_the_page_asks_streams_and_draws_the_evidence(
    base: tuple[str, ServerState], browser: Any
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    url, _state = base
    wait = WebDriverWait(browser, 20)
    browser.get(url + "/")
    assert browser.title.startswith("kgqa")
    box = browser.find_element(By.ID, "question")
    box.send_keys(Q)
    box.send_keys(Keys.ENTER)  # the keyboard asks
    wait.until(lambda b: b.find_element(By.ID, "answer-line").text == "Painter")
    stages = browser.find_element(By.ID, "stages").text
    for name in ("queued", "entities", "decomposition", "hop", "answer", "done"):
        assert name in stages, stages
    assert stages.count("hop") == 2
    entities = browser.find_element(By.ID, "entities").text
    assert "Painter" in entities
    assert "(Ada, has child, Cy)" in entities and "(Cy, profession, Painter)" in entities
    assert "profession" in browser.find_element(By.ID, "reasoning").text
    assert "MATCH" in browser.find_element(By.ID, "cypher").text
    graph = browser.execute_script(
        "return {nodes: cy.nodes().map(n => [n.id(), n.classes()]),"
        " path: cy.edges('.path').map(e => [e.source().id(), e.target().id()])}"
    )
    nodes = dict((n, c) for n, c in graph["nodes"])
    assert "topic" in nodes["Ada"] and "answer" in nodes["Painter"]
    # the path's triples (with has_child_inverse, the same step read the other way)
    assert {("Ada", "Cy"), ("Cy", "Painter")} <= {tuple(e) for e in graph["path"]}
    browser.execute_script("window.scrollTo(0, 0)")
    _shot(browser, "server-page.png")
    # a node's button (keyboard: focus, Enter) shows its neighbours
    button = browser.find_element(By.CSS_SELECTOR, "#nodes button[aria-label$='of Cy']")
    button.send_keys(Keys.ENTER)
    wait.until(lambda b: b.execute_script("return cy.getElementById('Di').length") == 1)
    assert "neighbours" in browser.find_element(By.ID, "stages").text
    assert "Norland" in browser.find_element(By.ID, "nodes").text
    # everything came from this server; nothing went wrong in the page
    resources = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
    )
    assert resources and all(r.startswith(url) for r in resources), resources
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == [], severe
    # phone width: one column, nothing wider than the screen
    browser.set_window_size(390, 1400)
    _shot(browser, "server-page-phone.png")
    wide = browser.execute_script(
        "return [document.documentElement.scrollWidth - document.documentElement.clientWidth,"
        " [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right"
        " > document.documentElement.clientWidth + 1).map(e => e.tagName + '#' + e.id)]"
    )
    assert wide[0] <= 0, wide[1]


def test_the_page_shows_an_error_in_one_line(base: tuple[str, ServerState], browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    url, _state = base
    browser.get(url + "/")
    browser.find_element(By.ID, "question").send_keys("who is the spouse of [ada]?")
    browser.find_element(By.ID, "submit").click()
    WebDriverWait(browser, 20).until(lambda b: b.find_element(By.ID, "error").is_displayed())
    error = browser.find_element(By.ID, "error").text
    assert error == "EntityNotFound: entity 'ada' is not in the graph; did you mean: 'Ada'"
