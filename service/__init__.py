"""perfwarden service: storage, statistics, REST API, PR comment bot."""
