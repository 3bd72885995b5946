"""dlib's primitive encodings, byte for byte, against hex values verified against dlib (the
table in docs/serialization.md, "Formats"), and the Reader's errors on malformed input."""

import math

import numpy as np
import pytest

from dnnpy import SerializationError, alias_tensor, resizable_tensor
from dnnpy.serialization import Reader, Writer


def hx(s):
    return bytes.fromhex(s.replace(" ", ""))


def written(method, value):
    w = Writer()
    getattr(w, method)(value)
    return w.bytes()


INTS = [(2, "01 02"), (4736, "02 80 12"), (-17, "81 11"), (-54, "81 36"), (0, "01 00"),
        (-7, "81 07"), (300, "02 2c 01"), (5, "01 05")]


@pytest.mark.parametrize("value,hexs", INTS)
def test_int(value, hexs):
    assert written("int", value) == hx(hexs)
    assert Reader(hx(hexs)).int() == value


FLOATS = [(1.0, "01 80 81 07"), (0.0, "01 00 01 28"), (-0.5, "81 80 81 08"),
          (0.0005, "03 6f 12 83 81 22"), (math.inf, "01 00 02 00 7d"),
          (122.782, "03 62 90 f5 81 11")]


@pytest.mark.parametrize("value,hexs", FLOATS)
def test_float32(value, hexs):
    assert written("float32", value) == hx(hexs)
    assert Reader(hx(hexs)).float32() == float(np.float32(value))


def test_float_special_values():
    assert Reader(written("float32", -math.inf)).float32() == -math.inf
    nan = written("float32", math.nan)
    assert nan == hx("01 00 02 02 7d")  # mantissa 0, exponent 32002
    assert math.isnan(Reader(nan).float32())
    # 122.782f decodes to the float nearest 122.782 (0xf59062 * 2^-17)
    assert Reader(hx("03 62 90 f5 81 11")).float32() == pytest.approx(122.78199768, abs=1e-7)


@pytest.mark.parametrize("value,hexs", [(1.0, "01 10 81 04"), (0.0, "01 00 01 0b")])
def test_float64(value, hexs):
    assert written("float64", value) == hx(hexs)
    assert Reader(hx(hexs)).float64() == value


def test_float64_round_trip_exact():
    for v in (0.1, -1e-300, 1e300, 5e-324, 0.9, 1 / 3):
        assert Reader(written("float64", v)).float64() == v


def test_bool_byte_string():
    assert written("bool", True) == b"1" and written("bool", False) == b"0"
    assert written("byte", 7) == b"\x07"
    assert written("string", "con_5") == hx("01 05 63 6f 6e 5f 35")
    assert written("string", "con_6") == hx("01 05 63 6f 6e 5f 36")
    assert Reader(hx("01 05 63 6f 6e 5f 36")).string() == "con_6"


def test_tensor_and_alias():
    t = resizable_tensor(1, 1, 1, 2)
    t.host()[...] = np.array([1, -2], dtype=np.float32).reshape(1, 1, 1, 2)
    b = written("tensor", t)
    assert b == hx("01 02 01 01 01 01 01 01 01 02 00 00 80 3f 00 00 00 c0")
    back = Reader(b).tensor()
    assert back.shape == (1, 1, 1, 2) and np.array_equal(back.host_read(), t.host_read())
    assert written("tensor", resizable_tensor()) == hx("01 02 01 00 01 00 01 00 01 00")
    assert written("alias", alias_tensor(1, 3)) == hx("01 01 01 01 01 03 01 01 01 01")
    assert Reader(hx("01 01 01 01 01 03 01 01 01 01")).alias() == (1, 3, 1, 1)


BAD = [
    ("int", "", "data ended"),
    ("int", "05", "only 0 bytes remain"),
    ("int", "41 00", "not an integer control byte"),
    ("int", "09 00", "not an integer control byte"),
    ("uint", "81 01", "negative"),
    ("bool", "32", "'0' or '1'"),
    ("string", "05 ff ff ff ff ff", "remain"),
    ("float32", "31 2e 30", "old text float"),
    ("tensor", "01 03 01 01 01 01 01 01 01 01", "version 3"),
    ("tensor", "01 02 04 ff ff ff 7f 04 ff ff ff 7f 01 01 01 01", "remain"),
    ("tensor", "01 02 81 01 01 01 01 01 01 01", "negative dimension"),
    ("alias", "01 02 01 01 01 01 01 01 01 01", "alias_tensor version 1"),
]


@pytest.mark.parametrize("method,hexs,msg", BAD)
def test_malformed_inputs_raise_serialization_error(method, hexs, msg):
    with pytest.raises(SerializationError, match=msg) as e:
        getattr(Reader(hx(hexs), "f.dat"), method)()
    assert "f.dat" in str(e.value) and "byte offset" in str(e.value)


def test_expect_string_names_expected_and_found():
    r = Reader(written("string", "fc_3"))
    with pytest.raises(SerializationError, match=r"expected 'con_5' or 'con_6', found 'fc_3'.*offset 0"):
        r.expect_string("con_5", "con_6")
    assert Reader(written("string", "con_5")).expect_string("con_5", "con_6") == "con_5"


def test_float_exponents_above_the_nan_marker_read_as_nan():
    """dlib's float_details::convert_to_T: an exponent above is_nan (32002) is NaN too."""
    for exponent in (32003, 32767):
        w = Writer()
        w.int(5), w.int(exponent)
        assert math.isnan(Reader(w.bytes()).float64())
        assert math.isnan(Reader(w.bytes()).float32())
