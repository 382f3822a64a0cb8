#!/usr/bin/env python3
"""Writes the seed corpus for fuzz_models_dir (tests/fuzz/corpus/models_dir/): small model folders in
the target's record format ([name length][name][content length, 2 bytes LE][content]; ".gguf" is
appended to a name without it, and a leading '!' names another file), with contents taken from the GGUF seeds. Deterministic."""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def gguf_seed(name):
    with open(os.path.join(HERE, "corpus", "gguf", name), "rb") as f:
        return f.read()


def record(name, content, gguf=True):
    if not gguf:
        name = b"!" + name
    assert len(name) <= 250 and len(content) < 65536
    return bytes([len(name)]) + name + struct.pack("<H", len(content)) + content


def main(out):
    os.makedirs(out, exist_ok=True)
    model, adapter, broken = gguf_seed("valid_model.gguf"), gguf_seed("valid_adapter.gguf"), gguf_seed("broken_truncated.gguf")
    seeds = {
        "clash_and_adapter": record(b"a b", model) + record(b"a-b", model) + record(b"a-b-lora", adapter)
        + record(b"taken", model) + record(b"notes.txt", b"not a model", gguf=False),
        "hostile_names": record(b"evil\n[info] forged\x1b[31m\xff\xfe", model) + record(b"bad\r\n\xc3(", broken)
        + record(b"\xe2\x80\xae" + b"fdp.exe", model),
        "long_names": record(b"m" * 245, model) + record(b"m" * 244 + b"n", model) + record(b"m" * 250, model) + record(b"-" * 99, model),
        "split_sets": record(b"big-00001-of-00002.gguf", model) + record(b"big-00002-of-00002.gguf", b"shard")
        + record(b"lost-00001-of-00003.gguf", model),
        "empty_and_dots": record(b".", model, gguf=False) + record(b"..", model, gguf=False) + record(b"", b"", gguf=False),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "corpus", "models_dir"))
