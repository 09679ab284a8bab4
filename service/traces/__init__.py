"""The service's trace files, in one place: routes.py (/api/v1/runs/{id}/traces, staged
traces, timelines), schemas.py (their bodies), tables.py (a run's trace files and their
analysis state), queries.py (their reads and writes), attach.py (a trace attached, analyzed
and recorded), uploads.py (staged traces committed with their batch of runs), sweep.py (pending
traces picked up again). Below those, three parts that import
only downwards: storage.py (the
content-addressed store: where a file of a given SHA-256 lives, committing a received file,
the kept columns of rank sets, the stored format names), intake.py (an upload: the file name's
check, the body streamed to disk with its hash under the size limit at the shared pace, the
magic-byte check before answering) and analysis.py (the analysis runner: THE trace pipeline of
collectors/traces/pipeline.py in a sandboxed process, rank sets, the timeline cache). intake.py
and analysis.py import storage.py and not each other; storage.py imports neither."""
