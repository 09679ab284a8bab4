"""`perfwarden comment`'s body: the PR bot (service/github/comment.py) with the one API client."""
from __future__ import annotations

import argparse

from ...github.comment import post_comment
from ..common import api


def cmd_comment(args: argparse.Namespace) -> int:
    return post_comment(args, api)
