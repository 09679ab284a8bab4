"""The one number rule and the series label (service/format.py)."""
from __future__ import annotations

from service.format import clean, hardware, num, quantity, series_label, series_short, split_series


def test_integers_print_as_integers_and_floats_with_their_digits():
    assert num(2097152) == num(2097152.0) == "2,097,152"
    assert num(87.6) == "87.60" and num(0.125, 3) == "0.125" and num(None) == "-"
    assert num(-3.0) == "-3" and num(float("nan")) == "nan"
    assert quantity(578368.0, "tokens") == "578,368 tokens"
    assert quantity(79.04, "us") == "79.0 us" and quantity(1943.951, "tok/s") == "1,943.95 tok/s"


def test_machine_bodies_carry_no_float_noise():
    assert clean(999.9686800000001) == 999.96868
    assert clean({"before": [0.1 + 0.2], "n": 3, "s": "x"}) == {"before": [0.3], "n": 3, "s": "x"}


def test_hardware_never_says_question_marks():
    assert hardware("cpu", None) == "cpu" and hardware("NVIDIA H200", 8) == "8x NVIDIA H200"
    assert "?" not in series_label({"tp": 1, "gpu": "cpu"})
    assert series_short({"tp": 1}, "cpu", None) == "tp=1 cpu"


def test_split_series_keeps_only_differing_keys_per_row():
    a = {"tp": 1, "batch_size": 1, "dtype": "bf16", "gpu": "H200", "gpu_count": 1}
    b = {**a, "batch_size": 8}
    c = {k: v for k, v in a.items() if k != "dtype"}
    common, rows = split_series([a, b, c])
    assert common == {"tp": 1, "gpu": "H200", "gpu_count": 1}
    assert rows == [{"batch_size": 1, "dtype": "bf16"}, {"batch_size": 8, "dtype": "bf16"},
                    {"batch_size": 1}]
    assert series_label(common) == "tp=1 1x H200" and series_label(rows[1]) == "M=8 dtype=bf16"


def test_gpu_model_and_count_are_split_together():
    one = {"tp": 1, "gpu": "NVIDIA H200", "gpu_count": 1}
    common, rows = split_series([one, {**one, "tp": 2, "gpu_count": 2}])
    assert common == {} and [series_label(r) for r in rows] == ["tp=1 1x NVIDIA H200",
                                                                "tp=2 2x NVIDIA H200"]
