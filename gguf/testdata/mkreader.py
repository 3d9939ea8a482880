#!/usr/bin/env python3
"""Writes reader.gguf with llama.cpp's own gguf-py writer and reader.json with
gguf-py's own reader: every metadata value type (scalars and arrays), a
non-default alignment and tensors of several ggml types, so gguf's Go reader
is held to llama.cpp's implementation, not to cflow's writer.

    PYTHONPATH=bench/llama.cpp/gguf-py /usr/bin/python3 gguf/testdata/mkreader.py

(numpy from Debian's python3-numpy). CI reads the committed outputs.
"""
import hashlib, json, os, sys
import numpy as np
from gguf import GGUFWriter, GGUFReader, GGUFValueType as T, GGMLQuantizationType as Q

here = os.path.dirname(os.path.abspath(__file__))
path = os.path.join(here, "reader.gguf")
w = GGUFWriter(path, "llama")
w.add_architecture()
w.add_custom_alignment(64)
w.add_uint8("t.u8", 200)
w.add_int8("t.i8", -100)
w.add_uint16("t.u16", 60000)
w.add_int16("t.i16", -30000)
w.add_uint32("t.u32", 4000000000)
w.add_int32("t.i32", -2000000000)
w.add_float32("t.f32", 0.1)
w.add_bool("t.bool", True)
w.add_string("t.str", "héllo ▁wörld")
w.add_uint64("t.u64", 18000000000000000000)
w.add_int64("t.i64", -9000000000000000000)
w.add_float64("t.f64", 1e-300)
w.add_key_value("t.arr_u8", [0, 1, 255], T.ARRAY, T.UINT8)
w.add_key_value("t.arr_i16", [-1, 2, -3], T.ARRAY, T.INT16)
w.add_key_value("t.arr_u32", [7, 8], T.ARRAY, T.UINT32)
w.add_key_value("t.arr_i32", [-5, 6, -7, 8], T.ARRAY, T.INT32)
w.add_key_value("t.arr_f32", [0.5, -1.25, 3e38], T.ARRAY, T.FLOAT32)
w.add_key_value("t.arr_bool", [True, False, True], T.ARRAY, T.BOOL)
w.add_key_value("t.arr_str", ["a", "", "<0x0A>", "ĠHello"], T.ARRAY, T.STRING)
w.add_key_value("t.arr_f64", [2.5, -0.0], T.ARRAY, T.FLOAT64)
w.add_key_value("t.arr_i64", [-1, 1 << 40], T.ARRAY, T.INT64)

rng = np.random.default_rng(34)
w.add_tensor("f32.weight", rng.standard_normal((3, 5)).astype(np.float32))
w.add_tensor("f16.weight", rng.standard_normal((2, 7)).astype(np.float16))
w.add_tensor("vec", rng.standard_normal((9,)).astype(np.float32))
for name, q, nbytes in [("q8.weight", Q.Q8_0, 34 * 4), ("q4.weight", Q.Q4_0, 18 * 2),
                        ("q4k.weight", Q.Q4_K, 144 * 2), ("q6k.weight", Q.Q6_K, 210),
                        ("bf16.weight", Q.BF16, 2 * 6)]:
    raw = rng.integers(0, 256, size=(2 if nbytes % 2 == 0 and q != Q.Q6_K else 1, nbytes // (2 if nbytes % 2 == 0 and q != Q.Q6_K else 1)), dtype=np.uint8)
    w.add_tensor(name, raw, raw_dtype=q)
w.add_tensor("cube", rng.standard_normal((2, 3, 4)).astype(np.float32))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()

r = GGUFReader(path)
out = {"kv": [], "tensors": [], "data_offset": int(r.data_offset), "alignment": int(r.alignment)}
for f in r.fields.values():
    if f.name.startswith("GGUF."):
        continue
    types = [int(t) for t in f.types]
    v = f.contents()
    if isinstance(v, float) and types[0] in (int(T.FLOAT32),):
        v = float(np.float32(v))
    out["kv"].append({"key": f.name, "types": types, "value": v})
for t in r.tensors:
    out["tensors"].append({"name": t.name, "type": int(t.tensor_type), "dims": [int(d) for d in t.shape],
                           "offset": int(t.data_offset - r.data_offset), "bytes": int(t.n_bytes),
                           "sha256": hashlib.sha256(bytes(np.asarray(t.data).tobytes())).hexdigest()})
with open(os.path.join(here, "reader.json"), "w") as fp:
    json.dump(out, fp, indent=1, ensure_ascii=False)
    fp.write("\n")
