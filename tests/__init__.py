"""The tests, mirroring the tree: collectors/, service/, dashboards/, examples/ (the example
workflow's steps), journeys/ (a user's walk through several features). At the top: the
commands' tests (test_cli.py, test_exit_codes.py, test_experiment_cli.py, test_ingest_wait.py,
test_deploy.py) and the tree's rules (test_layering.py, test_seams.py, test_sizes.py,
test_words.py); helpers: conftest.py (data paths, databases, the live server), layout.py (a
service file's role by where it lives, for the tree's rules), github_standin.py (a local server speaking
GitHub's API), action_runner.py (runs the GitHub Action's steps), kernel_runs.py (runs whose real
traces hold one slowed kernel among jittered ones)."""
