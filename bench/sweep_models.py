#!/usr/bin/env python3
"""Export models not in the corpus for a sweep against ONNX Runtime (bench/README.md "sweeps").

    python3 bench/sweep_models.py OUT_DIR [NAME ...]      (no NAME: every model below)
    python3 bench/sweep_models.py --list

Each model is built from a config object with random weights (seed 0; nothing is downloaded),
exported with the legacy exporter (opset 17) with its batch (and sequence) dims symbolic, as
docs/survey/export_models.py exports the survey's, to OUT_DIR/NAME.onnx, and beside it
OUT_DIR/NAME/test_data_set_0/input_N.pb (batch 2) with ONNX Runtime's outputs output_N.pb
(optimisations disabled). `python3 docs/survey/survey.py FUSE_ADVISE OUT_DIR` then runs `exec`
on each and compares; bench/bench_e2e.sh takes a folder of NAME-legacy.onnx links to them as SURVEY.
One failing build or export is reported and the rest go on (exit 1 at the end).
Needs torch, torchvision, transformers, onnx, onnxruntime (pip; CPU is enough).
"""
import os
import sys
import traceback

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import numpy_helper

SEQ = 64


class Out(torch.nn.Module):
    """A model as a module returning one tensor: the first of `keys` its output has."""

    def __init__(self, m, names, keys=("last_hidden_state",), call=None):
        super().__init__()
        self.m, self.names, self.keys, self.call = m, names, keys, call

    def forward(self, *args):
        kw = dict(zip(self.names, args))
        out = self.call(self.m, **kw) if self.call else self.m(**kw, return_dict=True)
        if torch.is_tensor(out):
            return out
        if isinstance(out, (tuple, list)):
            return out[0]
        for k in self.keys:
            v = getattr(out, k, None)
            if v is not None:
                return v
        raise KeyError(f"none of {self.keys} in the output")


def tokens(names, vocab=1000, seq=SEQ):
    g = torch.Generator().manual_seed(1)
    args = []
    for n in names:
        if n == "attention_mask":
            a = torch.ones(2, seq, dtype=torch.int64)
            a[1, seq - 5:] = 0  # a padded second sequence
        elif n == "token_type_ids":
            a = torch.zeros(2, seq, dtype=torch.int64)
        else:
            a = torch.randint(0, vocab, (2, seq), generator=g)
        args.append(a)
    return tuple(args), {n: {0: "batch", 1: "sequence"} for n in names}


def hf_text(cls, cfg, names=("input_ids", "attention_mask"), keys=("last_hidden_state",), vocab=1000):
    names = list(names)
    args, axes = tokens(names, vocab)
    return Out(cls(cfg), names, keys), args, names, axes


def hf_tensor(cls, cfg, name, shape, axes, keys=("last_hidden_state",), call=None):
    x = torch.randn(*shape)
    return Out(cls(cfg), [name], keys, call), (x,), [name], {name: axes}


def tv(ctor, shape, **kw):
    m = ctor(weights=None, **kw)
    with torch.no_grad():  # torchvision zero-initialises some layers: random values instead
        for p in m.parameters():
            if p.dim() >= 2 and not p.any():
                p.normal_(0, 0.02)
    # BatchNorm's running statistics from the data, not the init's (mean 0, variance 1): with those, a
    # deep random network (S3D) drives its features to 0 and the output no longer depends on the input
    x = torch.randn(*shape)
    bns = [b for b in m.modules() if isinstance(b, torch.nn.modules.batchnorm._BatchNorm)]
    if bns:
        for b in bns:
            b.momentum = None  # a cumulative average over the passes below
        m.train()
        with torch.no_grad():
            for _ in range(2):
                m(torch.randn(*shape))
    return m, (x,), ["input"], {"input": {0: "batch"}}


def build_one(name):
    import torchvision.models as tvm
    import torchvision.models.video as tvv
    import transformers as tf
    small = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024)
    if name == "s3d":
        return tv(tvv.s3d, (2, 3, 16, 224, 224))
    if name == "mc3_18":
        return tv(tvv.mc3_18, (2, 3, 8, 112, 112))
    if name == "regnet_y_1_6gf":
        return tv(tvm.regnet_y_1_6gf, (2, 3, 224, 224))
    if name == "mobilenet_v3_large_075":
        return tv(tvm.mobilenet_v3_large, (2, 3, 224, 224), width_mult=0.75)
    if name == "convbert":
        return hf_text(tf.ConvBertModel, tf.ConvBertConfig(vocab_size=1000, max_position_embeddings=128, **small),
                       ("input_ids", "attention_mask", "token_type_ids"))
    if name == "mpnet":
        return hf_text(tf.MPNetModel, tf.MPNetConfig(vocab_size=1000, max_position_embeddings=130, **small))
    if name == "xlnet":
        cfg = tf.XLNetConfig(vocab_size=1000, d_model=256, n_layer=4, n_head=4, d_inner=1024, use_mems_eval=False)
        return hf_text(tf.XLNetModel, cfg)
    if name == "falcon":
        cfg = tf.FalconConfig(vocab_size=1000, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                              new_decoder_architecture=False, multi_query=True, parallel_attn=True, alibi=False,
                              use_cache=False)
        return hf_text(tf.FalconModel, cfg)
    if name == "gpt_neo":
        cfg = tf.GPTNeoConfig(vocab_size=1000, hidden_size=256, num_layers=4, num_heads=4, max_position_embeddings=128,
                              attention_types=[[["global", "local"], 2]], window_size=16, use_cache=False)
        return hf_text(tf.GPTNeoModel, cfg)
    if name == "mpt":
        cfg = tf.MptConfig(vocab_size=1000, d_model=256, n_layers=4, n_heads=4, max_seq_len=128, use_cache=False)
        return hf_text(tf.MptModel, cfg)
    if name == "wav2vec2_conformer":
        cfg = tf.Wav2Vec2ConformerConfig(hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                                         intermediate_size=1024, position_embeddings_type="relative",
                                         conv_depthwise_kernel_size=15)
        return hf_tensor(tf.Wav2Vec2ConformerModel, cfg, "input_values", (2, 16000), {0: "batch"})
    if name == "speech2text":
        cfg = tf.Speech2TextConfig(d_model=256, encoder_layers=4, encoder_attention_heads=4, encoder_ffn_dim=1024,
                                   decoder_layers=1, vocab_size=1000)
        m = tf.Speech2TextModel(cfg).get_encoder()
        x = torch.randn(2, 200, 80)
        return Out(m, ["input_features"]), (x,), ["input_features"], {"input_features": {0: "batch"}}
    if name == "encodec":
        cfg = tf.EncodecConfig(num_filters=16, hidden_size=64, upsampling_ratios=[8, 5, 4, 2])
        m = tf.EncodecModel(cfg).encoder
        return Out(m, ["input_values"], call=lambda mod, input_values: mod(input_values)), \
            (torch.randn(2, 1, 16000),), ["input_values"], {"input_values": {0: "batch"}}
    if name == "dpt":
        cfg = tf.DPTConfig(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024,
                           image_size=224, backbone_out_indices=[0, 1, 2, 3], neck_hidden_sizes=[32, 64, 128, 256],
                           fusion_hidden_size=64)
        return hf_tensor(tf.DPTForDepthEstimation, cfg, "pixel_values", (2, 3, 224, 224), {0: "batch"},
                         keys=("predicted_depth",))
    if name == "perceiver":
        cfg = tf.PerceiverConfig(num_latents=64, d_latents=256, d_model=128, num_blocks=1,
                                 num_self_attends_per_block=4, num_self_attention_heads=4,
                                 num_cross_attention_heads=1)
        m = tf.PerceiverModel(cfg)
        x = torch.randn(2, SEQ, 128)
        return Out(m, ["inputs"]), (x,), ["inputs"], {"inputs": {0: "batch", 1: "sequence"}}
    if name == "squeezebert":
        cfg = tf.SqueezeBertConfig(vocab_size=1000, max_position_embeddings=128, embedding_size=256, **small)
        return hf_text(tf.SqueezeBertModel, cfg)
    if name == "hubert":
        cfg = tf.HubertConfig(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024,
                              num_conv_pos_embeddings=64, num_conv_pos_embedding_groups=16)
        return hf_tensor(tf.HubertModel, cfg, "input_values", (2, 16000), {0: "batch"})
    raise KeyError(name)


MODELS = ["s3d", "mc3_18", "regnet_y_1_6gf", "mobilenet_v3_large_075", "convbert", "mpnet", "xlnet",
          "falcon", "gpt_neo", "mpt", "wav2vec2_conformer", "speech2text", "encodec",
          "dpt", "perceiver",
          # the fourth sweep's grouped 1-D convolutions, again
          "squeezebert", "hubert"]


def export(name, out_dir):
    torch.manual_seed(0)
    torch.backends.mha.set_fastpath_enabled(False)
    m, args, names, axes = build_one(name)
    m = m.eval()
    path = os.path.join(out_dir, f"{name}.onnx")
    out_axes = {0: "batch"}
    with torch.no_grad():
        torch.onnx.export(m, args, path, dynamo=False, opset_version=17, input_names=names, output_names=["output"],
                          dynamic_axes={**axes, "output": out_axes})
    model = onnx.load(path)
    tdir = os.path.join(out_dir, name, "test_data_set_0")
    os.makedirs(tdir, exist_ok=True)
    feeds = {}
    graph_inputs = [x.name for x in model.graph.input]
    for i, (n, a) in enumerate(zip(graph_inputs, args)):
        arr = a.numpy()
        feeds[n] = arr
        with open(os.path.join(tdir, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(arr, n).SerializeToString())
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    outs = sess.run(None, feeds)
    for i, (o, info) in enumerate(zip(outs, sess.get_outputs())):
        with open(os.path.join(tdir, f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(o, info.name).SerializeToString())
    with torch.no_grad():  # ORT against PyTorch itself, so the reference is known to be the model
        ref = m(*args).numpy()
    err = float(np.abs(outs[0] - ref).max() / max(np.abs(ref).max(), 1e-12))
    # a comparison is only worth something when the output depends on the input: batch items 0 and 1
    spread = float(np.abs(outs[0][0] - outs[0][1]).max() / max(np.abs(outs[0]).max(), 1e-12))
    if spread < 1e-4:
        raise ValueError(f"output hardly depends on the input (items 0 and 1 differ by {spread:.1e} of its largest)")
    return path, err, len(model.graph.node)


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--list":
        print("\n".join(MODELS))
        return 0
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    rc = 0
    for name in sys.argv[2:] or MODELS:
        try:
            path, err, n = export(name, out_dir)
            print(f"ok {name} {path} nodes {n} ort-vs-torch {err:.2e}", flush=True)
        except Exception as e:  # one failing model must not stop the sweep
            rc = 1
            print(f"FAIL {name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
            traceback.print_exc(limit=3, file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
