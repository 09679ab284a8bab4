"""Use cases: one module per job. The only callers of repositories besides tests; routes, the
dashboard, the bot and the CLI call these."""
