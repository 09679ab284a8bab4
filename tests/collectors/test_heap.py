"""A short command's heap keeps what it frees (collectors/heap.py): a large block made again
after it was freed costs no fresh page faults, as it does without the setting."""
from __future__ import annotations

import platform
import subprocess
import sys

import pytest

FAULTS = """
import resource, sys
from collectors import heap
if sys.argv[1] == "kept":
    assert heap.keep_freed()
def faults_of_a_block():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    block = b"x" * (64 << 20)  # 64 MB written: every page touched
    del block
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(faults_of_a_block(), faults_of_a_block())
"""


def _faults(mode: str) -> tuple[int, int]:
    out = subprocess.run([sys.executable, "-c", FAULTS, mode], capture_output=True, text=True,
                         check=True, timeout=60).stdout.split()
    return int(out[0]), int(out[1])


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt only")
def test_a_block_made_again_reuses_the_freed_memory():
    first, again = _faults("kept")
    assert first > 10_000 and again < first // 10
    first, again = _faults("default")  # the setting is what makes the difference
    assert first > 10_000 and again > first // 2
