#!/usr/bin/env python3
"""Independent reference forward pass for BERT-family sentence embedders (NumPy, float64).

    python3 scripts/reference_embed.py [--model models/all-MiniLM-L6-v2] \
        [--out crates/embed/tests/data/minilm_reference.json]
    python3 scripts/reference_embed.py --export-onnx model.onnx   # for bench-embed

The model wheels ship no ONNX file; `--export-onnx` (needs the `onnx` package) writes the same
forward pass (embeddings, attention with mask, GELU, mean pooling over the mask, L2
normalisation) as an ONNX graph built node by node from the safetensors weights, so
onnxruntime can be timed on the same model (`cargo run --release -p veredicto-embed --bin
bench-embed -- --python PY`). The export checks itself against the NumPy reference.

Needs `numpy` and `tokenizers` (PyPI). It reads the model folder itself: the safetensors
file is parsed by hand (8-byte little-endian header length, JSON header, raw tensors), the
token ids come from the `tokenizers` package (the reference tokenizer implementation) with
padding off and truncation at `max_seq_length` of `sentence_bert_config.json`, and the
encoder is written out below straight from the BERT paper / the transformers
`modeling_bert.py` layout: embeddings (word + position + token type) -> LayerNorm, then per
layer: self-attention (12 heads, softmax(QK^T / sqrt(d)) V), dense + residual + LayerNorm,
GELU (erf form) feed-forward, dense + residual + LayerNorm. Then mean pooling over the
tokens and L2 normalisation (the `1_Pooling` and `2_Normalize` modules of the folder).

Everything is computed in float64, one sentence at a time (no padding, no mask), so the
reference shares no code, no precision and no batching strategy with the Rust
implementation it checks. The JSON written holds the SHA-256 of the model files, the
sentences, their token ids and the vectors.
"""

import argparse
import hashlib
import json
import math
import os
import struct
import sys

import numpy as np
from tokenizers import Tokenizer

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A retrieval acceptance exam decides whether a knowledge base may be deployed.",
    "Recall at ten measures how many of the expected chunks appear in the first ten results.",
    "Torque the rack bolts to 25 N·m before mounting the power distribution unit.",
    "What is the maximum load per shelf?",
    "El contrato de trabajo se extingue por voluntad del trabajador.",
    "¿Cuántos días de vacaciones corresponden por año trabajado?",
    "La base de conocimiento debe superar el examen antes de cada reindexación.",
    "Los fragmentos de tablas suelen quedar enterrados en la posición quince.",
    "Ñandú, pingüino y cigüeña: acentos, eñes y diéresis.",
    "a",
    # Longer than max_seq_length (256 word pieces): exercises truncation.
    " ".join(
        ["Chunking splits long documents into passages that an embedding model can read,"]
        + [f"section {i} repeats the clause about notice periods and severance pay." for i in range(30)]
    ),
]

DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        start, end = meta["data_offsets"]
        if meta["dtype"] == "BF16":
            raw = np.frombuffer(data[base + start : base + end], dtype=np.uint16)
            arr = (raw.astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(data[base + start : base + end], dtype=DTYPES[meta["dtype"]])
        out[name] = arr.reshape(meta["shape"]).astype(np.float64)
    return out


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


ERF = np.vectorize(math.erf)


def gelu(x):
    return 0.5 * x * (1.0 + ERF(x / math.sqrt(2.0)))


def encode(ids, w, cfg):
    p = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""
    n = len(ids)
    x = (
        w[p + "embeddings.word_embeddings.weight"][ids]
        + w[p + "embeddings.position_embeddings.weight"][np.arange(n)]
        + w[p + "embeddings.token_type_embeddings.weight"][np.zeros(n, dtype=int)]
    )
    eps = cfg["layer_norm_eps"]
    x = layer_norm(x, w[p + "embeddings.LayerNorm.weight"], w[p + "embeddings.LayerNorm.bias"], eps)
    heads = cfg["num_attention_heads"]
    d = cfg["hidden_size"] // heads
    for i in range(cfg["num_hidden_layers"]):
        L = f"{p}encoder.layer.{i}."
        lin = lambda t, name: t @ w[L + name + ".weight"].T + w[L + name + ".bias"]
        q = lin(x, "attention.self.query").reshape(n, heads, d).transpose(1, 0, 2)
        k = lin(x, "attention.self.key").reshape(n, heads, d).transpose(1, 0, 2)
        v = lin(x, "attention.self.value").reshape(n, heads, d).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        s = np.exp(s - s.max(-1, keepdims=True))
        s = s / s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(1, 0, 2).reshape(n, heads * d)
        x = layer_norm(
            lin(ctx, "attention.output.dense") + x,
            w[L + "attention.output.LayerNorm.weight"],
            w[L + "attention.output.LayerNorm.bias"],
            eps,
        )
        h = gelu(lin(x, "intermediate.dense"))
        x = layer_norm(
            lin(h, "output.dense") + x,
            w[L + "output.LayerNorm.weight"],
            w[L + "output.LayerNorm.bias"],
            eps,
        )
    return x


def export_onnx(path, w, cfg, tok):
    from onnx import TensorProto, checker, helper, numpy_helper
    import onnx

    p = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""
    h, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    d = h // heads
    eps = cfg["layer_norm_eps"]
    nodes, inits = [], []
    counter = [0]

    def const(arr, name=None):
        counter[0] += 1
        name = name or f"c{counter[0]}"
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(op, inputs, **attrs):
        counter[0] += 1
        out = f"t{counter[0]}"
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    f32 = lambda a: np.asarray(a, dtype=np.float32)
    def ln(x, name):
        return node("LayerNormalization", [x, const(f32(w[name + ".weight"])), const(f32(w[name + ".bias"]))],
                    axis=-1, epsilon=eps)
    def dense(x, name):
        mm = node("MatMul", [x, const(f32(w[name + ".weight"]).T.copy())])
        return node("Add", [mm, const(f32(w[name + ".bias"]))])

    ids, mask, types = "input_ids", "attention_mask", "token_type_ids"
    seq_len = node("Gather", [node("Shape", [ids]), const(np.array(1, dtype=np.int64))], axis=0)
    pos = node("Range", [const(np.array(0, dtype=np.int64)), seq_len, const(np.array(1, dtype=np.int64))])
    x = node("Add", [
        node("Add", [
            node("Gather", [const(f32(w[p + "embeddings.word_embeddings.weight"])), ids], axis=0),
            node("Gather", [const(f32(w[p + "embeddings.position_embeddings.weight"])), pos], axis=0),
        ]),
        node("Gather", [const(f32(w[p + "embeddings.token_type_embeddings.weight"])), types], axis=0),
    ])
    x = ln(x, p + "embeddings.LayerNorm")
    maskf = node("Cast", [mask], to=TensorProto.FLOAT)
    bias = node("Mul", [node("Sub", [const(f32(1.0)), maskf]), const(f32(-10000.0))])
    bias = node("Unsqueeze", [bias, const(np.array([1, 2], dtype=np.int64))])
    split_shape = const(np.array([0, 0, heads, d], dtype=np.int64))
    merge_shape = const(np.array([0, 0, h], dtype=np.int64))
    for i in range(cfg["num_hidden_layers"]):
        L = f"{p}encoder.layer.{i}."
        q = node("Transpose", [node("Reshape", [dense(x, L + "attention.self.query"), split_shape])], perm=[0, 2, 1, 3])
        k = node("Transpose", [node("Reshape", [dense(x, L + "attention.self.key"), split_shape])], perm=[0, 2, 3, 1])
        v = node("Transpose", [node("Reshape", [dense(x, L + "attention.self.value"), split_shape])], perm=[0, 2, 1, 3])
        s = node("Add", [node("Mul", [node("MatMul", [q, k]), const(f32(1.0 / math.sqrt(d)))]), bias])
        ctx = node("MatMul", [node("Softmax", [s], axis=-1), v])
        ctx = node("Reshape", [node("Transpose", [ctx], perm=[0, 2, 1, 3]), merge_shape])
        x = ln(node("Add", [dense(ctx, L + "attention.output.dense"), x]), L + "attention.output.LayerNorm")
        a = dense(x, L + "intermediate.dense")
        g = node("Mul", [node("Mul", [a, const(f32(0.5))]),
                         node("Add", [node("Erf", [node("Div", [a, const(f32(math.sqrt(2.0)))])]), const(f32(1.0))])])
        x = ln(node("Add", [dense(g, L + "output.dense"), x]), L + "output.LayerNorm")
    m3 = node("Unsqueeze", [maskf, const(np.array([2], dtype=np.int64))])
    summed = node("ReduceSum", [node("Mul", [x, m3]), const(np.array([1], dtype=np.int64))], keepdims=0)
    count = node("ReduceSum", [maskf, const(np.array([1], dtype=np.int64))], keepdims=1)
    mean = node("Div", [summed, count])
    norm = node("ReduceL2", [mean], axes=[1], keepdims=1)
    nodes.append(helper.make_node("Div", [mean, norm], ["sentence_embedding"]))
    dyn = ["batch", "sequence"]
    graph = helper.make_graph(
        nodes, "bert_sentence_embedding",
        [helper.make_tensor_value_info(n, TensorProto.INT64, dyn) for n in (ids, mask, types)],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", h])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="veredicto")
    model.ir_version = 8
    checker.check_model(model)
    onnx.save(model, path)

    # Give onnxruntime its best shot: its BERT graph optimizer fuses bias+GELU and
    # residual+LayerNorm (needs `sympy`; skipped with a note when missing).
    try:
        from onnxruntime.transformers.optimizer import optimize_model

        opt = optimize_model(path, model_type="bert", num_heads=heads, hidden_size=h, opt_level=0)
        opt.save_model_to_file(path)
        fused = {k: v for k, v in opt.get_fused_operator_statistics().items() if v}
        print(f"onnx export: onnxruntime transformer optimizer fused {fused}", file=sys.stderr)
    except Exception as e:  # noqa: BLE001 - optional step
        print(f"onnx export: not optimized ({e})", file=sys.stderr)

    # Self-check against the NumPy reference when onnxruntime is importable.
    try:
        import onnxruntime as ort
    except ImportError:
        return
    text = SENTENCES[1]
    ids_ = np.array([tok.encode(text).ids], dtype=np.int64)
    got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(
        None, {"input_ids": ids_, "attention_mask": np.ones_like(ids_), "token_type_ids": np.zeros_like(ids_)})[0][0]
    ref = encode(ids_[0], w, cfg).mean(0)
    ref = ref / np.linalg.norm(ref)
    cos = float(np.dot(got, ref) / np.linalg.norm(got))
    if cos < 0.9999:
        sys.exit(f"ONNX export disagrees with the reference: cosine {cos}")
    print(f"onnx export: cosine vs NumPy reference {cos:.9f}", file=sys.stderr)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(root, "models", "all-MiniLM-L6-v2"))
    ap.add_argument(
        "--out", default=os.path.join(root, "crates", "embed", "tests", "data", "minilm_reference.json")
    )
    ap.add_argument("--export-onnx", metavar="PATH", help="write an ONNX graph of the model instead")
    args = ap.parse_args()

    cfg = json.load(open(os.path.join(args.model, "config.json")))
    if cfg.get("model_type") != "bert":
        sys.exit(f"reference_embed.py handles BERT only, not {cfg.get('model_type')}")
    max_len = json.load(open(os.path.join(args.model, "sentence_bert_config.json")))["max_seq_length"]
    pooling = json.load(open(os.path.join(args.model, "1_Pooling", "config.json")))
    assert pooling["pooling_mode_mean_tokens"], "this reference implements mean pooling"

    tok = Tokenizer.from_file(os.path.join(args.model, "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=max_len)
    w = read_safetensors(os.path.join(args.model, "model.safetensors"))
    if args.export_onnx:
        export_onnx(args.export_onnx, w, cfg, tok)
        return

    cases = []
    for text in SENTENCES:
        ids = tok.encode(text).ids
        hidden = encode(np.array(ids), w, cfg)
        v = hidden.mean(0)
        v = v / np.linalg.norm(v)
        cases.append({"text": text, "ids": ids, "embedding": [round(float(t), 9) for t in v]})

    out = {
        "how": "scripts/reference_embed.py: NumPy float64 BERT forward, one sentence at a time, "
        "token ids from the `tokenizers` PyPI package (no padding, truncation at max_seq_length), "
        "mean pooling, L2 normalisation",
        "model": os.path.basename(os.path.normpath(args.model)),
        "files": {
            name: sha256(os.path.join(args.model, name))
            for name in ("config.json", "tokenizer.json", "model.safetensors")
        },
        "max_tokens": max_len,
        "numpy": np.__version__,
        "cases": cases,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {len(cases)} reference vectors to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
