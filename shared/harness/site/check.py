"""Check the built site in headless Chromium (Playwright driving Debian's chromium).

Serves the site on 127.0.0.1, loads every page, fails on console errors, page errors, failed
requests, broken internal links and a page wider than the window (a wide table or a long word
must scroll or wrap in its own box), and saves a full-page screenshot of each page.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from shared.harness.site.build import SiteError

CHROMIUM = Path("/usr/bin/chromium")
WINDOW = {"width": 1280, "height": 800}
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
BROWSER_HINT = (
    "the check needs Debian's chromium and Python playwright: "
    "`apt-get install -y chromium` and `pip install playwright` "
    "(never `playwright install`: the system chromium is used)"
)


def check(out: Path, screenshot_dir: Path) -> list[str]:
    """Load every page of the site in Chromium; return the problems found (empty: clean)."""
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ModuleNotFoundError:
        raise SiteError(
            f"playwright is not installed for {sys.executable}; {BROWSER_HINT}"
        ) from None
    if not CHROMIUM.is_file():
        raise SiteError(f"{CHROMIUM} not found; {BROWSER_HINT}")
    pages = sorted(
        (path.relative_to(out).as_posix() for path in out.rglob("*.html")),
        key=lambda page: (page != "index.html", page),
    )
    if "index.html" not in pages:
        raise SiteError(
            f"no index.html in {out}: build it first (python -m shared.harness site build)"
        )
    screenshot_dir.mkdir(parents=True, exist_ok=True)

    problems: list[str] = []
    links = LinkChecker()
    with _serve(out) as base, sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        except PlaywrightError as exc:
            raise SiteError(f"chromium did not start: {exc}; {BROWSER_HINT}") from None
        for path in pages:
            page = browser.new_page(viewport=WINDOW)
            _watch(page, path, base, problems)
            try:
                page.goto(base + path, wait_until="load")
            except PlaywrightError as exc:
                problems.append(f"{path}: did not load: {exc}")
            else:
                screenshot = screenshot_dir / f"{path.removesuffix('.html').replace('/', '__')}.png"
                page.screenshot(path=screenshot, full_page=True)
                problems += links.check(page, path, base)
                problems += too_wide(page, path)
            page.close()
            print(f"site: checked {path}")
        browser.close()
    for url, path in sorted(links.external.items()):
        print(f"site: external link, not fetched: {url}  (on {path})")
    return problems


def too_wide(page, path: str) -> list[str]:
    """The page scrolls sideways: name the deepest elements that stick out (the culprits)."""
    width = page.evaluate("document.documentElement.scrollWidth")
    if width <= WINDOW["width"]:
        return []
    culprits = page.evaluate("""limit => {
        const out = (e) => !e.closest('.timeline-box, .table-box') && (
            e.getBoundingClientRect().right > limit ||
            (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX === 'visible'));
        return [...document.querySelectorAll('body *')]
            .filter(e => out(e) && ![...e.children].some(out)).slice(0, 3)
            .map(e => e.tagName.toLowerCase() + (e.className ? '.' + e.className : '')
                      + ' "' + (e.textContent || '').trim().slice(0, 50) + '"');
    }""", WINDOW["width"])  # fmt: skip
    return [f"{path}: {width} px wide in a {WINDOW['width']} px window (sticks out: "
            f"{'; '.join(culprits) or 'unknown'})"]


class LinkChecker:
    """Checks each page's <a href> links: internal ones must answer HTTP 200 (asked once each);
    external ones are only listed."""

    def __init__(self) -> None:
        self.status: dict[str, int] = {}
        self.external: dict[str, str] = {}  # link -> the first page that has it

    def check(self, page, path: str, base: str) -> list[str]:
        problems = []
        for href, url in page.eval_on_selector_all(
            "a[href]", "links => links.map(a => [a.getAttribute('href'), a.href])"
        ):
            if href.startswith("/") and not href.startswith("//"):
                problems.append(f"{path}: link {href!r} is absolute: it breaks from file://")
            elif not url.startswith(base):
                self.external.setdefault(url, path)
            else:
                target = url.split("#", 1)[0]
                if target not in self.status:
                    self.status[target] = page.request.get(target).status
                if self.status[target] != 200:
                    problems.append(f"{path}: broken link {href!r} (HTTP {self.status[target]})")
        return problems


def _watch(page, path: str, base: str, problems: list[str]) -> None:
    """Record every console error, page error and failed request; fetch nothing from outside."""

    def only_local(route) -> None:
        if route.request.url.startswith(base):
            route.continue_()
        else:
            problems.append(f"{path}: requests {route.request.url} from outside the site")
            route.abort()

    def failed(request) -> None:
        if request.url.startswith(base):  # outside requests are reported by only_local
            problems.append(f"{path}: request failed: {request.url} ({request.failure})")

    page.route("**/*", only_local)
    page.on("requestfailed", failed)
    page.on("pageerror", lambda error: problems.append(f"{path}: page error: {error}"))
    page.on("console", lambda message: message.type == "error" and problems.append(
        f"{path}: console error: {message.text}"))  # fmt: skip
    page.on("response", lambda response: response.status >= 400 and problems.append(
        f"{path}: HTTP {response.status} for {response.url}"))  # fmt: skip


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # the check reports what matters
        pass


@contextlib.contextmanager
def _serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on a free port of 127.0.0.1; yield its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
