"""The torch models of test_onnx_import_in_dlib.py (a module of their own so that the
declarations in onnx_import.cpp can be regenerated: ``python tests/dlib_cpp/onnx_models.py``
prints them)."""

from __future__ import annotations

import io


def lenet(torch):
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(1, 6, 5, 1, 2), nn.ReLU(), nn.MaxPool2d(2, 2),
                         nn.Conv2d(6, 16, 5, 1, 2), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Flatten(),
                         nn.Linear(784, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def resnet(torch):
    """Identity and downsampling residual blocks; batch norm with random statistics."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, c_in, c_out, stride):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(c_in, c_out, 3, stride, 1), nn.BatchNorm2d(c_out)
            self.c2, self.b2 = nn.Conv2d(c_out, c_out, 3, 1, 1), nn.BatchNorm2d(c_out)
            self.down = None if stride == 1 and c_in == c_out else nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride), nn.BatchNorm2d(c_out))

        def forward(self, x):
            y = self.b2(self.c2(torch.relu(self.b1(self.c1(x)))))
            return torch.relu(y + (x if self.down is None else self.down(x)))

    model = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1), nn.BatchNorm2d(8), nn.ReLU(), Block(8, 8, 1),
                          Block(8, 16, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 5))
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5), m.running_var.uniform_(0.5, 2), m.weight.uniform_(0.5, 1.5)
    return model


def inception(torch):
    """Three branches concatenated (one of them the input of the block), bilinear resizes."""
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem, self.a = nn.Conv2d(3, 6, 3, 1, 1), nn.Conv2d(6, 4, 1)
            self.b1, self.b2 = nn.Conv2d(6, 5, 3, 1, 1), nn.Conv2d(5, 5, 3, 1, 1)
            self.fc = nn.Linear(15 * 10 * 10, 5)

        def forward(self, x):
            x = torch.relu(self.stem(x))
            y = torch.cat([torch.relu(self.a(x)), self.b2(torch.relu(self.b1(x))), x], dim=1)
            y = nn.functional.interpolate(torch.relu(y), scale_factor=2, mode="bilinear", align_corners=True)
            y = nn.functional.interpolate(y, size=(10, 10), mode="bilinear", align_corners=True)
            return self.fc(y.flatten(1))

    return Net()


def unet(torch):
    """Blocks within blocks: a U-Net's concatenated skips (each decoder concat's branch holds
    the next one) and a residual inside the bottleneck."""
    nn, F = torch.nn, torch.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.e1, self.e2 = nn.Conv2d(3, 4, 3, 1, 1), nn.Conv2d(4, 4, 3, 2, 1)
            self.m, self.r = nn.Conv2d(4, 4, 3, 2, 1), nn.Conv2d(4, 4, 3, 1, 1)
            self.u2, self.d2 = nn.ConvTranspose2d(4, 4, 2, 2), nn.Conv2d(8, 4, 3, 1, 1)
            self.u1, self.d1 = nn.ConvTranspose2d(4, 4, 2, 2), nn.Conv2d(8, 3, 3, 1, 1)
            self.fc = nn.Linear(3 * 8 * 8, 5)

        def forward(self, x):
            s1 = F.relu(self.e1(x))
            s2 = F.relu(self.e2(s1))
            y = F.relu(self.m(s2))
            y = F.relu(y + self.r(y))
            y = F.relu(self.d2(torch.cat([self.u2(y), s2], 1)))
            return self.fc(self.d1(torch.cat([self.u1(y), s1], 1)).flatten(1))

    return Net()


def transformer(torch, sdpa=False):
    """A pre-norm transformer block on (N, T, D) sequences, written as small GPT-style models
    write it: causal multi-head self-attention (heads split per token with view + transpose,
    the causal mask a registered buffer filled with -inf, or ``sdpa``: torch's
    scaled_dot_product_attention), an MLP with GELU, residuals, RMS norms written out over
    each sample (dlib's rms_norm), then a classifier over the flattened sequence."""
    nn, F = torch.nn, torch.nn.functional
    T, D, H = 8, 16, 4

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.full((1,), 1.25))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean((-2, -1), keepdim=True) + 1e-5) * self.weight

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.n2 = RMSNorm(), RMSNorm()
            self.qkv, self.proj = nn.Linear(D, 3 * D, bias=False), nn.Linear(D, D)
            self.up, self.down = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
            self.head = nn.Linear(T * D, 5)
            self.register_buffer("causal", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

        def forward(self, x):
            n = x.shape[0]
            q, k, v = self.qkv(self.n1(x)).split(D, dim=2)
            q, k, v = (t.view(n, T, H, D // H).transpose(1, 2) for t in (q, k, v))
            if sdpa:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                a = (q @ k.transpose(-2, -1)) * (D // H) ** -0.5
                y = a.masked_fill(self.causal == 0, float("-inf")).softmax(dim=-1) @ v
            x = x + self.proj(y.transpose(1, 2).reshape(n, T, D))
            x = x + self.down(F.gelu(self.up(self.n2(x))))
            return self.head(x.flatten(1))

    return Net()


# name: (maker, input shape, batch norm kept as BatchNormalization nodes)
MODELS = {"lenet": (lenet, (1, 28, 28), True), "resnet": (resnet, (3, 16, 16), True),
          "inception": (inception, (3, 8, 8), False), "unet": (unet, (3, 8, 8), False),
          "transformer": (transformer, (8, 16), False)}


def onnx_bytes(torch, name, seed=0):
    """The model's ONNX bytes (torch's TorchScript exporter, opset 17; batch norm kept as
    BatchNormalization nodes, dnnpy's affine, where the model says so; else constants folded)."""
    make, shape, keep_bn = MODELS[name]
    torch.manual_seed(seed)
    model = make(torch).eval()
    f = io.BytesIO()
    torch.onnx.export(model, torch.zeros((1,) + shape), f, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}}, opset_version=17, dynamo=False,
                      do_constant_folding=not keep_bn,
                      training=torch.onnx.TrainingMode.PRESERVE if keep_bn else torch.onnx.TrainingMode.EVAL)
    return f.getvalue()


if __name__ == "__main__":
    import torch

    import dnnpy.onnx
    from dnnpy.cpp import cpp_type
    for name in MODELS:
        net = dnnpy.onnx.import_model(onnx_bytes(torch, name), loss="multiclass_log")
        print(f"// DECLARATION {name}\nusing {name}_type = {cpp_type(net)};")
