"""The PR comment bot: comment.py (`perfwarden comment`: fetch the comparison, post or edit the
comment and the check run), markdown.py (the comment's Markdown, written from the compare
data), check.py (the check run on the candidate commit, or a commit status where checks are
not writable), auto.py (the service's own post when a run arrives for a PR); GitHub's REST
API is service/github.py, which the alerts' issues use too."""
