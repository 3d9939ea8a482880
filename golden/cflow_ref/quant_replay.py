"""Bit-exact replay of quant.Encode (quant/encode.go) followed by dequantization.

Per row, groups of 32 consecutive values from column 0 (the last group
zero-padded; tile boundaries do not matter because tiles are 256 = 8·32
columns wide and cut rows only at multiples of 32 columns):
  s = max|w| / 7 (Q4_0) or / 127 (Q8_0), an f32 division;
  v = w / s, an f32 division;
  r = round half away from zero of v, done on the exact f32 quotient widened
      to f64 (sign(v)·floor(|v| + 0.5) is exact in f64 — not torch.round,
      which is half-to-even, and not in f32, where |v| + 0.5 can round);
  Q4_0: q = clip(r + 8, 0, 15); Q8_0: q = clip(r, -127, 127); s == 0 → q = 8 / 0;
  stored scale f16(s), round to nearest even;
  dequantized = f32(f16 scale) · (q − 8) (Q4_0) or · q (Q8_0), an f32 product.
"""
import numpy as np

GROUP = 32
KINDS = {"q4": (7, 8, 0, 15), "q8": (127, 0, -127, 127)}   # divisor, offset, lo, hi


def groups_of(w):
    """A 2-D array as f32 [rows, groups, GROUP] blocks, the last group zero-padded."""
    w = np.ascontiguousarray(w, dtype=np.float32)
    rows, cols = w.shape
    groups = -(-cols // GROUP)
    padded = np.zeros((rows, groups * GROUP), dtype=np.float32)
    padded[:, :cols] = w
    return padded.reshape(rows, groups, GROUP)


def ungroup(blocks, cols):
    """The inverse of groups_of: [rows, cols] without the padding."""
    rows, groups, _ = blocks.shape
    return blocks.reshape(rows, groups * GROUP)[:, :cols].copy()


def replay(w, kind):
    """Quantize-dequantize a 2-D f32 array as quant.Encode + Tile.Weight would
    (an N-D array: each matrix of its last two dimensions, row by row)."""
    if np.ndim(w) > 2:
        return replay(np.reshape(w, (-1, np.shape(w)[-1])), kind).reshape(np.shape(w))
    div, off, lo, hi = KINDS[kind]
    blocks = groups_of(w)
    amax = np.max(np.abs(blocks), axis=-1)                     # f32
    s = (amax / np.float32(div)).astype(np.float32)            # f32 division
    safe = np.where(s == 0, np.float32(1), s).astype(np.float32)
    v = (blocks / safe[..., None]).astype(np.float32)          # f32 division
    v64 = v.astype(np.float64)
    r = np.sign(v64) * np.floor(np.abs(v64) + 0.5)             # half away from zero, exact
    q = np.clip(r + off, lo, hi)
    q = np.where((s == 0)[..., None], off, q)
    scale = s.astype(np.float16).astype(np.float32)            # f16 round-to-nearest-even
    deq = (scale[..., None] * (q - off).astype(np.float32)).astype(np.float32)
    return ungroup(deq, np.shape(w)[1])


def replay_tensors(tensors, kind, is_quantized):
    """{name: f32 array} with every matrix the file stores quantized replayed."""
    if kind == "f32":
        return dict(tensors)
    return {n: (replay(a, kind) if is_quantized(n, a.shape) else a) for n, a in tensors.items()}
