"""Curation by people, audited (who, when, why): routes.py
(/api/v1/benchmarks/{benchmark}/curations), schemas.py (their bodies), tables.py (expected
change points and mutes, withdrawn by stamping, never deleted), queries.py (their reads and
writes), marks.py (the use cases, and the curations a history read or a gate applies)."""
