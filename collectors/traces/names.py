"""One key per kernel whatever wrote its name (spec/metrics.md, Kernel names across producers).

Kineto and nsys demangle the same kernel differently: nsys writes template values with casts
(`<(int)128, (bool)0>`), `<unnamed>` for an anonymous namespace and its own spelling of the
argument list (`T2 *`), Kineto `<128, false>`, `(anonymous namespace)` and the argument types
(`float*`). The key keeps what tells kernels apart (the function's qualified name and its
template arguments) and drops the rest: the return type, the argument list, the casts, the
spaces."""
from __future__ import annotations

import re
from functools import lru_cache

# (pattern, replacement), in order: nsys's spellings brought to Kineto's, then spaces dropped
_RULES = [(re.compile(p, flags), r) for p, r, flags in (
    (r"\(anonymous namespace\)|<unnamed>", "anon", 0),
    (r"\(bool\)1\b", "true", 0), (r"\(bool\)0\b", "false", 0),
    (r"\((?:unsigned |signed )?(?:int|long long|long|short|char|unsigned)\)(?=-?\d)", "", 0),
    (r"(?<=[<,\s])(-?\d+)(?:ull|ul|ll|u|l)(?=\s*[,>])", r"\1", re.IGNORECASE),
    (r"\[lambda\(([^()]*)\) \(instance (\d+)\)\]", r"{lambda(\1)#\2}", 0),
    (r"(?<=[<,(])\s*void ", "", 0))]
_SPACE = re.compile(r"\s*([<>,*&()])\s*")


def _empty_parentheses(name: str) -> str:
    """Every parenthesized list emptied (`f(at::Tensor&)::{lambda(float)#1}` ->
    `f()::{lambda()#1}`): argument lists are where the producers' spellings differ (`T2 *`
    against `float*`); a trailing one goes."""
    out: list[str] = []
    depth = 0
    for ch in name:
        if ch == "(":
            if depth == 0:
                out.append(ch)
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
            if depth == 0:
                out.append(ch)
        elif depth == 0:
            out.append(ch)
    return "".join(out).removesuffix("()")


@lru_cache(maxsize=65536)
def kernel_key(name: str) -> str:
    """The key two producers' names of one kernel share."""
    s = name.strip().removeprefix("void ")
    for rx, repl in _RULES:
        s = rx.sub(repl, s)
    return _SPACE.sub(r"\1", _empty_parentheses(s)).strip()
