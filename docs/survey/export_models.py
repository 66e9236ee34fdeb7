#!/usr/bin/env python3
"""Export the exporter-survey models (docs/exporter-survey.md) with both PyTorch ONNX exporters.

Every model is built from a config object with random weights (seed 0): torchvision CNNs and a
ViT with weights=None, Hugging Face BERT, GPT-2, T5 and LLaMA from small configs. Nothing is
downloaded from a model hub. Each model is exported twice:
  legacy  torch.onnx.export(..., dynamo=False, opset_version=17, dynamic_axes=...)
  dynamo  torch.onnx.export(..., dynamo=True,  opset_version=18, dynamic_shapes=...)
with the batch (and, for the transformers, sequence) dims symbolic, as users export them.
Beside each MODEL.onnx it writes MODEL/test_data_set_0/input_N.pb (batch 2, so `exec` must take
the shapes from the files) and output_N.pb from ONNX Runtime, the reference of the survey.

    python3 docs/survey/export_models.py OUT_DIR [NAME ...]

Needs torch, torchvision, transformers, onnxscript, onnx, onnxruntime (pip; CPU is enough).
"""
import os
import sys
import traceback

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import numpy_helper


class HFWrap(torch.nn.Module):
    """A Hugging Face model as a module returning one tensor (the exporters want tensors)."""

    def __init__(self, m, names):
        super().__init__()
        self.m, self.names = m, names

    def forward(self, *args):
        out = self.m(**dict(zip(self.names, args)), return_dict=True)
        return out.last_hidden_state


def vision(name):
    import torchvision.models as tvm
    ctor = {
        "resnet18": tvm.resnet18,
        "mobilenet_v3_small": tvm.mobilenet_v3_small,
        "efficientnet_b0": tvm.efficientnet_b0,
        "shufflenet_v2_x0_5": tvm.shufflenet_v2_x0_5,
        "regnet_y_400mf": tvm.regnet_y_400mf,
        "convnext_tiny": tvm.convnext_tiny,
        "vit_b_16": tvm.vit_b_16,
    }[name]
    m = ctor(weights=None)
    # torchvision zero-initialises some layers (ViT's head): random values instead, so the
    # outputs, and the survey's error against ONNX Runtime, are not trivially zero
    with torch.no_grad():
        for p in m.parameters():
            if p.dim() >= 2 and not p.any():
                p.normal_(0, 0.02)
    x = torch.randn(2, 3, 224, 224)
    return m, (x,), ["input"], {"input": {0: "batch"}}


def transformer(name):
    import transformers as tf
    seq = 16
    if name == "bert":
        cfg = tf.BertConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512,
                            vocab_size=1000, max_position_embeddings=128)
        m = tf.BertModel(cfg)
        names = ["input_ids", "attention_mask", "token_type_ids"]
    elif name == "gpt2":
        cfg = tf.GPT2Config(n_embd=128, n_layer=2, n_head=2, vocab_size=1000, n_positions=128, use_cache=False)
        m = tf.GPT2Model(cfg)
        names = ["input_ids", "attention_mask"]
    elif name == "t5":
        cfg = tf.T5Config(d_model=128, d_kv=32, d_ff=256, num_layers=2, num_decoder_layers=2, num_heads=4,
                          vocab_size=1000, use_cache=False)
        m = tf.T5Model(cfg)
        names = ["input_ids", "attention_mask", "decoder_input_ids"]
    elif name == "llama":
        cfg = tf.LlamaConfig(hidden_size=128, intermediate_size=344, num_hidden_layers=2, num_attention_heads=4,
                             num_key_value_heads=2, vocab_size=1000, max_position_embeddings=128, use_cache=False)
        m = tf.LlamaModel(cfg)
        names = ["input_ids", "attention_mask"]
    else:
        raise KeyError(name)
    g = torch.Generator().manual_seed(1)
    args = []
    for n in names:
        if n == "attention_mask":
            a = torch.ones(2, seq, dtype=torch.int64)
            a[1, seq - 3:] = 0  # a padded second sequence
        elif n == "token_type_ids":
            a = torch.zeros(2, seq, dtype=torch.int64)
        else:
            a = torch.randint(0, 1000, (2, seq), generator=g)
        args.append(a)
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    return HFWrap(m, names), tuple(args), names, axes


TRANSFORMERS = ("bert", "gpt2", "t5", "llama")
MODELS = ["resnet18", "mobilenet_v3_small", "efficientnet_b0", "shufflenet_v2_x0_5", "regnet_y_400mf",
          "convnext_tiny", "vit_b_16", "bert", "gpt2", "t5", "llama"]


def build(name):
    torch.manual_seed(0)
    # the legacy exporter has no symbolic for the fused aten::_native_multi_head_attention that
    # nn.MultiheadAttention's inference fast path (ViT) calls: export the composite ops
    torch.backends.mha.set_fastpath_enabled(False)
    m, args, names, axes = transformer(name) if name in TRANSFORMERS else vision(name)
    return m.eval(), args, names, axes


def export(name, exporter, out_dir):
    m, args, names, axes = build(name)
    path = os.path.join(out_dir, f"{name}-{exporter}.onnx")
    with torch.no_grad():
        if exporter == "legacy":
            torch.onnx.export(m, args, path, dynamo=False, opset_version=17, input_names=names, output_names=["output"],
                              dynamic_axes={**axes, "output": {0: "batch"}})
        else:
            dims = {}
            for n, ax in axes.items():
                dims[n] = {k: torch.export.Dim(v, min=1, max=64) if v == "batch" else torch.export.Dim(v, min=2, max=64)
                           for k, v in ax.items()}
            # Dim objects with the same name are one dim across inputs
            shared = {}
            for n in dims:
                for k, d in list(dims[n].items()):
                    dims[n][k] = shared.setdefault(d.__name__, d)
            prog = torch.onnx.export(m, args, dynamo=True, opset_version=18, input_names=names,
                                     output_names=["output"],
                                     dynamic_shapes={"args": tuple(dims[n] for n in names)} if name in TRANSFORMERS
                                     else tuple(dims[n] for n in names))
            prog.save(path, external_data=False)
    model = onnx.load(path)
    tdir = os.path.join(out_dir, f"{name}-{exporter}", "test_data_set_0")
    os.makedirs(tdir, exist_ok=True)
    feeds = {}
    for i, (n, a) in enumerate(zip([x.name for x in model.graph.input], args)):
        arr = a.numpy()
        feeds[n] = arr
        with open(os.path.join(tdir, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(arr, n).SerializeToString())
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    outs = sess.run(None, feeds)
    for i, (o, info) in enumerate(zip(outs, sess.get_outputs())):
        with open(os.path.join(tdir, f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(o, info.name).SerializeToString())
    # ORT against PyTorch itself, so the reference is known to be the model
    with torch.no_grad():
        ref = m(*args).numpy()
    err = float(np.abs(outs[0] - ref).max() / max(np.abs(ref).max(), 1e-12))
    return path, err


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    names = sys.argv[2:] or MODELS
    rc = 0
    for name in names:
        for exporter in ("legacy", "dynamo"):
            try:
                path, err = export(name, exporter, out_dir)
                print(f"ok {name}-{exporter} {path} ort-vs-torch {err:.2e}", flush=True)
            except Exception as e:  # one failing export must not stop the survey
                rc = 1
                print(f"FAIL {name}-{exporter}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
                traceback.print_exc(limit=3, file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
