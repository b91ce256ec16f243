#!/usr/bin/python3
"""Held-back real exports (issue 23): which torch.onnx exports outside tests/models/torch/ still
fail to import, and how the 10-s search does on the ones that import.

    /usr/bin/python3 bench/heldout/heldout_exports.py OUTDIR [--annealer build/annealer] [--only A,B]
        [--time 10s] [--redo] [--table]

For every case below (other torchvision sizes and families, other opsets, other export options,
hand-written architectures that tests/models/export_torch.py does not have, and the "user_*"
modules a user writes, bench/heldout/user_models.py, at opsets 13, 14 and 17) it exports
OUTDIR/<case>.onnx exactly as export_torch.py does (its noise, stripping and MAC counter are
imported, not copied; weights=None always, nothing is downloaded), then runs

    annealer import F --hardware tpu-v5e --json -o P.json --map M.json
    annealer baseline F --hardware tpu-v5e -o B.json            (layer-by-layer)
    annealer --time 10s F --hardware tpu-v5e -o S.json          (wall seconds measured)
    annealer evaluate F S.json --hardware tpu-v5e --json

each in OUTDIR with the bare file name (so the error lines hold no machine path), every step
capped by a timeout. Each export runs in its own subprocess (a crash or a hang costs one case).
Results accumulate in OUTDIR/results.json (a rerun skips the cases already there unless
--redo); the table goes to stdout and OUTDIR/table.md. A dynamic-shape export is first imported
without --input (the message is recorded) and then with the case's --input.

    /usr/bin/python3 bench/heldout/heldout_exports.py OUTDIR --extra-searches 2
runs 2 more searches on every imported case (nothing else): the table then shows the first
run's wall seconds and the largest of all runs, and a case meets the time criterion only if
every run does.

    /usr/bin/python3 bench/heldout/heldout_exports.py OUTDIR --node CASE NODE_NAME
prints one node of OUTDIR/CASE.onnx: op type, attributes, its inputs' inferred shapes and its
producers (for reading an import error).
"""

import argparse
import io
import json
import os
import re
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "models"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

HARDWARE = "tpu-v5e"


def _no_download(*args, **kwargs):
    raise RuntimeError("heldout_exports.py never downloads weights")


# ---------------------------------------------------------------- the cases

def img(size=224, batch=1, name="input"):
    return [(name, "float", (batch, 3, size, size))]


def case(ctor, inputs, opset=17, note="", **opts):
    """opts: fold (do_constant_folding), keep_init (keep_initializers_as_inputs), params
    (export_params), strip, dynamic (dynamic_axes), outputs (output_names), input_arg (--input
    values for a dynamic export), timeout (export seconds)."""
    c = {"ctor": ctor, "inputs": inputs, "opset": opset, "note": note, "fold": True,
         "keep_init": False, "params": True, "strip": True, "dynamic": None, "outputs": None,
         "input_arg": [], "timeout": 300, "fp16": False}
    c.update(opts)
    return c


def build_cases():
    # imported here so that --table needs neither torch nor torchvision
    import torch
    import torch.nn as nn
    import torchvision
    import export_torch as et
    import heldout_models as hm
    tvm = torchvision.models
    tvs = torchvision.models.segmentation
    tvd = torchvision.models.detection
    tvv = torchvision.models.video
    zoo = et.MODELS

    cases = {}
    # -- hand-written architectures
    cases["bert_mask"] = case(hm.Bert, [("input_ids", "ids", (1, 128)), ("attention_mask", "mask", (1, 128))],
                              note="BERT: word+position+token-type embeddings (token types a buffer), additive mask from an int mask input")
    cases["bert_3in"] = case(lambda: hm.Bert(), [("input_ids", "ids", (1, 128)), ("attention_mask", "mask", (1, 128)),
                                                ("token_type_ids", "types", (1, 128))], opset=14,
                             note="BERT with token_type_ids as a third input, opset 14 (HF's default)")
    cases["bert_dynamic"] = case(lambda: hm.Bert(), [("input_ids", "ids", (1, 128)), ("attention_mask", "mask", (1, 128))],
                                 opset=14, dynamic={"input_ids": {0: "batch", 1: "sequence"},
                                                    "attention_mask": {0: "batch", 1: "sequence"},
                                                    "logits": {0: "batch"}},
                                 outputs=["logits"], input_arg=["input_ids=1x128", "attention_mask=1x128"],
                                 note="BERT exported the HF way: dynamic batch and sequence axes")
    cases["t5_encoder"] = case(hm.T5Encoder, [("input_ids", "ids", (1, 128))],
                               note="T5 encoder: bucketed relative position bias (log, where, min on a position grid; Gather of a table), RMSNorm, gated-GELU (tanh) FFN, no score scaling")
    cases["detr"] = case(hm.Detr, img(256), note="DETR-like: resnet18 trunk, 1x1 proj, sine position embedding from a cumsum of a mask, nn.Transformer 2+2 layers, 100 learned queries, class and box heads")
    cases["detr_learned_pos"] = case(lambda: hm.Detr(sine=False), img(256), note="DETR-like with a learned position embedding (no cumsum)")
    cases["convnextv2_atto"] = case(hm.ConvNeXtV2, img(), note="ConvNeXt-V2 atto: GRN (ReduceL2 over H,W, mean over channels, divide), channels-first LayerNorm by hand")
    cases["mobilevit_xxs"] = case(hm.MobileViT, img(256), note="MobileViT-XXS-like: MV2 blocks, unfold to patches by reshape/transpose, timm-style attention (qkv Linear, unbind), fold back, fusion concat")
    cases["lstm"] = case(hm.LSTMNet, [("input", "float", (1, 50, 80))], note="2-layer LSTM over 80-dim frames, Linear head (expected unsupported)")
    cases["gru_bidir"] = case(hm.GRUNet, [("input", "float", (1, 50, 80))], note="bidirectional GRU (expected unsupported)")
    cases["audio_dwsep1d"] = case(hm.AudioNet, [("input", "float", (1, 64, 256))], note="QuartzNet-like: depthwise-separable Conv1d (groups=C) blocks, BN, ReLU, residual, log_softmax")
    cases["vit_sdpa"] = case(None, [], note="F.scaled_dot_product_attention does not exist in torch 1.13: skipped")
    cases["unet_bn"] = case(hm.UNetBN, [("input", "float", (1, 3, 128, 128))], note="U-Net: BN+ReLU double convs, ConvTranspose 2x2 s2 and 4x4 s2 p1, pad to match, skip concat")
    cases["edsr_pixelshuffle"] = case(hm.EDSR, [("input", "float", (1, 3, 48, 48))], note="EDSR-lite x4: residual blocks with 0.1 scaling, conv + PixelShuffle(2) twice (DepthToSpace)")
    cases["espcn_pixelshuffle"] = case(hm.ESPCN, [("input", "float", (1, 1, 64, 64))], note="ESPCN x3: 5x5/3x3 convs, tanh, PixelShuffle(3)")
    cases["sd_unet_mini"] = case(hm.SDUNetMini, [("sample", "float", (1, 4, 32, 32)), ("timestep", "step", (1,)),
                                                 ("encoder_hidden_states", "float", (1, 77, 768))],
                                 note="Stable-Diffusion-UNet slice: 3 inputs, sinusoidal timestep embedding computed from the timestep input, GroupNorm(32)+SiLU ResBlocks, self- and cross-attention to the text context, GEGLU, nearest upsample, skip concat")
    cases["clip_text"] = case(hm.ClipText, [("input_ids", "ids", (1, 77))],
                              note="CLIP text encoder: causal src_mask, QuickGELU, norm_first TransformerEncoderLayer, EOS pooling x[arange(b), ids.argmax(-1)], projection matrix")
    cases["perceiver"] = case(hm.Perceiver, img(), note="Perceiver-style: a learned latent array (parameter) cross-attends to the patch tokens, then self-attention on the latents")
    cases["gpt_kvcache"] = case(hm.GPTKVCache, [("input_ids", "ids", (1, 1))] + [(f"past_{kv}{i}", "float", (1, 6, 127, 64)) for i in range(2) for kv in "kv"],
                                note="one GPT decoding step with the KV cache as graph inputs (past keys/values concatenated along the sequence), presents as outputs")
    cases["yolov5_focus"] = case(hm.YoloV5Mini, img(256), note="YOLOv5-like: Focus (four strided slices concatenated), SPP (MaxPool 5/9/13 in parallel), nearest upsample, Detect's view(b,3,85,h,w).permute(0,1,3,4,2)")
    cases["resnet_d"] = case(hm.ResNetD, img(225), note="ResNet-D: deep stem, avg-down shortcut AvgPool2d(2, ceil_mode=True, count_include_pad=False) at odd sizes (225 input)")
    cases["resnet18_qat"] = case(hm.resnet18_qat, img(), opset=13,
                                 note="resnet18 prepared for QAT (fbgemm fake-quant, per-channel weights): QuantizeLinear/DequantizeLinear pairs, as a TensorRT QAT export")
    cases["resnet18_fp16"] = case(zoo["resnet18"][0], img(), fp16=True, note="converted to float16 after export (inputs, outputs, initializers, Constants; what onnxconverter-common's convert_float_to_float16 writes)")
    cases["vit_b_16_fp16"] = case(zoo["vit_b_16"][0], img(), fp16=True, note="converted to float16 after export")
    cases["se_resnext50"] = case(hm.se_resnext50, img(), note="SE-ResNeXt50 32x4d: grouped 3x3, SE with Linear layers and view(b, c, 1, 1)")
    # -- other export options
    cases["resnet18_dynbatch"] = case(zoo["resnet18"][0], img(), dynamic={"input": {0: "batch"}, "output": {0: "batch"}},
                                      outputs=["output"], input_arg=["input=1x3x224x224"], note="dynamic_axes on the batch")
    cases["resnet18_dynhw"] = case(zoo["resnet18"][0], img(), dynamic={"input": {0: "batch", 2: "h", 3: "w"}, "output": {0: "batch"}},
                                   outputs=["output"], input_arg=["input=1x3x224x224"], note="dynamic batch, height and width")
    cases["resnet18_batch2"] = case(zoo["resnet18"][0], img(batch=2), note="batch 2")
    cases["resnet18_nofold"] = case(zoo["resnet18"][0], img(), fold=False, note="do_constant_folding=False")
    cases["resnet18_initinputs"] = case(zoo["resnet18"][0], img(), keep_init=True, note="keep_initializers_as_inputs=True")
    cases["resnet18_noparams"] = case(zoo["resnet18"][0], img(), params=False, note="export_params=False (weights are graph inputs, no initializers)")
    cases["resnet18_unstripped"] = case(zoo["resnet18"][0], img(), strip=False, note="weights kept (not stripped)")
    cases["mobilenet_v3_small_batch2"] = case(zoo["mobilenet_v3_small"][0], img(batch=2), note="batch 2")
    cases["mobilenet_v3_small_nofold"] = case(zoo["mobilenet_v3_small"][0], img(), fold=False, note="do_constant_folding=False")
    cases["vit_b_16_dynbatch"] = case(zoo["vit_b_16"][0], img(), dynamic={"input": {0: "batch"}, "output": {0: "batch"}},
                                      outputs=["output"], input_arg=["input=1x3x224x224"], note="dynamic_axes on the batch")
    cases["vit_b_16_nofold"] = case(zoo["vit_b_16"][0], img(), fold=False, note="do_constant_folding=False")
    # -- other opsets
    for name in ("resnet18", "mobilenet_v3_small", "vit_b_16"):
        for opset in (11, 14, 15, 16):
            cases[f"{name}_op{opset}"] = case(zoo[name][0], img(), opset=opset, note=f"opset {opset}")
    # -- other torchvision sizes and families
    for name, ctor, inputs in [
            ("resnet34", lambda: tvm.resnet34(weights=None), img()),
            ("resnet101", lambda: tvm.resnet101(weights=None), img()),
            ("resnext101_32x8d", lambda: tvm.resnext101_32x8d(weights=None), img()),
            ("wide_resnet101_2", lambda: tvm.wide_resnet101_2(weights=None), img()),
            ("densenet161", lambda: tvm.densenet161(weights=None), img()),
            ("densenet169", lambda: tvm.densenet169(weights=None), img()),
            ("vgg16_bn", lambda: tvm.vgg16_bn(weights=None), img()),
            ("squeezenet1_1", lambda: tvm.squeezenet1_1(weights=None), img()),
            ("shufflenet_v2_x1_0", lambda: tvm.shufflenet_v2_x1_0(weights=None), img()),
            ("mnasnet1_0", lambda: tvm.mnasnet1_0(weights=None), img()),
            ("mobilenet_v3_large_075", lambda: tvm.mobilenet_v3_large(weights=None, width_mult=0.75), img()),
            ("mobilenet_v3_small_dilated", lambda: tvm.mobilenet_v3_small(weights=None, reduced_tail=True, dilated=True), img()),
            ("efficientnet_b1", lambda: tvm.efficientnet_b1(weights=None), img(240)),
            ("efficientnet_b3", lambda: tvm.efficientnet_b3(weights=None), img(300)),
            ("efficientnet_v2_m", lambda: tvm.efficientnet_v2_m(weights=None), img()),
            ("regnet_y_800mf", lambda: tvm.regnet_y_800mf(weights=None), img()),
            ("regnet_x_1_6gf", lambda: tvm.regnet_x_1_6gf(weights=None), img()),
            ("convnext_small", lambda: tvm.convnext_small(weights=None), img()),
            ("vit_b_32", lambda: tvm.vit_b_32(weights=None), img()),
            ("vit_l_16", lambda: tvm.vit_l_16(weights=None), img()),
            ("swin_s", lambda: tvm.swin_s(weights=None), img()),
            ("swin_v2_t", lambda: tvm.swin_v2_t(weights=None), img(256)),
            ("maxvit_t_batch2", lambda: tvm.maxvit_t(weights=None), img(batch=2)),
            ("deeplabv3_resnet50", lambda: et.SegOut(tvs.deeplabv3_resnet50(weights=None, weights_backbone=None, aux_loss=False)), img()),
            ("fcn_resnet101", lambda: et.SegOut(tvs.fcn_resnet101(weights=None, weights_backbone=None, aux_loss=False)), img()),
            ("r3d_18", lambda: tvv.r3d_18(weights=None), [("input", "float", (1, 3, 16, 112, 112))]),
            ("mc3_18", lambda: tvv.mc3_18(weights=None), [("input", "float", (1, 3, 16, 112, 112))]),
            ("r2plus1d_18", lambda: tvv.r2plus1d_18(weights=None), [("input", "float", (1, 3, 16, 112, 112))]),
            ("s3d", lambda: tvv.s3d(weights=None), [("input", "float", (1, 3, 16, 224, 224))]),
            ("raft_small", lambda: hm.FlowOut(torchvision.models.optical_flow.raft_small(weights=None)),
             [("image1", "float", (1, 3, 128, 128)), ("image2", "float", (1, 3, 128, 128))]),
            ("fasterrcnn_mobilenet_v3_large_320_fpn", lambda: hm.DetOut(tvd.fasterrcnn_mobilenet_v3_large_320_fpn(
                weights=None, weights_backbone=None)), img(320)),
            ("retinanet_resnet50_fpn", lambda: hm.DetOut(tvd.retinanet_resnet50_fpn(weights=None, weights_backbone=None)), img(320)),
            ("ssdlite320_mobilenet_v3_large", lambda: hm.DetOut(tvd.ssdlite320_mobilenet_v3_large(
                weights=None, weights_backbone=None)), img(320)),
    ]:
        cases[name] = case(ctor, inputs)
    # -- modules a user writes (bench/heldout/user_models.py), at opsets 13, 14 and 17 (torch
    # 1.13 exports up to 17); some also with do_constant_folding=False and a dynamic batch
    import user_models as um
    f32 = lambda *shape: ("x", "float", shape)   # noqa: E731
    enc_dec = [("tgt", "float", (2, 16, 128)), ("mem", "float", (2, 32, 128))]
    qkv = [("q", "float", (2, 16, 128)), ("k", "float", (2, 24, 96)), ("v", "float", (2, 24, 64))]
    user = {
        "enc_bf": (lambda: um.EncBF(True, False), [f32(2, 32, 128)], "TransformerEncoder, batch_first, post-norm, final LayerNorm"),
        "enc_sf_normfirst": (lambda: um.EncBF(False, True, "gelu"), [f32(2, 32, 128)], "TransformerEncoder, sequence-first (transposed input), norm_first, GELU"),
        "enc_mask": (um.EncMask, [f32(1, 32, 128)], "TransformerEncoder with a causal float mask"),
        "enc_padmask": (um.EncPadMask, [f32(2, 16, 64), ("pad", "padmask", (2, 16))], "TransformerEncoder with src_key_padding_mask (a bool graph input)"),
        "dec_bf": (lambda: um.Dec(True, False), enc_dec, "TransformerDecoder, batch_first, causal tgt_mask, memory"),
        "dec_sf_normfirst": (lambda: um.Dec(False, True), enc_dec, "TransformerDecoder, sequence-first, norm_first"),
        "transformer": (um.FullTransformer, [("src", "float", (1, 32, 128)), ("tgt", "float", (1, 16, 128))], "nn.Transformer 2+2 layers"),
        "mha_kdim_vdim": (um.MHAKV, qkv, "MultiheadAttention kdim=96, vdim=64, need_weights (heads averaged: ReduceSum over the heads)"),
        "mha_kdim_noweights": (lambda: um.MHAKV(False), qkv, "MultiheadAttention kdim/vdim, need_weights=False"),
        "mha_causal": (um.MHAMask, [f32(32, 2, 128)], "MultiheadAttention, sequence-first, bool causal attn_mask"),
        "mha_padmask": (um.MHAPad, [f32(2, 32, 128), ("pad", "padmask", (2, 32))], "MultiheadAttention key_padding_mask, per-head weights (Expand of a computed mask)"),
        "mha_bias_kv": (um.MHABiasKV, [f32(16, 2, 64)], "MultiheadAttention add_bias_kv, add_zero_attn"),
        "gpt2": (um.GPT2, [("ids", "ids", (1, 32))], "GPT-2 by hand: fused c_attn split, causal buffer masked_fill, GELU tanh, tied-size head"),
        "gpt2_block_b2": (um.GPT2Block, [f32(2, 32, 128)], "one GPT-2 block, batch 2"),
        "rotary_block": (um.RotaryBlock, [f32(1, 32, 128)], "LLaMA-like block: RMSNorm, rotary embeddings (chunk, cat), einsum attention, SwiGLU"),
        "gqa": (um.GQA, [f32(1, 32, 128)], "grouped-query attention (8 query, 2 kv heads), repeat_kv by expand + reshape"),
        "gqa_repeat_interleave": (um.GQARepeatInterleave, [f32(1, 32, 128)], "grouped-query attention with repeat_interleave (split shape arithmetic)"),
        "bert_einsum": (um.BertBlockEinsum, [f32(2, 32, 128), ("mask", "fmask", (2, 32))], "BERT block: fused qkv reshape/permute/unbind, einsum, additive mask"),
        "conv1d": (um.Conv1dNet, [f32(1, 40, 100)], "Conv1d: dilated, grouped, depthwise, BatchNorm1d, SiLU"),
        "conv3d": (um.Conv3dNet, [f32(1, 3, 8, 32, 32)], "Conv3d: BatchNorm3d, MaxPool3d, (1,3,3) strided, dilated grouped, Hardswish"),
        "convtranspose": (um.ConvT2d, [f32(1, 3, 16, 16)], "ConvTranspose2d 4x4 s2 p1, grouped with output_padding, 2x2 s2; dilated conv; Mish"),
        "convt_1d_3d": (um.ConvT13, [("a", "float", (1, 16, 20)), ("b", "float", (1, 4, 4, 8, 8))], "ConvTranspose1d/3d, linear and trilinear interpolate"),
        "pad_modes": (um.PadModes, [f32(1, 3, 16, 16)], "even kernel, reflect/circular/replicate padding, F.pad"),
        "norms": (um.NormNet, [f32(2, 3, 16, 16)], "GroupNorm, InstanceNorm2d (affine and not), adaptive pool, BatchNorm1d after Linear"),
        "upsample_nearest": (lambda: um.UpNet("nearest"), [f32(1, 3, 20, 24)], "Upsample nearest, PixelShuffle, interpolate to a size, PixelUnshuffle"),
        "upsample_bilinear": (lambda: um.UpNet("bilinear", False), [f32(1, 3, 20, 24)], "Upsample bilinear"),
        "upsample_bilinear_ac": (lambda: um.UpNet("bilinear", True), [f32(1, 3, 20, 24)], "Upsample bilinear, align_corners"),
        "pools": (um.PoolNet, [f32(1, 3, 33, 33)], "MaxPool ceil_mode, AdaptiveAvgPool (5,5) of 15, AvgPool ceil_mode without pad, adaptive max"),
        "linear_nd": (um.LinearND, [f32(2, 3, 10, 32)], "Linear on a 4-D input, matmul with a parameter"),
        "matmul_bcast": (um.MatmulBroadcast, [("a", "float", (2, 4, 8, 32)), ("b", "float", (2, 1, 32, 16))], "matmul broadcasting a [2,1,32,16] input over heads; bmm"),
        "head_weight": (um.HeadWeight, [f32(2, 10, 128)], "matmul with a [4,32,16] per-head parameter and a 1-D parameter"),
        "token_mix": (um.TokenMix, [f32(2, 16, 32)], "matmul(W, x): W on the left of a batched input"),
        "shuffle": (um.Shuffle, [f32(1, 10, 64)], "chunk, split cutting the chunks, stack, permute, flatten, cat along rows, softmax on two axes"),
        "softmax_dims": (um.SoftmaxDims, [f32(1, 8, 6, 10)], "softmax over channels, H, W, log_softmax, softmax over the batch"),
        "layernorm_2d": (um.LN2D, [f32(2, 16, 32)], "LayerNorm over the last two axes"),
        "var_std": (um.VarStd, [f32(2, 16, 32)], "mean over two axes, var, full sum, amax over the features"),
        "argmax_head": (um.ArgmaxHead, [f32(1, 8, 64)], "logits, argmax, max values"),
        "cumsum_topk": (um.CumsumTopk, [f32(1, 16, 32)], "cumsum of an activation, topk"),
        "where_act": (um.WhereAct, [f32(1, 8, 32)], "where on a computed condition, clamp, abs, sqrt"),
        "compare_scatter": (um.CompareScatter, [f32(1, 16, 32), ("cache", "float", (1, 32, 32))],
                            ">=, <=, isinf, nan_to_num, atan, tan, softsign; a slice assignment into a cache (ScatterND), a scatter by an argsort (ScatterElements)"),
        "glu_prelu": (um.GLUPrelu, [f32(1, 8, 10, 10)], "GLU, per-channel PReLU, F.normalize, channels-last Linear"),
        "acts": (um.Acts, [f32(1, 16, 64)], "SiLU, Mish, Hardswish, Hardsigmoid, GELU tanh, ELU, Softplus, SELU, ReLU6, CELU, PReLU"),
        "lstm": (um.LSTMNet, [f32(1, 20, 40)], "2-layer LSTM, batch_first, last step"),
        "lstm_bidir": (lambda: um.LSTMNet(True), [f32(2, 20, 40)], "2-layer bidirectional LSTM, batch 2"),
        "gru": (um.GRUNet, [f32(20, 1, 40)], "GRU, sequence-first, final hidden state"),
    }
    for name, (ctor, inputs, note) in user.items():
        for opset in (13, 14, 17):
            cases[f"user_{name}_op{opset}"] = case(ctor, inputs, opset=opset, note=note)
    for name in ("enc_bf", "gpt2", "mha_padmask", "matmul_bcast", "shuffle", "var_std"):
        ctor, inputs, note = user[name]
        cases[f"user_{name}_nofold"] = case(ctor, inputs, fold=False, note=note + "; do_constant_folding=False")
        names = [n for n, _, _ in inputs]
        cases[f"user_{name}_dynbatch"] = case(
            ctor, inputs, dynamic={n: {0: "batch"} for n in names},
            input_arg=[f"{n}={'x'.join(map(str, shape))}" for n, _, shape in inputs], note=note + "; dynamic batch")
    cases["vit_l_16"]["timeout"] = 180   # the brief: only if its export takes < ~2 min
    for name in ("raft_small",):
        cases[name]["opset"] = 16        # GridSample is opset 16
    return cases


def case_names():
    """The case names without building the models (for --only checks and --table order)."""
    return list(build_cases())


# ---------------------------------------------------------------- export (in a subprocess)

def make_inputs(inputs):
    import torch
    import export_torch as et
    out = []
    for i, (_, kind, shape) in enumerate(inputs):
        g = torch.Generator().manual_seed(et.SEED + 2 + i)
        if kind == "ids":
            out.append(torch.randint(0, 1000, shape, generator=g))
        elif kind == "types":
            t = torch.zeros(shape, dtype=torch.long)
            t[..., shape[-1] // 2:] = 1
            out.append(t)
        elif kind == "step":   # a diffusion timestep
            out.append(torch.full(shape, 500.0))
        elif kind == "padmask":   # bool, True where padded (the last eighth)
            t = torch.zeros(shape, dtype=torch.bool)
            t[..., shape[-1] - shape[-1] // 8:] = True
            out.append(t)
        elif kind == "fmask":     # float 1/0, the last eighth padding
            t = torch.ones(shape)
            t[..., shape[-1] - shape[-1] // 8:] = 0
            out.append(t)
        elif kind == "mask":   # the last eighth is padding
            t = torch.ones(shape, dtype=torch.long)
            t[..., shape[-1] - shape[-1] // 8:] = 0
            out.append(t)
        else:
            out.append(torch.randn(shape, generator=g))
    return out


def export_case(name, outdir):
    import torch
    import torch.hub
    import torch.nn as nn
    import onnx
    import export_torch as et
    torch.hub.load_state_dict_from_url = _no_download
    try:
        import torchvision._internally_replaced_utils as tiru
        tiru.load_state_dict_from_url = _no_download
    except ImportError:
        pass
    torch.set_num_threads(1)
    c = build_cases()[name]
    info = {"opset": c["opset"], "inputs": [[n, k, list(s)] for n, k, s in c["inputs"]]}
    torch.manual_seed(et.SEED)
    model = c["ctor"]().eval()
    et.add_noise(model)
    example = make_inputs(c["inputs"])
    info["torch_params"] = sum(p.numel() for p in model.parameters())

    class Splat(nn.Module):   # hook_macs calls model(example) with one argument
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, args):
            return self.inner(*args)

    with torch.enable_grad():   # MultiheadAttention's fast path has no ONNX export
        try:
            info["hook_macs"] = et.hook_macs(Splat(model), example)
        except Exception as e:  # noqa: BLE001 - reported
            info["hook_macs"] = None
            info["hook_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        counter = et.MacCounter({p.storage().data_ptr() for p in model.parameters()})
        try:
            with counter:
                model(*example)
            info["macs"] = counter.weight_macs + counter.act_macs + counter.conv_macs
            info["act_macs"] = counter.act_macs
            info["dispatch_ops"] = counter.by_op
        except Exception as e:  # noqa: BLE001 - reported
            info["macs"] = None
            info["count_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    t0 = time.time()
    buf = io.BytesIO()
    with torch.enable_grad():
        torch.onnx.export(model, tuple(example), buf, opset_version=c["opset"],
                          do_constant_folding=c["fold"], input_names=[n for n, _, _ in c["inputs"]],
                          output_names=c["outputs"], dynamic_axes=c["dynamic"],
                          keep_initializers_as_inputs=c["keep_init"], export_params=c["params"])
    info["export_seconds"] = round(time.time() - t0, 1)
    proto = onnx.load_model_from_string(buf.getvalue())
    info["unstripped_bytes"] = len(buf.getvalue())
    if c["strip"]:
        et.strip(proto)
    if c["fp16"]:
        to_float16(proto)
    data = proto.SerializeToString()
    with open(os.path.join(outdir, f"{name}.onnx"), "wb") as f:
        f.write(data)
    ops = {}
    for n in proto.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    info.update({"file_bytes": len(data), "nodes": len(proto.graph.node),
                 "graph_inputs": len(proto.graph.input),
                 "op_types": " ".join(f"{k}:{v}" for k, v in sorted(ops.items()))})
    with open(os.path.join(outdir, f"{name}.export.json"), "w") as f:
        json.dump(info, f, indent=1, sort_keys=True)


def to_float16(proto):
    """Every float32 tensor type of the graph becomes float16 (inputs, outputs, value_info,
    initializers, Constant values, Cast targets), as onnxconverter-common's
    convert_float_to_float16(keep_io_types=False) does; stripped initializers stay without data."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    F32, F16 = onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16

    def convert_tensor(t):
        if t.data_type != F32:
            return
        has_data = bool(t.raw_data) or len(t.float_data) > 0
        if has_data:
            arr = numpy_helper.to_array(t).astype(np.float16)
            t.CopyFrom(numpy_helper.from_array(arr, t.name))
        else:
            t.data_type = F16
    for vi in list(proto.graph.input) + list(proto.graph.output) + list(proto.graph.value_info):
        if vi.type.tensor_type.elem_type == F32:
            vi.type.tensor_type.elem_type = F16
    for t in proto.graph.initializer:
        convert_tensor(t)
    for n in proto.graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                convert_tensor(a.t)
            if n.op_type == "Cast" and a.name == "to" and a.i == F32:
                a.i = F16


# ---------------------------------------------------------------- the annealer runs

def first_line(text):
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[0] if lines else ""


def run(cmd, cwd, timeout):
    t0 = time.time()
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout, r.stderr, time.time() - t0
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        return None, out, err + f"\ntimeout after {timeout} s", time.time() - t0


def run_case(name, c, outdir, annealer, search_time):
    import export_torch as et
    res = {"case": name, "opset": c["opset"], "note": c["note"]}
    if c["ctor"] is None:
        res["skipped"] = c["note"]
        return res
    for suffix in (".onnx", ".export.json"):
        if os.path.exists(os.path.join(outdir, name + suffix)):
            os.remove(os.path.join(outdir, name + suffix))
    cmd = [sys.executable, os.path.abspath(__file__), outdir, "--export-one", name]
    rc, out, err, secs = run(cmd, outdir, c["timeout"])
    res["export_wall"] = round(secs, 1)
    if rc != 0 or not os.path.exists(os.path.join(outdir, name + ".export.json")):
        # the last exception line names what the exporter could not do
        lines = [ln for ln in err.splitlines() if ln.strip()]
        exc = [ln for ln in lines if re.match(r"^[A-Za-z_.]+(Error|Exception|Unsupported\w*)\b", ln)]
        res["export_error"] = (exc[-1] if exc else (lines[-1] if lines else f"exit {rc}"))[:400]
        return res
    with open(os.path.join(outdir, name + ".export.json")) as f:
        res["export"] = json.load(f)
    fname = name + ".onnx"
    hw = ["--hardware", HARDWARE]
    inp = [a for v in c["input_arg"] for a in ("--input", v)]
    prob, mp = f"{name}.problem.json", f"{name}.map.json"
    for p in (prob, mp):
        if os.path.exists(os.path.join(outdir, p)):
            os.remove(os.path.join(outdir, p))
    if inp:   # what a user sees first, without --input
        rc, out, err, _ = run([annealer, "import", fname, *hw, "--json", "-o", prob, "--map", mp],
                              outdir, 300)
        res["import_without_input"] = "ok" if rc == 0 else first_line(err + out)
    rc, out, err, secs = run([annealer, "import", fname, *hw, *inp, "--json", "-o", prob, "--map", mp],
                             outdir, 300)
    res["import_seconds"] = round(secs, 2)
    if rc != 0:
        res["import_error"] = first_line(err + out) or f"exit {rc}"
        return res
    summary = json.loads(out)
    res["summary_macs"] = summary["macs"]
    res["depthwise_macs"] = summary["depthwise_macs"]
    res["problem_ops"] = summary["matmul_ops"] + summary["pointwise_ops"]
    res["problem_macs"] = et.problem_macs(os.path.join(outdir, prob), os.path.join(outdir, mp))
    base = f"{name}.baseline.json"
    rc, out, err, _ = run([annealer, "baseline", fname, *hw, *inp, "-o", base], outdir, 300)
    m = re.search(r"total latency ([0-9.eE+]+)", out + err)
    if rc != 0 or not m:
        res["baseline_error"] = first_line(err + out) or f"exit {rc}"
    else:
        res["baseline_latency"] = float(m.group(1))
    sched = f"{name}.schedule.json"
    if os.path.exists(os.path.join(outdir, sched)):
        os.remove(os.path.join(outdir, sched))
    rc, out, err, secs = run([annealer, "--time", search_time, fname, *hw, *inp, "-o", sched],
                             outdir, 120)
    res["search_wall"] = round(secs, 2)
    res["search_walls"] = [res["search_wall"]]
    res["search_exit"] = rc
    with open(os.path.join(outdir, f"{name}.search.log"), "w") as f:
        f.write(err)
    if rc != 0:
        res["search_error"] = first_line(err + out) or f"exit {rc}"
    if not os.path.exists(os.path.join(outdir, sched)):
        res["valid"] = False
        return res
    rc, out, err, _ = run([annealer, "evaluate", fname, sched, *hw, *inp, "--json"], outdir, 300)
    try:
        ev = json.loads(out)
        res["valid"] = bool(ev.get("valid"))
        res["search_latency"] = ev.get("total_latency")
        res["lower_bound"] = ev.get("lower_bound")
    except ValueError:
        res["valid"] = False
        res["evaluate_error"] = first_line(err + out) or f"exit {rc}"
    return res


def extra_searches(name, c, r, outdir, annealer, search_time, n):
    """n more searches of an imported case, for the spread of the wall time (the oracle check
    of a new best is not bounded by --time); only their wall seconds and whether each wrote a
    valid schedule are kept."""
    hw = ["--hardware", HARDWARE]
    inp = [a for v in c["input_arg"] for a in ("--input", v)]
    fname, sched = name + ".onnx", f"{name}.extra.schedule.json"
    for _ in range(n):
        if os.path.exists(os.path.join(outdir, sched)):
            os.remove(os.path.join(outdir, sched))
        rc, _, err, secs = run([annealer, "--time", search_time, fname, *hw, *inp, "-o", sched], outdir, 120)
        m = re.search(r"after ([0-9.]+) s", err)
        r.setdefault("search_walls", [r["search_wall"]]).append(round(secs, 2))
        r.setdefault("search_reported", []).append(float(m.group(1)) if m else None)
        r.setdefault("extra_exits", []).append(rc)


# ---------------------------------------------------------------- the table

def fmt(x, digits=0):
    if x is None:
        return ""
    return f"{x:,.{digits}f}"


def table(results, order, search_time):
    rows = ["| case | opset | import (first error line) | problem MACs + depthwise / torch MACs | "
            "layer-by-layer | search " + search_time + " | valid | search wall s |",
            "|---|---:|---|---|---:|---:|---|---:|"]
    n = ok = mac_ok = good = 0
    for name in order:
        r = results.get(name)
        if r is None:
            continue
        if "skipped" in r:
            rows.append(f"| {name} | | skipped: {r['skipped']} | | | | | |")
            continue
        n += 1
        torch_macs = (r.get("export") or {}).get("macs")
        if "export_error" in r:
            rows.append(f"| {name} | {r['opset']} | export failed: `{esc(r['export_error'])}` | | | | | |")
            continue
        if "import_error" in r:
            rows.append(f"| {name} | {r['opset']} | `{esc(r['import_error'])}` | torch {fmt(torch_macs)} | | | | |")
            continue
        ok += 1
        pm, dw = r["problem_macs"], r["depthwise_macs"]
        if torch_macs:
            ratio = (pm + dw) / torch_macs
            within = abs(ratio - 1) <= 0.02
            mac_ok += within
            rtext = "exact" if pm + dw == torch_macs else f"{ratio:.4f}"
        else:
            within, rtext = False, "torch count failed: " + (r["export"].get("count_error") or "")
        imp = "ok"
        if "import_without_input" in r:
            imp = f"ok with --input; without: `{esc(r['import_without_input'])}`"
        lbl, lat = r.get("baseline_latency"), r.get("search_latency")
        better = lbl is not None and lat is not None and lat < lbl
        # the criterion: MACs within 2 %, a valid schedule, better than layer-by-layer,
        # within the time budget (the wall time includes the import)
        budget = float(search_time.rstrip("s"))
        walls = r.get("search_walls") or [r.get("search_wall", 1e9)]
        if within and r.get("valid") and better and max(walls) <= budget:
            good += 1
        valid = "yes" if r.get("valid") else ("NO: " + esc(r.get("search_error") or r.get("evaluate_error") or ""))
        rows.append(f"| {name} | {r['opset']} | {imp} | {fmt(pm)} + {fmt(dw)} / {fmt(torch_macs)} = {rtext} | "
                    f"{fmt(lbl, 1)} | {fmt(lat, 1)}{'' if better or lat is None else ' (not better)'} | "
                    f"{valid} | {wall_text(walls)} |")
    head = (f"{n} exports tried: {ok} import, {mac_ok} of them with MACs within 2 % of torch's; "
            f"{good} of {n} ({100 * good / max(n, 1):.0f} %) meet every criterion (MACs within 2 %, "
            f"valid schedule, better than layer-by-layer, search wall <= {search_time} in every run).")
    return head + "\n\n" + "\n".join(rows)


def wall_text(walls):
    if len(walls) == 1:
        return f"{walls[0]}"
    return f"{walls[0]} (max of {len(walls)}: {max(walls)})"


def esc(s):
    # the importer's unsupported-op message lists every lowered op: the table keeps its head
    s = re.sub(r"which lowers [A-Za-z0-9, ]+ \(see", "which lowers [the list] (see", s)
    return s.replace("|", "\\|")


# ---------------------------------------------------------------- --node

def show_node(outdir, name, node_name):
    import onnx
    m = onnx.load(os.path.join(outdir, name + ".onnx"))
    inferred = onnx.shape_inference.infer_shapes(m)
    shapes = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        tt = vi.type.tensor_type
        shapes[vi.name] = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
                           for d in tt.shape.dim] if tt.HasField("shape") else None
    for t in m.graph.initializer:
        shapes[t.name] = list(t.dims)
    producer = {o: n for n in m.graph.node for o in n.output}
    node = next((n for n in m.graph.node if n.name == node_name), None)
    if node is None:
        sys.exit(f"heldout_exports.py: no node named {node_name!r} in {name}.onnx")

    def describe(n, indent=""):
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
        attrs = {k: (v if not isinstance(v, onnx.TensorProto) else f"tensor{list(v.dims)}")
                 for k, v in attrs.items()}
        print(f"{indent}{n.name} ({n.op_type}) {attrs}")
        for i in n.input:
            p = producer.get(i)
            print(f"{indent}  in  {i} {shapes.get(i)}  <- {p.op_type + ' ' + p.name if p else 'graph input/initializer'}")
        for o in n.output:
            print(f"{indent}  out {o} {shapes.get(o)}")

    describe(node)
    for i in node.input:
        if i in producer:
            describe(producer[i], "    ")


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--annealer", default=os.path.join(REPO, "build", "annealer"))
    ap.add_argument("--only", default="")
    ap.add_argument("--time", default="10s")
    ap.add_argument("--redo", action="store_true")
    ap.add_argument("--table", action="store_true", help="print the table of results.json only")
    ap.add_argument("--extra-searches", type=int, default=0, metavar="N",
                    help="run N more searches on every imported case of results.json (no export, "
                         "no import), for the spread of the search's wall time")
    ap.add_argument("--export-one", metavar="CASE", help=argparse.SUPPRESS)
    ap.add_argument("--node", nargs=2, metavar=("CASE", "NODE"))
    args = ap.parse_args()
    outdir = os.path.abspath(args.outdir)
    os.makedirs(outdir, exist_ok=True)
    if args.export_one:
        export_case(args.export_one, outdir)
        return
    if args.node:
        show_node(outdir, *args.node)
        return
    results_path = os.path.join(outdir, "results.json")
    results = {}
    if os.path.exists(results_path):
        with open(results_path) as f:
            results = json.load(f)
    cases = build_cases()
    order = list(cases)
    if args.extra_searches:
        names = [n for n in args.only.split(",") if n] or order
        for name in names:
            r = results.get(name)
            if not r or "problem_macs" not in r:
                continue
            extra_searches(name, cases[name], r, outdir, os.path.abspath(args.annealer), args.time,
                           args.extra_searches)
            with open(results_path, "w") as f:
                json.dump(results, f, indent=1, sort_keys=True)
            print(f"{name}: search walls {r['search_walls']}", flush=True)
    elif not args.table:
        names = [n for n in args.only.split(",") if n] or order
        unknown = [n for n in names if n not in cases]
        if unknown:
            sys.exit(f"heldout_exports.py: unknown case {unknown[0]} (known: {', '.join(order)})")
        annealer = os.path.abspath(args.annealer)
        for name in names:
            if name in results and not args.redo:
                continue
            t0 = time.time()
            r = run_case(name, cases[name], outdir, annealer, args.time)
            results[name] = r
            with open(results_path, "w") as f:
                json.dump(results, f, indent=1, sort_keys=True)
            status = (r.get("skipped") and "skipped") or r.get("export_error") or r.get("import_error") or \
                f"ok macs {r.get('problem_macs', 0) + r.get('depthwise_macs', 0):,}/{(r['export'].get('macs') or 0):,} " \
                f"base {r.get('baseline_latency')} search {r.get('search_latency')} valid {r.get('valid')} " \
                f"wall {r.get('search_wall')}"
            print(f"{name}: {status} [{time.time() - t0:.0f} s]", flush=True)
    text = table(results, order, args.time)
    with open(os.path.join(outdir, "table.md"), "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
