"""The server-side commands' bodies, one module per group; each imports the server's code and
libraries at its top and is loaded only when one of its commands runs (`command` in
service/cli/common.py): gate.py, bisect.py, history.py (noise, attribute), explain.py,
comment.py, experiment.py (the local judge), server.py (serve, worker), database.py (db,
tokens), seed.py; reads.py the local database's answers of noise, attribute and explain (with
`--server` those bodies are clients of the API alone and do not load it); local.py holds the
settings and the local database session they share."""
