#!/usr/bin/env python3
"""Full-size transformer models for bench/bench_large.sh (issue 39), made from configs.

Random weights (seed 0, the configs' own initialisers), nothing downloaded from a model hub.
Each model is exported with PyTorch's legacy exporter (dynamo=False, opset 17), batch 1 and
sequence 128 fixed, as docs/survey/export_models.py exports its small ones:

  bert-base     BertConfig() defaults: 12 layers x 768, 12 heads, FFN 3072, vocab 30522
  gpt2-small    GPT2Config() defaults: 12 layers x 768, 12 heads, vocab 50257
  gpt2-24       GPT2Config(n_layer=24): the same blocks, twice as deep
  bert-24       BertConfig(num_hidden_layers=24): BERT-base's blocks, twice as deep (a second
                depth pair: DEPTH_PAIR="bert-base bert-24")
  gpt2-large    GPT2Config(n_embd=1280, n_layer=36, n_head=20): 774M parameters, 3.1 GB fp32,
                over protobuf's 2 GB limit, so written with external data (one file per
                initializer beside MODEL.onnx, as the exporter writes large models)
  gpt2-tiny     n_embd=64, n_layer=2, n_head=2, vocab 1000: the script's smoke test (seconds)
  gpt2-tiny-x2  the same, n_layer=4
  gpt2-tiny-ext gpt2-tiny re-saved with external data (one file per initializer), as
                gpt2-large is, so the external-data path is exercised in seconds

    python3 bench/large_models.py OUT_DIR [NAME ...]

Writes OUT_DIR/NAME/NAME.onnx (each model in a folder of its own: external data is confined to
the model's folder) and prints "NAME PATH WEIGHT_BYTES" per model (the initializers' bytes, what
bench_large.sh divides peak RSS by). Needs torch and transformers (bench only, never a build or
test dependency); one model at a time: gpt2-large takes ~10 GB of memory to export.
"""
import os
import sys

import onnx
import torch

SEQ = 128

TINY = {"n_embd": 64, "n_head": 2, "vocab_size": 1000, "n_positions": SEQ}
CONFIGS = {  # name: (kind, config overrides, re-saved with external data)
    "bert-base": ("bert", {}, False),
    "gpt2-small": ("gpt2", {}, False),
    "gpt2-24": ("gpt2", {"n_layer": 24}, False),
    "bert-24": ("bert", {"num_hidden_layers": 24}, False),
    "gpt2-large": ("gpt2", {"n_embd": 1280, "n_layer": 36, "n_head": 20}, False),
    "gpt2-tiny": ("gpt2", dict(TINY, n_layer=2), False),
    "gpt2-tiny-x2": ("gpt2", dict(TINY, n_layer=4), False),
    "gpt2-tiny-ext": ("gpt2", dict(TINY, n_layer=2), True),
}


class Wrap(torch.nn.Module):
    """A Hugging Face model returning its last hidden state only (one output tensor)."""

    def __init__(self, m, names):
        super().__init__()
        self.m, self.names = m, names

    def forward(self, *args):
        return self.m(**dict(zip(self.names, args)), return_dict=True).last_hidden_state


def build(name):
    import transformers as tf
    kind, over, _ = CONFIGS[name]
    torch.manual_seed(0)
    if kind == "bert":
        m = tf.BertModel(tf.BertConfig(**over))
        names = ["input_ids", "attention_mask", "token_type_ids"]
    else:
        m = tf.GPT2Model(tf.GPT2Config(use_cache=False, **over))
        names = ["input_ids", "attention_mask"]
    g = torch.Generator().manual_seed(1)
    args = []
    for n in names:
        if n == "input_ids":
            args.append(torch.randint(0, 1000, (1, SEQ), generator=g))
        elif n == "attention_mask":
            args.append(torch.ones(1, SEQ, dtype=torch.int64))
        else:
            args.append(torch.zeros(1, SEQ, dtype=torch.int64))
    return Wrap(m, names).eval(), tuple(args), names


def weight_bytes(path):
    """Bytes of every initializer, embedded or external (the model's weights)."""
    model = onnx.load(path, load_external_data=False)
    total = 0
    for t in model.graph.initializer:
        n = 1
        for d in t.dims:
            n *= d
        total += n * onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
    return total


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    out = sys.argv[1]
    for name in sys.argv[2:] or ["bert-base", "gpt2-small", "gpt2-24", "gpt2-large"]:
        if name not in CONFIGS:
            print("large_models.py: unknown model %r (known: %s)" % (name, " ".join(CONFIGS)), file=sys.stderr)
            return 2
        folder = os.path.join(out, name)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, name + ".onnx")
        if not os.path.exists(path):
            m, args, names = build(name)
            with torch.no_grad():
                torch.onnx.export(m, args, path, dynamo=False, opset_version=17, input_names=names,
                                  output_names=["output"])
            del m
            if CONFIGS[name][2]:  # one file per initializer beside the model, as the exporter does
                model = onnx.load(path)
                onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=False,
                                size_threshold=0)
        print(name, path, weight_bytes(path), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
