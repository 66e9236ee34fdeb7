#!/usr/bin/env python3
"""Writes the PyTorch-profiler (Kineto) fixtures of tests/cli/advise_against.sh: two eager steps
of one BERT-base encoder layer (batch 1, sequence 128, fp32; Hugging Face BertLayer's op order),
as `torch.profiler` records them with record_shapes=True: each cpu op that launches a kernel, its
cudaLaunchKernel call and the kernel. Kernel times are typical of these shapes, not measured.
    python3 gen_bert_layer_trace.py h100 > bert_layer_h100.json
    python3 gen_bert_layer_trace.py a100 > bert_layer_a100.json"""
import json, sys

DEV = {
    "h100": ({"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85520809984, "computeMajor": 9,
              "computeMinor": 0, "numSms": 132}, "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"),
    "a100": ({"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85051572224, "computeMajor": 8,
              "computeMinor": 0, "numSms": 108}, "ampere_sgemm_128x64_tn"),
}
EW = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
DIV = "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::DivFunctor<float> >, std::array<char*, 3ul> >(int, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::DivFunctor<float> >, std::array<char*, 3ul>)"
GELU = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, float)"
LN = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, float const*, float const*, float*, float*, float*)"
SOFTMAX = "void (anonymous namespace)::softmax_warp_forward<float, float, float, 8, false, false>(float*, float const*, int, int, int, bool const*, int, bool)"
BMM = "gemmSN_TN_kernel"

def ops(gemm):
    # (cpu op, Input Dims, Input type, kernel, duration us)
    f = "float"
    lin = lambda k, n: ("aten::addmm", [[n], [128, k], [k, n]], [f, f, f, "Scalar", "Scalar"][:3], gemm, 4.0 if k == n else 9.0)
    seq = [lin(768, 768), lin(768, 768), lin(768, 768),
           ("aten::bmm", [[12, 128, 64], [12, 64, 128]], [f, f], BMM, 3.0),
           ("aten::div", [[1, 12, 128, 128], []], [f, "Scalar"], DIV, 2.5),
           ("aten::_softmax", [[1, 12, 128, 128], [], []], [f, "Scalar", "Scalar"], SOFTMAX, 3.5),
           ("aten::bmm", [[12, 128, 128], [12, 128, 64]], [f, f], BMM, 3.0),
           lin(768, 768),
           ("aten::add", [[1, 128, 768], [1, 128, 768], []], [f, f, "Scalar"], EW, 2.0),
           ("aten::native_layer_norm", [[1, 128, 768], [], [768], [768], []], [f, "", f, f, "Scalar"], LN, 3.0),
           lin(768, 3072),
           ("aten::gelu", [[1, 128, 3072], []], [f, ""], GELU, 2.5),
           lin(3072, 768),
           ("aten::add", [[1, 128, 768], [1, 128, 768], []], [f, f, "Scalar"], EW, 2.0),
           ("aten::native_layer_norm", [[1, 128, 768], [], [768], [768], []], [f, "", f, f, "Scalar"], LN, 3.0)]
    return seq

def main(which):
    props, gemm = DEV[which]
    ev, ts, eid = [], 1000.0, 0
    for step in (1, 2):
        start = ts
        body = []
        gpu = ts + 20
        for op, dims, types, kernel, dur in ops(gemm):
            eid += 1
            body.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 7, "tid": 7, "ts": ts, "dur": 10,
                         "args": {"External id": eid, "Input Dims": dims, "Input type": types}})
            body.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7,
                         "ts": ts + 2, "dur": 5, "args": {"External id": eid, "correlation": eid}})
            gpu = max(gpu, ts + 8)
            body.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": gpu, "dur": dur,
                         "args": {"device": 0, "stream": 7, "correlation": eid, "External id": eid,
                                  "grid": [96, 1, 1], "block": [256, 1, 1], "registers per thread": 32,
                                  "shared memory": 0}})
            gpu += dur + 1
            ts += 12
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % step, "pid": 7, "tid": 7,
                   "ts": start, "dur": ts - start + 1})
        ev += body
        ts += 10
    json.dump({"schemaVersion": 1, "deviceProperties": [props], "traceEvents": ev}, sys.stdout, indent=0)
    sys.stdout.write("\n")

main(sys.argv[1])
