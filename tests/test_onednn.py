"""oneDNN bindings (``tensor_tools/cpu/onednn/_api.py``, ``_loader.py``) against the headers
of the ``onednn-devel-cpu-gomp`` wheel, and the loader's behaviour in fresh processes.

The header checks run when the headers are installed (``<sys.prefix>/include/oneapi/dnnl``;
skipped otherwise): every entry of ``SIGNATURES`` has the parameter and return kinds of its
prototype, and every value of ``ENUMS`` / ``ARGS`` equals the headers' (the enum bodies are
evaluated in order, implicit values included; the ``DNNL_ARG_*`` are ``#define`` chains).
The loader tests need no library: ``DNNPY_DISABLE_ONEDNN``, a broken explicit path, and
``import dnnpy`` never mapping libdnnl.
"""

import ctypes
import os
import re
import subprocess
import sys

import pytest

from dnnpy.tensor_tools.cpu.onednn import _api as A

INCLUDE = os.path.join(sys.prefix, "include", "oneapi", "dnnl")
HEADERS = ("dnnl.h", "dnnl_common.h", "dnnl_types.h", "dnnl_common_types.h")


def _text():
    if not all(os.path.exists(os.path.join(INCLUDE, h)) for h in HEADERS):
        pytest.skip(f"no oneDNN headers in {INCLUDE} (pip install onednn-devel-cpu-gomp)")
    text = "\n".join(open(os.path.join(INCLUDE, h), errors="replace").read() for h in HEADERS)
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


# ----------------------------------------------------------------------------------------
# signatures

_INTS = {"int": "int", "int32_t": "int", "unsigned": "unsigned", "uint32_t": "unsigned",
         "int64_t": "int64", "dnnl_dim_t": "int64", "size_t": "size_t", "float": "float",
         "double": "double", "uint64_t": "uint64"}


def _ckind(t, restype=False):
    """The kind of a table entry: status, int, unsigned, int64, size_t, float, ptr."""
    if restype and t == "dnnl_status_t":
        return "status"
    if t is None:
        return None
    if t in (ctypes.c_void_p, ctypes.c_char_p) or (isinstance(t, type)
                                                   and issubclass(t, ctypes._Pointer)):
        return "ptr"
    # ctypes aliases: c_int32 is c_int, c_size_t is c_ulong, c_int64 is c_long (LP64)
    return {ctypes.c_int: "int", ctypes.c_uint: "unsigned", ctypes.c_int64: "int64",
            ctypes.c_size_t: "size_t", ctypes.c_float: "float",
            ctypes.c_double: "double"}.get(t, repr(t))


def _parse(text):
    """``{function: (return kind, [parameter kinds])}`` from the prototypes."""
    pointers = set(re.findall(r"typedef\s+(?:const\s+)?struct\s+\w+\s*\*\s*(\w+)\s*;", text))
    arrays = set(re.findall(r"typedef\s+\w+\s+(\w+)\s*\[[^\]]*\]\s*;", text))
    enums = set(re.findall(r"typedef\s+enum\s*\w*\s*\{[^}]*\}\s*(\w+)\s*;", text))
    aliases = dict((b, a) for a, b in re.findall(r"typedef\s+(\w+)\s+(\w+)\s*;", text))

    def kind(decl):
        decl = decl.strip()
        if decl in ("void", ""):
            return None
        if "*" in decl or "[" in decl:
            return "ptr"
        words = [w for w in re.findall(r"\w+", decl) if w not in ("const", "struct")]
        typ = words[0]
        while typ in aliases and typ not in _INTS:
            typ = aliases[typ]
        if typ == "dnnl_status_t":
            return "status"
        if typ in pointers or typ in arrays:
            return "ptr"
        if typ in enums:
            return "int"
        return _INTS.get(typ, "unknown " + typ)

    protos = {}
    for ret, star, name, params in re.findall(
            r"((?:const\s+)?\w+)\s+DNNL_API\s*(\*?)\s*(\w+)\s*\(([^;{]*?)\)\s*;", text):
        ret_kind = "ptr" if star else kind(ret)
        args = [kind(p) for p in params.split(",")] if params.strip() not in ("", "void") else []
        protos[name] = (ret_kind, args)
    return protos


def _problems(signatures, protos):
    out = []
    for name, (restype, argtypes) in signatures.items():
        if name not in protos:
            out.append(f"{name}: not in the headers")
            continue
        want_ret, want_args = protos[name]
        got_args = [_ckind(t) for t in argtypes]
        if got_args != want_args:
            out.append(f"{name}: header kinds {want_args}, table {got_args}")
        got_ret = _ckind(restype, restype=True)
        if got_ret != want_ret:
            out.append(f"{name}: header returns {want_ret}, table {got_ret}")
    return out


def test_signatures_match_the_headers():
    protos = _parse(_text())
    assert len(protos) > 130   # 143 in 3.2: the parser found the API, not a handful of lines
    problems = _problems(A.SIGNATURES, protos)
    assert not problems, "\n".join(problems)


def test_header_check_catches_a_wrong_signature():
    protos = _parse(_text())
    assert protos["dnnl_memory_desc_equal"][0] == "int"
    assert protos["dnnl_post_ops_append_sum"] == ("status", ["ptr", "float", "int", "int"])
    assert protos["dnnl_stream_create"][1] == ["ptr", "ptr", "unsigned"]
    restype, argtypes = A.SIGNATURES["dnnl_convolution_forward_primitive_desc_create"]
    wrong = {
        # a dims pointer passed as an int64 value
        "dnnl_convolution_forward_primitive_desc_create":
            (restype, argtypes[:8] + [ctypes.c_int64] + argtypes[9:]),
        # equal's "1 = equal" read as a status (the pitfall of the shared report)
        "dnnl_memory_desc_equal": ("dnnl_status_t", A.SIGNATURES["dnnl_memory_desc_equal"][1]),
        # a missing parameter
        "dnnl_post_ops_append_sum": ("dnnl_status_t", [ctypes.c_void_p, ctypes.c_float,
                                                       ctypes.c_int]),
        "dnnl_no_such_function": ("dnnl_status_t", []),
    }
    problems = _problems(wrong, protos)
    assert len(problems) == 4, problems


# ----------------------------------------------------------------------------------------
# enums and argument indices

def _enum_values(text):
    """Every enumerator of every enum, evaluated in order (implicit = previous + 1)."""
    values = {}
    for body in re.findall(r"enum\s*\w*\s*\{([^}]*)\}", text):
        nxt = 0
        for item in body.split(","):
            item = item.strip()
            if not item:
                continue
            name, _, expr = item.partition("=")
            name = name.strip()
            if expr.strip():
                expr = re.sub(r"(0x[0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", expr.strip())
                nxt = eval(expr, {"__builtins__": {}}, dict(values))  # noqa: S307 (own headers)
            values[name] = nxt
            nxt += 1
    return values


def _defines(text):
    raw = dict(re.findall(r"#define\s+(DNNL_ARG_\w+)\s+([^\n]+)", text))
    out = {}

    def value(name):
        if name not in out:
            expr = raw[name].strip()
            for ref in re.findall(r"DNNL_ARG_\w+", expr):
                expr = expr.replace(ref, str(value(ref)))
            out[name] = eval(expr, {"__builtins__": {}})  # noqa: S307
        return out[name]
    for name in raw:
        value(name)
    return out


def test_enum_values_match_the_headers():
    values = _enum_values(_text())
    assert values["dnnl_format_tag_last"] > 700 and values["dnnl_f32"] == 3  # parser sanity
    wrong = {k: (v, values.get(k)) for k, v in A.ENUMS.items() if values.get(k) != v}
    assert not wrong, wrong


def test_argument_indices_match_the_headers():
    values = _defines(_text())
    wrong = {k: (v, values.get(k)) for k, v in A.ARGS.items() if values.get(k) != v}
    assert not wrong, wrong


def test_exec_arg_layout():
    assert ctypes.sizeof(A.ExecArg) == 16 and A.ExecArg.memory.offset == 8


# ----------------------------------------------------------------------------------------
# the loader, in fresh processes

def _run(code, **env):
    full = dict(os.environ)
    full.update(env)
    full["PYTHONPATH"] = os.pathsep.join([os.getcwd()] + full.get("PYTHONPATH", "").split(os.pathsep))
    proc = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True,
                          text=True, env=full, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_disabled_by_environment_says_so_without_a_warning():
    proc = _run("from dnnpy.tensor_tools.cpu import onednn\n"
                "i = onednn.info()\n"
                "print(i['used'], i['disabled_by_env'], '|', i['reason'])",
                DNNPY_DISABLE_ONEDNN="1")
    assert proc.stdout.strip() == "False True | turned off by DNNPY_DISABLE_ONEDNN"
    assert "Warning" not in proc.stderr


def test_a_broken_explicit_library_is_named_in_the_reason(tmp_path):
    bad = tmp_path / "libdnnl.so.3"
    bad.write_bytes(b"not a shared object")
    code = ("from dnnpy.tensor_tools.cpu.onednn import _loader, info\n"
            f"_loader.candidate_paths = lambda: [({str(bad)!r}, True)]\n"
            "i = info()\n"
            "print(i['used'], '|', i['reason'])")
    proc = _run(code, DNNPY_DISABLE_ONEDNN="0")
    used, reason = proc.stdout.strip().split(" | ", 1)
    assert used == "False" and str(bad) in reason and "no usable oneDNN" in reason
    assert "RuntimeWarning" in proc.stderr and "oneDNN is not used" in proc.stderr


def test_a_missing_explicit_library_is_named_in_the_reason(tmp_path):
    missing = str(tmp_path / "nowhere" / "libdnnl.so.3")
    code = ("from dnnpy.tensor_tools.cpu.onednn import _loader, info\n"
            f"_loader.candidate_paths = lambda: [({missing!r}, True)]\n"
            "print(info()['reason'])")
    proc = _run(code, DNNPY_DISABLE_ONEDNN="0")
    assert missing in proc.stdout and "does not exist" in proc.stdout


def test_import_dnnpy_does_not_load_onednn():
    proc = _run("import dnnpy, dnnpy.tensor_tools\n"
                "maps = open('/proc/self/maps').read()\n"
                "print('libdnnl' in maps)")
    assert proc.stdout.strip() == "False"
