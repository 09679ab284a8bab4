"""The PR bot, in one place (GitHub's REST API is service/github_rest.py, which the alerts'
issues use too): comment.py (`perfwarden comment`: fetch the
comparison, post or edit the PR comment and the check run), markdown.py (the comment's
Markdown, written from the compare data), check.py (the check run on the candidate commit, or
a commit status where checks are not writable), auto.py (the service's own post when a run
arrives for a PR), tables.py (the PR comments kept up to date), queries.py (their reads and
writes), prcomments.py (the verdict a run's PR comment shows, and the comment kept per PR)."""
