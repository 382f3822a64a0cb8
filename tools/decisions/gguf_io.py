"""A minimal GGUF v3 writer and reader (Python 3 stdlib): metadata and F32 tensors, 32-byte aligned.

Tensors are given in PyTorch's shape order (rows last-varying, e.g. nn.Linear's (out, in)) as raw
little-endian float32 bytes; GGUF lists dimensions innermost first, so the shape is written
reversed and the bytes unchanged (ggml's ne = [in, out] for the same row-major data).
"""
import struct

ALIGN = 32
U32, I32, F32, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9


def _str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _value(v):
    """(type, bytes) of a metadata value: bool, int (uint32), float (f32), str, or a typed list."""
    if isinstance(v, bool):
        return BOOL, struct.pack("<?", v)
    if isinstance(v, int):
        return U32, struct.pack("<I", v)
    if isinstance(v, float):
        return F32, struct.pack("<f", v)
    if isinstance(v, str):
        return STRING, _str(v)
    kind, items = v  # ("str" | "f32" | "i32", list)
    if kind == "str":
        body = b"".join(_str(x) for x in items)
        return ARRAY, struct.pack("<IQ", STRING, len(items)) + body
    fmt, t = {"f32": ("f", F32), "i32": ("i", I32)}[kind]
    return ARRAY, struct.pack("<IQ", t, len(items)) + struct.pack(f"<{len(items)}{fmt}", *items)


def write(path, metadata, tensors):
    """metadata: list of (key, value); tensors: list of (name, shape, f32 bytes)."""
    head = struct.pack("<IIQQ", 0x46554747, 3, len(tensors), len(metadata))
    for key, v in metadata:
        t, body = _value(v)
        head += _str(key) + struct.pack("<I", t) + body
    offset, blobs = 0, []
    for name, shape, data in tensors:
        n = 1
        for d in shape:
            n *= d
        assert len(data) == 4 * n, name
        head += _str(name) + struct.pack("<I", len(shape)) + struct.pack(f"<{len(shape)}Q", *reversed(shape))
        head += struct.pack("<IQ", 0, offset)  # type 0 = GGML_TYPE_F32
        pad = (-len(data)) % ALIGN
        blobs.append(data + b"\0" * pad)
        offset += len(data) + pad
    head += b"\0" * ((-len(head)) % ALIGN)
    with open(path, "wb") as f:
        f.write(head)
        for b in blobs:
            f.write(b)


_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def read(path):
    """(metadata dict, {name: (shape in PyTorch order, f32 bytes)}) of a GGUF with F32 tensors."""
    data = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0] if len(v) == 1 else v

    def string():
        nonlocal pos
        n = take("Q")
        s = data[pos:pos + n].decode("utf-8")
        pos += n
        return s

    def value(t):
        if t == STRING:
            return string()
        if t == ARRAY:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        return take(_SCALAR[t])

    magic, _, n_t, n_kv = take("IIQQ")
    assert magic == 0x46554747, f"{path}: not a GGUF file"
    meta = {}
    for _ in range(n_kv):
        k = string()
        meta[k] = value(take("I"))
    infos = []
    for _ in range(n_t):
        name, nd = string(), take("I")
        dims = [take("Q") for _ in range(nd)]
        ty, off = take("I"), take("Q")
        assert ty == 0, f"{path}: {name} is not F32"
        infos.append((name, list(reversed(dims)), off))
    base = pos + (-pos) % meta.get("general.alignment", ALIGN)
    tensors = {}
    for name, shape, off in infos:
        n = 1
        for d in shape:
            n *= d
        tensors[name] = (shape, data[base + off:base + off + 4 * n])
    return meta, tensors
