"""ferrograd.save / ferrograd.load, pickling and deepcopy of tensors, Parameters, Modules."""

import copy
import io
import json
import math
import os
import pickle
import signal
import struct
import subprocess
import sys
import time
from collections import Counter, OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ferrograd as fg
from ferrograd import nn
from ferrograd import serialization as S

DTYPES = [fg.float32, fg.float64, fg.int64, fg.bool]
NP = {fg.float32: np.float32, fg.float64: np.float64, fg.int64: np.int64, fg.bool: np.bool_}


def make(shape, dtype, seed=0):
    rs = np.random.default_rng(seed)
    a = rs.standard_normal(shape) * 100
    if dtype is fg.bool:
        a = a > 0
    return fg.from_numpy(np.ascontiguousarray(a.astype(NP[dtype])))


def same(a, b):
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def roundtrip(obj, tmp_path, **kw):
    p = tmp_path / "ck.fg"
    fg.save(obj, p)
    from_path = fg.load(p, **kw)
    buf = io.BytesIO()
    fg.save(obj, buf)
    buf.seek(0)
    from_buf = fg.load(buf, **kw)
    return from_path, from_buf


# ----- round trips ---------------------------------------------------------------------------


@settings(max_examples=15, deadline=None)
@given(
    shape=st.lists(st.integers(0, 4), min_size=0, max_size=3),
    dtype=st.sampled_from(DTYPES),
    seed=st.integers(0, 1000),
)
def test_tensor_round_trip_every_dtype(tmp_path_factory, shape, dtype, seed):
    tmp = tmp_path_factory.mktemp("rt")
    t = make(tuple(shape), dtype, seed)
    for r in roundtrip(t, tmp):
        assert type(r) is fg.Tensor and not r.requires_grad
        same(r, t)
        # The loaded tensor owns its memory: writing it leaves the original alone.
        assert r.data_ptr() != t.data_ptr() or t.numel() == 0


def test_extreme_values_survive_bit_exactly(tmp_path):
    f = fg.tensor([0.0, -0.0, math.inf, -math.inf, math.nan, 1e-45, 3.4e38])
    d = fg.tensor([5e-324, -0.0, math.nan, 1.7976931348623157e308], dtype=fg.float64)
    i = fg.tensor([-(2**63), 2**63 - 1, 0])
    for r in roundtrip([f, d, i], tmp_path):
        for a, b in zip(r, [f, d, i]):
            assert a.numpy().tobytes() == b.numpy().tobytes()


def test_non_contiguous_tensor_saves_its_values(tmp_path):
    t = make((3, 4), fg.float32).t()
    assert not t.is_contiguous()
    for r in roundtrip(t, tmp_path):
        same(r, t)
        assert r.is_contiguous()


def test_state_dict_keeps_type_order_and_names(tmp_path):
    sd = OrderedDict(
        [("fc2.weight", make((2, 3), fg.float32)), ("fc1.bias", make((4,), fg.float64)),
         ("steps", fg.tensor(7)), ("mask", make((5,), fg.bool))]
    )  # fmt: skip
    for r in roundtrip(sd, tmp_path):
        assert type(r) is OrderedDict and list(r) == list(sd)
        for k in sd:
            same(r[k], sd[k])
    plain = {"b": fg.ones(2), "a": fg.zeros(3)}
    for r in roundtrip(plain, tmp_path):
        assert type(r) is dict and list(r) == ["b", "a"]


def test_nested_optimizer_state_round_trips(tmp_path):
    obj = {
        "epoch": 12,
        "model": OrderedDict(w=make((3, 2), fg.float32)),
        "optimizer": {
            "state": {0: {"step": fg.tensor(3.0), "exp_avg": make((3, 2), fg.float32, 1)}, 1: {}},
            "param_groups": [
                {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "amsgrad": False,
                 "weight_decay": 0, "params": [0, 1], "foreach": None, "name": "all"}
            ],
        },
        "floats": [math.nan, math.inf, -math.inf, -0.0, 0.1],
        "big": 2**100,
        "keys": {(1, "a"): "tuple key", 3: "int", "3": "str", None: 0, True: 1.5},
        "size": fg.Size([2, 3]),
        "dtype": fg.float64,
        "empty": ([], (), {}),
    }  # fmt: skip
    for r in roundtrip(obj, tmp_path):
        assert r["epoch"] == 12 and r["big"] == 2**100
        same(r["model"]["w"], obj["model"]["w"])
        st0 = r["optimizer"]["state"][0]
        same(st0["step"], obj["optimizer"]["state"][0]["step"])
        same(st0["exp_avg"], obj["optimizer"]["state"][0]["exp_avg"])
        assert r["optimizer"]["state"][1] == {}
        assert r["optimizer"]["param_groups"] == obj["optimizer"]["param_groups"]
        assert isinstance(r["optimizer"]["param_groups"][0]["betas"], tuple)
        fl = r["floats"]
        assert math.isnan(fl[0]) and fl[1:3] == [math.inf, -math.inf]
        assert math.copysign(1, fl[3]) == -1 and fl[4] == 0.1
        assert r["keys"] == obj["keys"] and list(r["keys"]) == list(obj["keys"])
        assert type(r["size"]) is fg.Size and r["size"] == (2, 3)
        assert r["dtype"] is fg.float64
        assert r["empty"] == ([], (), {})


def test_other_plain_types_load_with_weights_only(tmp_path):
    # The types besides dicts and lists that PyTorch's weights_only loader
    # takes; MultiStepLR keeps its milestones in a Counter.
    t = make((2,), fg.float32)
    obj = {
        "milestones": Counter({30: 1, 80: 2}),
        "set": {1, "a", (2, 3)},
        "frozen": frozenset({0.5}),
        "bytes": b"\x00\xffab",
        "bytearray": bytearray(b"xy"),
        "complex": complex(1.5, -math.inf),
        "tensors": {t},
    }
    for r in roundtrip(obj, tmp_path):
        assert type(r["milestones"]) is Counter and r["milestones"] == obj["milestones"]
        assert list(r["milestones"]) == [30, 80]
        assert type(r["set"]) is set and r["set"] == obj["set"]
        assert type(r["frozen"]) is frozenset and r["frozen"] == obj["frozen"]
        assert type(r["bytes"]) is bytes and r["bytes"] == obj["bytes"]
        assert type(r["bytearray"]) is bytearray and r["bytearray"] == obj["bytearray"]
        assert r["complex"] == complex(1.5, -math.inf)
        (back,) = r["tensors"]
        same(back, t)


def test_a_tensor_referenced_twice_is_stored_once_and_loads_as_one(tmp_path):
    t = make((4,), fg.float32)
    p = tmp_path / "x"
    fg.save({"a": t, "b": [t, t]}, p)
    r = fg.load(p)
    assert r["a"] is r["b"][0] is r["b"][1]
    np_st = pytest.importorskip("safetensors.numpy")
    assert list(np_st.load_file(str(p))) == ["a"]


def test_names_that_collide_are_made_unique(tmp_path):
    obj = {"a.b": fg.ones(1), "a": {"b": fg.zeros(1)}, "__metadata__": fg.full((1,), 2.0)}
    for r in roundtrip(obj, tmp_path):
        assert r["a.b"].tolist() == [1.0] and r["a"]["b"].tolist() == [0.0]
        assert r["__metadata__"].tolist() == [2.0]


def test_parameters_and_requires_grad_survive(tmp_path):
    w = nn.Parameter(make((2, 2), fg.float32))
    frozen = nn.Parameter(make((2,), fg.float32), requires_grad=False)
    leaf = make((3,), fg.float64).requires_grad_(True)
    for r in roundtrip({"w": w, "f": frozen, "l": leaf, "n": fg.ones(1)}, tmp_path):
        assert isinstance(r["w"], nn.Parameter) and r["w"].requires_grad
        assert isinstance(r["f"], nn.Parameter) and not r["f"].requires_grad
        assert type(r["l"]) is fg.Tensor and r["l"].requires_grad and r["l"].is_leaf
        assert not r["n"].requires_grad
        same(r["w"], w)


def test_pathlike_str_and_file_objects(tmp_path):
    t = make((3,), fg.int64)
    fg.save(t, str(tmp_path / "s"))
    same(fg.load(str(tmp_path / "s")), t)
    with open(tmp_path / "f", "wb") as fh:
        fg.save(t, fh)
    with open(tmp_path / "f", "rb") as fh:
        same(fg.load(fh), t)
    with pytest.raises(AttributeError, match="a file-like object with a 'write' attribute"):
        fg.save(t, 123)
    with pytest.raises(AttributeError, match="a file-like object with a 'read' attribute"):
        fg.load(123)


def test_map_location(tmp_path):
    p = tmp_path / "m"
    fg.save({"a": fg.ones(2)}, p)
    same(fg.load(p, map_location="cpu")["a"], fg.ones(2))
    same(fg.load(p, map_location={"cuda:0": "cpu"})["a"], fg.ones(2))
    same(fg.load(p, map_location=lambda t, loc: t * 2)["a"], fg.full((2,), 2.0))
    with pytest.raises(RuntimeError, match="device 'cuda:0'"):
        fg.load(p, map_location="cuda:0")


# ----- interop with the safetensors package ------------------------------------------------


def test_safetensors_package_reads_our_files_and_we_read_its(tmp_path):
    np_st = pytest.importorskip("safetensors.numpy")
    sd = OrderedDict(
        (f"{dt}", make((3, 5), dt, i)) for i, dt in enumerate(DTYPES)
    )  # fmt: skip
    sd["empty"] = fg.zeros(0, 4)
    fg.save(sd, tmp_path / "ours")
    theirs = np_st.load_file(str(tmp_path / "ours"))
    assert set(theirs) == set(sd)
    for k, t in sd.items():
        np.testing.assert_array_equal(theirs[k], t.numpy())
        assert theirs[k].dtype == t.numpy().dtype
    # A file written by the package (no ferrograd metadata) loads as name -> tensor.
    arrays = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "y": np.array([True, False])}
    np_st.save_file(arrays, str(tmp_path / "theirs"), metadata={"note": "hi"})
    r = fg.load(tmp_path / "theirs")
    assert type(r) is dict and set(r) == {"x", "y"}
    np.testing.assert_array_equal(r["x"].numpy(), arrays["x"])
    np.testing.assert_array_equal(r["y"].numpy(), arrays["y"])
    mapped = fg.load(tmp_path / "theirs", mmap=True)
    np.testing.assert_array_equal(mapped["x"].numpy(), arrays["x"])
    with open(tmp_path / "theirs", "rb") as fh:
        same(fg.load(io.BytesIO(fh.read()))["x"], r["x"])


# ----- mmap ----------------------------------------------------------------------------------


def test_mmap_views_the_file_and_writes_stay_private(tmp_path):
    p = tmp_path / "m"
    sd = OrderedDict(a=make((64, 64), fg.float32), b=make((7,), fg.bool), c=make((3,), fg.int64))
    fg.save(sd, p)
    m = fg.load(p, mmap=True)
    for k in sd:
        same(m[k], sd[k])
    m["a"].add_(1.0)
    m["b"].logical_not()
    same(m["a"], sd["a"] + 1.0)
    # The write copied the page for this process only: the file is unchanged.
    same(fg.load(p)["a"], sd["a"])
    # An atomic save replaces the file; the mapping keeps the old contents.
    fg.save({"a": fg.zeros(64, 64)}, p)
    same(m["c"], sd["c"])
    same(m["a"], sd["a"] + 1.0)
    with pytest.raises(ValueError, match="file path in order to use the mmap"):
        fg.load(io.BytesIO(b""), mmap=True)


def test_mmap_copies_tensors_another_writer_left_misaligned(tmp_path):
    # The format does not require alignment; such tensors are copied, not viewed.
    head = json.dumps({"a": {"dtype": "F64", "shape": [2], "data_offsets": [0, 16]},
                       "b": {"dtype": "I64", "shape": [1], "data_offsets": [16, 24]}}).encode()
    head += b" " * ((-(8 + len(head)) % 8) + 3)  # fmt: skip
    data = struct.pack("<2dq", 1.5, -2.25, 7)
    p = tmp_path / "odd"
    p.write_bytes(raw_file(head, data, pad=False))
    for kw in ({"mmap": True}, {}):
        r = fg.load(p, **kw)
        assert r["a"].tolist() == [1.5, -2.25] and r["b"].tolist() == [7]


def test_mmap_outlives_dropping_everything_else(tmp_path):
    p = tmp_path / "m"
    fg.save({"a": fg.arange(10), "b": fg.ones(3)}, p)
    a = fg.load(p, mmap=True)["a"]
    os.unlink(p)
    import gc

    gc.collect()
    assert a.tolist() == list(range(10))


# ----- bad files -----------------------------------------------------------------------------


def raw_file(header, data=b"", length=None, pad=True):
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    if pad:
        h += b" " * (-(8 + len(h)) % 8)
    n = len(h) if length is None else length
    return struct.pack("<Q", n) + h + data


def good_file():
    buf = io.BytesIO()
    fg.save(OrderedDict(a=fg.arange(4), b=fg.ones(2)), buf)
    return buf.getvalue()


F32 = struct.pack("<3f", 1.0, 2.0, 3.0)

BAD_FILES = [
    ("empty", b"", "too short"),
    ("seven bytes", b"\x01\x00\x00\x00\x00\x00\x00", "too short"),
    ("truncated data", good_file()[:-3], "truncated"),
    ("truncated header", good_file()[:20], "length field says"),
    ("header length beyond file", raw_file({}, length=1 << 40), "length field says"),
    ("bad json", raw_file(b"{'a': 1,"), "not valid JSON"),
    ("bad utf-8", raw_file(b'{"\xff": 1}'), "not valid JSON"),
    ("header not an object", raw_file([1, 2]), "not an object"),
    ("entry not an object", raw_file({"a": 3}), "not an object"),
    ("no dtype", raw_file({"a": {"shape": [1], "data_offsets": [0, 4]}}, F32[:4]), "no dtype"),
    ("unknown dtype", raw_file({"a": {"dtype": "Q7", "shape": [3], "data_offsets": [0, 12]}}, F32),
     "unknown dtype 'Q7'"),
    ("unsupported dtype", raw_file({"a": {"dtype": "U16", "shape": [2], "data_offsets": [0, 4]}},
                                   F32[:4]), "U16, which ferrograd does not support"),
    ("negative dim", raw_file({"a": {"dtype": "F32", "shape": [-3], "data_offsets": [0, 12]}}, F32),
     "invalid shape"),
    ("offsets reversed", raw_file({"a": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}}, F32),
     "invalid data_offsets"),
    ("shape/offset mismatch", raw_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 12]}},
                                       F32), "needs 8 bytes"),
    ("offsets beyond data", raw_file({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}},
                                     F32), "truncated"),
    ("overlap", raw_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                          "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, F32),
     "overlaps"),
    ("gap", raw_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, F32), "gap"),
    ("trailing bytes", raw_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, F32),
     "after the last tensor"),
    ("metadata not strings", raw_file({"__metadata__": {"x": 1}}), "__metadata__"),
    ("bool byte", raw_file({"a": {"dtype": "BOOL", "shape": [3], "data_offsets": [0, 3]}},
                           b"\x00\x01\x02"), "other than 0 or 1"),
    ("zip archive", b"PK\x03\x04" + b"\x00" * 60, "zip archive"),
    ("tree names a missing tensor",
     raw_file({"__metadata__": {"ferrograd.tree": '{"tensor": "nope"}'}}), "'nope'"),
    ("tree not json", raw_file({"__metadata__": {"ferrograd.tree": "{oops"}}), "ferrograd.tree"),
    ("tree bad node", raw_file({"__metadata__": {"ferrograd.tree": '{"exec": "x"}'}}),
     "unexpected node"),
    ("attrs not an object", raw_file({"__metadata__": {"ferrograd.tensors": "[1]"}}),
     "ferrograd.tensors"),
    ("tree unhashable key",
     raw_file({"__metadata__": {"ferrograd.tree": '{"dict": [[{"list": []}, 1]]}'}}),
     "list is not hashable"),
    ("tree unhashable set item",
     raw_file({"__metadata__": {"ferrograd.tree": '{"set": [{"dict": []}]}'}}),
     "dict is not hashable"),
    ("tree bad base64", raw_file({"__metadata__": {"ferrograd.tree": '{"bytes": "@@"}'}}),
     "not valid base64"),
    ("tree bad complex",
     raw_file({"__metadata__": {"ferrograd.tree": '{"complex": ["a", 1]}'}}), "unexpected node"),
]  # fmt: skip


@pytest.mark.parametrize("name,data,match", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_files_raise_naming_the_problem(tmp_path, name, data, match):
    p = tmp_path / "bad"
    p.write_bytes(data)
    for kw in ({}, {"mmap": True}):
        with pytest.raises(RuntimeError, match=match):
            fg.load(p, **kw)
    with pytest.raises(RuntimeError, match=match):
        fg.load(io.BytesIO(data))


def test_a_failed_load_leaves_the_model_unchanged(tmp_path):
    model = nn.Linear(3, 2)
    before = [p.detach().clone() for p in model.parameters()]
    p = tmp_path / "ck"
    fg.save(OrderedDict(weight=fg.zeros(2, 3), bias=fg.zeros(2)), p)
    p.write_bytes(p.read_bytes()[:-4])
    with pytest.raises(RuntimeError, match="truncated"):
        sd = fg.load(p)
        with fg.no_grad():
            model.weight.copy_(sd["weight"])
    for a, b in zip(model.parameters(), before):
        same(a, b)


def test_private_reader_checks_ranges_itself():
    # _C._st_read never trusts its caller's offsets.
    data = raw_file({}, F32)
    with pytest.raises(RuntimeError, match="beyond the end"):
        fg._C._st_read(data, [("a", "F32", [3], 20, 12)], False)
    with pytest.raises(RuntimeError, match="needs 12"):
        fg._C._st_read(data, [("a", "F32", [3], 8, 8)], False)
    with pytest.raises(RuntimeError, match="unsupported dtype"):
        fg._C._st_read(data, [("a", "U16", [2], 8, 4)], False)


# ----- weights_only and pickled objects ------------------------------------------------------


class Custom:
    def __init__(self, w):
        self.w = w
        self.note = "x"


MARKER = {"path": None}


class Evil:
    def __reduce__(self):
        return (open, (MARKER["path"], "w"))


def test_other_objects_need_weights_only_false(tmp_path):
    t = make((3,), fg.float32)
    p = tmp_path / "c"
    fg.save({"obj": Custom(t), "t": t}, p)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed.*Custom"):
        fg.load(p)
    r = fg.load(p, weights_only=False)
    assert isinstance(r["obj"], Custom) and r["obj"].note == "x"
    # The tensor inside the pickled object is a safetensors entry, shared with "t".
    assert r["obj"].w is r["t"]
    same(r["t"], t)


def test_weights_only_never_runs_code_from_the_file(tmp_path):
    MARKER["path"] = str(tmp_path / "pwned")
    p = tmp_path / "evil"
    fg.save({"x": Evil()}, p)
    with pytest.raises(pickle.UnpicklingError):
        fg.load(p)
    with pytest.raises(pickle.UnpicklingError):
        fg.load(io.BytesIO(p.read_bytes()))
    assert not os.path.exists(MARKER["path"])


def test_whole_module_with_weights_only_false(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    p = tmp_path / "model"
    fg.save(model, p)
    m2 = fg.load(p, weights_only=False)
    x = make((5, 3), fg.float32)
    same(m2(x), model(x))
    assert all(isinstance(q, nn.Parameter) and q.requires_grad for q in m2.parameters())


# ----- atomic saves --------------------------------------------------------------------------


def test_failure_mid_write_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    p = tmp_path / "ck"
    old = OrderedDict(w=make((100,), fg.float32))
    fg.save(old, p)

    def crash(path, header, tensors):
        with open(path, "wb") as fh:
            fh.write(header[:10])
        raise KeyboardInterrupt("power cut")

    monkeypatch.setattr(S, "_write_file", crash)
    with pytest.raises(KeyboardInterrupt):
        fg.save(OrderedDict(w=fg.zeros(100)), p)
    same(fg.load(p)["w"], old["w"])
    assert os.listdir(tmp_path) == ["ck"]  # the temporary file is gone


def test_new_file_gets_the_usual_permissions(tmp_path):
    mask = os.umask(0o022)
    try:
        fg.save(fg.ones(1), tmp_path / "n")
        assert os.stat(tmp_path / "n").st_mode & 0o777 == 0o644
        os.chmod(tmp_path / "n", 0o600)
        fg.save(fg.ones(1), tmp_path / "n")
        assert os.stat(tmp_path / "n").st_mode & 0o777 == 0o600
    finally:
        os.umask(mask)


CHILD = """
import sys, ferrograd as fg
path = sys.argv[1]
k = 0
while True:
    k += 1
    fg.save({"k": k, "w": fg.full((2_000_000,), float(k))}, path)
    print(k, flush=True)
"""


def test_killed_saver_never_leaves_a_broken_checkpoint(tmp_path):
    p = tmp_path / "ck"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for delay in (0.05, 0.13, 0.21):
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(p)], stdout=subprocess.PIPE, env=env
        )
        proc.stdout.readline()  # one save finished
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        r = fg.load(p)
        assert r["w"].shape == (2_000_000,)
        assert float(r["w"][0]) == float(r["w"][-1]) == r["k"]
    # What the killed saves left behind (their temporary files) goes with the next save.
    fg.save({"k": 0}, p)
    assert os.listdir(tmp_path) == ["ck"]


# ----- pickle and deepcopy -------------------------------------------------------------------


def test_tensor_pickle_and_deepcopy():
    t = make((2, 3), fg.float64).requires_grad_(True)
    t.grad = fg.ones(2, 3, dtype=fg.float64)
    for c in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        same(c, t)
        assert c.requires_grad and c.is_leaf and c.data_ptr() != t.data_ptr()
    c = copy.deepcopy(t)
    same(c.grad, t.grad)  # as PyTorch's, deepcopy copies .grad
    assert c.grad.data_ptr() != t.grad.data_ptr()
    a, b = copy.deepcopy([t, t])
    assert a is b
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(t * 2)


def test_parameter_pickle_and_deepcopy_keep_the_type():
    p = nn.Parameter(make((3,), fg.float32))
    q = nn.Parameter(make((3,), fg.int64), requires_grad=False)
    for f in (lambda x: pickle.loads(pickle.dumps(x)), copy.deepcopy):
        c, d = f(p), f(q)
        assert type(c) is nn.Parameter and c.requires_grad
        assert type(d) is nn.Parameter and not d.requires_grad and d.dtype == fg.int64
        same(c, p)
        same(d, q)


def test_module_deepcopy_and_pickle_keep_shared_weights():
    enc = nn.Linear(4, 4)
    dec = nn.Linear(4, 4)
    dec.weight = enc.weight  # tied
    model = nn.Sequential(enc, nn.ReLU(), dec)
    x = make((2, 4), fg.float32)
    for c in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert c[0].weight is c[2].weight
        assert c[0].weight is not enc.weight
        assert type(c[0].weight) is nn.Parameter
        same(c(x), model(x))
        with fg.no_grad():
            c[0].weight.add_(1.0)
        same(enc.weight, dec.weight)  # the original is untouched
        np.testing.assert_allclose((c[2].weight - enc.weight).detach().numpy(), 1.0, rtol=1e-6)


class Tag:
    """A user object: pickled, so only weights_only=False loads it."""

    def __init__(self, v):
        self.v = v


def test_tensor_attributes_survive_save_and_load():
    t = fg.ones(2)
    t.name = "w"
    t.meta = {"lr_scale": 0.5, "groups": [1, 2]}
    p = nn.Parameter(fg.zeros(3))
    p.tied_to = t
    buf = io.BytesIO()
    fg.save({"t": t, "p": p}, buf)
    buf.seek(0)
    out = fg.load(buf)
    assert out["t"].name == "w" and out["t"].meta == {"lr_scale": 0.5, "groups": [1, 2]}
    assert isinstance(out["p"], nn.Parameter) and out["p"].tied_to is out["t"]


def test_pickled_tensor_attribute_needs_weights_only_false():
    t = fg.ones(2)
    t.tag = Tag(3)
    buf = io.BytesIO()
    fg.save(t, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="weights_only"):
        fg.load(buf)
    buf.seek(0)
    assert fg.load(buf, weights_only=False).tag.v == 3


# ----- checksums -----------------------------------------------------------------------------


def crc32c_reference(data):
    """CRC-32C bit by bit (the Castagnoli polynomial, reflected), for checking ours."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def header_of(data):
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8 : 8 + n]), 8 + n


def test_crc32c_matches_the_standard():
    # The published check value, and ours against a bitwise reference on every path
    # (small, three interleaved streams, pieces joined on the thread pool).
    assert fg._C._crc32c_bytes(b"123456789") == 0xE3069283
    rng = np.random.default_rng(1)
    for n in (0, 1, 7, 8, 9, 4095, 3 * 4096 + 5):
        b = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert fg._C._crc32c_bytes(b) == crc32c_reference(b)
    big = rng.standard_normal(700_000)  # 5.6 MB: pieces of 1 MiB joined
    t = fg.from_numpy(big)
    want = crc32c_reference(big[:2000].tobytes())
    assert fg._C._crc32c([t[:2000]]) == [want]
    m = t.reshape(700, 1000)
    whole = fg._C._crc32c([t, t.float(), fg.zeros(0), m.t()])
    assert whole[0] == fg._C._crc32c_bytes(big.tobytes())
    assert whole[1] == fg._C._crc32c_bytes(big.astype(np.float32).tobytes())
    assert whole[2] == 0
    # A strided tensor's checksum is that of its elements in order (what save writes).
    assert whole[3] == fg._C._crc32c_bytes(np.ascontiguousarray(big.reshape(700, 1000).T).tobytes())


def test_each_tensor_and_the_header_carry_a_checksum(tmp_path):
    p = tmp_path / "ck"
    obj = {"w": make((3, 4), fg.float32), "mask": make((5,), fg.bool), "step": 7}
    fg.save(obj, p)
    data = p.read_bytes()
    header, start = header_of(data)
    meta = header["__metadata__"]
    assert meta["ferrograd.version"] == "2"
    sums = json.loads(meta["ferrograd.checksums"])
    assert sums["algorithm"] == "crc32c" and sorted(sums["tensors"]) == ["mask", "w"]
    for name in ("w", "mask"):
        a, b = header[name]["data_offsets"]
        assert int(sums["tensors"][name], 16) == crc32c_reference(data[start + a : start + b])
    # The header's checksum covers the header as written, less this one entry.
    rest = {k: v for k, v in meta.items() if k != "ferrograd.checksums"}
    canon = json.dumps({**header, "__metadata__": rest}, separators=(",", ":")).encode()
    assert int(sums["header"], 16) == crc32c_reference(canon)
    # Still a plain safetensors file for other readers.
    st = pytest.importorskip("safetensors.numpy")
    np.testing.assert_array_equal(st.load_file(str(p))["w"], obj["w"].numpy())


def test_every_flipped_bit_is_an_error(tmp_path):
    # A small checkpoint as a training loop writes one: every single-bit flip anywhere in
    # the file (data, header, length prefix, padding) raises instead of loading different
    # values; a flip in a tensor's bytes names that tensor.
    obj = {"model": OrderedDict(w=make((2, 3), fg.float32), b=make((2,), fg.float64)),
           "mask": make((3,), fg.bool), "step": 1234, "lr": 0.01, "name": "run"}  # fmt: skip
    buf = io.BytesIO()
    fg.save(obj, buf)
    data = buf.getvalue()
    header, start = header_of(data)
    owner = {}
    for name, info in header.items():
        if name != "__metadata__":
            a, b = info["data_offsets"]
            for i in range(start + a, start + b):
                owner[i] = name
    silent = []
    for i in range(len(data)):
        for bit in range(8):
            bad = bytearray(data)
            bad[i] ^= 1 << bit
            try:
                fg.load(io.BytesIO(bytes(bad)))
            except RuntimeError as e:
                if i in owner and f"tensor '{owner[i]}' fails its checksum" not in str(e):
                    if "other than 0 or 1" not in str(e):  # a bool byte is refused first
                        raise
            else:
                silent.append((i, bit))
    assert silent == [], f"{len(silent)} flips loaded without an error: {silent[:10]}"
    # verify=False loads what the damaged file holds (a data flip gives another value).
    i = start + header["model.w"]["data_offsets"][0]
    bad = bytearray(data)
    bad[i] ^= 1
    r = fg.load(io.BytesIO(bytes(bad)), verify=False)
    assert not np.array_equal(r["model"]["w"].numpy(), obj["model"]["w"].numpy())


def test_a_damaged_tensor_is_named_from_a_path_and_a_mapping(tmp_path):
    p = tmp_path / "ck"
    fg.save({"enc.weight": fg.ones(1000), "dec.weight": fg.zeros(10)}, p)
    data = bytearray(p.read_bytes())
    header, start = header_of(bytes(data))
    a = header["enc.weight"]["data_offsets"][0]
    data[start + a + 123] ^= 0x10
    p.write_bytes(bytes(data))
    for kw in ({}, {"mmap": True}):
        with pytest.raises(RuntimeError, match=r"tensor 'enc.weight' fails its checksum \(crc32c"):
            fg.load(p, **kw)
        assert fg.load(p, verify=False, **kw)["dec.weight"].sum().item() == 0


def test_files_without_checksums_still_load(tmp_path):
    # A file written before checksums existed (format 1) and another writer's file.
    old = raw_file({"__metadata__": {"format": "pt", "ferrograd.version": "1",
                                     "ferrograd.tree": '{"dict":[["a",{"tensor":"a"}]]}'},
                    "a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}}, F32)  # fmt: skip
    assert fg.load(io.BytesIO(old))["a"].tolist() == [1.0, 2.0, 3.0]
    plain = raw_file({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}}, F32)
    assert fg.load(io.BytesIO(plain))["a"].tolist() == [1.0, 2.0, 3.0]
    # A format that stores checksums but has none lost them.
    lost = raw_file({"__metadata__": {"ferrograd.version": "2"},
                     "a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}}, F32)  # fmt: skip
    with pytest.raises(RuntimeError, match="has no checksums although its format"):
        fg.load(io.BytesIO(lost))
    assert fg.load(io.BytesIO(lost), verify=False)["a"].tolist() == [1.0, 2.0, 3.0]


# ----- where a save writes -------------------------------------------------------------------


def test_a_symlink_is_written_through(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    target = real / "ck"
    fg.save(fg.zeros(2), target)
    link = tmp_path / "link"
    link.symlink_to(target)
    fg.save(fg.ones(3), link)  # as open(link, "wb") would: the file it points to changes
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert fg.load(target).tolist() == [1.0, 1.0, 1.0]
    # A dangling link creates its target.
    dangling = tmp_path / "dangling"
    dangling.symlink_to(real / "new")
    fg.save(fg.ones(1), dangling)
    assert dangling.is_symlink() and fg.load(real / "new").tolist() == [1.0]
    assert sorted(os.listdir(real)) == ["ck", "new"]


READ_ONLY = """
import os, sys, ferrograd as fg
if os.geteuid() == 0:
    os.setgid(65534); os.setuid(65534)  # root may write anything: test as 'nobody'
path = sys.argv[1]
try:
    fg.save(fg.ones(3), path)
except PermissionError as e:
    print("REFUSED", e)
print(fg.load(path).tolist())
"""


def test_a_read_only_checkpoint_is_not_replaced():
    # PyTorch's torch.save opens the target for writing: a file this user may not write
    # raises PermissionError and stays as it was, even in a writable directory. (A
    # directory under /tmp, which every user can reach, unlike pytest's.)
    import shutil
    import tempfile
    from pathlib import Path

    tmp_path = Path(tempfile.mkdtemp(prefix="fg-readonly-"))
    try:
        _check_read_only(tmp_path)
    finally:
        shutil.rmtree(tmp_path)


def _check_read_only(tmp_path):
    os.chmod(tmp_path, 0o777)
    p = tmp_path / "ck"
    fg.save(fg.zeros(2), p)
    os.chmod(p, 0o444)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", READ_ONLY, str(p)], capture_output=True,
                       text=True, env=env, timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert f"REFUSED [Errno 13] Permission denied: '{p}'" in r.stdout
    assert "[0.0, 0.0]" in r.stdout
    assert os.stat(p).st_mode & 0o777 == 0o444
    assert sorted(os.listdir(tmp_path)) == ["ck"]


KILLED_MID_SAVE = """
import os, signal, sys, ferrograd as fg
from ferrograd import serialization as S
real = S._write_file
def killed(path, header, tensors):
    with open(path, "wb") as fh:
        fh.write(header)  # part of a file, then the process dies
    os.kill(os.getpid(), signal.SIGKILL)
S._write_file = killed
fg.save({"w": fg.ones(1000)}, sys.argv[1])
"""


def test_later_saves_remove_what_interrupted_saves_left(tmp_path):
    p = tmp_path / "ck"
    fg.save({"w": fg.zeros(1000)}, p)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for _ in range(3):
        r = subprocess.run([sys.executable, "-c", KILLED_MID_SAVE, str(p)], env=env, timeout=60)
        assert r.returncode == -signal.SIGKILL
    # Each save removed the previous one's leftover before it was killed in turn.
    left = sorted(n for n in os.listdir(tmp_path) if n != "ck")
    assert len(left) == 1 and left[0].startswith(".ck.ferrograd-"), left
    # Not ours to remove: another file's temporary, an older pattern, other names.
    keep = [".other.ferrograd-1-abc.tmp", ".ck.abc123.tmp", "ck.tmp", "notes"]
    for n in keep:
        (tmp_path / n).write_bytes(b"x")
    # One being written right now by a live process (it holds the lock).
    import fcntl

    live = tmp_path / f".ck.ferrograd-{os.getpid()}-live.tmp"
    fd = os.open(live, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        fg.save({"w": fg.ones(1000)}, p)
        assert sorted(os.listdir(tmp_path)) == sorted(["ck", live.name, *keep])
    finally:
        os.close(fd)
    fg.save({"w": fg.ones(1000)}, p)  # its lock is gone now: it is a leftover
    assert sorted(os.listdir(tmp_path)) == sorted(["ck", *keep])
    assert fg.load(p)["w"].sum().item() == 1000
