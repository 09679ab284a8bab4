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
    read_auth: bool = False
    bind_host: str = "127.0.0.1"  # set by `perfwarden serve`; writes are open only on loopback
    github_token: SecretStr | None = None
    github_api_url: str = "https://api.github.com"
    bot_baseline: str | None = None  # post PR comments by itself against this baseline
    dashboard_url: str | None = None
    gate_alpha: float = Field(0.05, gt=0, lt=1)
    alert_webhook: SecretStr | None = None  # POST each new alert here as JSON (spec: Alerts)
    alert_github_repo: str | None = None  # OWNER/NAME: one GitHub issue per alert
    alert_retries: int = Field(3, ge=1, le=10)
    alert_backoff_s: float = Field(0.5, ge=0)

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def loopback(self) -> bool:
        return self.bind_host in LOOPBACK or self.bind_host.startswith("127.")
