"""``ferrograd.save`` and ``ferrograd.load``: checkpoints as safetensors files.

File format
-----------
Every file ``save`` writes is a valid safetensors file: an 8-byte little-endian
header length ``n``, ``n`` bytes of UTF-8 JSON (padded with spaces so the data
starts 8-byte aligned), then the tensors' raw little-endian elements (dtypes
``F64``, ``I64``, ``F32``, ``I32``, ``F16``, ``BF16``, ``I16``, ``I8``, ``U8``, ``BOOL``),
larger elements first so every tensor is
aligned for its dtype. ``safetensors.numpy.load_file`` and other frameworks
open it and see one entry per tensor, named by its path in the saved object
(``"fc.weight"``, ``"optimizer.state.0.exp_avg"``).

Checksums: ``__metadata__["ferrograd.checksums"]`` is a JSON string
``{"algorithm": "crc32c", "header": "...", "tensors": {name: "..."}}`` holding the
CRC-32C (8 hex digits) of every tensor's bytes and of the header itself (the JSON
header serialized without this entry). ``load`` checks them unless ``verify=False``,
so a flipped bit anywhere in the file is an error naming what changed. Files written
before checksums existed (``ferrograd.version`` 1) and other writers' files have none
and load unchecked.

The structure around the tensors is the JSON string ``__metadata__
["ferrograd.tree"]``; ``__metadata__["ferrograd.tensors"]`` records which
tensors were Parameters or required grad. A tree node is

* ``null``, ``true``/``false``, a JSON integer, a finite JSON number, a string;
* ``{"float": "nan" | "inf" | "-inf"}``;
* ``{"tensor": name}``: the tensor stored under ``name`` (two references to one
  tensor object store it once and load as one object);
* ``{"list": [...]}``, ``{"tuple": [...]}``, ``{"size": [...]}``;
* ``{"dict": [[key, value], ...]}`` or ``{"odict": ...}`` (an ``OrderedDict``),
  keys and values being nodes (int keys stay ints);
* ``{"counter": [[key, count], ...]}`` (a ``collections.Counter``, as in
  ``MultiStepLR.state_dict()``), ``{"set": [...]}``, ``{"frozenset": [...]}``,
  ``{"bytes": base64}``, ``{"bytearray": base64}``, ``{"complex": [re, im]}``:
  the other plain types PyTorch's ``weights_only`` loader accepts;
* ``{"dtype": "float32"}``, ``{"device": "cpu"}``;
* ``{"pickle": base64, "type": "module.Class"}``: any other object, pickled, its
  tensors stored as safetensors entries it refers to by name. Loading one
  needs ``weights_only=False``.

Each tensor is stored as its own contiguous data: two references to one
tensor object stay one tensor, but two different views of one storage load
as independent tensors (PyTorch's zip format keeps their sharing).

Loading parses this JSON and nothing else: unless ``weights_only=False`` is
passed, no code from the file is ever run. A safetensors file from another
writer (no ``ferrograd.tree``) loads as a ``dict`` of name -> tensor.
"""

from __future__ import annotations

import base64
import io
import json
import math
import os
import pickle
import re
import stat
import tempfile
from collections import Counter, OrderedDict
from typing import TYPE_CHECKING, Any

from . import _C
from ._C import Tensor

if TYPE_CHECKING:
    from typing import IO, Union

    # A path or a binary file object.
    FileLike = Union[str, os.PathLike[str], IO[bytes]]

__all__ = ["load", "save"]

DEFAULT_PROTOCOL = 2
_FORMAT_VERSION = "2"
# Written by ferrograd before checksums: loads unchecked.
_UNCHECKED_VERSIONS = {"1"}
_CHECKSUMS = "ferrograd.checksums"
_HEX8 = re.compile("[0-9a-f]{8}")
# The safetensors reference implementation refuses larger headers.
_MAX_HEADER = 100_000_000
_ITEMSIZE = {
    "F64": 8, "I64": 8, "F32": 4, "I32": 4, "F16": 2, "BF16": 2, "I16": 2,
    "I8": 1, "U8": 1, "BOOL": 1,
}  # fmt: skip
_ST_NAME = {
    "float64": "F64", "int64": "I64", "float32": "F32", "int32": "I32", "float16": "F16",
    "bfloat16": "BF16", "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL",
}  # fmt: skip
# Dtypes the safetensors format defines that ferrograd has no tensors for.
_OTHER_ST_DTYPES = {
    "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4", "U16", "U32", "U64", "C64",
}  # fmt: skip


class _Encoder:
    """Walks the object to save, giving each distinct tensor a unique name."""

    def __init__(self, pickle_module, pickle_protocol):
        self.tensors = []  # (name, tensor) in first-seen order
        self.names = {}  # id(tensor) -> name
        self.keep = []  # the tensors named, so their ids stay unique meanwhile
        self.used = set()
        self.attrs = {}
        self.pickle_module = pickle_module
        self.pickle_protocol = pickle_protocol

    def tensor(self, t, path):
        name = self.names.get(id(t))
        if name is not None:
            return name
        base = ".".join(path) or "tensor"
        name, k = base, 0
        # "__metadata__" is the header's own key, never a tensor's name.
        while name in self.used or name == "__metadata__":
            k += 1
            name = f"{base}#{k}"
        self.used.add(name)
        self.names[id(t)] = name
        self.keep.append(t)
        from .nn import Parameter

        attrs = {}
        if isinstance(t, Parameter):
            attrs["param"] = True
        if t.requires_grad:
            attrs["requires_grad"] = True
        # Python attributes (``t.name = ...``) travel with the tensor, as with
        # torch.save; plain values stay JSON, so weights_only loads them.
        extra = getattr(t, "__dict__", None)
        if extra:
            attrs["dict"] = self.node(dict(extra), path + ["__dict__"])
        if attrs:
            self.attrs[name] = attrs
        data = t.detach()
        if not data.is_contiguous():
            data = data.contiguous()
        self.tensors.append((name, data))
        return name

    def node(self, obj, path):
        if obj is None or isinstance(obj, (bool, str)) and type(obj) in (bool, str):
            return obj
        tp = type(obj)
        if tp is int:
            return obj
        if tp is float:
            return obj if math.isfinite(obj) else {"float": repr(obj)}
        if isinstance(obj, Tensor) and not _is_lazy(obj):
            return {"tensor": self.tensor(obj, path)}
        if tp is list:
            return {"list": [self.node(v, path + [str(i)]) for i, v in enumerate(obj)]}
        if tp is tuple:
            return {"tuple": [self.node(v, path + [str(i)]) for i, v in enumerate(obj)]}
        if tp in (dict, OrderedDict):
            items = [
                [self.node(k, path + ["key"]), self.node(v, path + [_key_part(k)])]
                for k, v in obj.items()
            ]
            return {"odict" if tp is OrderedDict else "dict": items}
        if tp is Counter:
            return {"counter": [[self.node(k, path + ["key"]), self.node(v, path + [_key_part(k)])]
                                for k, v in obj.items()]}
        if tp in (set, frozenset):
            return {tp.__name__: [self.node(v, path + [str(i)]) for i, v in enumerate(obj)]}
        if tp in (bytes, bytearray):
            return {tp.__name__: base64.b64encode(obj).decode("ascii")}
        if tp is complex:
            return {"complex": [self.node(obj.real, path), self.node(obj.imag, path)]}
        from ._size import Size

        if tp is Size:
            return {"size": list(obj)}
        if tp is _C.dtype:
            return {"dtype": str(obj).split(".")[-1]}
        from ._device import device

        if tp is device:
            # ``x.device`` (a ferrograd.device), as PyTorch's weights-only loader keeps it.
            return {"device": str(obj)}
        return self.pickled(obj, path)

    def pickled(self, obj, path):
        enc = self
        counter = [0]

        class _Pickler(self.pickle_module.Pickler):
            def persistent_id(self, o):
                # An uninitialized (lazy) parameter has no data: it pickles as
                # itself, so it loads as one.
                if isinstance(o, Tensor) and not _is_lazy(o):
                    counter[0] += 1
                    return ("ferrograd.tensor", enc.tensor(o, path + [f"obj{counter[0]}"]))
                return None

        buf = io.BytesIO()
        _Pickler(buf, protocol=self.pickle_protocol).dump(obj)
        tp = type(obj)
        return {
            "pickle": base64.b64encode(buf.getvalue()).decode("ascii"),
            "type": f"{tp.__module__}.{tp.__qualname__}",
        }


def _is_lazy(t):
    from .nn.parameter import UninitializedParameter

    return isinstance(t, UninitializedParameter)


def _key_part(k):
    return k if isinstance(k, str) else repr(k)


def _build(obj, pickle_module, pickle_protocol):
    """The padded JSON header and the tensors in file order."""
    enc = _Encoder(pickle_module, pickle_protocol)
    tree = enc.node(obj, [])
    meta = {
        "format": "pt",
        "ferrograd.version": _FORMAT_VERSION,
        "ferrograd.tree": json.dumps(tree, separators=(",", ":"), allow_nan=False),
    }
    if enc.attrs:
        meta["ferrograd.tensors"] = json.dumps(enc.attrs, separators=(",", ":"))
    # Larger elements first keeps every tensor aligned for its dtype (the
    # data starts 8-byte aligned), so a mapped file needs no copies.
    order = sorted(enc.tensors, key=lambda nt: -nt[1].dtype.itemsize)
    header = {"__metadata__": meta}
    offset = 0
    for name, t in order:
        nbytes = t.numel() * t.dtype.itemsize
        header[name] = {
            "dtype": _ST_NAME[str(t.dtype).split(".")[-1]],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + nbytes],
        }
        offset += nbytes
    tensors = [t for _, t in order]
    crcs = _C._crc32c(tensors)
    # The header's own checksum covers it without this entry, which goes last.
    meta[_CHECKSUMS] = json.dumps(
        {
            "algorithm": "crc32c",
            "header": f"{_C._crc32c_bytes(_canonical(header)):08x}",
            "tensors": {name: f"{c:08x}" for (name, _), c in zip(order, crcs)},
        },
        separators=(",", ":"),
    )
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-(8 + len(raw)) % 8)
    return raw, tensors


def _canonical(header):
    """The bytes the header checksum covers: the header as ``save`` serializes it,
    without the checksums entry."""
    meta = header.get("__metadata__")
    if isinstance(meta, dict) and _CHECKSUMS in meta:
        meta = {k: v for k, v in meta.items() if k != _CHECKSUMS}
        header = {k: (meta if k == "__metadata__" else v) for k, v in header.items()}
    return json.dumps(header, separators=(",", ":")).encode("utf-8")


def _write_file(path, header, tensors):
    # A seam for tests that simulate a crash mid-write.
    _C._st_write(path, header, tensors, True)


def _new_file_mode(path):
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def save(
    obj: object, f: FileLike, pickle_module: Any = pickle, pickle_protocol: int = DEFAULT_PROTOCOL
) -> None:
    """Saves ``obj`` (a tensor, a state dict, nested dicts/lists/tuples of tensors,
    numbers, strings, None) to ``f``, a path or a writable binary file object.

    The file is a safetensors file (see this module's docstring), with a CRC-32C
    checksum of every tensor and of the header that ``load`` verifies; objects of
    other types are pickled inside it and need ``load(..., weights_only=False)``.

    Saving to a path is atomic: the data goes to a temporary file in the same
    directory (``.<name>.ferrograd-<pid>-<random>.tmp``, locked while it is written),
    is flushed to disk, then renamed over ``f``, so a crash at any point leaves either
    the previous file or the new one, never a mix. A later save to the same path
    removes the temporary files that interrupted saves left behind (only unlocked
    ones, which no live process is writing). As with PyTorch, a target that cannot be
    opened for writing (read-only) raises ``PermissionError`` and is left alone, and a
    symbolic link is written through: the file it points to is replaced, the link
    stays.
    """
    header, tensors = _build(obj, pickle_module, pickle_protocol)
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        _save_path(path, header, tensors)
        return
    if not hasattr(f, "write"):
        # PyTorch's class and wording.
        raise AttributeError(
            "expected 'f' to be string, path, or a file-like object with a 'write' attribute"
        )
    f.write(_C._st_write(None, header, tensors, False))


def _save_path(path, header, tensors):
    if os.path.exists(path):
        # What PyTorch's open(path, "wb") would meet: a read-only file (for this user),
        # a directory. The file is not truncated by this probe.
        os.close(os.open(path, os.O_WRONLY | os.O_CLOEXEC))
    # A symbolic link is written through, as open() does: the rename replaces the
    # file it points to (which need not exist yet), in that file's directory.
    target = os.path.realpath(path)
    directory = os.path.dirname(target)
    base = os.path.basename(target)
    mode = _new_file_mode(target)
    _remove_stale_temporaries(directory, base)
    fd, tmp = _locked_temporary(directory, base)
    try:
        try:
            _write_file(tmp, header, tensors)
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    finally:
        os.close(fd)  # releases the lock
    # The rename itself is durable only once the directory is flushed.
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def _temporary_pattern(base):
    return re.compile(r"\." + re.escape(base) + r"\.ferrograd-[0-9]+-[A-Za-z0-9_]+\.tmp")


def _locked_temporary(directory, base):
    """A new temporary file for a save of ``base``, locked (``flock``) until the save
    is over, so no other save takes it for a leftover."""
    import fcntl

    while True:
        fd, tmp = tempfile.mkstemp(
            prefix=f".{base}.ferrograd-{os.getpid()}-", suffix=".tmp", dir=directory
        )
        fcntl.flock(fd, fcntl.LOCK_EX)
        # Between creating and locking it, a cleaner may have found it unlocked and
        # removed it: then the name is no longer this file, and another is made.
        try:
            st = os.stat(tmp)
        except FileNotFoundError:
            os.close(fd)
            continue
        own = os.fstat(fd)
        if (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino):
            return fd, tmp
        os.close(fd)


def _remove_stale_temporaries(directory, base):
    """Removes the temporary files earlier saves of ``base`` left when they were
    interrupted: names of the pattern only ferrograd makes, regular files, and only
    those whose lock nobody holds (a save in progress holds its file's lock; a
    killed process's lock is gone with it)."""
    try:
        import fcntl
    except ImportError:
        return
    pattern = _temporary_pattern(base)
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if not pattern.fullmatch(name):
            continue
        p = os.path.join(directory, name)
        try:
            fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # a live save is writing it
            own = os.fstat(fd)
            if not stat.S_ISREG(own.st_mode):
                continue
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino):
                os.unlink(p)
        except OSError:
            pass
        finally:
            os.close(fd)


class _Header:
    def __init__(self, entries, meta, data_start, doc):
        self.entries = entries  # (name, dtype, shape, abs_start, nbytes) in header order
        self.meta = meta
        self.data_start = data_start
        self.doc = doc  # the parsed JSON, in file order


def _bad(msg):
    return RuntimeError(f"ferrograd.load: {msg}")


def _parse_header(prefix, size, read_header):
    """Checks the length prefix and the JSON header against the file size."""
    if size < 8:
        raise _bad(
            f"the file is {size} bytes long, too short to be a safetensors file "
            "(it is truncated or not a checkpoint)"
        )
    if prefix[:4] == b"PK\x03\x04":
        raise _bad(
            "the file is a zip archive (a checkpoint written by torch.save?), not a "
            "safetensors file"
        )
    n = int.from_bytes(prefix[:8], "little")
    if n > size - 8:
        raise _bad(
            f"corrupt header: its length field says {n} bytes but the file has only "
            f"{size - 8} after it (the file is truncated or not a safetensors file)"
        )
    if n > _MAX_HEADER:
        raise _bad(f"corrupt header: its length {n} exceeds the limit of {_MAX_HEADER}")
    raw = read_header(n)
    if len(raw) != n:
        raise _bad("the file ended inside its header; it is truncated")
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise _bad(f"corrupt header: it is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise _bad("corrupt header: the JSON is not an object")
    doc = header
    header = dict(header)
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in meta.items()
    ):
        raise _bad("corrupt header: __metadata__ must map strings to strings")
    data_start = 8 + n
    data_len = size - data_start
    entries = []
    for name, info in header.items():
        if not isinstance(info, dict):
            raise _bad(f"corrupt header: the entry for tensor '{name}' is not an object")
        dt, shape, offs = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if not isinstance(dt, str):
            raise _bad(f"corrupt header: tensor '{name}' has no dtype")
        if dt not in _ITEMSIZE:
            if dt in _OTHER_ST_DTYPES:
                raise _bad(
                    f"tensor '{name}' has dtype {dt}, which ferrograd does not support "
                    "(F32, F64, I64 and BOOL are)"
                )
            raise _bad(f"tensor '{name}' has unknown dtype '{dt}'")
        if not isinstance(shape, list) or not all(
            type(d) is int and d >= 0 for d in shape
        ):
            raise _bad(f"corrupt header: tensor '{name}' has an invalid shape {shape!r}")
        if (
            not isinstance(offs, list)
            or len(offs) != 2
            or not all(type(o) is int for o in offs)
            or not 0 <= offs[0] <= offs[1]
        ):
            raise _bad(f"corrupt header: tensor '{name}' has invalid data_offsets {offs!r}")
        nbytes = math.prod(shape) * _ITEMSIZE[dt]
        if offs[1] - offs[0] != nbytes:
            raise _bad(
                f"tensor '{name}': shape {shape} of {dt} needs {nbytes} bytes but its "
                f"data_offsets {offs} span {offs[1] - offs[0]}"
            )
        entries.append((name, dt, shape, data_start + offs[0], nbytes, offs))
    end = 0
    for name, _, _, _, _, offs in sorted(entries, key=lambda e: (e[5][0], e[5][1])):
        if offs[0] < end:
            raise _bad(f"corrupt header: the data of tensor '{name}' overlaps another tensor's")
        if offs[0] > end:
            raise _bad(f"corrupt header: a gap of unused bytes precedes tensor '{name}'")
        end = offs[1]
        if end > data_len:
            raise _bad(
                f"tensor '{name}' ends at data byte {end} but the file holds only "
                f"{data_len}; the file is truncated"
            )
    if end != data_len:
        raise _bad(
            f"the file holds {data_len - end} bytes after the last tensor's data; it is "
            "corrupt or not a safetensors file"
        )
    return _Header([e[:5] for e in entries], meta, data_start, doc)


_VERIFY_HINT = "the file is corrupt; load(..., verify=False) skips the checksums"


def _checksums(hdr):
    """The stored CRC-32C values (``{"header": int, "tensors": {name: int}}``) after
    checking the header's own, or ``None`` for a file that has none."""
    raw = hdr.meta.get(_CHECKSUMS)
    if raw is None:
        version = hdr.meta.get("ferrograd.version")
        if version is not None and version not in _UNCHECKED_VERSIONS:
            # Every ferrograd file since checksums has them, so their entry was
            # damaged (one flipped bit cannot turn version "2" into "1").
            raise _bad(
                f"the header has no checksums although its format (ferrograd.version "
                f"{version!r}) stores them: {_VERIFY_HINT}"
            )
        return None
    def hex8(v):
        # Exactly as written (int() would also take "1A2B..." for "1a2b...": a flipped
        # bit 5 of a letter would pass unnoticed).
        if not (isinstance(v, str) and _HEX8.fullmatch(v)):
            raise ValueError(f"{v!r} is not 8 lowercase hex digits")
        return int(v, 16)

    try:
        sums = json.loads(raw)
        if sums.get("algorithm") != "crc32c":
            raise ValueError(f"unknown algorithm {sums.get('algorithm')!r}")
        head = hex8(sums["header"])
        per = {k: hex8(v) for k, v in sums["tensors"].items()}
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise _bad(f"corrupt metadata: {_CHECKSUMS} cannot be read ({e}): {_VERIFY_HINT}") from None
    got = _C._crc32c_bytes(_canonical(hdr.doc))
    if got != head:
        raise _bad(
            f"the header fails its checksum (crc32c {head:08x} stored, {got:08x} computed): "
            f"a tensor's name, shape or place, or a stored value, changed; {_VERIFY_HINT}"
        )
    names = [e[0] for e in hdr.entries]
    if sorted(per) != sorted(names):
        raise _bad(f"the checksums do not list the file's tensors: {_VERIFY_HINT}")
    return per


def _verify_tensors(names, tensors, per):
    got = _C._crc32c(tensors)
    for name, c in zip(names, got):
        if c != per[name]:
            raise _bad(
                f"tensor '{name}' fails its checksum (crc32c {per[name]:08x} stored, {c:08x} "
                f"computed): its data is corrupt; load(..., verify=False) skips the checksums"
            )


class _Decoder:
    def __init__(self, tensors, weights_only, pickle_module, pickle_load_args):
        self.tensors = tensors
        self.weights_only = weights_only
        self.pickle_module = pickle_module
        self.pickle_load_args = pickle_load_args

    def check(self, node):
        """Refuses, before anything is read, what weights_only forbids."""
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, list):
                stack.extend(n)
            elif isinstance(n, dict):
                if "pickle" in n and self.weights_only:
                    raise pickle.UnpicklingError(
                        "Weights only load failed: the file holds a pickled object of type "
                        f"{n.get('type', '?')!r}, which weights_only=True does not load. "
                        "Re-running ferrograd.load with weights_only=False will run code "
                        "from the file: do it only if you trust where it came from."
                    )
                for v in n.values():
                    if isinstance(v, (list, dict)):
                        stack.append(v)

    def tensor(self, name):
        try:
            return self.tensors[name]
        except (KeyError, TypeError):
            raise _bad(f"corrupt metadata: the object tree refers to a tensor {name!r} "
                       "the header does not have") from None

    def node(self, n):
        if n is None or isinstance(n, (bool, int, float, str)):
            return n
        if not isinstance(n, dict) or len(n) == 0:
            raise _bad(f"corrupt metadata: unexpected node {n!r} in the object tree")
        tag = next(iter(n))
        v = n[tag]
        if tag == "tensor":
            return self.tensor(v)
        if tag == "list" and isinstance(v, list):
            return [self.node(x) for x in v]
        if tag == "tuple" and isinstance(v, list):
            return tuple(self.node(x) for x in v)
        if tag in ("dict", "odict", "counter") and isinstance(v, list):
            out = {"dict": dict, "odict": OrderedDict, "counter": Counter}[tag]()
            for kv in v:
                if not isinstance(kv, list) or len(kv) != 2:
                    raise _bad("corrupt metadata: a dict item is not a [key, value] pair")
                out[self.hashable(self.node(kv[0]))] = self.node(kv[1])
            return out
        if tag in ("set", "frozenset") and isinstance(v, list):
            items = [self.hashable(self.node(x)) for x in v]
            return set(items) if tag == "set" else frozenset(items)
        if tag in ("bytes", "bytearray") and isinstance(v, str):
            try:
                data = base64.b64decode(v, validate=True)
            except ValueError:
                raise _bad(f"corrupt metadata: {tag} node is not valid base64") from None
            return data if tag == "bytes" else bytearray(data)
        if tag == "complex" and isinstance(v, list) and len(v) == 2:
            real, imag = (self.node(x) for x in v)
            if type(real) in (int, float) and type(imag) in (int, float):
                return complex(real, imag)
        if tag == "float" and v in ("nan", "inf", "-inf"):
            return float(v)
        if tag == "size" and isinstance(v, list) and all(type(d) is int for d in v):
            from ._size import Size

            return Size(v)
        if tag == "dtype" and v in _ST_NAME:
            return getattr(_C, v)
        if tag == "device" and v in ("cpu", "meta"):
            from ._device import device

            return device(v)
        if tag == "pickle" and isinstance(v, str):
            return self.unpickle(v)
        raise _bad(f"corrupt metadata: unexpected node {n!r} in the object tree")

    @staticmethod
    def hashable(key):
        try:
            hash(key)
        except TypeError:
            raise _bad(f"corrupt metadata: a dict key or set item of type "
                       f"{type(key).__name__} is not hashable") from None
        return key

    def unpickle(self, b64):
        dec = self

        class _Unpickler(self.pickle_module.Unpickler):
            def persistent_load(self, pid):
                if isinstance(pid, tuple) and len(pid) == 2 and pid[0] == "ferrograd.tensor":
                    return dec.tensor(pid[1])
                raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}")

        return _Unpickler(io.BytesIO(base64.b64decode(b64)), **self.pickle_load_args).load()


def _wrap_loaded(raw, attrs):
    from .nn import Parameter

    out = {}
    for name, t in raw.items():
        a = attrs.get(name, {})
        if a.get("param"):
            t = Parameter(t, requires_grad=bool(a.get("requires_grad")))
        elif a.get("requires_grad") and t.is_floating_point():
            t.requires_grad_(True)
        out[name] = t
    return out


def _map(tensors, map_location):
    if map_location is None:
        return tensors
    if callable(map_location):
        return {k: map_location(t, "cpu") for k, t in tensors.items()}
    if isinstance(map_location, dict):
        targets = set(map(str, map_location.values()))
    else:
        targets = {str(map_location)}
    bad = [t for t in targets if t.split(":")[0] != "cpu"]
    if bad:
        raise RuntimeError(
            f"ferrograd.load: cannot map tensors to device '{bad[0]}': ferrograd tensors "
            "live on the CPU"
        )
    return tensors


def load(
    f: FileLike,
    map_location: Any = None,
    pickle_module: Any = None,
    *,
    weights_only: bool | None = None,
    mmap: bool | None = None,
    verify: bool = True,
    **pickle_load_args: Any,
) -> Any:
    """Loads an object ``save`` wrote (or any safetensors file) from ``f``, a path
    or a readable binary file object.

    With ``weights_only=True`` (the default, as in PyTorch) only the JSON
    object tree is read and no code from the file runs; objects that were
    pickled raise ``pickle.UnpicklingError``. ``weights_only=False`` unpickles
    them, which can run arbitrary code: use it only on files you trust.
    With ``mmap=True`` (paths only) the tensors view a private copy-on-write
    mapping of the file: pages load lazily, in-place writes stay in this
    process and never reach the file (and the file being replaced by a later
    atomic ``save`` does not affect them; truncating the file in place while
    it is mapped would crash the process with SIGBUS, as with any mapping).
    Otherwise every tensor owns its memory. A truncated or corrupt file raises ``RuntimeError`` naming the
    problem before any object is returned.

    ``verify=True`` (the default; not a PyTorch argument) checks the CRC-32C checksums
    ``save`` stores, of the header before anything else is read and of every tensor
    once read: a flipped bit raises ``RuntimeError`` naming the tensor (or the header).
    With ``mmap=True`` this reads the whole file once. ``verify=False`` skips them, to
    recover what a damaged file still holds. Files without checksums (written before
    they existed, or by other programs) load unchecked.
    """
    if weights_only is None:
        weights_only = True
    if pickle_module is None:
        pickle_module = pickle
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            hdr = _parse_header(fh.read(8), size, fh.read)
            sums = _checksums(hdr) if verify else None
            tree = _tree(hdr)
            dec = _Decoder(None, weights_only, pickle_module, pickle_load_args)
            if tree is not None:
                dec.check(tree)
            _check_attributes(dec, hdr)
            raw = _C._st_read(fh.fileno(), hdr.entries, bool(mmap))
    else:
        if mmap:
            raise ValueError("f must be a file path in order to use the mmap argument")
        if not hasattr(f, "read"):
            raise AttributeError(
                "expected 'f' to be string, path, or a file-like object with a 'read' attribute"
            )
        data = f.read()
        if not isinstance(data, bytes):
            data = bytes(data)
        pos = 8
        hdr = _parse_header(data[:8], len(data), lambda n: data[pos : pos + n])
        sums = _checksums(hdr) if verify else None
        tree = _tree(hdr)
        dec = _Decoder(None, weights_only, pickle_module, pickle_load_args)
        if tree is not None:
            dec.check(tree)
        _check_attributes(dec, hdr)
        raw = _C._st_read(data, hdr.entries, False)
    names = [e[0] for e in hdr.entries]
    if sums is not None:
        _verify_tensors(names, raw, sums)
    attrs = _json_meta(hdr.meta, "ferrograd.tensors") or {}
    if not isinstance(attrs, dict):
        raise _bad("corrupt metadata: ferrograd.tensors is not an object")
    tensors = _map(_wrap_loaded(dict(zip(names, raw)), attrs), map_location)
    dec.tensors = tensors
    _restore_attributes(dec, tensors, attrs)
    if tree is None:
        return tensors
    return dec.node(tree)


def _check_attributes(dec, hdr):
    attrs = _json_meta(hdr.meta, "ferrograd.tensors")
    if isinstance(attrs, dict):
        for a in attrs.values():
            if isinstance(a, dict) and a.get("dict") is not None:
                dec.check(a["dict"])


def _restore_attributes(dec, tensors, attrs):
    for name, a in attrs.items():
        node = a.get("dict") if isinstance(a, dict) else None
        if node is None or name not in tensors:
            continue
        extra = dec.node(node)
        if not isinstance(extra, dict):
            raise _bad(f"corrupt metadata: the attributes of tensor {name!r} are not a dict")
        tensors[name].__dict__.update(extra)


def _json_meta(meta, key):
    s = meta.get(key)
    if s is None:
        return None
    try:
        return json.loads(s)
    except ValueError as e:
        raise _bad(f"corrupt metadata: {key} is not valid JSON ({e})") from None


def _tree(hdr):
    if "ferrograd.tree" not in hdr.meta:
        return None
    return _json_meta(hdr.meta, "ferrograd.tree")


def _deepcopy_tensor(t, memo):
    """``Tensor.__deepcopy__``: as PyTorch's, only leaves copy; the copy keeps the
    dtype, ``requires_grad``, deep copies of ``.grad`` and of the tensor's
    attributes, and the memo keeps
    a tensor referenced twice one object in the copy."""
    import copy

    if not t.is_leaf:
        raise RuntimeError(
            "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
            "protocol at the moment.  If you were attempting to deepcopy a module, this may "
            "be because of a torch.nn.utils.weight_norm usage, see "
            "https://github.com/pytorch/pytorch/pull/103001"
        )
    if id(t) in memo:
        return memo[id(t)]
    new = t.detach().clone()
    if t.requires_grad:
        new.requires_grad_(True)
    memo[id(t)] = new
    if t.grad is not None:
        new.grad = copy.deepcopy(t.grad, memo)
    # Python attributes (``t.name = ...``) are deep-copied too, after the memo
    # entry so an attribute referring back to the tensor finds the copy.
    for name, value in t.__dict__.items():
        setattr(new, name, copy.deepcopy(value, memo))
    return new
