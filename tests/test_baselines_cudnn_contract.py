"""The cuDNN adapter's graph against a CPU interpreter of cudnn-frontend's SDPA tensor semantics.

The stand-in `cudnn` module records the graph the adapter builds and `execute` interprets it the way
cuDNN reads tensors (test/python/sdpa in cudnn-frontend): a tensor is (dim, stride) over the bound
buffer; a ragged offset replaces the batch stride with per-batch element offsets; seq_len_q/kv with the
padding mask cut each sequence; paged K/V are containers (pages, Hkv, page_size, D) read through
(B, 1, max_pages, 1) tables; BOTTOM_RIGHT bounds follow fp16_ref.py (right R masks triu(sk - sq + 1 + R),
left n masks tril(sk - sq - n)); the sink joins the denominator and the stats. A wrong stride, offset,
unit or bound shows up as a mismatch with solbench's reference.
"""

import sys
import types
from enum import Enum

import pytest
from adapter_checks import run_and_judge

torch = pytest.importorskip("torch")
from solbench.baselines import cudnn as adapter_module  # noqa: E402
from solbench.core.model import Status  # noqa: E402
from solbench.core.suites import load_suite  # noqa: E402


class T:
    """A graph tensor: uid, dims, strides, optional ragged offset; setters chain like the pybind ones."""

    def __init__(self, uid=None, dim=None, stride=None, data_type=None):
        self.uid, self.dim, self.stride, self.ragged = uid, dim, stride, None

    def set_ragged_offset(self, t):
        self.ragged = t
        return self

    def set_uid(self, uid):
        self.uid = uid
        return self

    def set_dim(self, dim):
        self.dim = tuple(dim)
        return self

    def set_stride(self, stride):
        self.stride = tuple(stride)
        return self

    def set_output(self, flag):
        return self

    def set_data_type(self, dt):
        return self


def batch_view(t, pack, b, length):
    """[H, length, D] of batch b as cuDNN addresses it (rows past the sequence are never touched)."""
    buf = pack[t.uid]
    start = int(pack[t.ragged.uid].view(-1)[b]) if t.ragged is not None else b * t.stride[0]
    return torch.as_strided(buf, (t.dim[1], length, t.dim[3]), t.stride[1:], buf.storage_offset() + start)


class Graph:
    def __init__(self, io_data_type=None, intermediate_data_type=None, compute_data_type=None, handle=None):
        self.op = None

    def tensor(self, uid, dim, stride, data_type):
        return T(uid, tuple(dim), tuple(stride), data_type)

    def sdpa(self, q, k, v, attn_scale, generate_stats, diagonal_alignment="TOP_LEFT", name=None, compute_data_type=None,
             diagonal_band_left_bound=None, diagonal_band_right_bound=None, use_padding_mask=False, seq_len_q=None,
             seq_len_kv=None, paged_attention_k_table=None, paged_attention_v_table=None,
             paged_attention_max_seq_len_kv=None, sink_token=None, **fp8):
        bounded = diagonal_band_left_bound is not None or diagonal_band_right_bound is not None
        assert diagonal_alignment == ("BOTTOM_RIGHT" if bounded else "TOP_LEFT")
        assert (seq_len_q is not None) == bool(use_padding_mask) == (seq_len_kv is not None)
        self.op = dict(locals())
        self.o, self.stats = T(), T()
        return self.o, self.stats

    def sdpa_fp8(self, descale_q, descale_k, descale_v, scale_s, descale_s, scale_o, **kw):
        self.sdpa(**kw)
        self.op["descales"] = (descale_q, descale_k, descale_v, scale_s, descale_s, scale_o)
        return self.o, self.stats, T(), T()

    def validate(self):
        pass

    build_operation_graph = check_support = build_plans = validate

    def create_execution_plans(self, modes):
        pass

    def get_workspace_size(self):
        return 16

    def execute(self, pack, workspace, handle):
        op = self.op
        q, k, v = op["q"], op["k"], op["v"]
        batch = q.dim[0]
        for b in range(batch):
            sq = int(pack[op["seq_len_q"].uid].view(-1)[b]) if op["seq_len_q"] else q.dim[2]
            sk = int(pack[op["seq_len_kv"].uid].view(-1)[b]) if op["seq_len_kv"] else k.dim[2]
            qb = batch_view(q, pack, b, sq)
            if op["paged_attention_k_table"] is not None:
                table = pack[op["paged_attention_k_table"].uid].view(batch, -1)[b].long()
                kb = pack[k.uid][table].permute(1, 0, 2, 3).reshape(k.dim[1], -1, k.dim[3])
                vb = pack[v.uid][table].permute(1, 0, 2, 3).reshape(v.dim[1], -1, v.dim[3])
            else:
                kb, vb = batch_view(k, pack, b, sk), batch_view(v, pack, b, sk)
            qf, kf, vf = qb[:, :sq].float(), kb[:, :sk].float(), vb[:, :sk].float()
            if "descales" in op:
                dq, dk, dv = (float(pack[t.uid]) for t in op["descales"][:3])
                qf, kf, vf = qf * dq, kf * dk, vf * dv
            rep = qf.shape[0] // kf.shape[0]
            s = torch.einsum("hqd,hkd->hqk", qf, kf.repeat_interleave(rep, 0)) * op["attn_scale"]
            masked = torch.zeros(sq, sk, dtype=torch.bool)
            if op["diagonal_band_right_bound"] is not None:
                masked |= torch.ones(sq, sk, dtype=torch.bool).triu(sk - sq + 1 + op["diagonal_band_right_bound"])
            if op["diagonal_band_left_bound"] is not None:
                masked |= torch.ones(sq, sk, dtype=torch.bool).tril(sk - sq - op["diagonal_band_left_bound"])
            s = s.masked_fill(masked, float("-inf"))
            lse = torch.logsumexp(s, -1)
            if op["sink_token"] is not None:
                lse = torch.logaddexp(lse, pack[op["sink_token"].uid].view(-1, 1).float())
            o = torch.einsum("hqk,hkd->hqd", torch.exp(s - lse[..., None]), vf.repeat_interleave(rep, 0))
            batch_view(self.o, pack, b, sq)[:] = o.to(pack[self.o.uid].dtype)
            if self.stats.uid is not None:
                st = pack[self.stats.uid]
                start = int(pack[self.stats.ragged.uid].view(-1)[b]) if self.stats.ragged is not None else b * self.stats.stride[0]
                torch.as_strided(st, (self.stats.dim[1], sq), self.stats.stride[1:3], st.storage_offset() + start)[:] = lse


@pytest.fixture
def fake_cudnn(monkeypatch):
    module = types.ModuleType("cudnn")
    module.data_type = Enum("data_type", "BFLOAT16 HALF FP8_E4M3 FLOAT INT32 INT64")
    module.diagonal_alignment = types.SimpleNamespace(BOTTOM_RIGHT="BOTTOM_RIGHT", TOP_LEFT="TOP_LEFT")
    module.heur_mode = types.SimpleNamespace(A="A", FALLBACK="FALLBACK")
    module.pygraph = Graph
    module.create_handle = lambda: "handle"
    module.set_stream = lambda handle, stream: None
    monkeypatch.setitem(sys.modules, "cudnn", module)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: types.SimpleNamespace(cuda_stream=0))
    return module


CASES = [sc for name in ("smoke", "edge", "fa3-h2h") for sc in load_suite(name).scenarios if sc.total_q * max(sc.kv_lens) < 2e6]


@pytest.mark.parametrize("sc", CASES, ids=[s.id for s in CASES])
def test_cudnn_graph_reads_and_writes_what_cudnn_would(sc, fake_cudnn):
    if not adapter_module.Adapter.supports(sc, "h200").ok:
        pytest.skip(adapter_module.Adapter.supports(sc, "h200").reason)
    adapter = adapter_module.Adapter(device="cpu")
    verdict = run_and_judge(adapter, sc)
    assert verdict.status is Status.PASSED, verdict.reason


def test_one_graph_per_scenario_serves_every_input_set(fake_cudnn, monkeypatch):
    """The runner binds the check inputs and every rotated copy: the graph is built once per scenario and
    each bind executes on its own buffers."""
    from solbench.supervisor.inputs import make_inputs
    from solbench.supervisor.reference import reference
    from solbench.supervisor.verdict import judge

    built = []
    monkeypatch.setattr(fake_cudnn, "pygraph", lambda **kw: built.append(Graph(**kw)) or built[-1])
    sc = next(s for s in CASES if s.kv_layout == "paged" and adapter_module.Adapter.supports(s, "h200").ok)
    adapter = adapter_module.Adapter(device="cpu")
    sets = [make_inputs(sc, trial=t, device="cpu") for t in range(3)]
    calls = [adapter.bind(inputs) for inputs in sets]
    assert len(built) == 1
    for inputs, call in zip(sets, calls):
        inputs.poison()
        call()
        ref_out, ref_lse = reference(inputs)
        verdict = judge(inputs.out, inputs.lse, ref_out, ref_lse, sc.dtype, writes_lse=adapter.writes_lse)
        assert verdict.status is Status.PASSED, verdict.reason
    other = next(s for s in CASES if s.id != sc.id and adapter_module.Adapter.supports(s, "h200").ok)
    adapter.bind(make_inputs(other, device="cpu"))
    assert len(built) == 2
