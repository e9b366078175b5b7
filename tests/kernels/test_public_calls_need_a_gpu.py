"""The library's public calls given CPU tensors: one clear error at once, naming the call and what to do, in place of
every tuning config failing to launch ("0 active drivers") one after another."""

import pytest
import torch
from tlx_kernels import broadcast, moe
from tlx_kernels.attention import attention, ws_persistent
from tlx_kernels.gemm import ws_cooperative, ws_pingpong

bf16 = torch.bfloat16
a = torch.randn(256, 128, dtype=bf16)
b = torch.randn(128, 256, dtype=bf16)
q = torch.randn(1, 2, 128, 64, dtype=bf16)
x, w = torch.randn(64, 128, dtype=bf16), torch.randn(2, 128, 256, dtype=bf16)
offsets = torch.tensor([32, 64], dtype=torch.int32)
U, X, W = torch.randn(2, 64, dtype=bf16), torch.randn(2, 128, 64, dtype=bf16), torch.randn(128, 256, dtype=bf16)

CALLS = {
    "matmul": lambda: ws_cooperative.matmul(a, b),
    "matmul ": lambda: ws_pingpong.matmul(a, b, out=torch.empty(256, 256, dtype=bf16)),
    "attention": lambda: attention(q, q, q, causal=True),
    "attention ": lambda: ws_persistent.attention(q, q, q),
    "grouped_mm": lambda: moe.grouped_mm(x, w, offsets),
    "grouped_mm_dx": lambda: moe.grouped_mm_dx(torch.randn(64, 256, dtype=bf16), w, offsets),
    "broadcast_linear": lambda: broadcast.broadcast_linear(U, X, W),
}


@pytest.mark.parametrize("name", CALLS)
def test_cpu_tensors_fail_before_tuning_with_what_to_do(name):
    with pytest.raises(ValueError, match=rf"^{name.strip()}: the tensors must be on a CUDA GPU, got cpu; ") as e:
        CALLS[name]()
    want = "move the tensors to the GPU" if torch.cuda.is_available() else "workbench.compile or a %%tlx cell"
    assert want in str(e.value)
