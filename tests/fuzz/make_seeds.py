#!/usr/bin/env python3
"""Writes the binary seed inputs of corpus/gguf and corpus/matcher.

The GGUF seeds are tiny synthetic files (a handful of tokens, no tensors)
covering both tokenizer models, every token type and the id keys; the
matcher seeds are a grammar choice followed by operation bytes (see
matcher.cpp). Run from anywhere; rewrites the files it owns.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)


def gguf_string(text):
    data = text.encode("utf-8") if isinstance(text, str) else text
    return struct.pack("<Q", len(data)) + data


def scalar(kind, value):
    fmt = {UINT8: "<B", INT8: "<b", UINT16: "<H", INT16: "<h", UINT32: "<I", INT32: "<i",
           FLOAT32: "<f", BOOL: "<?", UINT64: "<Q", INT64: "<q", FLOAT64: "<d"}[kind]
    return struct.pack(fmt, value)


def array(kind, values):
    body = b"".join(gguf_string(v) if kind == STRING else scalar(kind, v) for v in values)
    return struct.pack("<IQ", kind, len(values)) + body


def entry(key, kind, payload):
    return gguf_string(key) + struct.pack("<I", kind) + payload


def gguf(entries, version=3, tensors=0):
    return b"GGUF" + struct.pack("<IQQ", version, tensors, len(entries)) + b"".join(entries)


def write(target, name, data):
    directory = os.path.join(HERE, "corpus", target)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as out:
        out.write(data)


def gguf_seeds():
    llama_tokens = ["<unk>", "<s>", "</s>", "<0x0A>", "<0xE6>", "\u2581the", "s", "\u65e5",
                    "<|im_end|>", "[PAD]"]
    llama_types = [2, 3, 3, 6, 6, 1, 1, 1, 3, 5]
    write("gguf", "llama.gguf", gguf([
        entry("general.architecture", STRING, gguf_string("llama")),
        entry("general.alignment", UINT32, scalar(UINT32, 32)),
        entry("tokenizer.ggml.model", STRING, gguf_string("llama")),
        entry("tokenizer.ggml.tokens", ARRAY, array(STRING, llama_tokens)),
        entry("tokenizer.ggml.scores", ARRAY, array(FLOAT32, [0.0] * len(llama_tokens))),
        entry("tokenizer.ggml.token_type", ARRAY, array(INT32, llama_types)),
        entry("tokenizer.ggml.bos_token_id", UINT32, scalar(UINT32, 1)),
        entry("tokenizer.ggml.eos_token_id", UINT32, scalar(UINT32, 2)),
    ]))
    gpt2_tokens = ["a", "b", "ab", "\u0120a", "\u010a", "\u00e6\u0139\u00a5", "<|endoftext|>",
                   "<|eot_id|>", "<tool>"]
    write("gguf", "gpt2.gguf", gguf([
        entry("tokenizer.ggml.model", STRING, gguf_string("gpt2")),
        entry("tokenizer.ggml.tokens", ARRAY, array(STRING, gpt2_tokens)),
        entry("tokenizer.ggml.token_type", ARRAY, array(UINT8, [1, 1, 1, 1, 1, 1, 3, 3, 4])),
        entry("tokenizer.ggml.merges", ARRAY, array(STRING, ["a b", "\u0120 a"])),
        entry("tokenizer.ggml.eot_token_id", INT64, scalar(INT64, 7)),
        entry("tokenizer.ggml.eom_token_id", UINT16, scalar(UINT16, 6)),
        entry("nested", ARRAY, struct.pack("<IQ", ARRAY, 1) + array(UINT64, [1, 2])),
    ], version=2))
    write("gguf", "no-types.gguf", gguf([
        entry("tokenizer.ggml.tokens", ARRAY, array(STRING, ["x", "y", "xy", ""])),
        entry("tokenizer.ggml.model", STRING, gguf_string("gpt2")),
        entry("flag", BOOL, scalar(BOOL, True)),
        entry("ratio", FLOAT64, scalar(FLOAT64, 0.5)),
    ]))
    write("gguf", "bad-model.gguf", gguf([
        entry("tokenizer.ggml.model", STRING, gguf_string("bert")),
        entry("tokenizer.ggml.tokens", ARRAY, array(STRING, ["a"])),
    ]))
    write("gguf", "eos-out-of-range.gguf", gguf([
        entry("tokenizer.ggml.model", STRING, gguf_string("llama")),
        entry("tokenizer.ggml.tokens", ARRAY, array(STRING, ["a"])),
        entry("tokenizer.ggml.eos_token_id", INT32, scalar(INT32, 5)),
    ]))
    write("gguf", "huge-count.gguf", gguf([
        entry("tokenizer.ggml.model", STRING, gguf_string("llama")),
        gguf_string("tokenizer.ggml.tokens") + struct.pack("<IIQ", ARRAY, STRING, 1 << 40),
    ]))
    write("gguf", "truncated.gguf", gguf([
        entry("tokenizer.ggml.model", STRING, gguf_string("llama")),
        entry("tokenizer.ggml.tokens", ARRAY, array(STRING, ["abc", "def"])),
    ])[:-2])
    write("gguf", "tensors.gguf", gguf([
        entry("tokenizer.ggml.model", STRING, gguf_string("llama")),
        entry("tokenizer.ggml.tokens", ARRAY, array(STRING, ["a"])),
    ], tensors=3))


def matcher_seeds():
    # Operation bytes (matcher.cpp): < 0x80 accept id, 0x80-0xBF accept the
    # k-th allowed token, 0xC0-0xCF roll back (bit 3: replay), 0xD0-0xDF fork,
    # 0xE0-0xE7 jump forward, 0xE8-0xF7 raw bytes, 0xF8-0xFF reset.
    walk = bytes([0x80, 0x81, 0x82, 0x83, 0x85, 0x88, 0x8D, 0x90])
    for grammar in range(8):
        ops = walk + bytes([0xCA, 0xD1, 0x84, 0xE0, 0x87, 0xC1, 0x00, 0x02, 0x86, 0xF8, 0x80])
        write("matcher", "builtin-%d.bin" % grammar, bytes([2 * grammar]) + ops)
    write("matcher", "json-walk.bin", bytes([2]) + b"\x13\x12\x03\x12\x18\x0b\x14\x00\xcb\xd2\xe1")
    write("matcher", "raw-bytes.bin", bytes([8]) + b"\xeb\xc3\xa9\xe6\x97\xa5\xe9\xc3\x0a\x80\xcf")
    grammar = b'root ::= "ab"+ ("\\n" | [0-9]{2})\n'
    write("matcher", "custom-grammar.bin", b"\x01" + grammar + b"\x00" + walk + b"\xc2\xdd\xe2")
    grammar = b'root ::= x x\nx ::= "a" | "a" "b" | [\\u00e0-\\u00ff]?\n'
    write("matcher", "custom-ambiguous.bin", b"\x03" + grammar + b"\x00" + walk + b"\xcc\xd4")
    grammar = (b'root ::= "{" AnyOrder("," " "?, "a" v, ("b" v)?, "c"*, "ab"+) "}"\n'
               b'v ::= ":" ("1" | "12" | root)\n')
    write("matcher", "custom-any-order.bin", b"\x05" + grammar + b"\x00" + walk + b"\xc9\xd3\xe1")


if __name__ == "__main__":
    gguf_seeds()
    matcher_seeds()
