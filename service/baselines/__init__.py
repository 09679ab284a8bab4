"""Named baselines (`v17`: the runs a release is judged by), in one place: routes.py
(/api/v1/baselines: create, move, show, list, delete), schemas.py (their bodies), tables.py (a
baseline and its history of moves), queries.py (every query and row write of both), named.py
(the use cases, and a baseline reference resolved to its runs: a name, or `label:`, `commit:`,
`runs:`)."""
