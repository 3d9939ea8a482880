"""A minimal safetensors writer and reader (no dependency on the PyPI package).

Format: u64 little-endian header length N, N bytes of JSON
{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}},
then the raw little-endian tensor bytes. Offsets are relative to the end of
the header. The writer sorts tensors by name and pads the header with spaces
to a multiple of 8 bytes, so equal inputs give equal bytes.
"""
import json
import struct

import numpy as np

DTYPES = ("F32", "F16", "BF16")


def f32_to_bf16_bits(a):
    """Round an f32 array to bfloat16 (nearest even) and return the u16 bits."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def bf16_bits_to_f32(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def encode(arr, dtype):
    """Bytes of an array stored as dtype ("F32", "F16" or "BF16")."""
    a = np.asarray(arr, dtype=np.float32)
    if dtype == "F32":
        return a.astype("<f4").tobytes()
    if dtype == "F16":
        return a.astype("<f2").tobytes()
    if dtype == "BF16":
        return f32_to_bf16_bits(a).astype("<u2").tobytes()
    raise ValueError("unsupported dtype " + dtype)


def decode(buf, dtype, shape):
    """An f32 numpy array from stored bytes."""
    if dtype == "F32":
        a = np.frombuffer(buf, dtype="<f4").astype(np.float32)
    elif dtype == "F16":
        a = np.frombuffer(buf, dtype="<f2").astype(np.float32)
    elif dtype == "BF16":
        a = bf16_bits_to_f32(np.frombuffer(buf, dtype="<u2"))
    else:
        raise ValueError("unsupported dtype " + dtype)
    return a.reshape(shape)


def save(path, tensors, dtype="F32", metadata=None):
    """Write {name: array} with every tensor stored as dtype."""
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        b = encode(tensors[name], dtype)
        header[name] = {"dtype": dtype, "shape": list(np.shape(tensors[name])),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in sorted(metadata.items())}
    h = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def load(path):
    """Read a safetensors file into ({name: f32 numpy array}, {name: dtype})."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out, dtypes = {}, {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        out[name] = decode(data[base + b:base + e], info["dtype"], info["shape"])
        dtypes[name] = info["dtype"]
    return out, dtypes
