"""Tests of service/: the API and its guard, the use cases, the gate and verdicts, alerts, jobs,
the sandbox, the bot; stats/ tests the pure statistics; planted_matrix.py makes a
factorial matrix on the CPU with a planted key."""
