"""Journey: reads need a token (as on a server beyond loopback; here PERFWARDEN_READ_AUTH=on on
loopback), an administrator creates a read token with the CLI, and a browser signs in: the page
it asked for answers 401 with a link to /login, a wrong token is refused there, the read token
becomes an HttpOnly, SameSite=Strict cookie (Secure behind TLS) and the page it asked for opens;
the cookie never authorizes a write; signing out clears it."""
from __future__ import annotations

import re

import httpx
import pytest

from tests.dashboards.test_browser import SIZES, browser  # noqa: F401

from .conftest import _serve
from .shell import PERFWARDEN, run

pytestmark = pytest.mark.browser


@pytest.fixture
def guarded(tmp_path):
    yield from _serve(tmp_path, PERFWARDEN_READ_AUTH="on")


def _token(served, name: str, scope: str) -> str:
    out = run([PERFWARDEN, "tokens", "create", "--name", name, "--scope", scope],
              PERFWARDEN_DATABASE_URL=served.db)
    assert out.returncode == 0, out.stderr
    return re.search(r"pw_[A-Za-z0-9_\-]+", out.stdout).group(0)


@pytest.mark.parametrize("size", list(SIZES))
def test_a_browser_signs_in_with_a_read_token_and_out_again(guarded, browser, size):  # noqa: F811
    url = guarded.url
    token = _token(guarded, "viewer", "read")
    ctx = browser.new_context(viewport=SIZES[size])
    page = ctx.new_page()
    assert page.goto(url + "/alerts?state=open").status == 401
    assert "sign in needed" in page.locator("h1").inner_text()
    with page.expect_navigation():
        page.locator("#sign-in").click()
    assert page.url == url + "/login?next=%2Falerts%3Fstate%3Dopen"

    page.fill("input[name=token]", "pw_not_a_token")
    page.locator("#login button").click()
    page.locator("#login-error").wait_for(state="visible")
    assert page.locator("#login-error").inner_text() == "unknown or revoked token"
    assert not ctx.cookies()

    page.fill("input[name=token]", token)
    with page.expect_navigation():
        page.locator("#login button").click()
    assert page.url == url + "/alerts?state=open"  # back where the reader was going
    assert page.locator("h1").inner_text() != "401: sign in needed"
    (cookie,) = ctx.cookies()
    assert (cookie["name"], cookie["value"], cookie["httpOnly"], cookie["sameSite"],
            cookie["secure"]) == ("perfwarden_token", token, True, "Strict", False)
    assert "perfwarden_token" not in page.evaluate("document.cookie")  # no script reads it
    assert page.goto(url + "/").status == 200
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 1
    # a write with the cookie alone is refused: writes need the bearer header
    status = page.evaluate("""async () => (await fetch('/api/v1/baselines', {method: 'POST',
        headers: {'content-type': 'application/json'},
        body: JSON.stringify({benchmark: 'x', name: 'y', run_ids: [1]})})).status""")
    assert status in (401, 403)

    with page.expect_navigation():
        page.locator("#sign-out").click()
    assert page.url == url + "/login"
    assert not ctx.cookies()
    assert page.goto(url + "/").status == 401
    ctx.close()


def test_the_cookie_is_secure_behind_tls_and_no_other_site_signs_in(guarded):
    token = _token(guarded, "viewer", "read")
    with httpx.Client(base_url=guarded.url) as c:
        r = c.post("/login", json={"token": token, "next": "//evil.example/x"},
                   headers={"x-forwarded-proto": "https"})
        assert r.status_code == 200 and r.json() == {"next": "/"}  # never another host
        cookie = r.headers["set-cookie"].lower()
        assert all(p in cookie for p in ("httponly", "samesite=strict", "secure", "path=/"))
        # a form post from another site is refused before it reaches the route
        r = c.post("/login", content=f"token={token}",
                   headers={"content-type": "application/x-www-form-urlencoded"})
        assert r.status_code == 415 and "set-cookie" not in r.headers
        r = c.post("/login", json={"token": "x" * 5000})
        assert r.status_code == 422 and r.json()["error"]["field"] == "token"
