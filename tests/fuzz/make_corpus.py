#!/usr/bin/env python3
"""Writes the seed corpus for fuzz_gguf (tests/fuzz/corpus/gguf/): small valid GGUF files that
reach every branch of the reader, and broken ones that stop at each check. Deterministic."""
import os
import struct
import sys

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?",
       U64: "<Q", I64: "<q", F64: "<d"}


def s(x):
    b = x.encode()
    return struct.pack("<Q", len(b)) + b


def val(t, v):
    if t == STR:
        return s(v)
    return struct.pack(FMT[t], v)


def kv(key, t, v):
    if t == ARR:
        et, items = v
        return s(key) + struct.pack("<IIQ", ARR, et, len(items)) + b"".join(val(et, i) for i in items)
    return s(key) + struct.pack("<I", t) + val(t, v)


def gguf(kvs, tensors, version=3, align=32):
    """tensors: (name, ne, type, nbytes). Offsets packed with padding, data zero-filled."""
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)) + b"".join(kvs)
    off, data = 0, b""
    for name, ne, typ, nbytes in tensors:
        head += s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        head += struct.pack("<IQ", typ, off)
        pad = (-nbytes) % align
        data += bytes(nbytes) + bytes(pad)
        off += nbytes + pad
    head += bytes((-len(head)) % align)
    return head + data


def llama_kvs(n_vocab=8):
    return [kv("general.architecture", STR, "llama"), kv("general.name", STR, "seed"),
            kv("general.file_type", U32, 0), kv("llama.block_count", U32, 1),
            kv("llama.embedding_length", U32, 8), kv("llama.attention.head_count", U32, 2),
            kv("llama.attention.head_count_kv", U32, 1), kv("llama.feed_forward_length", U32, 16),
            kv("llama.context_length", U32, 64),
            kv("tokenizer.ggml.tokens", ARR, (STR, ["<unk>", "<s>", "</s>", "a", "b", "c", "d", "e"][:n_vocab]))]


def main(out):
    os.makedirs(out, exist_ok=True)
    model = gguf(llama_kvs(), [("token_embd.weight", [8, 8], 0, 256), ("output_norm.weight", [8], 0, 32),
                               ("blk.0.attn_q.weight", [8, 8], 1, 128), ("output.weight", [32, 8], 8, 8 * 34)])
    every = [kv("u8", U8, 1), kv("i8", I8, -1), kv("u16", U16, 2), kv("i16", I16, -2), kv("u32", U32, 3),
             kv("i32", I32, -3), kv("f32", F32, 1.5), kv("bool", BOOL, True), kv("str", STR, "x"),
             kv("u64", U64, 4), kv("i64", I64, -4), kv("f64", F64, 2.5), kv("general.alignment", U32, 64)]
    every += [kv("arr%d" % t, ARR, (t, [0, 1, 1])) for t in FMT]
    every += [kv("arrs", ARR, (STR, ["p", "q"]))]
    adapter = gguf([kv("general.architecture", STR, "llama"), kv("general.type", STR, "adapter"),
                    kv("adapter.type", STR, "lora"), kv("adapter.lora.alpha", F32, 8.0)],
                   [("blk.0.attn_q.weight.lora_a", [8, 2], 0, 64), ("blk.0.attn_q.weight.lora_b", [2, 8], 0, 64)])
    files = {
        "valid_model.gguf": model,
        "valid_v2_every_type.gguf": gguf(every, [("t", [4], 0, 16)], version=2, align=64),
        "valid_adapter.gguf": adapter,
        "valid_empty.gguf": gguf([], []),
        "broken_truncated.gguf": model[: len(model) // 3],
        "broken_magic.gguf": b"GGUX" + model[4:64],
        "broken_version1.gguf": b"GGUF" + struct.pack("<IQQ", 1, 0, 0),
        "broken_huge_counts.gguf": b"GGUF" + struct.pack("<IQQ", 3, 1 << 60, 1 << 60),
        "broken_nested_array.gguf": b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + s("n") + struct.pack("<IIQ", ARR, ARR, 1),
        "broken_string_past_eof.gguf": b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1 << 40) + b"k",
        "broken_tensor_past_eof.gguf": gguf([], [("t", [1024], 0, 16)]),
        "broken_bad_type.gguf": b"GGUF" + struct.pack("<IQQ", 3, 1, 0) + s("t") + struct.pack("<IQIQ", 1, 4, 4, 0),
    }
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "gguf"))
