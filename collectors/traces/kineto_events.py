"""The shapes Kineto events are decoded into: msgspec structs holding only the fields analysis
reads (the rest of each event is skipped in C), the decoders built from them, and the tagged
scan that tells events apart by their phase while decoding. Without msgspec (bare GPU images)
`msgspec` is None and the standard library's json does the work (kineto.py)."""
from __future__ import annotations

from typing import Any, Union

try:  # optional fast path
    import msgspec

    Num = Union[int, str, None]

    class _Args(msgspec.Struct, gc=False):
        device: Num = None
        stream: Num = None
        correlation: Num = None
        wait_on_stream: Num = None
        wait_on_cuda_event_record_corr_id: Num = None

    class _Fields(msgspec.Struct, gc=False):
        # names stay raw JSON (a view into the buffer) until an event that needs one is found:
        # most events are CPU ops whose names analysis never reads
        name: msgspec.Raw = msgspec.Raw(b'""')
        pid: Union[int, str] = 0
        tid: Union[int, str] = 0
        ts: Union[float, str] = 0.0
        dur: Union[float, str] = 0.0
        args: Union[_Args, None] = None

    class _Event(_Fields, gc=False):
        ph: str = ""
        cat: str = ""

    class _ExactEvent(_Event, gc=False):
        # absolute epoch microseconds (older PyTorch, about 1.7e15) do not survive float64:
        # such traces keep the numbers' text and convert it exactly (exact_ns)
        ts: Union[msgspec.Raw, str] = msgspec.Raw(b"0")  # type: ignore[assignment]
        dur: Union[msgspec.Raw, str] = msgspec.Raw(b"0")  # type: ignore[assignment]

    class _Doc(msgspec.Struct, gc=False):
        traceEvents: list[_Event] = []

    class _RawDoc(msgspec.Struct, gc=False):
        traceEvents: list[msgspec.Raw] = []

    # The tagged scan: events are told apart by their phase while they are decoded, so an
    # event of a phase analysis never reads (flow arrows, instants, metadata: a third of a
    # trace) is skipped in C but for its start (the epoch test reads it); only complete events
    # ("X") carry categories, names, threads, durations and arguments. One struct per phase,
    # since a struct has one tag; a phase not listed, or an event without one, fails the tagged
    # decode, and that piece is decoded by `LIST` instead, giving the same columns.
    class _Skip(msgspec.Struct, gc=False, tag_field="ph"):
        ts: Union[float, str] = 0.0

    class Complete(_Fields, gc=False, tag_field="ph", tag="X"):
        cat: str = ""
        ph = "X"  # the tag, read as the other events' field

    SKIPPED_PHASES = ("B", "E", "i", "I", "C", "b", "n", "e", "s", "t", "f", "P", "O", "N", "D",
                      "M", "V", "v", "R", "c")
    _TAGGED: tuple = (Complete,) + tuple(
        msgspec.defstruct(f"_Skip_{k}", [], bases=(_Skip,), tag_field="ph", tag=t, gc=False,
                          namespace={"ph": t})
        for k, t in enumerate(SKIPPED_PHASES))
    TAGGED = frozenset(_TAGGED)
    _TAGGED_LIST = msgspec.json.Decoder(list[Union[_TAGGED]])  # type: ignore[valid-type]

    class _TaggedDoc(msgspec.Struct, gc=False):
        traceEvents: list[Union[_TAGGED]] = []  # type: ignore[valid-type]

    _TAGGED_DOC = msgspec.json.Decoder(_TaggedDoc)
    DOC = msgspec.json.Decoder(_Doc)
    RAW_DOC = msgspec.json.Decoder(_RawDoc)
    RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
    STR = msgspec.json.Decoder(str)
    LIST = msgspec.json.Decoder(list[_Event])
    EXACT_LIST = msgspec.json.Decoder(list[_ExactEvent])
except ImportError:  # pragma: no cover - exercised on GPU images without msgspec
    msgspec = None  # type: ignore[assignment]
    TAGGED = frozenset()
    STR = Complete = None  # type: ignore[assignment,misc]  # read only where msgspec decoded

try:  # compiled at install where a C compiler is at hand (setup.py); else msgspec alone
    from ._kfilter import CATEGORIES
    from ._kfilter import keep as _keep
except ImportError:  # pragma: no cover - an install without a compiler
    _keep = None
    CATEGORIES = ()

if msgspec is not None:
    class Filtered(msgspec.Struct, array_like=True, gc=False):
        """What the C filter (_kfilter.c) writes of a piece, as columns; categories as 1 + their
        place in CATEGORIES; ops' names and host events' threads as places in lists that hold
        each text (pair of texts) once, in order of first appearance."""
        head_ts: list[Union[float, str]]  # the first events' times (the epoch test)
        rows: list[_Event]  # stream syncs, whole
        o_ts: list[float]
        o_dur: list[float]
        o_dev: list[int]
        o_stream: list[int]
        o_corr: list[int]
        o_name: list[int]
        o_cat: list[int]
        names: list[msgspec.Raw]
        c_ts: list[float]
        c_dur: list[float]
        c_corr: list[int]
        c_thread: list[int]
        r_ts: list[float]
        r_dur: list[float]
        r_cat: list[int]
        r_name: list[msgspec.Raw]
        r_thread: list[int]
        r_at: list[int]  # its place among the host events (calls and ranges)
        t_pid: list[Union[int, str]]
        t_tid: list[Union[int, str]]
        t_first_call: list[int]  # its first place among the host events as a call; -1: none

    _FILTERED = msgspec.json.Decoder(Filtered)


def decode_filtered(buf: Any, document: bool, head: int, first_is_event: bool
                    ) -> tuple[Any, int] | None:
    """The events analysis reads of a JSON array of events (or of a document with `document`)
    as a `Filtered`, and how many others there were: one pass of the C filter over the text
    (no Python object for an event analysis never reads), then one msgspec decode of what it
    wrote. The first `head` events are kept whole whatever they are; with `first_is_event` the
    first element must be an event with a phase. None where the filter is not built, or the
    text is anything but plain (the usual decode then decides what it means)."""
    if _keep is None or msgspec is None:
        return None
    got = _keep(buf, document, head, first_is_event)
    if got is None:
        return None
    try:
        return _FILTERED.decode(got[0]), got[1]
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None


def decode_tagged(buf: Any, document: bool) -> list[Any] | None:
    """The events of a JSON array (or of a document with `document`) by the tagged scan; None
    where it does not apply (an unlisted category, an event without one, odd field types), or
    where the text is no valid JSON (the typed decode then names the fault)."""
    if msgspec is None:
        return None
    try:
        return _TAGGED_DOC.decode(buf).traceEvents if document else _TAGGED_LIST.decode(buf)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
