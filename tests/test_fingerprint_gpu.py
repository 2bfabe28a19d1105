"""The fused fingerprint (Triton, one pass) gives the torch form's value, bit for bit, on a CUDA device."""

import pytest

torch = pytest.importorskip("torch")
from solbench.supervisor import fingerprint  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]


@pytest.mark.parametrize("n", [0, 1, 4095, 4097, fingerprint.CHUNK + 12345])
@pytest.mark.parametrize("offset, key", [(0, 0), (1, 7), (3 * 2**31 + 5, 2**62 - 1), (123456789, 0x2545F4914F6CDD1D)])
def test_the_fused_pass_matches_the_torch_form(n, offset, key):
    assert fingerprint._triton_kernel() is not None, "Triton is not importable on this GPU machine"
    assert fingerprint._fused_agrees(0), "the fused pass disagreed with the torch form on its own sample"
    gen = torch.Generator(device="cuda").manual_seed(n + offset)
    words = torch.randint(-2**31, 2**31, (n,), dtype=torch.int32, device="cuda", generator=gen)
    assert int(fingerprint._fused(words, offset, key)) == int(fingerprint._chunked(words, offset, key))


def test_the_fused_pass_sees_a_permutation():
    words = torch.arange(1, 10001, dtype=torch.int32, device="cuda")
    swapped = words.clone()
    swapped[[17, 4242]] = swapped[[4242, 17]]
    assert int(fingerprint.word_sum(words, 0, 99)) != int(fingerprint.word_sum(swapped, 0, 99))
