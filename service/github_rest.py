"""GitHub's REST API through httpx: issue comments (list all pages, create, edit), check runs
(find by name on a commit, create, update) and commit statuses; retries with backoff on 5xx and
rate limits. The token is sent in a header and never logged."""
from __future__ import annotations

import re
import time

import httpx

from . import outbound

RETRIES = 4
CHECK_SUMMARY_MAX = 65535  # GitHub's limit on a check run's output.summary and output.text
LINK_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')


class GitHubError(RuntimeError):
    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class GitHub:
    def __init__(self, token: str, api_url: str = "https://api.github.com", timeout: float = 30,
                 backoff_s: float = 1.0):
        """`timeout`: the total deadline of each attempt (service/outbound.py)."""
        if not token:
            raise GitHubError("GITHUB_TOKEN is not set")
        self._client = httpx.Client(base_url=api_url.rstrip("/"), timeout=timeout, headers={
            "Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "perfwarden"})
        self.backoff_s, self.deadline_s = backoff_s, timeout

    def close(self) -> None:
        self._client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _request(self, method: str, url: str, **kw) -> httpx.Response:
        for attempt in range(RETRIES + 1):
            try:
                r = outbound.request(method, self._full(url), self.deadline_s,
                                     headers=self._client.headers, **kw)
            except httpx.TransportError as e:
                if attempt == RETRIES:
                    raise GitHubError(f"cannot reach the GitHub API at {self._url(url)}: "
                                      f"{type(e).__name__}") from None
                time.sleep(self.backoff_s * 2 ** attempt)
                continue
            limited = r.status_code == 429 or (r.status_code == 403 and
                                               r.headers.get("x-ratelimit-remaining") == "0")
            if (r.status_code >= 500 or limited) and attempt < RETRIES:
                wait = self.backoff_s * 2 ** attempt
                if r.headers.get("retry-after", "").isdigit():
                    wait = min(60.0, float(r.headers["retry-after"]))
                time.sleep(wait)
                continue
            if r.status_code >= 400:
                msg = ""
                try:
                    msg = r.json().get("message", "")
                except ValueError:
                    pass
                hint = {401: "bad or expired GITHUB_TOKEN", 403: "token lacks permission or is "
                        "rate limited", 404: "repository or pull request not found (or the token "
                        "cannot see it)"}.get(r.status_code, "")
                raise GitHubError(f"GitHub API {method} {self._url(url)} answered "
                                  f"{r.status_code}: {msg or hint}".rstrip(": "), r.status_code)
            return r
        raise GitHubError("GitHub API kept failing")  # pragma: no cover

    def _full(self, url: str) -> str:
        """The URL to ask, query kept (a next page's link is absolute, a path is not)."""
        return url if "://" in url else str(self._client.base_url).rstrip("/") + url

    def _url(self, url: str) -> str:
        """The request's whole URL less its query, for messages: which GitHub was asked."""
        path = url.split("?")[0]
        return path if "://" in path else str(self._client.base_url).rstrip("/") + path

    def _pages(self, first: str) -> list[dict]:
        """Every item of a paginated list (following the Link header's rel="next")."""
        url: str | None = first
        out: list[dict] = []
        while url:
            r = self._request("GET", url)
            out.extend(r.json())
            m = LINK_NEXT.search(r.headers.get("link", ""))
            url = m.group(1) if m else None
        return out

    def comments(self, repo: str, number: int) -> list[dict]:
        return self._pages(f"/repos/{repo}/issues/{number}/comments?per_page=100")

    def create(self, repo: str, number: int, body: str) -> dict:
        return self._request("POST", f"/repos/{repo}/issues/{number}/comments",
                             json={"body": body}).json()

    def edit(self, repo: str, comment_id: int, body: str) -> dict:
        return self._request("PATCH", f"/repos/{repo}/issues/comments/{comment_id}",
                             json={"body": body}).json()

    def upsert(self, repo: str, number: int, marker: str, body: str) -> tuple[dict, bool]:
        """Edit the comment holding `marker`, or create it. Returns (comment, created)."""
        for c in self.comments(repo, number):
            if marker in (c.get("body") or ""):
                return self.edit(repo, c["id"], body), False
        return self.create(repo, number, body), True

    def issues(self, repo: str) -> list[dict]:
        """Every issue of the repository, open and closed (all pages)."""
        return self._pages(f"/repos/{repo}/issues?state=all&per_page=100")

    def ensure_issue(self, repo: str, marker: str, title: str, body: str) -> tuple[dict, bool]:
        """The issue holding `marker` in its body, or a new one. Returns (issue, created)."""
        for i in self.issues(repo):
            if marker in (i.get("body") or ""):
                return i, False
        return self._request("POST", f"/repos/{repo}/issues",
                             json={"title": title, "body": body}).json(), True

    # -- checks: a check run per name on the candidate commit, edited in place --------------

    def check_runs(self, repo: str, ref: str, name: str) -> list[dict]:
        """The check runs named `name` on commit `ref` (newest first, as GitHub lists them)."""
        r = self._request("GET", f"/repos/{repo}/commits/{ref}/check-runs",
                          params={"check_name": name, "filter": "latest", "per_page": 100})
        return list(r.json().get("check_runs", []))

    def upsert_check(self, repo: str, sha: str, name: str, conclusion: str, title: str,
                     summary: str, text: str | None = None,
                     details_url: str | None = None) -> tuple[dict, bool]:
        """Update the check run `name` on `sha`, or create it, completed with `conclusion`.
        Returns (check run, created)."""
        output: dict = {"title": title, "summary": summary[:CHECK_SUMMARY_MAX]}
        if text:
            output["text"] = text[:CHECK_SUMMARY_MAX]
        body: dict = {"name": name, "status": "completed", "conclusion": conclusion,
                      "output": output}
        if details_url:
            body["details_url"] = details_url
        found = self.check_runs(repo, sha, name)
        if found:
            return self._request("PATCH", f"/repos/{repo}/check-runs/{found[0]['id']}",
                                 json=body).json(), False
        return self._request("POST", f"/repos/{repo}/check-runs",
                             json={**body, "head_sha": sha}).json(), True

    def set_status(self, repo: str, sha: str, context: str, state: str, description: str,
                   target_url: str | None = None) -> dict:
        """A commit status (GitHub keeps the newest per context, so posting again updates it)."""
        body = {"state": state, "context": context, "description": description[:140]}
        if target_url:
            body["target_url"] = target_url
        return self._request("POST", f"/repos/{repo}/statuses/{sha}", json=body).json()
