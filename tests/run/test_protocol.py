"""Launch requests: arguments to specs and back (copy mode, CPU tensors), kernels as Triton's files."""

from __future__ import annotations

import pickle

import isolation_kernels as K
import pytest
import torch
from triton.tools.tensor_descriptor import TensorDescriptor

import workbench
from workbench.run.launch_record import View
from workbench.run.protocol import Decoder, Encoder, KernelRef, UnsendableArgument, kernel_ref
from workbench.run.worker import Runner


def roundtrip(values, constexpr=None):
    enc = Encoder("copy")
    specs = enc.encode(values, constexpr or [False] * len(values))
    storages, drop = enc.take()
    # what crosses the socket is a pickle
    specs, storages = pickle.loads(pickle.dumps((specs, storages)))
    dec = Decoder("cpu")
    dec.add(storages)
    return [dec.decode(s) for s in specs], storages, drop


def test_tensor_views_keep_offset_shape_strides_and_values():
    base = torch.arange(48, dtype=torch.float32).reshape(6, 8)
    col_major = torch.randn(5, 7).T.contiguous().T
    views = [base, base[2:, 3:5], base.T, col_major, torch.tensor([], dtype=torch.int32), base.to(torch.bfloat16)]
    out, storages, drop = roundtrip(views)
    for a, b in zip(views, out):
        assert b.dtype == a.dtype and b.shape == a.shape and b.stride() == a.stride()
        assert b.storage_offset() == a.storage_offset() and torch.equal(a, b)
    # three views of one storage went once
    assert len(storages) == 4 and drop == []
    assert out[0].untyped_storage().data_ptr() == out[1].untyped_storage().data_ptr()


def test_scalars_tuples_constexpr_and_descriptors():
    t = torch.ones(8, 16, dtype=torch.float16)
    desc = TensorDescriptor.from_tensor(t[2:], [4, 16])
    values = [3, 2.5, True, None, "x", (1, (t, 2)), desc, 128]
    out, _, _ = roundtrip(values, [False] * 7 + [True])
    assert out[:5] == [3, 2.5, True, None, "x"]
    assert out[5][0] == 1 and torch.equal(out[5][1][0], t) and out[5][1][1] == 2
    d = out[6]
    assert isinstance(d, TensorDescriptor) and list(d.block_shape) == [4, 16] and d.padding == "zero"
    assert list(d.shape) == [6, 16] and torch.equal(d.base, t[2:]) and d.base.storage_offset() == 32
    assert out[7] is None  # a constexpr: Triton's launcher skips it, so nothing is sent


def test_what_cannot_be_sent():
    class PtrLike:
        def data_ptr(self):
            return 0

    with pytest.raises(UnsendableArgument, match="not a torch tensor"):
        Encoder("copy").encode([PtrLike()], [False])
    with pytest.raises(UnsendableArgument, match="create it on the GPU"):
        Encoder("ipc").encode([torch.zeros(4)], [False])  # a CPU tensor for a GPU kernel


def test_unknown_token_is_an_error():
    dec = Decoder("cpu")
    with pytest.raises(KeyError, match="not sent"):
        dec.decode(View(12345, "float32", (4,), (1,), 0))


def test_kernel_ref_names_the_triton_cache_files_and_the_worker_loads_them():
    x = torch.empty(4096)
    art = workbench.compile(K.add_one, x, x.numel(), BLOCK=1024)
    ref = kernel_ref(art.compiled, list(K.add_one.arg_names))
    assert ref.kind == "triton" and ref.name == "add_one" and ref.key == art.compiled.hash
    assert {p.rsplit(".", 1)[-1] for p in ref.files} >= {"cubin", "json"}
    assert ref.signature == {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    pickle.loads(pickle.dumps(ref))
    loaded = Runner().kernel(ref)  # Triton's CompiledKernel over the cached files, no Python function needed
    assert loaded.name == "add_one" and loaded.kernel == art.compiled.kernel
    assert loaded.metadata.num_warps == art.compiled.metadata.num_warps
    with pytest.raises(UnsendableArgument):
        kernel_ref(object(), [])
    assert KernelRef("callable", "f", "m:f").files == {}


def test_launch_grid_counts_clusters_as_utlx_does():
    from workbench.run.launching import launch_grid

    assert launch_grid((8,), {}) == (8, 1, 1)
    assert launch_grid((8, 2), {"ctas_per_cga": (2, 1, 1)}) == (4, 2, 1)  # 8 CTAs in clusters of 2
    assert launch_grid((6, 1, 3), {"ctas_per_cga": (1, 1, 1)}) == (6, 1, 3)
