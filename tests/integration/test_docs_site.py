"""The docs site in a real browser: headless Chromium (Debian's /usr/bin/chromium, driven by Playwright) opens the
site built strictly into a temporary folder, once from a file (file://, as the README says: site/index.html) and
once as `mkdocs serve` serves it (make docs-serve). On every page, each internal link leads to what exists (a file,
HTTP 200; never a folder, whose listing is what a file:// link to one shows) and an anchor it names is there, each
image loads, and nothing logs an error; search finds a word of the docs and its first result opens the page.

What makes the file:// half work: mkdocs.yml's use_directory_urls: false and the offline plugin (the search index as
a script), the iframe-worker shim's copy in docs/assets (search's Web Worker, which a browser will not start from
file://, runs in an iframe), and `font: false` (nothing is fetched from the network, here or in CI).
"""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
# Headless, as root, and quiet: without the background-networking flags Chromium keeps calling a network that is
# not there.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WORD = "acceptance"  # a word the docs use, for search
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}

# What a page has, read in the browser once it has loaded: every <img> waited for (a lazy one told to load now) and
# whether it decoded; every link's target as the browser resolves it; the ids anchors may name; whether it is one of
# the site's pages (Material's content area) rather than, say, a folder's listing.
PAGE_FACTS = """async () => {
    const images = await Promise.all(Array.from(document.images, async img => {
        img.loading = "eager";
        if (!img.complete) {
            await new Promise(done => {
                img.addEventListener("load", done, {once: true});
                img.addEventListener("error", done, {once: true});
            });
        }
        return {src: img.getAttribute("src"), loaded: img.naturalWidth > 0};
    }));
    return {
        images,
        links: Array.from(document.querySelectorAll("a[href]"), a => ({href: a.getAttribute("href"), url: a.href})),
        ids: Array.from(document.querySelectorAll("[id], a[name]"), e => e.id || e.getAttribute("name")),
        isPage: document.querySelector("article.md-content__inner") !== null,
    };
}"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site as `make docs` builds it (strictly), in a temporary folder."""
    out = tmp_path_factory.mktemp("docs") / "site"
    res = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert res.returncode == 0, f"mkdocs build --strict failed:\n{res.stdout}{res.stderr}"
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """A Chromium context with a fresh profile; its temporary files, crash-report folder and caches (and
    Playwright's) in a temporary folder, never the user's home."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} missing: the docs site is tested in Chromium; install it: apt-get install chromium "
            "chromium-driver (.ci/run does)",
            pytrace=False,
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright missing: make install (pyproject.toml's test extra)", pytrace=False)
    tmp = tmp_path_factory.mktemp("chromium")
    with pytest.MonkeyPatch.context() as mp:  # Playwright's driver and the browser it starts take them now
        for name, folder in (("TMPDIR", "tmp"), ("XDG_CONFIG_HOME", "config"), ("XDG_CACHE_HOME", "cache")):
            (tmp / folder).mkdir()
            mp.setenv(name, str(tmp / folder))
        playwright = sync_playwright().start()
    try:
        context = playwright.chromium.launch_persistent_context(
            tmp / "profile", executable_path=str(CHROMIUM), headless=True, args=FLAGS
        )
        try:
            yield context
        finally:
            context.close()
    finally:
        playwright.stop()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """`mkdocs serve` on a free port of 127.0.0.1 (as make docs-serve runs it, without live reload: a docs page
    edited meanwhile would reload the page under test); stopped with Ctrl-C, as a person stops it, afterwards."""
    tmp = tmp_path_factory.mktemp("serve")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp / "serve.log"
    with open(log, "w") as out:  # its build folder goes to TMPDIR, here: nothing is left outside tmp
        proc = subprocess.Popen(
            [sys.executable, "-m", "mkdocs", "serve", "--no-livereload", "--dev-addr", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env={**ENV, "TMPDIR": str(tmp)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 300  # it builds the site first
        while "Serving on" not in log.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"mkdocs serve did not start:\n{log.read_text()}", pytrace=False)
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module", params=["file", "mkdocs-serve"])
def base(request, site) -> str:
    """Where the site's root is: its folder as a file:// URL, or the server's address."""
    return site.as_uri() + "/" if request.param == "file" else request.getfixturevalue("served")


class Visit:
    """A fresh tab on one URL, recording what went wrong there: console errors (of the page and its frames),
    uncaught exceptions, requests that failed (a resource that did not load; not one cut off as the tab closes)."""

    def __init__(self, browser, url: str):
        self.browser, self.url, self.errors = browser, url, []

    def __enter__(self):
        self.page = self.browser.new_page()
        self.page.on(
            "console",
            lambda m: m.type == "error" and self.errors.append(f"console error: {m.text} ({m.location.get('url')})"),
        )
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on(
            "requestfailed",
            lambda r: r.failure != "net::ERR_ABORTED" and self.errors.append(f"request failed: {r.url} ({r.failure})"),
        )
        try:
            self.response = self.page.goto(self.url)
        except BaseException:
            self.page.close()
            raise
        return self

    def __exit__(self, *exc):
        self.page.close()


def pages(site: Path) -> list[str]:
    """Every page of the site, as paths from its root (404.html is the server's answer to a missing page)."""
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html") if p.name != "404.html")


def target_problem(url: str, base: str, site: Path) -> str | None:
    """What is wrong with a link's target (its anchor aside), or None: from a file it must be a file of the site (a
    folder opens as its listing), served it must answer 200."""
    if not url.startswith(base):
        return f"leads out of the site ({url})"
    rel = unquote(urlsplit(url[len(base) :]).path)
    if base.startswith("file:"):
        path = site / rel
        if path.is_dir():
            return "is a folder: opened from a file, the browser shows its listing"
        return None if path.is_file() else "does not exist"
    try:
        with urllib.request.urlopen(url, timeout=60) as answer:
            return None if answer.status == 200 else f"answers HTTP {answer.status}"
    except urllib.error.HTTPError as e:
        return f"answers HTTP {e.code}"


def report(problems: list[str], most: int = 60) -> str:
    """The problems, each once, the first `most` of them."""
    unique = list(dict.fromkeys(problems))
    more = f"\n... and {len(unique) - most} more" if len(unique) > most else ""
    return "\n".join(unique[:most]) + more


def test_every_page_links_to_what_exists_loads_its_images_and_logs_no_error(browser, base, site):
    where = "from a file" if base.startswith("file:") else "served by mkdocs serve"
    internal = "file:" if base.startswith("file:") else base  # the rest: other sites, mailto:
    problems, facts, targets = [], {}, {}
    for rel in pages(site):
        with Visit(browser, base + rel) as visit:
            found = visit.page.evaluate(PAGE_FACTS)
        facts[rel] = found
        if visit.response is not None and visit.response.status != 200:
            problems.append(f"{rel}: HTTP {visit.response.status}")
        if not found["isPage"]:
            problems.append(f"{rel}: not a page of the site (no content area)")
        problems += [f"{rel}: {error}" for error in visit.errors]
        problems += [f"{rel}: image {img['src']} did not load" for img in found["images"] if not img["loaded"]]
    assert len(facts) >= 20, f"only {sorted(facts)}"
    assert sum(len(f["images"]) for f in facts.values()) >= 5, "no images checked: figures.md shows five"

    for rel, found in facts.items():
        for link in found["links"]:
            if not link["url"].startswith(internal):
                continue
            url, anchor = urldefrag(link["url"])
            if url not in targets:
                targets[url] = target_problem(url, base, site)
            if targets[url]:
                problems.append(f"{rel}: link {link['href']} {targets[url]}")
                continue
            target = unquote(urlsplit(url[len(base) :]).path)
            if anchor and target in facts and unquote(anchor) not in facts[target]["ids"]:
                problems.append(f"{rel}: link {link['href']}: {target} has no #{unquote(anchor)}")
    assert sum(len(f["links"]) for f in facts.values()) > len(facts), "no links checked"
    assert not problems, f"the docs site {where}:\n" + report(problems)


def test_search_finds_a_word_of_the_docs_and_opens_its_page(browser, base):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    where = "from a file" if base.startswith("file:") else "served by mkdocs serve"
    with Visit(browser, base + "index.html") as visit:
        # Typed key by key, as a person does: Material searches on each key's release (and again once its index is
        # ready), not on a value set at once (`fill`), which can race the index being loaded.
        visit.page.locator("input[data-md-component=search-query]").press_sequentially(WORD)
        # the results for the whole word: each link carries its query (?h=...); those for the first keys typed
        # ("a") came first once, and the test opened them
        results = visit.page.locator(f".md-search-result__link[href*='h={WORD}']")
        try:
            results.first.wait_for()  # the index loaded (from a file: the offline plugin's script) and matched
            found = True
        except PlaywrightTimeout:
            found = False
        if not found:
            meta = visit.page.locator(".md-search-result__meta").inner_text()
            pytest.fail(
                f"search {where}: no results for {WORD!r} (it says {meta!r}); errors:\n{report(visit.errors)}",
                pytrace=False,
            )
        first = results.first.evaluate("a => a.href")
        errors = list(visit.errors)
    with Visit(browser, first) as opened:
        text = opened.page.locator("article.md-content__inner").inner_text()
        errors += opened.errors
    assert WORD in text.lower(), f"search {where}: its first result for {WORD!r}, {first}, does not show it"
    assert not errors, f"search {where}:\n" + report(errors)
