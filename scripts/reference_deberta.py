#!/usr/bin/env python3
"""Reference logits of the tiny DeBERTa-v2 test models, from transformers + PyTorch.

    VEREDICTO_DEBERTA_DUMP=/tmp/dv2 cargo test -p veredicto-embed --test embed deberta_tiny \
        dump_models_for_the_python_reference -- --ignored
    python3 scripts/reference_deberta.py /tmp/dv2 \
        --out crates/embed/tests/data/deberta_tiny_reference.json

The first command writes the random-weight model folders of `crates/embed/tests/embed/deberta_tiny.rs`
(one per variant: config.json, model.safetensors, tokenizer.json) and `pairs.json` (the
premise / hypothesis pairs with the token ids the test expects). This script loads each
folder with `DebertaV2ForSequenceClassification.from_pretrained` (no other code of ours is
involved), tokenizes every pair with the `tokenizers` package (padding and truncation off),
checks the ids against `pairs.json`, and runs the model in eval mode in float64 (and, for
information, float32). It also runs all pairs of a folder as one right-padded batch with an
attention mask and checks the logits equal the unpadded ones: the Rust implementation packs
sequences without padding and relies on that.

The JSON written holds the torch / transformers versions, the SHA-256 of each folder's
config.json and model.safetensors (the Rust test refuses a fixture made from other files) and,
per pair, the ids and the logits.

Needs `torch`, `transformers` and `tokenizers` (PyPI; the CUDA build of torch runs on the CPU).
"""

import argparse
import hashlib
import json
import os
import sys

import torch
import transformers
from tokenizers import Tokenizer
from transformers import DebertaV2ForSequenceClassification


def sha256(path):
    with open(path, "rb") as f:
        return "sha256:" + hashlib.sha256(f.read()).hexdigest()


def logits(model, ids, type_ids, mask=None):
    ids = torch.tensor(ids, dtype=torch.long)
    type_ids = torch.tensor(type_ids, dtype=torch.long)
    if ids.dim() == 1:
        ids, type_ids = ids[None, :], type_ids[None, :]
    if mask is None:
        mask = torch.ones_like(ids)
    with torch.no_grad():
        return model(input_ids=ids, token_type_ids=type_ids, attention_mask=mask).logits


def load(folder, dtype):
    model, info = DebertaV2ForSequenceClassification.from_pretrained(
        folder, output_loading_info=True, dtype=dtype
    )
    cfg = model.config
    # Only the relative-embedding LayerNorm of a model without relative attention may be
    # missing: transformers creates it from `norm_rel_ebd` but never uses it then.
    allowed = set()
    if not cfg.relative_attention:
        allowed = {"deberta.encoder.LayerNorm.weight", "deberta.encoder.LayerNorm.bias"}
    missing = set(info["missing_keys"]) - allowed
    if missing or info["unexpected_keys"] or info["mismatched_keys"]:
        sys.exit(f"{folder}: loading problems: {info}")
    return model.eval()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump", help="folder written by the dump test")
    ap.add_argument("--out", help="JSON file to write (default: stdout)")
    args = ap.parse_args()
    torch.manual_seed(0)
    with open(os.path.join(args.dump, "pairs.json")) as f:
        pairs = json.load(f)
    models = []
    worst_pad = 0.0
    for name in sorted(os.listdir(args.dump)):
        folder = os.path.join(args.dump, name)
        if not os.path.isfile(os.path.join(folder, "config.json")):
            continue
        tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        tok.no_padding()
        tok.no_truncation()
        m64 = load(folder, torch.float64)
        m32 = load(folder, torch.float32)
        rows = []
        encoded = []
        for p in pairs:
            enc = tok.encode(p["premise"], p["hypothesis"])
            if enc.ids != p["ids"] or enc.type_ids != p["type_ids"]:
                sys.exit(f"{name}: tokenizers gives {enc.ids} / {enc.type_ids}, the test expects {p}")
            encoded.append(enc)
            rows.append(
                {
                    "premise": p["premise"],
                    "hypothesis": p["hypothesis"],
                    "ids": enc.ids,
                    "type_ids": enc.type_ids,
                    "logits": logits(m64, enc.ids, enc.type_ids)[0].tolist(),
                    "logits_f32": logits(m32, enc.ids, enc.type_ids)[0].tolist(),
                }
            )
        # One right-padded batch with a mask gives the same logits.
        n = max(len(e.ids) for e in encoded)
        pad = lambda xs: xs + [0] * (n - len(xs))
        batch = logits(
            m64,
            [pad(e.ids) for e in encoded],
            [pad(e.type_ids) for e in encoded],
            torch.tensor([pad([1] * len(e.ids)) for e in encoded]),
        )
        for row, b in zip(rows, batch):
            worst_pad = max(worst_pad, max(abs(x - y) for x, y in zip(row["logits"], b.tolist())))
        models.append(
            {
                "name": name,
                "sha256": {f: sha256(os.path.join(folder, f)) for f in ("config.json", "model.safetensors")},
                "pairs": rows,
            }
        )
    if worst_pad > 1e-9:
        sys.exit(f"padded batch differs from single sequences by {worst_pad}")
    out = {
        "generator": "scripts/reference_deberta.py",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "model_class": "DebertaV2ForSequenceClassification",
        "note": "logits: float64 model; logits_f32: float32 model; padded-batch max difference "
        + f"{worst_pad:.1e}",
        "models": models,
    }
    text = json.dumps(out, indent=1) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    print(f"{len(models)} models, padded-batch max |diff| {worst_pad:.1e}", file=sys.stderr)


if __name__ == "__main__":
    main()
