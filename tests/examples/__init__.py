"""Tests of examples/: the GitHub Actions workflow's steps run as written."""
