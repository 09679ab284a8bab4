"""A local HTTP server that speaks the parts of GitHub's REST API perfwarden uses: issue comments
(paginated by the Link header), check runs (create, update, list by commit and check_name, as
GitHub documents them) and commit statuses. It checks the bearer token on every request."""
from __future__ import annotations

import json
import threading
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

TOKEN = "ghp_secret_token_value_123"
# how often a stand-in server looks for its shutdown: shutdown() waits up to this long (the
# standard library's default, 0.5 s, was a quarter of a second a test on average)
POLL_S = 0.05
CONCLUSIONS = {"action_required", "cancelled", "failure", "neutral", "success", "skipped",
               "stale", "timed_out"}
STATES = {"error", "failure", "pending", "success"}


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeGitHub:
    def __init__(self, per_page=2, fail_first=0, status=None, checks_forbidden=False):
        self.comments: dict[int, dict] = {}
        self.check_runs: dict[int, dict] = {}
        self.statuses: list[dict] = []
        self.next_id = 1000
        self.per_page = per_page
        self.fail_first = fail_first
        self.status = status
        self.checks_forbidden = checks_forbidden
        self.requests: list[tuple[str, str]] = []
        self.bodies: list[str] = []  # every request body, to show no token travels in one
        fake = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, body, headers=None):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _guard(self):
                fake.requests.append((self.command, self.path))
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    self._send(401, {"message": "Bad credentials"})
                    return False
                if fake.fail_first > 0:
                    fake.fail_first -= 1
                    self._send(502, {"message": "Bad gateway"})
                    return False
                if fake.status:
                    self._send(fake.status, {"message": "Not Found"})
                    return False
                if fake.checks_forbidden and "/check-runs" in self.path:
                    self._send(403, {"message": "Resource not accessible by integration"})
                    return False
                return True

            def _body(self) -> dict:
                raw = self.rfile.read(int(self.headers["Content-Length"])).decode()
                fake.bodies.append(raw)
                return json.loads(raw)

            def _parts(self):
                u = urlsplit(self.path)
                return u.path.strip("/").split("/"), {k: v[-1] for k, v in
                                                      parse_qs(u.query).items()}

            def do_GET(self):
                if not self._guard():
                    return
                parts, q = self._parts()
                # /repos/{o}/{r}/commits/{ref}/check-runs?check_name=
                if len(parts) == 6 and parts[3] == "commits" and parts[5] == "check-runs":
                    repo, ref = f"{parts[1]}/{parts[2]}", parts[4]
                    runs = [c for c in sorted(fake.check_runs.values(), key=lambda c: -c["id"])
                            if c["repository"] == repo and c["head_sha"] == ref
                            and ("check_name" not in q or c["name"] == q["check_name"])]
                    self._send(200, {"total_count": len(runs),
                                     "check_runs": [fake.public(c) for c in runs]})
                    return
                path = urlsplit(self.path).path
                page = int(q.get("page", 1))
                items = list(fake.comments.values())
                chunk = items[(page - 1) * fake.per_page: page * fake.per_page]
                headers = {}
                if page * fake.per_page < len(items):
                    headers["Link"] = (f'<http://127.0.0.1:{fake.port}{path}?per_page=100&page='
                                       f'{page + 1}>; rel="next"')
                self._send(200, chunk, headers)

            def do_POST(self):
                if not self._guard():
                    return
                parts, _ = self._parts()
                body = self._body()
                repo = f"{parts[1]}/{parts[2]}"
                if parts[3:] == ["check-runs"]:
                    if not body.get("name") or not body.get("head_sha"):
                        self._send(422, {"message": "name and head_sha are required"})
                        return
                    err = fake.check_fields(body)
                    if err:
                        self._send(422, {"message": err})
                        return
                    cid = fake.take_id()
                    fake.check_runs[cid] = {"id": cid, "repository": repo, "status": "queued",
                                            "conclusion": None, "output": {},
                                            "started_at": _now(), "completed_at": None}
                    fake.apply(fake.check_runs[cid], body)
                    self._send(201, fake.public(fake.check_runs[cid]))
                    return
                if parts[3] == "statuses" and len(parts) == 5:
                    if body.get("state") not in STATES:
                        self._send(422, {"message": f"state must be one of {sorted(STATES)}"})
                        return
                    st = {"id": fake.take_id(), "sha": parts[4], "repository": repo,
                          "state": body["state"], "context": body.get("context", "default"),
                          "description": body.get("description"),
                          "target_url": body.get("target_url")}
                    fake.statuses.append(st)
                    self._send(201, st)
                    return
                cid = fake.take_id()
                fake.comments[cid] = {"id": cid, "body": body["body"]}
                self._send(201, fake.comments[cid])

            def do_PATCH(self):
                if not self._guard():
                    return
                parts, _ = self._parts()
                body = self._body()
                if parts[3] == "check-runs":
                    cid = int(parts[4])
                    if cid not in fake.check_runs:
                        self._send(404, {"message": "Not Found"})
                        return
                    err = fake.check_fields(body)
                    if err:
                        self._send(422, {"message": err})
                        return
                    fake.apply(fake.check_runs[cid], body)
                    self._send(200, fake.public(fake.check_runs[cid]))
                    return
                cid = int(parts[-1])
                fake.comments[cid]["body"] = body["body"]
                self._send(200, fake.comments[cid])

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, args=(POLL_S,), daemon=True).start()

    def take_id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    @staticmethod
    def check_fields(body: dict) -> str | None:
        if "conclusion" in body and body["conclusion"] not in CONCLUSIONS:
            return f"conclusion must be one of {sorted(CONCLUSIONS)}"
        if body.get("status") == "completed" and "conclusion" not in body:
            return "conclusion is required when status is completed"
        out = body.get("output")
        if out is not None and (not out.get("title") or not out.get("summary")):
            return "output needs title and summary"
        if out is not None and len(out.get("summary", "")) > 65535:
            return "output.summary is longer than 65535 characters"
        return None

    @staticmethod
    def apply(run: dict, body: dict) -> None:
        for k in ("name", "head_sha", "details_url", "external_id", "status"):
            if k in body:
                run[k] = body[k]
        if "output" in body:
            run["output"] = {k: body["output"].get(k) for k in ("title", "summary", "text")}
        if "conclusion" in body:  # GitHub: a conclusion completes the run
            run["conclusion"], run["status"], run["completed_at"] = \
                body["conclusion"], "completed", _now()

    def public(self, run: dict) -> dict:
        return {k: v for k, v in run.items() if k != "repository"} | {
            "url": f"{self.url}/repos/{run['repository']}/check-runs/{run['id']}"}

    def close(self):
        self.server.shutdown()
