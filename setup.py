"""The one compiled part: the Kineto event filter (collectors/traces/_kfilter.c). It is
optional: where no C compiler is at hand the install goes on without it, and traces are read by
msgspec alone (slower, the same columns)."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("collectors.traces._kfilter", ["collectors/traces/_kfilter.c"],
                             extra_compile_args=["-O2"], optional=True)])
