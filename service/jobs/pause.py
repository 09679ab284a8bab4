"""A test hook: PERFWARDEN_TEST_JOB_PAUSE=POINT=FILE makes a worker that reaches POINT write FILE
and then block, so a test can kill the worker there (kill -9) and start another.

Points: `trace:analyze` (a trace analysis job, before it reads the file), `webhook:before_post`
and `webhook:after_post` (a webhook delivery, around the HTTP request), `alerts:reevaluate`
(a full re-evaluation, after each series it committed)."""
from __future__ import annotations

import os
import time
from pathlib import Path

ENV = "PERFWARDEN_TEST_JOB_PAUSE"


def pause_point(point: str) -> None:
    spec = os.environ.get(ENV)
    if not spec or "=" not in spec:
        return
    name, marker = spec.split("=", 1)
    if name != point:
        return
    tmp = Path(f"{marker}.{os.getpid()}.tmp")  # written whole, then renamed: a test that sees
    tmp.write_text(f"{os.getpid()}\n")         # the file reads the pid, never an empty file
    os.replace(tmp, marker)
    while True:  # until killed
        time.sleep(3600)
