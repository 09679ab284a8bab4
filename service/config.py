"""Settings from the environment (PERFWARDEN_*). Nothing here connects to anything."""
from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DB = "sqlite:///./perfwarden.db"
LOOPBACK = {"127.0.0.1", "::1", "localhost"}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PERFWARDEN_", extra="ignore")

    database_url: str = DEFAULT_DB
    data_dir: Path = Path("./perfwarden-data")
    max_body_bytes: int = Field(8 << 20, gt=0, description="run record size limit")
    max_batch_bytes: int = Field(64 << 20, gt=0, description="run batch size limit")
    max_trace_bytes: int = Field(2 << 30, gt=0, description="trace upload size limit")
    # staged trace files waiting for their batch (POST /api/v1/traces/stage): what all of them,
    # and what those of one token (or of anonymous writers), may hold on disk
    max_staged_bytes: int = Field(16 << 30, gt=0)
    max_staged_bytes_per_token: int = Field(4 << 30, gt=0)
    # trace uploads into one API process share this many MB/s (0: unpaced), so a rank set
    # arriving on loopback does not take the CPU that gate requests need (traces/intake.Pace)
    upload_mb_s: float = Field(100.0, ge=0)
    # reads need a token when on (1/on/true), never when off (0/off/false); unset: they need one
    # exactly when the server listens beyond loopback (`serve --host 0.0.0.0`)
    read_auth: bool | None = None
    bind_host: str = "127.0.0.1"  # set by `perfwarden serve`; writes are open only on loopback
    # NAME,...: the Host names the server answers to besides the loopback names on a loopback
    # bind (the name a proxy in front passes on); on another bind, where set, the only ones
    allowed_hosts: str = ""
    # request bodies: each must arrive within body_timeout_s plus its size at body_min_bytes_s,
    # and the bodies held in memory at once by one process stay under max_inflight_body_bytes
    # (past it a request is answered 503 and may try again)
    body_timeout_s: float = Field(60.0, gt=0)
    body_min_bytes_s: float = Field(1e6, gt=0)
    max_inflight_body_bytes: int = Field(256 << 20, gt=0)
    # `perfwarden serve`: a connection must send its request's headers within this long
    header_timeout_s: float = Field(10.0, gt=0)
    # `perfwarden serve`: connections and requests at once per process, past which uvicorn
    # answers 503 (kept under the open-file limit)
    max_connections: int = Field(800, ge=1)
    github_token: SecretStr | None = None
    # OWNER/NAME,...: the only repositories the bot posts PR comments to (a run's `repository`
    # is data anyone with ingest rights chooses); empty: it posts to none
    github_repos: str = ""
    github_api_url: str = "https://api.github.com"
    bot_baseline: str | None = None  # post PR comments by itself against this baseline
    dashboard_url: str | None = None
    # the URL clients reach this server at (`--server` of the alerts' bisect line); unset: the
    # dashboard's URL (the server serves the dashboard at its root)
    public_url: str | None = None
    gate_alpha: float = Field(0.05, gt=0, lt=1)
    alert_webhook: SecretStr | None = None  # POST each new alert here as JSON (spec: Alerts)
    alert_github_repo: str | None = None  # OWNER/NAME: one GitHub issue per alert
    alert_retries: int = Field(3, ge=1, le=10)
    alert_backoff_s: float = Field(0.5, ge=0)
    # durable jobs (service/jobs): tries, backoff base (doubling), the lease a worker renews
    # while a job runs (a killed worker's job is taken over once it runs out), the poll interval
    job_attempts: int = Field(5, ge=1, le=100)
    job_backoff_s: float = Field(2.0, ge=0)
    job_lease_s: float = Field(30.0, gt=0)
    job_poll_s: float = Field(1.0, gt=0)
    # the pages' summaries refresh an evaluation queues is due this many times as long after the
    # last refresh of the benchmark ended as that refresh took (0: at once; service/jobs/tasks.py)
    summary_pace: float = Field(4.0, ge=0, le=100)
    # `perfwarden worker` runs at this CPU niceness (0-19): trace analysis and the summaries'
    # fits yield the CPU to the API (gate requests, ingest) and the database on a shared host
    worker_nice: int = Field(10, ge=0, le=19)
    jobs_in_process: bool | None = None  # a worker thread in the API process (default: SQLite)
    # the lanes of the queue: trace analysis runs apart from every other kind (alerts,
    # deliveries, PR comments, summaries), each lane with this many jobs at once per worker
    trace_concurrency: int = Field(1, ge=1, le=64)
    job_concurrency: int = Field(1, ge=1, le=64)
    # deliveries (webhooks, alert issues, PR comments) run in a lane of their own, this many at
    # once, each attempt within a total deadline (connect, send and the whole answer), so a
    # receiver that trickles its answer holds one place for at most that long
    delivery_concurrency: int = Field(4, ge=1, le=64)
    delivery_timeout_s: float = Field(15.0, gt=0, le=600)
    # every trace analysis (upload job, run page, timeline) runs in a child process with a
    # deadline (default: 60 s plus 1 s per MB of its files), an address-space limit (default:
    # half the machine's memory), a CPU-time limit (default: 4 times the deadline) and caps on
    # what gzip data inflates to; past any, the trace is `failed` with that reason, once
    analysis_timeout_s: float | None = Field(None, gt=0)
    analysis_memory_mb: int | None = Field(None, gt=0)
    analysis_cpu_s: float | None = Field(None, gt=0)
    max_inflated_bytes: int = Field(32 << 30, gt=0)
    # the CPU-bound reads (change points, noise, attribution, explain, timelines, pages) run
    # this many at a time per process, with this many more waiting (then 503): the gate and
    # ingest keep the rest of the thread and database pools (api/lanes.py)
    heavy_reads: int = Field(1, ge=1, le=64)
    heavy_queue: int = Field(64, ge=0, le=10_000)
    # `serve --read-workers N` sets these: the API processes pass every heavy read to the reads
    # server on this Unix socket (its own processes, scheduled behind the API's), which takes
    # the client's address from the API process that passed the request on (api/lanes.py)
    reads_socket: str | None = None
    reads_server: bool = False
    max_inflate_ratio: float = Field(100.0, gt=0)

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def in_process_worker(self) -> bool:
        return self.is_sqlite if self.jobs_in_process is None else self.jobs_in_process

    @property
    def reads_need_token(self) -> bool:
        return (not self.loopback) if self.read_auth is None else self.read_auth

    @property
    def github_allowed(self) -> frozenset[str]:
        """The allow-list of PERFWARDEN_GITHUB_REPOS, lower-cased (GitHub names ignore case)."""
        return frozenset(r.strip().lower() for r in self.github_repos.split(",") if r.strip())

    def github_refusal(self, repository: str) -> str | None:
        """Why the bot may not post to `repository`, or None when it may."""
        if not self.github_allowed:
            return (f"repository {repository!r} refused: PERFWARDEN_GITHUB_REPOS is empty, so the "
                    "bot posts to no repository")
        if repository.strip().lower() not in self.github_allowed:
            return f"repository {repository!r} is not in PERFWARDEN_GITHUB_REPOS"
        return None

    @property
    def allowed_host_names(self) -> frozenset[str]:
        """PERFWARDEN_ALLOWED_HOSTS, lower-cased, each as a Host header names it."""
        return frozenset(h.strip().lower() for h in self.allowed_hosts.split(",") if h.strip())

    @property
    def loopback(self) -> bool:
        return self.bind_host in LOOPBACK or self.bind_host.startswith("127.")
